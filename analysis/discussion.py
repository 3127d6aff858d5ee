"""Our written reading of a campaign's results, per seed (`<campaign>.discussion.toml`).

The report's numbers are computed; what they mean for a seed's claim is
written by people, after reading them. The file sits next to the
campaign file and holds, per seed:

  [[seed]]
  id = "004"              # a seed of analysis/data/seeds.toml
  written_for = 8         # finished runs of the seed's study when written
  text = \"\"\"...\"\"\"       # paragraphs, Markdown, separated by blank lines

The report prints the text under the seed's tables and, when the results
now hold another number of finished runs of the study, says so above it:
the text was written for other numbers and must be read against the
tables. Errors name the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lockstudy.files import read_toml

SUFFIX = ".discussion.toml"
FIELDS = {"id", "written_for", "text"}


class DiscussionError(ValueError):
    """A discussion file that cannot be read as described above."""


@dataclass(frozen=True)
class Discussion:
    seed_id: str
    written_for: int
    paragraphs: tuple[str, ...]

    def staleness(self, finished_runs: int) -> str:
        """A warning when the results changed since the text was written, else ""."""
        if finished_runs == self.written_for:
            return ""
        return (f"Written when {self.written_for} run(s) of this study had finished; these results hold "
                f"{finished_runs}. Read it against the tables above.")  # fmt: skip


def path_for(campaign: Path) -> Path:
    return campaign.with_name(campaign.stem + SUFFIX)


def load(path: Path, seed_ids: set[str]) -> dict[str, Discussion]:
    """The discussions of a file by seed id; {} when the file does not exist."""
    if not path.exists():
        return {}
    data = read_toml(path, DiscussionError)
    unknown = sorted(set(data) - {"seed"})
    if unknown:
        raise DiscussionError(f"{path}: unknown top-level field(s) {unknown} (only [[seed]] tables)")
    found: dict[str, Discussion] = {}
    for number, item in enumerate(data.get("seed", [])):
        where = f"{path}: seed[{number}]"
        if not isinstance(item, dict):
            raise DiscussionError(f"{where}: must be a table")
        extra, missing = sorted(set(item) - FIELDS), sorted(FIELDS - set(item))
        if extra or missing:
            raise DiscussionError(f"{where}: " + "; ".join(filter(None, [extra and f"unknown field(s) {extra}", missing and f"missing {missing}"])))
        seed_id, written_for, text = item["id"], item["written_for"], item["text"]
        if seed_id not in seed_ids:
            raise DiscussionError(f"{where}.id: {seed_id!r} is not a seed of analysis/data/seeds.toml ({', '.join(sorted(seed_ids))})")
        if seed_id in found:
            raise DiscussionError(f"{where}.id: seed {seed_id} is discussed twice")
        if isinstance(written_for, bool) or not isinstance(written_for, int) or written_for < 0:
            raise DiscussionError(f"{where}.written_for: must be a count of runs (an integer >= 0), not {written_for!r}")
        if not isinstance(text, str) or not text.strip():
            raise DiscussionError(f"{where}.text: must be non-empty text")
        paragraphs = tuple(" ".join(p.split("\n")).strip() for p in text.strip().split("\n\n") if p.strip())
        found[seed_id] = Discussion(seed_id, written_for, paragraphs)
    return found
