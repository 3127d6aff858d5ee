"""The hardware's published costs (analysis/calibration/published.toml), loaded and checked.

The data file's header gives the format. Every row names its machine, a
measurement pattern, its unit and a note; a value needs a source that the
file defines. Unknown fields are errors, so a typo never drops a figure.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from lockstudy.files import read_toml, typed_field

DATA_FILE = Path(__file__).resolve().parent / "published.toml"
UNITS = ("cycles", "ns", "MB/s")
ROW_FIELDS = frozenset({"machine", "measurement", "value", "unit", "source", "note"})
TOP_FIELDS = frozenset({"tolerance", "units", "source", "published"})


class PublishedError(ValueError):
    """published.toml is malformed; the message names the file, the field and the reason."""


@dataclass(frozen=True)
class Published:
    machine: str
    measurement: str  # an fnmatch pattern
    value: float  # NaN: no figure was found
    unit: str
    source: str  # a key of [source], "" with no value
    note: str

    def matches(self, machine: str, measurement: str) -> bool:
        return fnmatch.fnmatchcase(machine, self.machine) and fnmatch.fnmatchcase(measurement, self.measurement)


@dataclass(frozen=True)
class PublishedFile:
    tolerance: float
    units: dict[str, str]  # measurement family -> unit
    sources: dict[str, str]  # key -> citation
    rows: tuple[Published, ...]

    def lookup(self, machine: str, measurement: str) -> Published | None:
        """The first row for this machine whose pattern matches the measurement."""
        return next((row for row in self.rows if row.matches(machine, measurement)), None)

    def unit_of(self, family: str) -> str:
        try:
            return self.units[family]
        except KeyError:
            raise PublishedError(f"{DATA_FILE.name}: [units]: no unit for the measurement family {family!r}") from None

    def within(self, ratio: float) -> bool:
        return abs(ratio - 1) <= self.tolerance


def _fail(where: str, reason: str) -> PublishedError:
    return PublishedError(f"{where}: {reason}")


def _known(table: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _row(table: Any, where: str, sources: dict[str, str]) -> Published:
    if not isinstance(table, dict):
        raise _fail(where, "a [[published]] entry must be a table")
    _known(table, ROW_FIELDS, where)
    text = {key: typed_field(table, key, str, where, error=PublishedError) for key in ("machine", "measurement", "unit", "source", "note")}
    value = typed_field(table, "value", (int, float), where, default=math.nan, error=PublishedError)
    if isinstance(value, bool):
        raise _fail(f"{where}.value", "a number, not a boolean")
    if text["unit"] not in UNITS:
        raise _fail(f"{where}.unit", f"{text['unit']!r} is not one of {', '.join(UNITS)}")
    if not text["note"].strip():
        raise _fail(f"{where}.note", "every row says what its figure is, or why there is none")
    if not math.isnan(value) and not text["source"]:
        raise _fail(f"{where}.source", "a value needs the source it comes from")
    if text["source"] and text["source"] not in sources:
        raise _fail(f"{where}.source", f"{text['source']!r} is not a [source.<key>] of the file")
    if not math.isnan(value) and value <= 0:
        raise _fail(f"{where}.value", f"{value!r} is not a positive cost")
    return Published(text["machine"], text["measurement"], float(value), text["unit"], text["source"], text["note"])


def parse(data: dict[str, Any], name: str) -> PublishedFile:
    _known(data, TOP_FIELDS, name)
    tolerance = typed_field(data, "tolerance.relative", float, f"{name}: [tolerance]", error=PublishedError)
    if not 0 < tolerance < 1:
        raise _fail(f"{name}: tolerance.relative", f"{tolerance!r} is not a fraction in (0, 1)")
    units = typed_field(data, "units", dict, name, error=PublishedError)
    for family, unit in units.items():
        if unit not in UNITS:
            raise _fail(f"{name}: units.{family}", f"{unit!r} is not one of {', '.join(UNITS)}")
    sources = {key: typed_field(table, "cite", str, f"{name}: source.{key}", error=PublishedError) for key, table in data.get("source", {}).items()}
    rows = tuple(_row(table, f"{name}: published[{index}]", sources) for index, table in enumerate(data.get("published", [])))
    return PublishedFile(tolerance, dict(units), sources, rows)


@lru_cache(maxsize=None)
def load_published(path: Path = DATA_FILE) -> PublishedFile:
    return parse(read_toml(path, PublishedError), path.name)
