"""The seed patches' published numbers and claims (analysis/data/seeds.toml).

The data file transcribes each seed's benchmark tables and states each
claim the seed makes as two configurations, a metric, the published
direction and ratio. This module loads and validates it, resolves a claim
to the published numbers it rests on, and decides the direction of a pair
of numbers (ours or the seed's) within a relative band.

File format (the data file's header says the same with examples):

  [agreement]  relative_tolerance (our band for "same"), ratio_decimals
  [[seed]]     id ("000"), title, source (the seed text's file name),
               study (our campaign's study), workloads ([{name, result,
               better, rate?, conditions?}]: what our image runs, the result
               key it reads, and our column its claims are judged on, by
               default ops_per_sim_s, else "metrics.<name>": the testcase's
               own; conditions: where its claims are judged, by default
               both, ["precondition"] for a load only the precondition runs),
               match_keys (configuration keys our runs have too),
               published_noise (the seed's band for "same"), note,
               evidence (metric columns shown per configuration of our
               study, analysis/seed_verdicts/seed_evidence.py), locks (lock-name
               prefixes of the registry whose lines are shown, traced
               runs only), compare_on (sizes every claim is compared at,
               e.g. { cpus = 1 }: the seed's setting, not a key of its
               tables)
    [seed.variants]  <name> = {seed_label, kernel_build?, boot?, run?, note?}
    [[seed.table]]   name, caption, lines = [first, last], config, keys,
                     columns = [{name, metric, unit, better, config?,
                     change? = {a, b}, note?}],
                     rows = [{line, key = [...], values = [...], note?}]
    [[seed.claim]]   id, metric, a, b, direction, ratio, lines, quote,
                     quote_line, headline?, note?, condition? ("as-shipped",
                     the default, "precondition": judged where the seed's
                     bottleneck was restored first, or a list of both: the
                     claim is judged under each, one row apiece)
    [seed.precondition]  study, restores, variants = {<name> = {kernel_build?,
                     boot?, run?, note?}}, workloads? (the seed's workloads only this
                     condition runs): where the seed's bottleneck is restored
                     (the study's runs: its own, or the seed's study when
                     a switch restores it; and what of ours stands for each
                     variant there; a variant not listed stands as in
                     [seed.variants])

A number's configuration is the table's config + its row's keys + its
column's config (+ change.a or change.b for a "% change" column); no key
may be given at two of these levels. Unknown fields are errors, so a typo
never silently drops a value. Every error is a SeedsError reading
"<file>: <field>: <reason>", e.g. "seeds.toml: seed[2].claim[0].a: ...".
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from lockstudy.files import read_toml
from lockstudy.validation.runs import STOCK_BOOT_SWITCHES

if TYPE_CHECKING:  # pandas is imported only by published_frame()
    import pandas as pd

DEFAULT = Path(__file__).resolve().parents[1] / "data" / "seeds.toml"

DIRECTIONS = ("a_better", "b_better", "same")
# Where a claim is judged: on the kernel as shipped (6.1's own locks), or
# where the seed's precondition was restored first (evidence-standard,
# section 4: a seed is reproduced where its bottleneck exists).
AS_SHIPPED = "as-shipped"
PRECONDITION = "precondition"
CONDITIONS = (AS_SHIPPED, PRECONDITION)
BETTER = ("higher", "lower")
COLUMN_BETTER = BETTER + ("none",)  # a column may hold a quantity with no "better" (cpu %)
VARIANT_KEY = "variant"  # the configuration key whose values [seed.variants] declares
SIZE_KEYS = ("cpus", "nodes", "threads")  # configuration keys that are sizes of our runs
SEED_ID = re.compile(r"^[0-9]{3}$")
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
OPS_RATE = "ops_per_sim_s"  # analysis/traffic/metrics.py: operations per simulated second of the ROI
RATE = re.compile(rf"^({OPS_RATE}|metrics\.[a-z0-9_]+)$")  # analysis/traffic/metrics.py's columns a claim can be judged on
# Comparisons at the edge of a band (0.999 against 1.0 with a 0.1% band)
# must not turn on binary rounding: a relative difference this small is
# treated as exact.
FLOAT_SLACK = 1e-9
PERCENT = 100.0

Scalar = str | int | float
Config = dict[str, Scalar]


class SeedsError(ValueError):
    """The seeds file is malformed; the message names the file, the field and the reason."""


@dataclass(frozen=True)
class Agreement:
    relative_tolerance: float  # our band for "same" (claim_direction on our numbers)
    ratio_decimals: int  # claims' ratios are rounded to this many decimals


@dataclass(frozen=True)
class Variant:
    name: str
    seed_label: str  # what the seed calls it
    kernel_build: str | None  # our kernel build that stands for it (kernel/builds.toml)
    boot: str | None  # our boot argument(s) that select it, space-separated: a run must have all of them
    note: str
    # testcase parameters that select it, space-separated: a run must have all of them
    # ("variant=tas placement=shared": kbench's test-and-set lock with its counter on the lock's line)
    run: str | None = None

    @property
    def selects(self) -> bool:
        """Whether anything of ours stands for it (a variant the seed names but we do not run selects nothing)."""
        return bool(self.kernel_build or self.boot or self.run)

    def stands_for(self, kernel_build: str, boot_args: str, run_spec: str = "") -> bool:
        """Whether a run of ours (its kernel build, boot arguments and run spec) is this variant: it has
        the variant's build, every run parameter and every boot argument, and no stock switch
        (lockstudy/validation/runs.py STOCK_BOOT_SWITCHES) the variant does not name, since a stock
        switch changes what the kernel does (noreplace-smp keeps the lock prefixes on one CPU)."""
        if self.kernel_build and self.kernel_build != kernel_build:
            return False
        if not set((self.run or "").split()) <= run_parameters(run_spec):
            return False
        wanted, args = set((self.boot or "").split()), set(boot_args.split())
        return wanted <= args and not {arg for arg in args if arg in STOCK_BOOT_SWITCHES} - wanted


RUN_PARAMETER = r"[A-Za-z0-9_]+=[^,+:\s]+"  # one testcase parameter, key=value


def run_parameters(run_spec: str) -> set[str]:
    """The key=value parameters of every testcase of a run spec ("kbench:variant=tas,placement=shared+dd1b")."""
    return {part for item in run_spec.split("+") for part in item.partition(":")[2].split(",") if "=" in part}


@dataclass(frozen=True)
class Workload:
    name: str  # an image testcase (workloads/README.md, disk-image/README.md)
    result: str  # dotted key of its result JSON line: "ops_per_s", "metrics.writes_per_s"
    better: str  # "higher" or "lower"
    # our metrics-table column its claims are judged on: operations per
    # simulated second, or the testcase's own rate ("metrics.throughput_mb_s")
    # where it counts no operations; either is on the simulated clock
    rate: str = OPS_RATE
    # the conditions whose claims are judged on it: a load that only the
    # precondition runs (seed 003's rwsem bench) is no claim of 6.1 as shipped
    conditions: tuple[str, ...] = CONDITIONS


@dataclass(frozen=True)
class Column:
    name: str
    metric: str
    unit: str
    better: str  # "higher", "lower" or "none"
    config: Config
    change: tuple[Config, Config] | None  # (a, b): values are (a - b) / b * 100
    note: str


@dataclass(frozen=True)
class Row:
    line: int
    key: tuple[Scalar, ...]
    values: tuple[float | int, ...]
    note: str


@dataclass(frozen=True)
class Cell:
    """One published number with its full configuration."""

    table: str
    column: str
    metric: str
    unit: str
    better: str
    line: int
    value: float | int
    config: Config  # the number's configuration (a value column)
    change: tuple[Config, Config] | None  # full a and b configurations (a change column)


@dataclass(frozen=True)
class SeedTable:
    name: str
    caption: str
    lines: tuple[int, int]
    config: Config
    keys: tuple[str, ...]
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    note: str

    def row_config(self, row: Row) -> Config:
        return {**self.config, **dict(zip(self.keys, row.key))}

    def cells(self) -> list[Cell]:
        cells: list[Cell] = []
        for row in self.rows:
            base = self.row_config(row)
            for column, value in zip(self.columns, row.values):
                config = {**base, **column.config}
                change = None
                if column.change is not None:
                    change = ({**config, **column.change[0]}, {**config, **column.change[1]})
                cells.append(
                    Cell(self.name, column.name, column.metric, column.unit, column.better,
                         row.line, value, config, change)
                )
        return cells


@dataclass(frozen=True)
class Claim:
    id: str
    metric: str
    a: Config
    b: Config
    direction: str  # as published: "a_better", "b_better" or "same"
    ratio: float  # a / b as published
    lines: tuple[int, ...]  # the seed lines of the numbers compared
    quote: str  # the author's words making the claim
    quote_line: int
    headline: bool
    note: str
    condition: str = AS_SHIPPED  # one of CONDITIONS


@dataclass(frozen=True)
class Precondition:
    """Where a seed's bottleneck is restored: the study of those runs and each variant's stand-in there."""

    study: str
    restores: str  # what the configuration restores, and what 6.1 changed
    variants: Mapping[str, Variant]
    # The seed's workloads this condition runs, when only some (the others are as shipped only); empty: all of them.
    workloads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Seed:
    id: str
    title: str
    source: str  # the seed text's file name
    study: str
    workloads: tuple[Workload, ...]
    match_keys: tuple[str, ...]
    published_noise: float
    variants: Mapping[str, Variant]
    tables: tuple[SeedTable, ...]
    claims: tuple[Claim, ...]
    note: str
    evidence: tuple[str, ...] = ()  # metric columns of ours that explain the claim
    locks: tuple[str, ...] = ()  # lock-name prefixes (the registry's) whose lines matter
    compare_on: Mapping[str, int] = dataclasses.field(default_factory=dict)  # sizes of ours every claim is compared at
    precondition: Precondition | None = None

    def under(self, condition: str) -> Seed:
        """The seed as its claims of `condition` see it: under "precondition", the precondition's
        study and variant stand-ins; as shipped, itself."""
        own = self.precondition.workloads if self.precondition is not None else ()
        judged = tuple(w for w in self.workloads if condition in w.conditions)
        if condition == AS_SHIPPED:
            return dataclasses.replace(self, workloads=tuple(w for w in judged if w.name not in own))
        if self.precondition is None:
            raise KeyError(f"seed {self.id} declares no [seed.precondition]")
        workloads = tuple(w for w in judged if w.name in own) if own else judged
        return dataclasses.replace(self, study=self.precondition.study, variants=self.precondition.variants, workloads=workloads)

    def conditions(self) -> list[str]:
        """The conditions its claims are judged under, in CONDITIONS order."""
        found = {claim.condition for claim in self.claims}
        return [condition for condition in CONDITIONS if condition in found]

    def declared_conditions(self) -> list[str]:
        """The conditions a run of the seed may stand under: as shipped, and the precondition if declared."""
        return [AS_SHIPPED] + ([PRECONDITION] if self.precondition is not None else [])

    def table(self, name: str) -> SeedTable:
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"seed {self.id} has no table {name!r} (it has {[t.name for t in self.tables]})")

    def headline(self) -> Claim:
        """The headline claim: its as-shipped judgement where it is judged under several conditions."""
        headlines = [claim for claim in self.claims if claim.headline]
        return next((claim for claim in headlines if claim.condition == AS_SHIPPED), headlines[0])

    def our_configuration(self, config: Config) -> Config:
        """The part of a published configuration our runs have too (the match keys)."""
        return {key: config[key] for key in self.match_keys}


@dataclass(frozen=True)
class SeedFile:
    path: Path
    agreement: Agreement
    seeds: tuple[Seed, ...]


@dataclass(frozen=True)
class PublishedComparison:
    """The published numbers a claim rests on: a / b is the published ratio."""

    a_value: float
    b_value: float
    better: str
    lines: tuple[int, ...]
    tables: tuple[str, ...]


# ---------------------------------------------------------------------------
# Reading fields


class _Where:
    """A position in the file, for error messages: `seed[2].claim[0].a`."""

    def __init__(self, path: Path, field: str = "") -> None:
        self.path = path
        self.field = field

    def __truediv__(self, name: str) -> _Where:
        if name.startswith("["):
            return _Where(self.path, f"{self.field}{name}")
        return _Where(self.path, f"{self.field}.{name}" if self.field else name)

    def error(self, reason: str) -> SeedsError:
        return SeedsError(f"{self.path}: {self.field}: {reason}")


def _table(value: Any, where: _Where, required: Collection[str], optional: Collection[str] = ()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"must be a table, not {type(value).__name__} {value!r}")
    # Unknown first: a misspelt field is also a missing one, and its name says more.
    allowed = set(required) | set(optional)
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise where.error(f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(set(required) - set(value))
    if missing:
        raise where.error(f"missing {', '.join(missing)}")
    return value


def _string(value: Any, where: _Where, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"must be a non-empty string, not {value!r}")
    if pattern is not None and not pattern.match(value):
        raise where.error(f"{value!r} does not match {pattern.pattern}")
    return value


def _number(value: Any, where: _Where) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise where.error(f"must be a finite number, not {value!r}")
    return value


def _line(value: Any, where: _Where) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise where.error(f"must be a line number (an integer >= 1), not {value!r}")
    return value


def _word(value: Any, where: _Where, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise where.error(f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _list(value: Any, where: _Where, allow_empty: bool = False) -> list[Any]:
    if not isinstance(value, list):
        raise where.error(f"must be a list, not {value!r}")
    if not value and not allow_empty:
        raise where.error("must not be empty")
    return value


def _each(value: Any, where: _Where, allow_empty: bool = False) -> list[tuple[_Where, Any]]:
    """The items of a list, each with its position: `columns[2]`."""
    return [(where / f"[{i}]", item) for i, item in enumerate(_list(value, where, allow_empty))]


def _scalar(value: Any, where: _Where) -> Scalar:
    if isinstance(value, str):
        return _string(value, where)
    return _number(value, where)


def _config(value: Any, where: _Where) -> Config:
    if not isinstance(value, dict):
        raise where.error(f"must be a table of configuration keys, not {value!r}")
    return {_string(key, where, NAME): _scalar(item, where / key) for key, item in value.items()}


def _names(value: Any, where: _Where, allow_empty: bool = False) -> tuple[str, ...]:
    names = tuple(_string(item, at, NAME) for at, item in _each(value, where, allow_empty))
    if len(set(names)) != len(names):
        raise where.error(f"names repeat: {list(names)}")
    return names


def _sizes(value: Any, where: _Where) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise where.error(f"must be a table of sizes, e.g. {{ cpus = 1 }}, not {value!r}")
    sizes: dict[str, int] = {}
    for key, item in value.items():
        if key not in SIZE_KEYS:
            raise (where / key).error(f"{key!r} is not one of {', '.join(SIZE_KEYS)}")
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise (where / key).error(f"must be a count >= 1, not {item!r}")
        sizes[key] = item
    return sizes


def _fraction(value: Any, where: _Where) -> float:
    number = float(_number(value, where))
    if not 0.0 <= number < 1.0:
        raise where.error(f"{value!r} is not a relative band in [0, 1)")
    return number


def _disjoint(levels: Sequence[tuple[str, Sequence[str]]], where: _Where) -> None:
    seen: dict[str, str] = {}
    for level, keys in levels:
        for key in keys:
            if key in seen:
                raise where.error(f"key {key!r} is given in both {seen[key]} and {level}")
            seen[key] = level


# ---------------------------------------------------------------------------
# Reading the file


def _agreement(value: Any, where: _Where) -> Agreement:
    data = _table(value, where, {"relative_tolerance", "ratio_decimals"})
    decimals = data["ratio_decimals"]
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 12:
        raise (where / "ratio_decimals").error(f"must be an integer 0..12, not {decimals!r}")
    return Agreement(_fraction(data["relative_tolerance"], where / "relative_tolerance"), decimals)


def _variant(name: str, value: Any, where: _Where) -> Variant:
    data = _table(value, where, {"seed_label"}, {"kernel_build", "boot", "run", "note"})
    if not {"kernel_build", "boot", "run"} & set(data):
        raise where.error("needs kernel_build, boot or run: what of ours stands for it")
    run = _string(data["run"], where / "run") if "run" in data else None
    if run is not None and not re.fullmatch(rf"{RUN_PARAMETER}(\s+{RUN_PARAMETER})*", run):
        raise (where / "run").error(f"must be testcase parameters key=value, space-separated, not {run!r}")
    return Variant(
        name=name,
        seed_label=_string(data["seed_label"], where / "seed_label"),
        kernel_build=_string(data["kernel_build"], where / "kernel_build") if "kernel_build" in data else None,
        boot=_string(data["boot"], where / "boot") if "boot" in data else None,
        note=_string(data["note"], where / "note") if "note" in data else "",
        run=run,
    )


def _workload(value: Any, where: _Where) -> Workload:
    data = _table(value, where, {"name", "result", "better"}, {"rate", "conditions"})
    workload = Workload(
        name=_string(data["name"], where / "name", NAME),
        result=_string(data["result"], where / "result"),
        better=_word(data["better"], where / "better", BETTER),
    )
    if "rate" in data:
        workload = dataclasses.replace(workload, rate=_string(data["rate"], where / "rate", RATE))
    if "conditions" in data:
        items = _list(data["conditions"], where / "conditions")
        conditions = tuple(_word(item, where / "conditions", CONDITIONS) for item in items)
        if len(set(conditions)) != len(conditions):
            raise (where / "conditions").error(f"repeats a condition: {list(conditions)}")
        workload = dataclasses.replace(workload, conditions=conditions)
    return workload


def _column(value: Any, where: _Where) -> Column:
    data = _table(value, where, {"name", "metric", "unit", "better"}, {"config", "change", "note"})
    change = None
    if "change" in data:
        sides = _table(data["change"], where / "change", {"a", "b"})
        a = _config(sides["a"], where / "change" / "a")
        b = _config(sides["b"], where / "change" / "b")
        if set(a) != set(b) or a == b:
            raise (where / "change").error(f"a and b must set the same keys to different values, not {a} and {b}")
        change = (a, b)
    return Column(
        name=_string(data["name"], where / "name", NAME),
        metric=_string(data["metric"], where / "metric", NAME),
        unit=_string(data["unit"], where / "unit"),
        better=_word(data["better"], where / "better", COLUMN_BETTER),
        config=_config(data.get("config", {}), where / "config"),
        change=change,
        note=_string(data["note"], where / "note") if "note" in data else "",
    )


def _row(value: Any, where: _Where, keys: tuple[str, ...], columns: tuple[Column, ...]) -> Row:
    data = _table(value, where, {"line", "key", "values"}, {"note"})
    key = tuple(_scalar(item, at) for at, item in _each(data["key"], where / "key", allow_empty=True))
    if len(key) != len(keys):
        raise (where / "key").error(f"has {len(key)} value(s) but the table has {len(keys)} key(s) {list(keys)}")
    values = tuple(_number(item, at) for at, item in _each(data["values"], where / "values"))
    if len(values) != len(columns):
        raise (where / "values").error(
            f"has {len(values)} value(s) but the table has {len(columns)} column(s) {[c.name for c in columns]}"
        )
    return Row(_line(data["line"], where / "line"), key, values, _string(data["note"], where / "note") if "note" in data else "")


def _seed_table(value: Any, where: _Where) -> SeedTable:
    data = _table(value, where, {"name", "caption", "lines", "config", "keys", "columns", "rows"}, {"note"})
    lines = _list(data["lines"], where / "lines")
    if len(lines) != 2:
        raise (where / "lines").error(f"must be [first, last], not {lines!r}")
    first, last = (_line(item, where / "lines" / f"[{i}]") for i, item in enumerate(lines))
    if last < first:
        raise (where / "lines").error(f"last line {last} is before first line {first}")
    config = _config(data["config"], where / "config")
    keys = _names(data["keys"], where / "keys", allow_empty=True)
    columns = tuple(_column(item, at) for at, item in _each(data["columns"], where / "columns"))
    if len({column.name for column in columns}) != len(columns):
        raise (where / "columns").error(f"column names repeat: {[c.name for c in columns]}")
    for i, column in enumerate(columns):
        levels = [("config", list(config)), ("keys", list(keys)), (f"columns[{i}].config", list(column.config))]
        if column.change is not None:
            levels.append((f"columns[{i}].change", list(column.change[0])))
        _disjoint(levels, where)
    rows = tuple(_row(item, at, keys, columns) for at, item in _each(data["rows"], where / "rows"))
    seen: dict[tuple[Scalar, ...], int] = {}
    for i, row in enumerate(rows):
        if not first <= row.line <= last:
            raise (where / "rows" / f"[{i}]" / "line").error(f"line {row.line} is outside the table's lines {first}-{last}")
        if row.key in seen:
            raise (where / "rows" / f"[{i}]" / "key").error(f"{list(row.key)} repeats rows[{seen[row.key]}]")
        seen[row.key] = i
    table = SeedTable(
        name=_string(data["name"], where / "name", NAME),
        caption=_string(data["caption"], where / "caption"),
        lines=(first, last),
        config=config,
        keys=keys,
        columns=columns,
        rows=rows,
        note=_string(data["note"], where / "note") if "note" in data else "",
    )
    _check_unique_cells(table, where)
    return table


def _check_unique_cells(table: SeedTable, where: _Where) -> None:
    seen: dict[tuple[str, str], str] = {}
    for cell in table.cells():
        if cell.change is not None or cell.better == "none":
            continue
        identity = (cell.metric, repr(sorted(cell.config.items(), key=lambda item: item[0])))
        if identity in seen:
            raise (where / "columns").error(
                f"{cell.metric} at {cell.config} is in both column {seen[identity]} and column {cell.column} (line {cell.line})"
            )
        seen[identity] = cell.column


def _conditions(value: Any, where: _Where) -> tuple[str, ...]:
    """A claim's condition(s): one word of CONDITIONS, or a list of distinct ones."""
    if isinstance(value, list):
        if not value:
            raise where.error("an empty list: give one condition or several")
        words = tuple(_word(item, at, CONDITIONS) for at, item in _each(value, where))
        if len(set(words)) != len(words):
            raise where.error(f"conditions repeat: {list(words)}")
        return words
    return (_word(value, where, CONDITIONS),)


