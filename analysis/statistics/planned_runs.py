"""What a claim our runs cannot judge yet is waiting for: runs the campaign will make, or none.

A report of a campaign still running has claims whose runs are not there.
"not run" alone cannot tell a reader whether the campaign will make them
(its remaining studies do) or never will (no study of it runs that
configuration: the seed's dbench at 4 CPUs, say, where the budget runs
dbench at 8 only). Both answers come from the same matching the claims
use (analysis/seed_verdicts/seed_comparison.py), applied to the campaign's
declared runs that the results do not hold yet, as rows of the metrics
table's configuration columns.
"""

from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from analysis.seed_verdicts import seed_comparison
from analysis.seed_verdicts.seeds import Claim, Seed, Workload
from analysis.statistics.pooling import RUN_ID, split_traced, window_of
from analysis.statistics.rules import StatisticsRules
from analysis.traffic.metrics import MetricRules, load_metric_rules
from lockstudy.costmodel.plan import cpus_of
from lockstudy.campaign.spec import RunSpec
from lockstudy.run_spec import Item, parse_run_spec

# The harness parameter that sets a testcase's threads (workloads/harness.c); a
# testcase whose JSON prints no copies names its own (analysis/data/metrics.toml).
THREADS_PARAMETER = "threads"
NODES_UNIT = "nodes"
TO_COME = "to come"
NOT_PLANNED = "not in the campaign"


def _copies(item: Item, rules: MetricRules) -> float:
    """The copies a planned run's item will report, from its run spec; NaN where the spec leaves it to the guest."""
    named = rules.copies_arguments.get(item.testcase)
    value = item.params.get(named.argument, named.default) if named else item.params.get(THREADS_PARAMETER)
    try:
        return float(value) if value is not None else math.nan
    except ValueError:
        return math.nan


def planned_rows(specs: Iterable[RunSpec], done: set[str], rules: MetricRules | None = None) -> pd.DataFrame:
    """The runs of `specs` not in `done`, one row per ROI (run-spec item), in the metrics table's columns
    that say a run's configuration."""
    rules = rules or load_metric_rules()
    rows = []
    for spec in specs:
        if spec.run_id in done:
            continue
        for roi, item in enumerate(parse_run_spec(spec.run)):
            rows.append({
                RUN_ID: spec.run_id, "study": spec.study, "machine": spec.machine, "cpus": cpus_of(spec),
                "nodes": spec.size if spec.size_unit == NODES_UNIT else 1, "kernel_build": spec.kernel_build,
                "boot_args": " ".join(spec.boot), "testcase": item.testcase, "copies": _copies(item, rules),
                "run_spec": spec.run, "roi": roi, seed_comparison.CPU_MODEL: spec.cpu_model, "trace": spec.trace,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=PLANNED_COLUMNS)


PLANNED_COLUMNS = (
    RUN_ID, "study", "machine", "cpus", "nodes", "kernel_build", "boot_args", "testcase", "copies", "run_spec", "roi",
    seed_comparison.CPU_MODEL, "trace",
)  # fmt: skip


def case_rows(planned: pd.DataFrame, seed: Seed, cpu_model: str) -> pd.DataFrame:
    """The planned runs a claim case of `seed` (one condition's view) judges on: the rows
    seed_comparison.claim_cases gives it of the results, taken of the planned runs."""
    rows = seed_comparison.compared_rows(planned, seed)
    return rows if not cpu_model else rows[rows[seed_comparison.CPU_MODEL] == cpu_model]


def _runs(rows: pd.DataFrame) -> int:
    return rows[RUN_ID].nunique()


def outlook(planned: pd.DataFrame, done: pd.DataFrame, seed: Seed, claim: Claim, workload: Workload,
            rules: StatisticsRules, missing: tuple[str, ...] = ("a", "b"), copies: float = math.nan,
            window: str = "", cpu_model: str = "") -> str:  # fmt: skip
    """What a claim not run yet waits for, as its verdict's last clause: the untraced runs to come of
    each side in `missing` (those without runs of their own to judge on) and their studies, or, for a
    side the campaign has none of, the first key no run of the whole campaign (made or `planned`)
    matches. `planned` and `done` are the case's rows (case_rows, and the results' rows it judged);
    `copies` the copy count, `window` the timed window and `cpu_model` the ROI's CPU model judged, if one is."""
    frames = [frame.reindex(columns=list(PLANNED_COLUMNS)) for frame in (done, planned) if not frame.empty]
    campaign = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(PLANNED_COLUMNS))
    ours = campaign[campaign["testcase"] == workload.name]
    if not math.isnan(copies):
        ours = ours[ours["copies"].isna() | (ours["copies"] == copies)]
    ours, _ = split_traced(ours, rules, f"claim {claim.id}, the campaign's runs")
    if window:
        ours = ours[pd.Series([window_of(row, rules) == window for _, row in ours.iterrows()], index=ours.index, dtype=bool)]
    if ours.empty:
        return f"{NOT_PLANNED} (no untraced {workload.name} run{f' on the {cpu_model} CPU' if cpu_model else ''})"
    to_come = set(planned[RUN_ID])
    coming, absent, studies = [], [], set()
    for side in missing:
        rows, why = seed_comparison.matching(ours, seed, claim.a if side == "a" else claim.b)
        rows = rows[rows[RUN_ID].isin(to_come)]
        if rows.empty:
            absent.append(f"{side}: {why or 'every run of the campaign that matches is made'}")
        else:
            coming.append(f"{_runs(rows)} run(s) of {side}")
            studies |= set(rows["study"])
    if absent:
        return f"{NOT_PLANNED} ({'; '.join(absent)})"
    return f"{TO_COME}: {' and '.join(coming)} (study {', '.join(sorted(studies))})"
