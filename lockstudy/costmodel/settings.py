"""The cost model's settings (lockstudy/data/costmodel.toml): table, fit rules, margins, windows."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockstudy.paths import DATA, ROOT
from lockstudy.validation.problems import InputError, Problem

SETTINGS_FILE = DATA / "costmodel.toml"
# Another measurement table than the file's (a cluster's own, or a test's).
TABLE_VARIABLE = "LOCKSTUDY_COSTS_TABLE"


@dataclass(frozen=True)
class SlurmMargin:
    """What a Slurm request adds to a prediction: time x factor + minutes, memory x factor."""

    time_factor: float
    time_add_minutes: float
    memory_factor: float
    min_memory_gb: int

    def describe(self) -> str:
        return (
            f"time = predicted x {self.time_factor:g} + {self.time_add_minutes:g} min, "
            f"memory = predicted peak x {self.memory_factor:g} (at least {self.min_memory_gb} GiB)"
        )


@dataclass(frozen=True)
class Window:
    """A testcase whose ROI is a window of guest time: the run-spec key and its unit in ms."""

    key: str
    ms_per_unit: float


@dataclass(frozen=True)
class MeasuredTable:
    """A committed result table with each run's ROI simulated seconds, and how to name its machines."""

    path: Path
    provenance: Path | None
    models_renamed: dict[str, str]


@dataclass(frozen=True)
class CostSettings:
    table: Path
    min_points: int
    preferred_source: str
    stand_in_source: str
    margin: SlurmMargin
    goal_median_abs_percent_error: float
    goal_min_runs: int
    windows: dict[str, Window]
    measured_tables: list[MeasuredTable] = field(default_factory=list)
    # testcase -> the run-spec keys its ROI's guest work is proportional to (their product)
    work: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # testcase -> the run-spec keys that choose what it does, each with the value a spec that omits it takes
    kinds: dict[str, dict[str, str]] = field(default_factory=dict)
    # machine -> the machine whose measured ROIs the work rule borrows when it has none of its own
    stand_ins: dict[str, str] = field(default_factory=dict)
    # the factor on a testcase's longest ROI measured with other arguments (None: that rule is off)
    sibling_margin: float | None = None
    source_file: Path = SETTINGS_FILE


def _need(data: dict[str, Any], path: Path, dotted: str, kind: type | tuple[type, ...]) -> Any:
    """The value at `dotted` in the file, or InputError naming file, field and what was found."""
    value: Any = data
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool) or not isinstance(value, kind):
        wanted = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(Problem(str(path), dotted, "(missing)" if value is None else repr(value), f"is not a {wanted}").line())
    return value


def load_settings(path: Path = SETTINGS_FILE, root: Path = ROOT) -> CostSettings:
    """The settings of `path`; relative paths in it are the repository's (`root`)."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    number = (int, float)
    windows = {
        name: Window(_need(data, path, f"simulated_time.windows.{name}.key", str),
                     float(_need(data, path, f"simulated_time.windows.{name}.ms_per_unit", number)))
        for name in _need(data, path, "simulated_time.windows", dict)
    }  # fmt: skip
    work: dict[str, tuple[str, ...]] = {}
    for name, keys in data.get("simulated_time", {}).get("work", {}).items():
        if not isinstance(keys, list) or not keys or not all(isinstance(key, str) and key for key in keys):
            raise InputError(Problem(str(path), f"simulated_time.work.{name}", repr(keys), "is not a list of run-spec keys").line())
        work[name] = tuple(keys)
    kinds: dict[str, dict[str, str]] = {}
    for name, defaults in data.get("simulated_time", {}).get("kinds", {}).items():
        if not isinstance(defaults, dict) or not defaults or not all(
                isinstance(key, str) and key and isinstance(value, str) and value for key, value in defaults.items()):
            raise InputError(Problem(str(path), f"simulated_time.kinds.{name}", repr(defaults),
                                     "is not a table of run-spec keys and their default words").line())  # fmt: skip
        kinds[name] = dict(defaults)
    stand_ins: dict[str, str] = {}
    for name, other in data.get("simulated_time", {}).get("stand_ins", {}).items():
        if not isinstance(other, str) or not other or other == name:
            raise InputError(Problem(str(path), f"simulated_time.stand_ins.{name}", repr(other), "is not another machine's name").line())
        stand_ins[name] = other
    sibling_margin = data.get("simulated_time", {}).get("siblings", {}).get("margin")
    if sibling_margin is not None and (isinstance(sibling_margin, bool) or not isinstance(sibling_margin, number) or sibling_margin < 1):
        raise InputError(Problem(str(path), "simulated_time.siblings.margin", repr(sibling_margin), "is not a number of at least 1").line())
    tables = []
    for index, table in enumerate(data.get("simulated_time", {}).get("measured_tables", [])):
        where = f"simulated_time.measured_tables[{index}]"
        if not isinstance(table, dict) or not isinstance(table.get("path"), str):
            raise InputError(Problem(str(path), f"{where}.path", repr(table), "is not a table with a path").line())
        provenance = table.get("provenance")
        tables.append(MeasuredTable(root / table["path"], root / provenance if isinstance(provenance, str) else None,
                                    dict(table.get("models_renamed", {}))))  # fmt: skip
    table = Path(os.environ[TABLE_VARIABLE]) if os.environ.get(TABLE_VARIABLE) else root / _need(data, path, "table.path", str)
    return CostSettings(
        table=table,
        min_points=_need(data, path, "fit.min_points", int),
        preferred_source=_need(data, path, "fit.preferred_source", str),
        stand_in_source=_need(data, path, "fit.stand_in_source", str),
        margin=SlurmMargin(
            float(_need(data, path, "slurm.time_factor", number)),
            float(_need(data, path, "slurm.time_add_minutes", number)),
            float(_need(data, path, "slurm.memory_factor", number)),
            _need(data, path, "slurm.min_memory_gb", int),
        ),
        goal_median_abs_percent_error=float(_need(data, path, "check.goal_median_abs_percent_error", number)),
        goal_min_runs=_need(data, path, "check.goal_min_runs", int),
        windows=windows,
        measured_tables=tables,
        work=work,
        kinds=kinds,
        stand_ins=stand_ins,
        sibling_margin=None if sibling_margin is None else float(sibling_margin),
        source_file=path,
    )
