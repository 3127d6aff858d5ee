"""Every figure kind of the report, drawn from the committed tables of the study's first pass
(results/seeds-first-pass/*.csv, which no longer change).

The runs behind those tables are not in the repository, so the report
cannot be run again on them; its figures' inputs can be rebuilt from the
tables it wrote, shaped as report.py shapes them, and handed to the same
plot functions. The committed metrics.csv predates the `trace` column, so
its means pool every run of a size (as the committed figures did).

`figure_inputs()` gives one `PlotInput` per figure: the committed figures'
names, plus `seed-NNN-as-committed` from the claims tables of the committed
report.md, which predate claims.csv's merging of claims resting on the same
runs: the numbers the committed seed figures were drawn from (seed 004's
has 15 bars of long names). Run as a script to write every figure as PNG and
SVG into a folder, to look at them:

    python -m tests.plot_inputs OUT_DIR
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure as MplFigure

from analysis.reporting import plots, report
from analysis.reporting.chart_points import mean_and_interval_by
from analysis.seed_verdicts.seeds import load_seeds
from analysis.statistics.configurations import rate_of
from analysis.traffic import handoffs
from lockstudy.paths import ROOT

SEEDS_RESULTS = ROOT / "results" / "seeds-first-pass"
SEEDS = {seed.id: seed for seed in load_seeds()}
FALLBACK_RATE = "ops_per_sim_s"  # the ROI's rate, for a testcase whose guest rate this table lacks
FALLBACK_RATE_LABEL = "operations per simulated second"
COMMITTED_CLAIMS_CAPTION = re.compile(r"^\*\*Table \d+\.\*\* Seed (?P<seed>\d+): claims, published and ours$")


@dataclass(frozen=True)
class PlotInput:
    """One figure: the plot function's name, its table and its options (as report.py passes them)."""

    stem: str
    kind: str  # "lines", "stacked" or "claims"
    table: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)

    def draw(self, rules: plots.Readability | None = None) -> tuple[MplFigure, str]:
        return DRAW[self.kind](self.table, rules=rules, **self.options)

    def save(self, folder: Path, rules: plots.Readability | None = None) -> plots.Figure:
        return SAVE[self.kind](self.table, path_stem=folder / self.stem, rules=rules, **self.options)


def _without_rules(function: Callable[..., Any]) -> Callable[..., Any]:
    """stacked_bars takes no rules (its axis is always linear)."""

    def call(table: pd.DataFrame, *, rules: plots.Readability | None = None, **options: Any) -> Any:
        return function(table, **options)

    return call


DRAW: dict[str, Callable[..., tuple[MplFigure, str]]] = {
    "lines": plots.draw_lines_vs_size,
    "stacked": _without_rules(plots.draw_stacked_bars),
    "claims": plots.draw_claim_ratios,
    "dots": plots.draw_interval_dots,
}
SAVE: dict[str, Callable[..., plots.Figure]] = {
    "lines": plots.lines_vs_size,
    "stacked": _without_rules(plots.stacked_bars),
    "claims": plots.claim_ratios,
    "dots": plots.interval_dots,
}


def read_tables(folder: Path = SEEDS_RESULTS) -> dict[str, pd.DataFrame]:
    return {
        "metrics": pd.read_csv(folder / "metrics.csv", dtype={"run_id": str}),
        "locks": pd.read_csv(folder / "locks.csv", dtype={"run_id": str}, keep_default_na=False, na_values=[""]),
        "claims": pd.read_csv(folder / "claims.csv", dtype={"seed": str, "window": str}),
    }


def handoff_inputs(metrics: pd.DataFrame) -> list[PlotInput]:
    bounds = handoffs.load_bounds()
    rows = report.kbench_rows(metrics)
    inputs = []
    for machine, group in rows.groupby("machine"):
        points = group.groupby(["variant", "cpus"], as_index=False)[bounds.metric].mean()
        options = dict(
            y=bounds.metric, x="cpus", series="variant", title=f"{machine}: coherence requests per hand-off",
            ylabel="requests per hand-off", xlabel="CPUs",
            reference=handoffs.reference_lines(handoffs.contended(group, bounds), bounds),
        )  # fmt: skip
        inputs.append(PlotInput(f"handoff-{machine}", "lines", points, options))
    return inputs