def _claim(value: Any, where: _Where) -> tuple[Claim, ...]:
    data = _table(
        value, where, {"id", "metric", "a", "b", "direction", "ratio", "lines", "quote", "quote_line"}, {"headline", "note", "condition"}
    )
    a = _config(data["a"], where / "a")
    b = _config(data["b"], where / "b")
    if a == b:
        raise (where / "b").error(f"is the same configuration as a: {a}")
    ratio = float(_number(data["ratio"], where / "ratio"))
    if ratio <= 0:
        raise (where / "ratio").error(f"{ratio!r} is not a positive ratio a / b")
    headline = data.get("headline", False)
    if not isinstance(headline, bool):
        raise (where / "headline").error(f"must be true or false, not {headline!r}")
    lines = tuple(_line(item, at) for at, item in _each(data["lines"], where / "lines"))
    conditions = _conditions(data["condition"], where / "condition") if "condition" in data else (AS_SHIPPED,)
    claim = Claim(
        id=_string(data["id"], where / "id", NAME),
        metric=_string(data["metric"], where / "metric", NAME),
        a=a,
        b=b,
        direction=_word(data["direction"], where / "direction", DIRECTIONS),
        ratio=ratio,
        lines=lines,
        quote=_string(data["quote"], where / "quote"),
        quote_line=_line(data["quote_line"], where / "quote_line"),
        headline=headline,
        note=_string(data["note"], where / "note") if "note" in data else "",
    )
    return tuple(dataclasses.replace(claim, condition=condition) for condition in conditions)


