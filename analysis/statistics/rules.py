"""The statistics rules (analysis/data/statistics.toml), validated into typed values.

Bad input raises StatisticsError with one line naming the file, the field
and the value, as every rule file of the analysis does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from lockstudy.files import read_toml, typed_field

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "statistics.toml"
# A guest rate column is one of the metrics table's: the guest's ops_per_s or a testcase's own metrics.<name>.
RATE_COLUMN = re.compile(r"^(ops_per_s|metrics\.[a-z0-9_]+)$")
PARAMETER = re.compile(r"^[a-z][a-z0-9_]*$")


class StatisticsError(ValueError):
    """A statistics rule file, or a table the statistics cannot use; the message says where."""


@dataclass(frozen=True)
class GuestRate:
    """A testcase's rate over its own timed window (column "" when it times none)."""

    testcase: str
    column: str
    window: tuple[str, ...]  # run-spec parameters that set the window's length
    source: str

    @property
    def timed(self) -> bool:
        return bool(self.column)


@dataclass(frozen=True)
class StatisticsRules:
    level: float  # two-sided confidence level
    integration_points: int
    bisection_steps: int
    keys: tuple[str, ...]  # metrics-table columns identifying a configuration
    repeat_keys: tuple[str, ...]
    trace_column: str
    untraced: tuple[str, ...]
    guest_rates: dict[str, GuestRate]
    target_half_width: float = 0.05  # a configuration's interval at most +-this share of its mean
    max_runs_for_target: int = 100  # the most runs configurations.csv estimates to reach the target

    def guest_rate(self, testcase: str) -> GuestRate | None:
        return self.guest_rates.get(testcase)


def _field(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return typed_field(table, key, kind, where, error=StatisticsError)


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = _field(table, key, list, where)
    for value in values:
        if not isinstance(value, str):
            raise StatisticsError(f"{where}.{key}: {value!r} is not a string")
    return tuple(values)


def _guest_rate(testcase: str, entry: Any, where: str) -> GuestRate:
    if not isinstance(entry, dict):
        raise StatisticsError(f"{where}: expected a table {{ column, window, source }}, got {entry!r}")
    column = _field(entry, "column", str, where)
    if column and not RATE_COLUMN.fullmatch(column):
        raise StatisticsError(f"{where}.column: {column!r} is not ops_per_s or metrics.<name> (or \"\" for none)")
    window = _strings(entry, "window", where)
    bad = [name for name in window if not PARAMETER.fullmatch(name)]
    if bad or not window:
        raise StatisticsError(f"{where}.window: {list(window)!r} must name the run-spec parameter(s) of the window")
    return GuestRate(testcase, column, window, _field(entry, "source", str, where))


@lru_cache(maxsize=None)
def load_rules(path: Path = DATA_FILE) -> StatisticsRules:
    """The rules of `path`, validated; StatisticsError names file, field and value."""
    data = read_toml(path, StatisticsError)
    interval = _field(data, "interval", dict, str(path))
    where = f"{path}: interval"
    level = _field(interval, "level", float, where)
    if not 0.5 < level < 1:
        raise StatisticsError(f"{where}.level: {level!r} is not a confidence level in (0.5, 1)")
    points = _field(interval, "integration_points", int, where)
    if points < 101 or points % 2 == 0:
        raise StatisticsError(f"{where}.integration_points: {points!r} must be odd and at least 101 (Simpson's rule)")
    steps = _field(interval, "bisection_steps", int, where)
    if steps < 20:
        raise StatisticsError(f"{where}.bisection_steps: {steps!r} is fewer than 20")
    target = _field(interval, "target_half_width", float, where)
    if not 0 < target < 1:
        raise StatisticsError(f"{where}.target_half_width: {target!r} is not a share of the mean in (0, 1)")
    most_runs = _field(interval, "max_runs_for_target", int, where)
    if most_runs < 2:
        raise StatisticsError(f"{where}.max_runs_for_target: {most_runs!r} is fewer than 2 runs")
    configuration = _field(data, "configuration", dict, str(path))
    where = f"{path}: configuration"
    keys = _strings(configuration, "keys", where)
    repeat_keys = _strings(configuration, "repeat_keys", where)
    overlap = sorted(set(keys) & set(repeat_keys))
    if overlap:
        raise StatisticsError(f"{where}.repeat_keys: {overlap} are also configuration keys")
    trace_column = _field(configuration, "trace_column", str, where)
    if trace_column not in keys:
        raise StatisticsError(f"{where}.trace_column: {trace_column!r} is not among the keys (traced runs would pool with untraced)")
    rates = {
        testcase: _guest_rate(testcase, entry, f"{path}: guest_rate.{testcase}")
        for testcase, entry in _field(data, "guest_rate", dict, str(path)).items()
    }
    return StatisticsRules(
        level, points, steps, keys, repeat_keys, trace_column, _strings(configuration, "untraced", where), rates, target, most_runs
    )