def throughput_inputs(metrics: pd.DataFrame) -> list[PlotInput]:
    inputs = []
    for (machine, testcase), group in metrics.groupby(["machine", "testcase"]):
        if str(testcase).startswith(report.CALIBRATION_PREFIX):
            continue
        rate, source = rate_of(str(testcase))
        if rate not in group or group[rate].isna().all():
            rate, source = FALLBACK_RATE, FALLBACK_RATE_LABEL
        series = "variant" if testcase == report.KBENCH else "boot_args"
        named = group.assign(boot_args=group["boot_args"].fillna("").replace("", "default boot"))
        points = named.groupby([series, "cpus"], as_index=False)[rate].mean()
        if points["cpus"].nunique() < 2:
            continue
        options = dict(y=rate, x="cpus", series=series, title=f"{machine}, {testcase}: throughput",
                       ylabel=f"{rate} ({source})", xlabel="CPUs")  # fmt: skip
        inputs.append(PlotInput(f"throughput-{machine}-{testcase}", "lines", points, options))
    return inputs


def throughput_dots_input(metrics: pd.DataFrame) -> PlotInput:
    """dd1b's rate per boot and size as one dot a configuration, with its interval where it ran twice: the
    chart report.py draws for a workload whose configurations are mostly at one size (its fd lock
    variants on one CPU on the O3 and timing CPUs, in the study's rerun)."""
    group = metrics[metrics["testcase"] == "dd1b"]
    named = group.assign(boot_args=group["boot_args"].fillna("").replace("", "default boot"))
    if "trace" not in named:  # the committed table predates the column: every run of a size pooled (module docstring)
        named = named.assign(trace="off")
    points = mean_and_interval_by(named, ["boot_args", "roi_cpu", "cpus"], FALLBACK_RATE)
    labels = [f"{boot}, roi_cpu={cpu}, {cpus:g} CPU(s)" for boot, cpu, cpus in zip(points["boot_args"], points["roi_cpu"], points["cpus"])]
    points = points.assign(configuration=labels)
    options = dict(category="configuration", value=FALLBACK_RATE, title="piii-smp, dd1b: throughput",
                   xlabel=f"{FALLBACK_RATE} ({FALLBACK_RATE_LABEL})", interval=("ci_low", "ci_high"))  # fmt: skip
    return PlotInput("throughput-piii-smp-dd1b-dots", "dots", points, options)


def numa_handoff_input(metrics: pd.DataFrame) -> PlotInput:
    numa = report.kbench_rows(metrics[metrics["kind"] == "ruby-numa"])
    stacked = numa.groupby(["variant", "nodes"], as_index=False)[["handoffs_local", "handoffs_remote"]].mean()
    long = stacked.melt(id_vars=["variant", "nodes"], value_vars=["handoffs_local", "handoffs_remote"], var_name="hand-off", value_name="count")
    long["case"] = long["variant"] + " / " + long["nodes"].astype(str) + " nodes"
    options = dict(category="case", stack="hand-off", value="count", title="Hand-offs on the node and to another node",
                   ylabel="hand-offs per ROI")  # fmt: skip
    return PlotInput("numa-handoffs", "stacked", long, options)


def lockline_inputs(locks: pd.DataFrame) -> list[PlotInput]:
    bench = locks[(locks["testcase"] == report.KBENCH) & (locks["lock"] == report.BENCH_LOCK)]
    inputs = []
    for machine, group in bench.groupby("machine"):
        points = group.groupby(["variant", "cpus"], as_index=False)[report.LOCK_LINE_METRIC].mean()
        if points["cpus"].nunique() < 2:
            continue
        options = dict(y=report.LOCK_LINE_METRIC, x="cpus", series="variant",
                       title=f"{machine}: requests for the lock's line per hand-off (trace)",
                       ylabel="home-bank requests per hand-off", xlabel="CPUs")  # fmt: skip
        inputs.append(PlotInput(f"lockline-{machine}", "lines", points, options))
    return inputs


