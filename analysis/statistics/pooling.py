"""Which runs may be pooled into one mean, and the refusals when they may not.

Two kinds of runs measured different things and are never averaged:
- traced and untraced runs: gem5's protocol trace slows the host, not the
  guest, but the traced studies run shorter windows, and a traced run
  serves the per-lock attribution only (its rate is not a sample of the
  untraced configuration's);
- runs whose timed windows differ (kbench's duration_ms, a harness
  testcase's iterations or seconds, pft's mb: analysis/data/statistics.toml
  `window`): a rate over 8 ms and one over 20 ms are not repeats of one
  measurement (issue 17: qspinlock at 4 nodes, 207,288 against 143,774
  operations per simulated second, were such a pair).

A refusal is a PoolingError whose one line names the runs on each side.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.statistics.rules import StatisticsError, StatisticsRules, load_rules
from lockstudy.run_spec import RunSpecError, parse_run_spec

RUN_ID = "run_id"
UNSET = "default"  # a window parameter the run spec leaves to the testcase's default
SHOWN_RUNS = 4  # run ids named per side of a refusal (then "and N more")


class PoolingError(StatisticsError):
    """Runs that measured different things were asked to be pooled; the message names them."""


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def window_of(row: pd.Series | dict[str, Any], rules: StatisticsRules | None = None) -> str:
    """The timed window of one run's ROI, from its run spec: "duration_ms=20,repeat=default".

    The parameters are the testcase's `window` in the rules; a testcase the
    rules do not know gives its whole run-spec item (any parameter that
    differs then separates runs: never pooled by mistake)."""
    rules = rules or load_rules()
    spec = _text(row.get("run_spec"))
    testcase = _text(row.get("testcase"))
    if not spec:
        return f"{testcase}: no run spec"
    try:
        items = parse_run_spec(spec)
    except RunSpecError as exc:
        raise StatisticsError(f"run {_text(row.get(RUN_ID))}: run_spec {spec!r}: {exc}") from None
    roi = row.get("roi", 0)
    index = 0 if roi is None or (isinstance(roi, float) and math.isnan(roi)) else int(roi)
    if index >= len(items):
        raise StatisticsError(f"run {_text(row.get(RUN_ID))}: run_spec {spec!r} has no item for ROI {index}")
    item = items[index]
    rate = rules.guest_rate(item.testcase)
    if rate is None:
        return item.text()
    return ",".join(f"{name}={item.params.get(name, UNSET)}" for name in rate.window)


def run_parameters(run_spec: object, roi: object) -> dict[str, str]:
    """The parameters of the run spec's item for this ROI, as text ({} without a run spec or item)."""
    if not isinstance(run_spec, str) or not run_spec:
        return {}
    index = 0 if roi is None or (isinstance(roi, float) and math.isnan(roi)) else int(roi)  # type: ignore[call-overload]
    items = parse_run_spec(run_spec)
    return {name: str(value) for name, value in items[index].params.items()} if index < len(items) else {}


def row_parameters(rows: pd.DataFrame) -> list[dict[str, str]]:
    """`run_parameters` of each row, in order: its run spec's item for its ROI ({} for a row without)."""
    specs = rows["run_spec"] if "run_spec" in rows else pd.Series("", index=rows.index)
    rois = rows["roi"] if "roi" in rows else pd.Series(0, index=rows.index)
    return [run_parameters(spec, roi) for spec, roi in zip(specs, rois)]


def key_text(value: Any) -> str:
    """A configuration key's value as text (NaN, None and "" alike: CSV reads "" back as NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def differing_keys(rows: pd.DataFrame, rules: StatisticsRules) -> list[str]:
    """The configuration keys (the rules' `keys`) in which `rows` differ: none when they are repeats of one
    configuration. A key the table lacks does not vary."""
    return [key for key in rules.keys if key in rows and rows[key].map(key_text).nunique() > 1]


def is_traced(value: Any, rules: StatisticsRules) -> bool:
    return _text(value) not in rules.untraced


def require_trace_column(table: pd.DataFrame, rules: StatisticsRules, what: str) -> None:
    if rules.trace_column not in table.columns:
        raise StatisticsError(
            f"{what}: the metrics table has no column {rules.trace_column!r}: traced runs cannot be told from untraced ones"
        )


def split_traced(rows: pd.DataFrame, rules: StatisticsRules | None = None, what: str = "runs") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(untraced rows, traced rows): traced runs serve attribution only, never a rate."""
    rules = rules or load_rules()
    require_trace_column(rows, rules, what)
    traced = rows[rules.trace_column].map(lambda value: is_traced(value, rules)).astype(bool)
    return rows[~traced], rows[traced]


def _names(rows: pd.DataFrame) -> str:
    ids = sorted({_text(run) for run in rows[RUN_ID]}) if RUN_ID in rows else [f"row {i}" for i in rows.index]
    shown = ", ".join(ids[:SHOWN_RUNS])
    return shown + (f" and {len(ids) - SHOWN_RUNS} more" if len(ids) > SHOWN_RUNS else "")


def _refuse_mixed(rows: pd.DataFrame, labels: pd.Series, what: str, kind: str, why: str) -> None:
    groups = [(label, rows[labels == label]) for label in sorted(set(labels))]
    if len(groups) > 1:
        sides = "; ".join(f"{kind} {label or '(none)'}: {_names(group)}" for label, group in groups)
        raise PoolingError(f"{what}: refused to pool runs of {len(groups)} {kind}s ({why}): {sides}")


def check_poolable(rows: pd.DataFrame, rules: StatisticsRules | None = None, what: str = "runs") -> None:
    """Raise PoolingError when `rows` mix traced with untraced runs or differ in their timed window."""
    rules = rules or load_rules()
    require_trace_column(rows, rules, what)
    traces = rows[rules.trace_column].map(lambda value: "traced" if is_traced(value, rules) else "untraced")
    _refuse_mixed(rows, traces, what, "trace", "traced runs serve attribution only, never a rate")
    windows = pd.Series([window_of(row, rules) for _, row in rows.iterrows()], index=rows.index, dtype=object)
    _refuse_mixed(rows, windows, what, "window", "rates over different timed windows are not repeats of one measurement")


def check_groups(rows: pd.DataFrame, keys: list[str], rules: StatisticsRules | None = None, what: str = "runs") -> None:
    """check_poolable for every group of `rows` by `keys`, and each group one configuration (the rules'
    keys, analysis/statistics/configurations.py): each group is about to become one mean, so runs that
    differ in anything but their repeat (a run-spec parameter, a boot switch, the CPU model) are refused."""
    rules = rules or load_rules()
    if rows.empty:
        return
    for values, group in rows.groupby(keys, dropna=False):
        named = ", ".join(f"{key}={_text(value)}" for key, value in zip(keys, values if isinstance(values, tuple) else (values,)))
        check_poolable(group, rules, f"{what} ({named})")
        differing = differing_keys(group, rules)
        if differing:
            labels = group.apply(lambda row: ", ".join(f"{key}={key_text(row[key])}" for key in differing), axis=1)
            _refuse_mixed(group, labels, f"{what} ({named})", "configuration",
                          f"they differ in {', '.join(differing)}: a mean is of one configuration's repeats")  # fmt: skip