def belongs_to_study(study: str, name: str) -> bool:
    """Whether a campaign study's runs are runs of the seed study `name`: the study itself, or a
    study <name>-<size> (numa-spinlock-4nodes belongs to numa-spinlock)."""
    return study == name or study.startswith(name + "-")


def _overlap(one: str, other: str) -> bool:
    """Whether two different study names would read each other's runs. The same name is no overlap:
    the conditions then share a study, and their variants' stand-ins tell their runs apart (seed
    001's boot switch)."""
    return one != other and (belongs_to_study(one, other) or belongs_to_study(other, one))


def _precondition(value: Any, where: _Where, variants: Mapping[str, Variant]) -> Precondition:
    data = _table(value, where, {"study", "restores", "variants"}, {"workloads"})
    stand_ins = data["variants"]
    if not isinstance(stand_ins, dict) or not stand_ins:
        raise (where / "variants").error("must be a non-empty table of the variants' stand-ins under the precondition")
    under = dict(variants)
    for name, item in stand_ins.items():
        if name not in variants:
            raise (where / "variants").error(f"{name!r} is not in [seed.variants] ({', '.join(variants)})")
        at = where / "variants" / name
        entry = _table(item, at, set(), {"kernel_build", "boot", "run", "note"})
        under[name] = _variant(name, {"seed_label": variants[name].seed_label, **entry}, at)
    own = data.get("workloads", [])
    if not isinstance(own, list) or not all(isinstance(name, str) for name in own):
        raise (where / "workloads").error(f"must be a list of the seed's workload names, not {own!r}")
    return Precondition(
        study=_string(data["study"], where / "study", NAME),
        restores=_string(data["restores"], where / "restores"),
        variants=under,
        workloads=tuple(own),
    )


