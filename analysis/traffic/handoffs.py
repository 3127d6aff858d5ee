"""Messages per contended hand-off against the analytical bound, per variant.

From the metrics table (analysis/traffic/metrics.py): the kbench ROIs, per
machine and variant, the measured coherence requests per hand-off at each
size, the least-squares slope against the number of waiters W = CPUs - 1
over the largest sizes (the orders are asymptotic; bounds.toml says why),
and the order that slope shows next to the order the theory gives
(analysis/data/bounds.toml, with its sources). `reference_lines()` gives
the bound drawn through each variant's smallest measured size.

The slope is judged by its interval, as every verdict of the report is
(issue 17): the least-squares slope is a weighted sum of the sizes' means,
slope = sum c_i m_i with c_i = (W_i - mean W) / sum (W_j - mean W)^2, so
its variance is sum c_i^2 s_i^2 / n_i (the sizes' repeats are independent)
and its interval Student's t at analysis/data/statistics.toml's level with
min(n_i) - 1 degrees of freedom (the conservative choice of
analysis/statistics/intervals.py). The order is O(N) when the whole
interval is at or above bounds.toml's slope_per_waiter, O(1) when it is
below; otherwise, or when a size has one run, the verdict is inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from analysis.statistics.intervals import t_quantile
from analysis.statistics.pooling import row_parameters
from analysis.statistics.rules import StatisticsRules
from analysis.statistics.rules import load_rules as load_statistics_rules
from lockstudy.files import read_toml

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "bounds.toml"
ORDERS = ("1", "N")
KBENCH = "kbench"
ACQUISITIONS = "acquisitions"  # the guest's count of the bench lock's acquisitions
HANDOFF_SHARE = "handoffs_per_acquisition"


class BoundsError(ValueError):
    """A bounds file that cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class Bound:
    variant: str
    order: str
    per_waiter: float
    expected: str


@dataclass(frozen=True)
class Bounds:
    metric: str
    slope_per_waiter: float
    min_waiters: int
    asymptotic_sizes: int
    variants: dict[str, Bound]
    kbench_parameters: tuple[str, ...] = ("variant", "duration_ms", "repeat")


@lru_cache(maxsize=None)
def load_bounds(path: Path = DATA_FILE) -> Bounds:
    data = read_toml(path, BoundsError)
    agreement = data.get("agreement")
    if not isinstance(agreement, dict):
        raise BoundsError(f"{path}: agreement: missing table")
    for key, kind in (("metric", str), ("slope_per_waiter", float), ("min_waiters", int), ("asymptotic_sizes", int)):
        if not isinstance(agreement.get(key), kind):
            raise BoundsError(f"{path}: agreement.{key}: {agreement.get(key)!r} is not a {kind.__name__}")
    variants: dict[str, Bound] = {}
    for index, entry in enumerate(data.get("variant", [])):
        where = f"{path}: variant[{index}]"
        if entry.get("order") not in ORDERS:
            raise BoundsError(f"{where}.order: {entry.get('order')!r} is not one of {ORDERS}")
        if not isinstance(entry.get("per_waiter"), float) or entry["per_waiter"] < 0:
            raise BoundsError(f"{where}.per_waiter: {entry.get('per_waiter')!r} is not a number >= 0")
        for key in ("name", "expected"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise BoundsError(f"{where}.{key}: missing")
        if entry["name"] in variants:
            raise BoundsError(f"{where}.name: {entry['name']!r} appears twice")
        variants[entry["name"]] = Bound(entry["name"], entry["order"], entry["per_waiter"], entry["expected"])
    parameters = agreement.get("kbench_parameters")
    if not isinstance(parameters, list) or not parameters or not all(isinstance(p, str) and p for p in parameters):
        raise BoundsError(f"{path}: agreement.kbench_parameters: {parameters!r} is not a list of parameter names")
    if agreement["asymptotic_sizes"] < 2:
        raise BoundsError(f"{path}: agreement.asymptotic_sizes: {agreement['asymptotic_sizes']} < 2: a slope needs two sizes")
    return Bounds(agreement["metric"], agreement["slope_per_waiter"], agreement["min_waiters"], agreement["asymptotic_sizes"], variants,
                  tuple(parameters))  # fmt: skip


def slope_weights(waiters: list[float]) -> list[float] | None:
    """The c_i of the least-squares slope, slope = sum c_i v_i; None with fewer than two distinct sizes."""
    if len(waiters) < 2:
        return None
    mean_w = sum(waiters) / len(waiters)
    spread = sum((w - mean_w) ** 2 for w in waiters)
    return [(w - mean_w) / spread for w in waiters] if spread else None


@dataclass(frozen=True)
class Slope:
    """The least-squares slope of the sizes' means against the waiters, with its interval (NaN without one)."""

    value: float
    low: float
    high: float
    runs: tuple[int, ...]  # repeats behind each size's mean

    def order(self, threshold: float) -> str:
        """ "N" or "1" where the interval settles it against `threshold`; "" where it does not."""
        if math.isnan(self.low) or math.isnan(self.high):
            return ""
        if self.low >= threshold:
            return "N"
        return "1" if self.high < threshold else ""


def slope_interval(waiters: list[float], samples: list[list[float]], rules: StatisticsRules | None = None) -> Slope:
    """The slope of the samples' means against `waiters`, and its Student-t interval (module docstring)."""
    rules = rules or load_statistics_rules()
    means = [sum(values) / len(values) for values in samples]
    runs = tuple(len(values) for values in samples)
    weights = slope_weights(waiters)
    if weights is None:
        return Slope(math.nan, math.nan, math.nan, runs)
    value = sum(c * m for c, m in zip(weights, means))
    if min(runs) < 2:
        return Slope(value, math.nan, math.nan, runs)
    variance = sum(c * c * sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values)
                   for c, values, m in zip(weights, samples, means))  # fmt: skip
    half = t_quantile(rules.level, min(runs) - 1, rules.integration_points, rules.bisection_steps) * math.sqrt(variance)
    return Slope(value, value - half, value + half, runs)


