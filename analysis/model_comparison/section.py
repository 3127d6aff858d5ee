"""The report's section: the kbench sweep on node-local homes beside the interleaved model."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.model_comparison.rules import ComparisonRules, load_rules
from analysis.model_comparison.table import comparison_table
from analysis.reporting import plots
from analysis.reporting.report_render import Section, Table

FIGURES = "figures"
MISSING_MODEL = {
    "interleaved": "no kbench run of {machine} in these results: its runs need a MESI_Two_Level gem5 (campaigns/README.md)",
    "node_local": "no kbench run of {machine} in these results: its runs need a CHI gem5 with lockstudy's extra (gem5-extras/README.md)",
}


def _shown(mean: float, low: float, high: float, n: int) -> str:
    """"0.52 [0.49, 0.55] n=5", or without an interval for one run."""
    interval = f" [{low:.3g}, {high:.3g}]" if math.isfinite(low) and math.isfinite(high) else ""
    return f"{mean:.3g}{interval} n={n}"


def side_by_side(table: pd.DataFrame, metric: str, rules: ComparisonRules) -> pd.DataFrame:
    """One row per size and variant: each model's mean [interval] n for `metric`."""
    rows = table[table["metric"] == metric]
    cells = rows.assign(value=[_shown(r.mean, r.ci_low, r.ci_high, r.n) for r in rows.itertuples()])
    wide = cells.pivot_table(index=["nodes", "cpus", "variant"], columns="machine", values="value", aggfunc="first")
    wide = wide.reindex(columns=[m for m in rules.machines if m in wide.columns]).fillna("-")
    return wide.reset_index().rename_axis(columns=None)


def _figure(table: pd.DataFrame, metric_column: str, label: str, rules: ComparisonRules, out: Path) -> plots.Figure | None:
    rows = table[table["metric"] == metric_column]
    new = rows[rows["machine"] == rules.node_local][["variant", "nodes", "mean"]]
    old = rows[rows["machine"] == rules.interleaved]
    if new["nodes"].nunique() < 2:
        return None
    reference = {str(variant): list(zip(group["nodes"].astype(float), group["mean"])) for variant, group in old.groupby("variant")}
    return plots.lines_vs_size(
        new.rename(columns={"mean": metric_column}), y=metric_column, x="nodes", series="variant",
        title=f"kbench, {label}: node-local homes (solid) and interleaved (dashed)",
        ylabel=label, xlabel="nodes (2 CPUs each)", reference=reference, reference_name=f"{rules.interleaved}",
        path_stem=out / FIGURES / f"models-{metric_column.replace('.', '-')}",
    )  # fmt: skip


def model_comparison_section(table: pd.DataFrame, out: Path, rules: ComparisonRules | None = None) -> tuple[Section | None, pd.DataFrame]:
    """The section and model_comparison.csv's rows; no section when neither model ran kbench."""
    rules = rules or load_rules()
    compared = comparison_table(table, rules)
    if compared.empty:
        return None, compared
    section = Section(f"The two NUMA models: {rules.node_local} against {rules.interleaved}")
    section.paragraphs.append(
        f"The kbench sweep on {rules.node_local} (each address homed on the node whose memory holds it) and on "
        f"{rules.interleaved} (the first model: homes line-interleaved across all nodes), untraced runs only. Each cell "
        "is the mean over a configuration's repeats with its 95 % interval and n (analysis/data/statistics.toml); "
        "model_comparison.csv has every value and the runs behind it."
    )
    present = set(compared["machine"])
    for role, machine in (("node_local", rules.node_local), ("interleaved", rules.interleaved)):
        if machine not in present:
            section.paragraphs.append(MISSING_MODEL[role].format(machine=machine) + ".")
    for metric in rules.metrics:
        if metric.column not in set(compared["metric"]):
            continue
        section.tables.append(Table(f"{metric.label} ({metric.source})", side_by_side(compared, metric.column, rules)))
        figure = _figure(compared, metric.column, metric.label, rules, out)
        if figure is not None:
            section.figures.append(figure)
    return section, compared
