"""Our written reading of a campaign's results (`<campaign>.discussion.toml`).

The report's numbers are computed; what they mean is written by people,
after reading them. The file sits next to the campaign file and holds
one reading per subject:

  [[reading]]
  about = "004"           # a seed of analysis/data/seeds.toml, or "handoffs"
  written_for = 8         # finished runs it was written for (the seed's
                          # studies, as shipped and under its precondition;
                          # for "handoffs", the kbench runs)
  text = \"\"\"...\"\"\"       # paragraphs separated by blank lines

The report prints a seed's reading under the seed's tables, and the
"handoffs" reading under the hand-off bound table. When the results now
hold another number of those runs it says so above the text: it was
written for other numbers and must be read against the tables. Errors
name the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lockstudy.files import read_toml

SUFFIX = ".discussion.toml"
FIELDS = {"about", "written_for", "text"}
HANDOFFS = "handoffs"  # the reading of the hand-off bound table (the kbench sweep)


class DiscussionError(ValueError):
    """A discussion file that cannot be read as described above."""


@dataclass(frozen=True)
class Discussion:
    about: str
    written_for: int
    paragraphs: tuple[str, ...]

    def staleness(self, finished_runs: int) -> str:
        """A warning when the results changed since the text was written, else ""."""
        if finished_runs == self.written_for:
            return ""
        return (f"Written when {self.written_for} run(s) of these studies had finished; these results hold "
                f"{finished_runs}. Read it against the tables above.")  # fmt: skip


def path_for(campaign: Path) -> Path:
    return campaign.with_name(campaign.stem + SUFFIX)


def load(path: Path, seed_ids: set[str]) -> dict[str, Discussion]:
    """The readings of a file by subject (a seed id or HANDOFFS); {} when the file does not exist."""
    if not path.exists():
        return {}
    data = read_toml(path, DiscussionError)
    unknown = sorted(set(data) - {"reading"})
    if unknown:
        raise DiscussionError(f"{path}: unknown top-level field(s) {unknown} (only [[reading]] tables)")
    subjects = seed_ids | {HANDOFFS}
    found: dict[str, Discussion] = {}
    for number, item in enumerate(data.get("reading", [])):
        where = f"{path}: reading[{number}]"
        if not isinstance(item, dict):
            raise DiscussionError(f"{where}: must be a table")
        extra, missing = sorted(set(item) - FIELDS), sorted(FIELDS - set(item))
        if extra or missing:
            raise DiscussionError(f"{where}: " + "; ".join(filter(None, [extra and f"unknown field(s) {extra}", missing and f"missing {missing}"])))
        about, written_for, text = item["about"], item["written_for"], item["text"]
        if about not in subjects:
            raise DiscussionError(f"{where}.about: {about!r} is neither a seed of analysis/data/seeds.toml nor {HANDOFFS!r} "
                                  f"({', '.join(sorted(subjects))})")  # fmt: skip
        if about in found:
            raise DiscussionError(f"{where}.about: {about} has two readings")
        if isinstance(written_for, bool) or not isinstance(written_for, int) or written_for < 0:
            raise DiscussionError(f"{where}.written_for: must be a count of runs (an integer >= 0), not {written_for!r}")
        if not isinstance(text, str) or not text.strip():
            raise DiscussionError(f"{where}.text: must be non-empty text")
        paragraphs = tuple(" ".join(p.split("\n")).strip() for p in text.strip().split("\n\n") if p.strip())
        found[about] = Discussion(about, written_for, paragraphs)
    return found