def _seed(value: Any, where: _Where, agreement: Agreement) -> Seed:
    data = _table(
        value,
        where,
        {"id", "title", "source", "study", "workloads", "match_keys", "published_noise", "variants", "table", "claim"},
        {"note", "evidence", "locks", "compare_on", "precondition"},
    )
    seed_id = _string(data["id"], where / "id", SEED_ID)
    source = _string(data["source"], where / "source")
    if "/" in source or "\\" in source or not source.startswith(f"{seed_id}_"):
        raise (where / "source").error(f"{source!r} must be the seed text's file name, starting {seed_id}_")
    workloads = tuple(_workload(item, at) for at, item in _each(data["workloads"], where / "workloads"))
    if len({w.name for w in workloads}) != len(workloads):
        raise (where / "workloads").error(f"names repeat: {[w.name for w in workloads]}")
    variants_data = data["variants"]
    if not isinstance(variants_data, dict) or not variants_data:
        raise (where / "variants").error("must be a non-empty table of variants")
    variants = {
        _string(name, where / "variants", NAME): _variant(name, item, where / "variants" / name)
        for name, item in variants_data.items()
    }
    tables = tuple(_seed_table(item, where / f"table[{i}]") for i, item in enumerate(_list(data["table"], where / "table")))
    if len({t.name for t in tables}) != len(tables):
        raise (where / "table").error(f"table names repeat: {[t.name for t in tables]}")
    declared = [_claim(item, where / f"claim[{i}]") for i, item in enumerate(_list(data["claim"], where / "claim"))]
    ids = [expanded[0].id for expanded in declared]
    if len(set(ids)) != len(ids):
        raise (where / "claim").error(f"claim ids repeat: {ids}")
    claims = tuple(claim for expanded in declared for claim in expanded)
    headlines = [expanded[0].id for expanded in declared if expanded[0].headline]
    if len(headlines) != 1:
        raise (where / "claim").error(f"exactly one claim must be the headline, not {headlines or 'none'}")
    precondition = _precondition(data["precondition"], where / "precondition", variants) if "precondition" in data else None
    if precondition is not None:
        unknown = [name for name in precondition.workloads if name not in {w.name for w in workloads}]
        if unknown:
            raise (where / "precondition" / "workloads").error(f"{unknown} not among the seed's workloads {[w.name for w in workloads]}")
    needing = [claim.id for claim in claims if claim.condition != AS_SHIPPED]
    only_there = [w.name for w in workloads if AS_SHIPPED not in w.conditions]
    if only_there and precondition is None:
        raise (where / "workloads").error(f"{only_there} run only under the precondition, and the seed declares no [seed.precondition]")
    if needing and precondition is None:
        raise (where / "claim").error(f"{needing} are judged under the precondition, and the seed declares no [seed.precondition]")
    if precondition is not None:
        study = _string(data["study"], where / "study", NAME)
        if _overlap(precondition.study, study):
            raise (where / "precondition" / "study").error(
                f"{precondition.study!r} and the seed's study {study!r} would read each other's runs (a study "
                "<name>-<size> belongs to <name>): name the precondition's study apart, or the seed's own"
            )
    seed = Seed(
        id=seed_id,
        title=_string(data["title"], where / "title"),
        source=source,
        study=_string(data["study"], where / "study", NAME),
        workloads=workloads,
        match_keys=_names(data["match_keys"], where / "match_keys"),
        published_noise=_fraction(data["published_noise"], where / "published_noise"),
        variants=variants,
        tables=tables,
        claims=claims,
        note=_string(data["note"], where / "note") if "note" in data else "",
        evidence=_names(data["evidence"], where / "evidence") if "evidence" in data else (),
        locks=tuple(_string(item, at) for at, item in _each(data["locks"], where / "locks")) if "locks" in data else (),
        compare_on=_sizes(data["compare_on"], where / "compare_on") if "compare_on" in data else {},
        precondition=precondition,
    )
    _check_variants(seed, where)
    for i, claim in enumerate(claims):
        _check_claim(seed, claim, where / f"claim[{i}]", agreement)
    return seed


