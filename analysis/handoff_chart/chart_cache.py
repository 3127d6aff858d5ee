"""A drawn chart kept in the machine's trace cache, so that a second report does not draw it again.

Drawing one hand-off of a kbench trace means rebuilding every message on
the lock's line (messages.reconstruct) and laying the chart out: minutes a
chart, although a finished run's trace never changes. The chart's three
renderings and its facts are kept in the trace cache
(analysis/traffic/trace_cache.py) under `handoff-charts/<lock>-<choice>/`
(the choice: `median`, `index-K` or `tick-T`), one file per trace, with
what they were made from:

- the trace's identity (path, size, modification time) and the sha256 of
  the run's result.json (a run's status adds a note to its chart);
- the lock and the hand-off asked for (--index, --tick or the median);
- the code that draws: draw.py and the modules of analysis/handoff_chart/
  and analysis/traffic/ it imports, directly or through each other, the
  data files they name, the protocol rules (code_identity.py), and
  matplotlib's version (the PNG).

Anything else and the chart is drawn again. The provenance.json beside the
charts is written by the caller either way, from the run as it is now, with
the trace's sha256 kept here (a run restored from the run archive has no
trace to hash).

The report's teaching page draws the median hand-off of its lock, and the
run archive (lockstudy/archive/) keeps that chart in a restored run's
derived file, like the other readers' results: a report made from the
archive draws the same page, while the code that drew it is today's.
"""

from __future__ import annotations

import base64
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.handoff_chart import code_identity
from analysis.traffic import trace_cache
from lockstudy.files import file_sha256

FOLDER = "handoff-charts"  # the trace cache's folder for drawn charts
HANDOFF_CHART_DIR = Path(__file__).resolve().parent
DRAWING_MODULE = HANDOFF_CHART_DIR / "draw.py"  # draws a chart; the teaching page around it is not in the key
PROJECT_DIR = HANDOFF_CHART_DIR.parents[1]
# The packages followed: the chart's own and the trace reader's. The run
# readers and the hot-line naming they reach (analysis/gem5_output/,
# analysis/hotlines/, lockstudy/) are not: a chart restored from the run
# archive has no trace to be drawn again from, and a key that changed with
# every module those reach would lose it for changes that draw nothing.
PROJECT_PACKAGES = ("analysis.handoff_chart", "analysis.traffic")
SHARED_DATA_DIR = HANDOFF_CHART_DIR.parent / "data"
RULES_DIR = HANDOFF_CHART_DIR / "data"  # protocol_rules.py names its files by protocol, not by a constant
SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class HandoffFacts:
    """What a drawn hand-off is, as provenance.json and the teaching page's caption give it."""

    lock: str
    handoff: int
    handoffs: int
    chosen: str
    from_cpu: int
    to_cpu: int
    messages: int
    between_nodes: int
    ticks: tuple[int, int]
    ns: float

    def as_json(self) -> dict[str, Any]:
        facts = asdict(self)
        facts["ticks"] = list(self.ticks)
        return facts

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HandoffFacts:
        start, end = data["ticks"]
        return cls(
            lock=str(data["lock"]), handoff=int(data["handoff"]), handoffs=int(data["handoffs"]), chosen=str(data["chosen"]),
            from_cpu=int(data["from_cpu"]), to_cpu=int(data["to_cpu"]), messages=int(data["messages"]),
            between_nodes=int(data["between_nodes"]), ticks=(int(start), int(end)), ns=float(data["ns"]),
        )  # fmt: skip


@dataclass(frozen=True)
class Rendered:
    """One chart in its three forms, and the sha256 of the trace it was drawn from."""

    text: str
    svg: str
    png: bytes
    trace_sha256: str


def code_sources() -> tuple[str, ...]:
    """The files whose change may change a drawn chart, in a stable order (code_identity.py: how they are found)."""
    reached = code_identity.reached_sources(DRAWING_MODULE, PROJECT_DIR, PROJECT_PACKAGES, SHARED_DATA_DIR)
    return tuple(str(path) for path in sorted({*reached, *RULES_DIR.glob("*.toml")}))


def made_from(trace: Path, result_file: Path, lock: str, index: int | None, tick: int | None) -> dict[str, Any]:
    import matplotlib

    return {
        **trace_cache.trace_identity(trace),
        "result_sha256": file_sha256(result_file) if result_file.is_file() else None,
        "lock": lock,
        "index": index,
        "tick": tick,
        "code": trace_cache.code_digest(*code_sources()),
        "matplotlib": matplotlib.__version__,
    }


def lock_slug(lock: str) -> str:
    """A lock's name as a file name: `bench:lock` -> `bench_lock` (the chart files and the cache's folders)."""
    return SLUG.sub("_", lock).strip("_")


def folder(lock: str, index: int | None, tick: int | None) -> str:
    """The trace cache's folder of one lock's charts drawn by one choice of hand-off."""
    choice = f"index-{index}" if index is not None else f"tick-{tick}" if tick is not None else "median"
    return f"{FOLDER}/{lock_slug(lock)}-{choice}"


def kept(trace: Path, made: dict[str, Any], where: str) -> tuple[Rendered, HandoffFacts] | None:
    """The chart drawn from exactly `made` (from the cache, or a restored run's derived file), or None: draw it again."""
    data = trace_cache.load_kept(where, trace, made)
    if data is None:
        return None
    try:
        png = base64.b64decode(data["png"], validate=True)
        rendered = Rendered(str(data["text"]), str(data["svg"]), png, str(data["trace_sha256"]))
        return rendered, HandoffFacts.from_json(data["facts"])
    except (KeyError, TypeError, ValueError):
        return None


def keep(trace: Path, made: dict[str, Any], where: str, rendered: Rendered, facts: HandoffFacts) -> None:
    """Keep the drawn chart; a cache that cannot be written is skipped (trace_cache.store)."""
    trace_cache.store(trace_cache.cache_file(where, trace), {
        "made_from": made, "facts": facts.as_json(), "text": rendered.text, "svg": rendered.svg,
        "png": base64.b64encode(rendered.png).decode("ascii"), "trace_sha256": rendered.trace_sha256,
    })  # fmt: skip