def busiest_locks_input(locks: pd.DataFrame, metrics: pd.DataFrame) -> PlotInput:
    if "kernel_build" not in locks:  # locks.csv written before it had the column: each run's build from metrics.csv
        locks = locks.merge(metrics[["run_id", "kernel_build"]].drop_duplicates("run_id"), on="run_id", how="left")
    table = report.busiest_lock_lines(report.seed_lock_rows(locks))
    options = dict(category="case", stack="event", value="count",
                   title=f"The {table['case'].nunique()} busiest lock lines of the seeds' traced runs (mean over a configuration's runs)",
                   ylabel="events in the ROI")  # fmt: skip
    return PlotInput("locks", "stacked", table, options)


def _markdown_cells(line: str) -> list[str]:
    """The cells of one Markdown table row as report_render writes it (`\\` escapes, ` | ` between cells)."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [re.sub(r"\\(.)", r"\1", cell.strip()) for cell in cells]


def committed_report_claims(report_md: Path = SEEDS_RESULTS / "report.md") -> dict[str, pd.DataFrame]:
    """Per seed, the claims table of the committed report.md: the numbers its seed-NNN.png were drawn from
    (one row per claim, before claims resting on the same runs were merged)."""
    lines = report_md.read_text(encoding="utf-8").splitlines()
    tables: dict[str, pd.DataFrame] = {}
    for index, line in enumerate(lines):
        found = COMMITTED_CLAIMS_CAPTION.search(line)
        if not found:
            continue
        header = _markdown_cells(lines[index + 2])
        rows = []
        for row in lines[index + 4 :]:
            if not row.startswith("|"):
                break
            rows.append(dict(zip(header, _markdown_cells(row))))
        frame = pd.DataFrame(rows, columns=header)
        for column in ("published_ratio", "ours_ratio", "copies"):
            frame[column] = pd.to_numeric(frame[column].replace("", None), errors="coerce")
        tables[found["seed"]] = frame.rename(columns={"ours_ratio": "ratio"}).assign(window="")
    return tables


def seed_input(seed: str, claims: pd.DataFrame, stem: str) -> PlotInput | None:
    judged = claims[claims["ratio"].notna()]
    if judged.empty:
        return None
    judged = report.claim_advantages(judged, SEEDS[seed])
    options = dict(key="case", title=f"Seed {seed}: a's advantage over b, published and ours")
    return PlotInput(stem, "claims", judged.reset_index(drop=True), options)


def seed_inputs(claims: pd.DataFrame) -> list[PlotInput]:
    """One figure per seed from claims.csv (as the report draws it now), and one per seed from the
    committed report.md's claims (`seed-NNN-as-committed`: the committed seed-NNN.png's numbers)."""
    inputs = [seed_input(str(seed), group, f"seed-{seed}") for seed, group in claims.groupby("seed", sort=True)]
    inputs += [seed_input(seed, group, f"seed-{seed}-as-committed") for seed, group in sorted(committed_report_claims().items())]
    return [plot_input for plot_input in inputs if plot_input is not None]


def figure_inputs(folder: Path = SEEDS_RESULTS) -> list[PlotInput]:
    tables = read_tables(folder)
    return [
        *handoff_inputs(tables["metrics"]),
        *throughput_inputs(tables["metrics"]),
        throughput_dots_input(tables["metrics"]),
        numa_handoff_input(tables["metrics"]),
        *lockline_inputs(tables["locks"]),
        busiest_locks_input(tables["locks"], tables["metrics"]),
        *seed_inputs(tables["claims"]),
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.plot_inputs OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    for plot_input in figure_inputs():
        figure = plot_input.save(out)
        print(figure.png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