def _check_variants(seed: Seed, where: _Where) -> None:
    for i, table in enumerate(seed.tables):
        for cell in table.cells():
            configs = [cell.config] if cell.change is None else list(cell.change)
            for config in configs:
                name = config.get(VARIANT_KEY)
                if name is not None and name not in seed.variants:
                    raise (where / f"table[{i}]").error(
                        f"variant {name!r} (line {cell.line}) is not in [seed.variants] ({', '.join(seed.variants)})"
                    )


def _check_claim(seed: Seed, claim: Claim, where: _Where, agreement: Agreement) -> None:
    for side, config in (("a", claim.a), ("b", claim.b)):
        missing = [key for key in seed.match_keys if key not in config]
        if missing:
            raise (where / side).error(f"lacks the match key(s) {missing} of this seed")
        if VARIANT_KEY in config and config[VARIANT_KEY] not in seed.variants:
            raise (where / side).error(f"variant {config[VARIANT_KEY]!r} is not in [seed.variants] ({', '.join(seed.variants)})")
    try:
        published = published_comparison(seed, claim)
    except UnresolvedClaim as exc:
        raise (where / exc.side).error(exc.reason) from None
    if published.better not in BETTER:
        raise (where / "metric").error(f"{claim.metric} has no 'better' (the table says {published.better!r})")
    ratio = published.a_value / published.b_value
    if abs(claim.ratio - ratio) > 0.5 * 10.0 ** -agreement.ratio_decimals + FLOAT_SLACK:
        raise (where / "ratio").error(
            f"{claim.ratio!r} but the table gives {published.a_value!r} / {published.b_value!r}"
            f" = {ratio:.{agreement.ratio_decimals + 2}f}"
        )
    if sorted(set(claim.lines)) != sorted(set(published.lines)):
        raise (where / "lines").error(f"{list(claim.lines)} but the numbers compared are on line(s) {list(published.lines)}")


