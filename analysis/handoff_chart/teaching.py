"""The report's teaching page: one typical hand-off of each spinlock variant, side by side.

For each machine of the results and each variant of analysis/data/bounds.toml,
the first traced kbench run at the page's size
(analysis/data/handoff_teaching.toml) gives
its median hand-off of the bench lock, drawn as a message sequence chart
(draw.py) into the report's folder. Each chart's caption says what to
notice, its message count and the variant's analytical order. A run the
chart cannot read (say, a protocol without rules yet) is named with its
reason instead of a chart; the report is never stopped by it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.gem5_output.runs import Results
from analysis.handoff_chart.draw import draw
from analysis.handoff_chart.errors import HandoffInputError
from analysis.reporting.plots import Figure
from analysis.reporting.report_render import Section
from analysis.traffic.handoffs import load_bounds

TEACHING_FILE = Path(__file__).resolve().parent.parent / "data" / "handoff_teaching.toml"
KBENCH = "kbench"
FOLDER = "handoffs"  # inside the report's folder
CAPTION_LINES = 2


class TeachingDataError(ValueError):
    """analysis/data/handoff_teaching.toml is not what its header says."""


@dataclass(frozen=True)
class TeachingPage:
    lock: str
    sizes: dict[str, int]
    captions: dict[str, tuple[str, ...]]


def load_teaching(path: Path = TEACHING_FILE) -> TeachingPage:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TeachingDataError(f"{path}: {exc}") from None
    lock, sizes, captions = data.get("lock"), data.get("size"), data.get("caption")
    if not isinstance(lock, str) or not lock:
        raise TeachingDataError(f"{path}: lock: {lock!r}: must be a lock's registry name")
    if not isinstance(sizes, dict) or not all(isinstance(v, int) and v > 0 for v in sizes.values()):
        raise TeachingDataError(f"{path}: [size]: {sizes!r}: must map machine names to positive sizes")
    if not isinstance(captions, dict):
        raise TeachingDataError(f"{path}: [caption]: must map variants to their lines")
    for variant, lines in captions.items():
        if not isinstance(lines, list) or len(lines) != CAPTION_LINES or not all(isinstance(x, str) and x for x in lines):
            raise TeachingDataError(f"{path}: caption.{variant}: must be {CAPTION_LINES} non-empty lines")
    return TeachingPage(lock, dict(sizes), {variant: tuple(lines) for variant, lines in captions.items()})


def _size_column(kind: str) -> str:
    return "nodes" if "numa" in kind else "cpus"


def traced_kbench_runs(table: pd.DataFrame, page: TeachingPage) -> pd.DataFrame:
    """One traced kbench run per (machine, variant) at the page's size, the first by run id."""
    if table.empty or not {"testcase", "trace", "machine", "kind", "variant"} <= set(table.columns):
        return table.iloc[0:0]
    rows = table[(table["testcase"] == KBENCH) & table["trace"].notna() & (table["trace"] != "off")]
    rows = rows[rows["machine"].isin(list(page.sizes))]
    at_size = rows.apply(lambda row: row[_size_column(str(row["kind"]))] == page.sizes[row["machine"]], axis=1) if not rows.empty else rows
    chosen = rows[at_size] if not rows.empty else rows
    return chosen.sort_values("run_id").drop_duplicates(["machine", "variant"])


def teaching_section(results: Results, table: pd.DataFrame, out: Path) -> Section | None:
    """The page, or None when no traced kbench run is at a page size."""
    page = load_teaching()
    runs = traced_kbench_runs(table, page)
    if runs.empty:
        return None
    bounds = load_bounds()
    expected = {name: bound.expected for name, bound in bounds.variants.items()}
    section = Section("Teaching: one hand-off of each lock, message by message")
    section.paragraphs.append(
        "For each spinlock variant, the median hand-off of the bench lock (by message count) in a traced kbench run, "
        f"at {', '.join(f'{size} {_size_column(machine)} on {machine}' for machine, size in page.sizes.items())}. "
        "Lanes are cache controllers grouped by node; arrows are coherence messages in tick order; red arrows cross "
        "between nodes (`./run.sh handoff RUN_DIR --lock bench:lock` draws any other hand-off)."
    )
    order = list(bounds.variants)
    runs = runs.assign(rank=runs["variant"].map({name: i for i, name in enumerate(order)})).sort_values(["machine", "rank"])
    for row in runs.itertuples():
        run = results.runs.get(str(row.run_id))
        gem5_dir = run.info.gem5_dir if run is not None else None
        if gem5_dir is None:
            continue
        try:
            drawn = draw(gem5_dir, page.lock, out=out / FOLDER / f"{row.machine}-{row.variant}")
        except HandoffInputError as exc:
            section.paragraphs.append(f"{row.machine}, {row.variant} (run {row.run_id}): no chart: {exc}")
            continue
        _, svg, png = drawn.files
        facts = drawn.facts
        notice = " ".join(page.captions.get(str(row.variant), ()))
        title = (f"{row.machine}, {row.variant}: {notice} {facts.messages} messages in this hand-off "
                 f"(hand-off {facts.handoff} of {facts.handoffs}, {facts.chosen}); "
                 f"the analytical order: {expected.get(str(row.variant), 'not in bounds.toml')}.")  # fmt: skip
        section.figures.append(Figure(title=title, png=png, svg=svg, alt=f"message sequence chart of a {row.variant} hand-off on {row.machine}"))
    return section