def sweep_runs(table: pd.DataFrame, testcase: str = KBENCH, bounds: Bounds | None = None) -> pd.DataFrame:
    """The rows of `testcase` (kbench) that belong to its sweep over sizes: no run-spec parameter beyond
    bounds.toml's kbench_parameters. A placement=... run (seed 000's false sharing) or the bench's rwsem
    (lock=rwsem, seed 003's wakers) is another experiment, judged in its seed's section. The one rule
    for the hand-off bound, the model comparison and the per-lock hand-off rows."""
    if table.empty or "testcase" not in table:
        return table.iloc[0:0]
    rows = table[table["testcase"] == testcase]
    if rows.empty or "run_spec" not in rows:
        return rows
    allowed = set((bounds or load_bounds()).kbench_parameters)
    return rows[[set(params) <= allowed for params in row_parameters(rows)]]


def handoff_runs(table: pd.DataFrame, bounds: Bounds | None = None) -> pd.DataFrame:
    """The kbench ROIs that measure hand-offs: the sweep's (`sweep_runs`), contended (hand-offs counted)."""
    rows = sweep_runs(table, KBENCH, bounds)
    return rows[rows["handoffs"] > 0] if "handoffs" in rows else rows.iloc[0:0]


def contended(table: pd.DataFrame, bounds: Bounds, metric: str | None = None) -> pd.DataFrame:
    """The kbench ROIs with contended hand-offs: one mean value per machine, variant and size."""
    metric = metric or bounds.metric
    rows = handoff_runs(table, bounds)
    rows = rows[rows["cpus"] - 1 >= bounds.min_waiters]
    rows = rows.assign(waiters=rows["cpus"] - 1)
    keys = ["machine", "variant", "cpus", "nodes", "waiters"]
    points = rows.groupby(keys, as_index=False)[metric].mean()
    if ACQUISITIONS in rows:
        # The share of acquisitions that passed the lock to another CPU: when
        # the releasing CPU mostly takes the lock again, few hand-offs carry
        # all the waiters' traffic and a per-hand-off count measures that.
        sums = rows.groupby(keys, as_index=False)[["handoffs", ACQUISITIONS]].sum()
        points[HANDOFF_SHARE] = (sums["handoffs"] / sums[ACQUISITIONS]).to_numpy()
    return points


def bound_table(table: pd.DataFrame, bounds: Bounds | None = None, metric: str | None = None) -> pd.DataFrame:
    """Per machine and variant: measured values by size, slope, expected and measured order, agreement.

    `metric` is the per-hand-off column judged (bounds.toml's by default;
    the per-lock table's `home_requests_per_handoff` judges the bench
    lock's own line, from a trace)."""
    bounds = bounds or load_bounds()
    metric = metric or bounds.metric
    points = contended(table, bounds, metric)
    runs = handoff_runs(table, bounds)
    out = []
    for (machine, variant), group in points.groupby(["machine", "variant"]):
        group = group.sort_values("cpus")
        largest = group.tail(bounds.asymptotic_sizes)
        mine = runs[(runs["machine"] == machine) & (runs["variant"] == variant)]
        samples = [mine.loc[mine["cpus"] == cpus, metric].dropna().astype(float).tolist() for cpus in largest["cpus"]]
        measured = slope_interval(list(largest["waiters"].astype(float)), samples)
        measured_slope = measured.value
        measured_order = measured.order(bounds.slope_per_waiter)
        bound = bounds.variants.get(variant)
        if bound is None:
            verdict = "no bound for this variant"
        elif math.isnan(measured_slope):
            verdict = "one size only: no slope"
        elif math.isnan(measured.low):
            verdict = "inconclusive (n=1)"
        elif not measured_order:
            verdict = f"inconclusive: the slope's interval spans {bounds.slope_per_waiter:g}"
        else:
            verdict = "agrees" if measured_order == bound.order else "disagrees"
        out.append({
            "machine": machine,
            "variant": variant,
            "sizes": " ".join(f"{int(c)}" for c in group["cpus"]),
            "per_handoff": " ".join(f"{v:.1f}" for v in group[metric]),
            **({HANDOFF_SHARE: " ".join(f"{v:.2f}" for v in group[HANDOFF_SHARE])} if HANDOFF_SHARE in group else {}),
            "slope_sizes": " ".join(f"{int(c)}" for c in largest["cpus"]),
            "runs": " ".join(str(n) for n in measured.runs),
            "slope_per_waiter": measured_slope,
            "slope_ci_low": measured.low,
            "slope_ci_high": measured.high,
            "expected_order": f"O({bound.order})" if bound else "",
            "measured_order": f"O({measured_order})" if measured_order else "",
            "verdict": verdict,
        })  # fmt: skip
    return pd.DataFrame(out)


def reference_lines(points: pd.DataFrame, bounds: Bounds | None = None) -> dict[str, list[tuple[float, float]]]:
    """The bound of each variant drawn through its smallest measured size: variant -> (cpus, value) pairs."""
    bounds = bounds or load_bounds()
    lines: dict[str, list[tuple[float, float]]] = {}
    for variant, group in points.groupby("variant"):
        bound = bounds.variants.get(str(variant))
        if bound is None:
            continue
        group = group.sort_values("cpus")
        first = group.iloc[0]
        lines[str(variant)] = [
            (float(cpus), float(first[bounds.metric]) + bound.per_waiter * (float(cpus) - float(first["cpus"])))
            for cpus in group["cpus"]
        ]
    return lines