def load_seed_file(path: Path = DEFAULT) -> SeedFile:
    """The whole file, validated; raises SeedsError naming file, field and reason."""
    path = Path(path)
    data = read_toml(path, SeedsError)
    root = _Where(path)
    data = _table(data, _Where(path, "(top level)"), {"agreement", "seed"})
    agreement = _agreement(data["agreement"], root / "agreement")
    seeds = tuple(_seed(item, root / f"seed[{i}]", agreement) for i, item in enumerate(_list(data["seed"], root / "seed")))
    for field in ("id", "study", "source"):
        values = [getattr(seed, field) for seed in seeds]
        if len(set(values)) != len(values):
            raise (root / "seed").error(f"{field}s repeat: {values}")
    return SeedFile(path, agreement, seeds)


def load_seeds(path: Path = DEFAULT) -> list[Seed]:
    """Every seed of the file, validated."""
    return list(load_seed_file(path).seeds)


def load_agreement(path: Path = DEFAULT) -> Agreement:
    """The file's [agreement] (the whole file is validated)."""
    return load_seed_file(path).agreement


# ---------------------------------------------------------------------------
# Claims against numbers


class UnresolvedClaim(SeedsError):
    """A claim's configurations or metric are not in its seed's tables (`side`: the claim field at fault)."""

    def __init__(self, side: str, reason: str) -> None:
        super().__init__(reason)
        self.side = side
        self.reason = reason


