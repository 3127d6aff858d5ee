"""The kbench sweep of the two altix-numa models as one table.

One row per model, size, variant and metric: the mean over the
configuration's repeats, n, and its interval (analysis/statistics). Runs
that measured different things are refused, as everywhere: traced runs
are left out (attribution only), and a size's runs of different windows
or perturbations are not pooled; two configurations of one model, size
and variant (say two kernel builds) are refused too, since the comparison
would have to pick one.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.model_comparison.rules import ComparisonRules, ModelComparisonError, load_rules
from analysis.statistics.configurations import configuration_spread, run_ids
from analysis.statistics.intervals import mean_interval
from analysis.statistics.pooling import check_poolable, split_traced
from analysis.traffic.handoffs import sweep_runs
from analysis.statistics.rules import StatisticsRules
from analysis.statistics.rules import load_rules as load_statistics_rules

SIZE_KEYS = ["machine", "nodes", "variant"]
COLUMNS = ["machine", "nodes", "cpus", "variant", "metric", "n", "mean", "ci_low", "ci_high", "ci_method", "runs"]


def sweep_rows(table: pd.DataFrame, rules: ComparisonRules) -> pd.DataFrame:
    """The untraced rows of the two models' sweep (analysis/traffic/handoffs.py sweep_runs: the rule the
    hand-off bound takes them by; traced runs serve attribution only)."""
    rows = sweep_runs(table, rules.testcase)
    rows = rows[rows["machine"].isin(rules.machines)] if "machine" in rows else rows.iloc[0:0]
    return split_traced(rows, what="model comparison")[0] if not rows.empty else rows


def _one_configuration(group: pd.DataFrame, statistics: StatisticsRules, named: str) -> None:
    spread = configuration_spread(group, statistics)
    if spread:
        raise ModelComparisonError(f"model comparison ({named}) compares one configuration, and this size {spread}; give `report` one campaign's sweep")


def comparison_table(table: pd.DataFrame, rules: ComparisonRules | None = None, statistics: StatisticsRules | None = None) -> pd.DataFrame:
    """Every (model, nodes, variant, metric) of the sweep: mean, n and interval over its repeats."""
    rules = rules or load_rules()
    statistics = statistics or load_statistics_rules()
    rows = sweep_rows(table, rules)
    out = []
    for (machine, nodes, variant), group in rows.groupby(SIZE_KEYS, sort=True):
        named = f"machine={machine}, nodes={nodes:g}, variant={variant}"
        check_poolable(group, statistics, f"model comparison ({named})")
        _one_configuration(group, statistics, named)
        for metric in rules.metrics:
            if metric.column not in group:
                continue
            measured = group[group[metric.column].notna()]
            values = measured[metric.column].astype(float)
            if values.empty or not values.map(math.isfinite).all():
                continue
            interval = mean_interval(values.tolist(), statistics, what=f"{named}, {metric.column}")
            if metric.bounds:
                interval = interval.clipped(*metric.bounds)
            out.append({
                "machine": machine, "nodes": int(nodes), "cpus": int(measured["cpus"].iloc[0]), "variant": variant,
                "metric": metric.column, "n": len(values), "mean": interval.estimate, "ci_low": interval.low,
                "ci_high": interval.high, "ci_method": interval.method,
                "runs": run_ids(measured),
            })  # fmt: skip
    return pd.DataFrame(out, columns=COLUMNS)
