"""Runs grouped into configurations: each rate's mean, n and interval over a configuration's repeats.

A configuration is everything that makes a run what it measures (the
rules' `keys`: machine, size, kernel build, boot arguments, the run spec
and its ROI, the CPU model, the trace, the perturbation's size) without
the repeat index or the perturbation's seed. Its runs are repeats; each
rate is given as their mean, n and Student-t interval (n >= 2), with the
method named in the table.

A rate is the testcase's own timed one where the guest reports it
(analysis/data/statistics.toml [guest_rate]), else the fallback the caller
gives (operations per simulated second of the ROI), and the table says
which (`rate_source`). Traced configurations get no rate: their runs serve
the per-lock attribution only.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.statistics.intervals import Interval, mean_interval, runs_for_half_width
from analysis.statistics.pooling import RUN_ID, check_poolable, differing_keys, is_traced, key_text, require_trace_column, window_of
from analysis.statistics.rules import StatisticsRules, load_rules

ROI_RATE = "ops_per_sim_s"  # analysis/traffic/metrics.py: operations per simulated second of the ROI
GUEST_WINDOW = "guest window"
ROI_WINDOW = "ROI (the guest times no window of its own)"
TRACED_NOTE = "traced: attribution only, no rate"
START_PERTURBED = "start_perturbed"  # analysis/traffic/metrics.py: 0 where a start delay outlasted the set-up


def configuration_key(row: pd.Series | dict[str, Any], rules: StatisticsRules | None = None) -> tuple[str, ...]:
    """The configuration of one row: its values of the rules' keys (a key the table lacks does not vary)."""
    rules = rules or load_rules()
    return tuple(key_text(row.get(key)) for key in rules.keys)


def rate_of(testcase: str, fallback: str = ROI_RATE, rules: StatisticsRules | None = None) -> tuple[str, str]:
    """(the metrics column a testcase's rate is read from, where that rate comes from)."""
    rules = rules or load_rules()
    guest = rules.guest_rate(testcase)
    if guest is not None and guest.timed:
        return guest.column, GUEST_WINDOW
    return fallback, ROI_WINDOW


def rate_interval(rows: pd.DataFrame, column: str, rules: StatisticsRules | None = None, what: str = "runs") -> Interval:
    """The mean of `column` over `rows` with its interval, after refusing rows that may not pool."""
    rules = rules or load_rules()
    check_poolable(rows, rules, what)
    return mean_interval(rows[column].astype(float).tolist(), rules, what=f"{what}: {column}")


def run_ids(rows: pd.DataFrame) -> str:
    """The runs of `rows`, sorted, space-separated ("" without a run id column)."""
    return " ".join(sorted(rows[RUN_ID].astype(str))) if RUN_ID in rows else ""


def configuration_spread(rows: pd.DataFrame, rules: StatisticsRules | None = None) -> str:
    """"" when `rows` are repeats of one configuration; else how many they span, the keys they differ
    in and their runs: the reason a claim's side or a comparison's point is refused."""
    rules = rules or load_rules()
    differing = differing_keys(rows, rules)
    if not differing:
        return ""
    spanned = len({configuration_key(row, rules) for _, row in rows.iterrows()})
    return f"spans {spanned} configurations (they differ in {', '.join(differing)}): {run_ids(rows)}"


def configurations_table(table: pd.DataFrame, rules: StatisticsRules | None = None) -> pd.DataFrame:
    """One row per configuration: its keys, window, n (runs with the rate), runs, rate column and
    source, mean and interval (Student t; `ci_method` says which, or that n = 1 has none), and the
    interval's half-width over the mean (`half_width`; where it misses the rules' target, the note says
    so and `runs_for_target` how many runs of the same spread would reach it)."""
    rules = rules or load_rules()
    if table.empty:
        return pd.DataFrame()
    require_trace_column(table, rules, "configurations")
    keys = [configuration_key(row, rules) for _, row in table.iterrows()]
    groups: dict[tuple[str, ...], list[int]] = {}
    for position, key in enumerate(keys):
        groups.setdefault(key, []).append(position)
    out = []
    for key, positions in groups.items():
        rows = table.iloc[positions]
        first = rows.iloc[0]
        testcase = key_text(first.get("testcase"))
        column, source = rate_of(testcase, rules=rules)
        record: dict[str, Any] = dict(zip(rules.keys, key))
        record.update(window=window_of(first, rules), n=len(rows), runs=run_ids(rows))
        record.update(rate=column, rate_source=source, mean=math.nan, ci_low=math.nan, ci_high=math.nan, ci_method="",
                      half_width=math.nan, runs_for_target=math.nan, note="")  # fmt: skip
        if is_traced(first.get(rules.trace_column), rules):
            record["note"] = TRACED_NOTE
        elif column not in rows or rows[column].isna().all():
            record["note"] = f"no {column} in these runs"
        else:
            rated = rows[rows[column].notna()]
            interval = rate_interval(rated, column, rules, what=f"configuration of {record['runs']}")
            record.update(n=len(rated), mean=interval.estimate, ci_low=interval.low, ci_high=interval.high, ci_method=interval.method,
                          half_width=interval.half_width_share)  # fmt: skip
            notes = []
            if len(rated) < len(rows):
                notes.append(f"{len(rows) - len(rated)} run(s) without {column}, left out")
            unperturbed = int((rated[START_PERTURBED] == 0).sum()) if START_PERTURBED in rated else 0
            if unperturbed:
                notes.append(f"{unperturbed} run(s) whose start delay outlasted the set-up: their start was not perturbed")
            if interval.half_width_share > rules.target_half_width:
                needed = runs_for_half_width(rated[column].astype(float).tolist(), rules)
                record["runs_for_target"] = needed if needed is not None else math.nan
                reach = f"about {needed} runs of this spread would reach it" if needed else f"more than {rules.max_runs_for_target} runs of this spread would be needed"
                notes.append(f"interval +-{interval.half_width_share:.1%}, wider than the +-{rules.target_half_width:.0%} target; {reach}")
            record["note"] = "; ".join(notes)
        out.append(record)
    return pd.DataFrame(out)