def published_comparison(seed: Seed, claim: Claim) -> PublishedComparison:
    """The published numbers of a claim's a and b.

    Two numbers of the claim's metric whose configurations are a and b
    (the first table, in file order, holding each), or else a "% change"
    column of a over b (c gives 1 + c/100 against 1). Raises
    UnresolvedClaim (the loader reports it as an error of the claim's field,
    so a loaded seed's claims always resolve)."""
    cells = [cell for table in seed.tables for cell in table.cells() if cell.metric == claim.metric]
    if not cells:
        raise UnresolvedClaim("metric", f"no table of seed {seed.id} has the metric {claim.metric!r}")
    values = [cell for cell in cells if cell.change is None]
    a_cell = next((cell for cell in values if cell.config == claim.a), None)
    b_cell = next((cell for cell in values if cell.config == claim.b), None)
    if a_cell is not None and b_cell is not None:
        if a_cell.better != b_cell.better:
            raise UnresolvedClaim("metric", f"columns {a_cell.column} and {b_cell.column} disagree on 'better'")
        if b_cell.value == 0:
            raise UnresolvedClaim("b", f"the published b is 0 (line {b_cell.line}): no ratio")
        return PublishedComparison(
            float(a_cell.value), float(b_cell.value), a_cell.better,
            tuple(sorted({a_cell.line, b_cell.line})), tuple(dict.fromkeys((a_cell.table, b_cell.table))),
        )
    for cell in cells:
        if cell.change is None:
            continue
        changed = 1.0 + float(cell.value) / PERCENT
        if cell.change == (claim.a, claim.b):
            return PublishedComparison(changed, 1.0, cell.better, (cell.line,), (cell.table,))
        if cell.change == (claim.b, claim.a):
            return PublishedComparison(1.0, changed, cell.better, (cell.line,), (cell.table,))
    for side, config in (("a", claim.a), ("b", claim.b)):
        known = any(cell.config == config for cell in values) or any(
            cell.change is not None and config in cell.change for cell in cells
        )
        if not known:
            raise UnresolvedClaim(side, f"no table of seed {seed.id} has {claim.metric} at configuration {config}")
    raise UnresolvedClaim(
        "b", f"{claim.b} is in a table but not comparable with a = {claim.a} (no value of each, no % change of one over the other)"
    )


def claim_direction(a: float, b: float, better: str, tolerance: float) -> str:
    """"a_better", "b_better" or "same" for two measured numbers.

    Same when |a - b| / |b| is within `tolerance` (b is the baseline, as
    in a "% change"); otherwise the one on the `better` side ("higher" or
    "lower") wins."""
    if better not in BETTER:
        raise ValueError(f"better must be one of {', '.join(BETTER)}, not {better!r}")
    if isinstance(tolerance, bool) or not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, not {value!r}")
    if b == 0:
        if a == 0:
            return "same"
        raise ValueError(f"b is 0 and a is {a!r}: no relative difference")
    relative = (a - b) / abs(b)
    if abs(relative) <= tolerance + FLOAT_SLACK:
        return "same"
    a_higher = relative > 0
    return "a_better" if a_higher == (better == "higher") else "b_better"


def published_direction(seed: Seed, claim: Claim) -> str:
    """The direction the seed's own numbers give a claim, within the seed's published noise."""
    published = published_comparison(seed, claim)
    return claim_direction(published.a_value, published.b_value, published.better, seed.published_noise)


def published_frame(seed: Seed, table: str | None = None) -> pd.DataFrame:
    """One published table as printed: key columns, value columns, and `seed_line`.

    `table` is a table name (default: the seed's first). The frame's attrs
    carry seed, table, caption, source, lines, config, units, better and
    the columns' notes, for the report."""
    import pandas as pd

    chosen = seed.tables[0] if table is None else seed.table(table)
    value_names = [column.name for column in chosen.columns]
    records = [
        {**dict(zip(chosen.keys, row.key)), **dict(zip(value_names, row.values)), "seed_line": row.line}
        for row in chosen.rows
    ]
    frame = pd.DataFrame.from_records(records, columns=[*chosen.keys, *value_names, "seed_line"])
    frame.attrs.update(
        seed=seed.id,
        table=chosen.name,
        caption=chosen.caption,
        source=seed.source,
        lines=chosen.lines,
        config=dict(chosen.config),
        units={column.name: column.unit for column in chosen.columns},
        better={column.name: column.better for column in chosen.columns},
        notes={column.name: column.note for column in chosen.columns if column.note},
    )
    return frame
