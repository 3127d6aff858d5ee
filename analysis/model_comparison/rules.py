"""analysis/data/model_comparison.toml: which two machines are compared, on what."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from lockstudy.files import read_toml, typed_field

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "model_comparison.toml"


class ModelComparisonError(ValueError):
    """The comparison's data file or its input cannot be used; the message names the file, field or runs."""


@dataclass(frozen=True)
class Metric:
    column: str
    label: str
    source: str
    bounds: tuple[float, float] | None = None  # what the quantity can be (a share: 0 to 1); its interval is cut to it


def _bounds(entry: dict[str, Any], where: str) -> tuple[float, float] | None:
    value = entry.get("range")
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            or not value[0] < value[1]):  # fmt: skip
        raise ModelComparisonError(f"{where}.range: {value!r}: expected [low, high], two numbers with low < high")
    return (float(value[0]), float(value[1]))


@dataclass(frozen=True)
class ComparisonRules:
    node_local: str
    interleaved: str
    testcase: str
    metrics: tuple[Metric, ...]

    @property
    def machines(self) -> tuple[str, str]:
        return (self.node_local, self.interleaved)


def _text(table: dict[str, Any], key: str, where: str) -> str:
    value: str = typed_field(table, key, str, where, error=ModelComparisonError)
    if not value:
        raise ModelComparisonError(f"{where}.{key}: empty")
    return value


@lru_cache(maxsize=None)
def load_rules(path: Path = DATA_FILE) -> ComparisonRules:
    data = read_toml(path, ModelComparisonError)
    models = data.get("models")
    if not isinstance(models, dict):
        raise ModelComparisonError(f"{path}: models: missing table")
    metrics = data.get("metric")
    if not isinstance(metrics, list) or not metrics:
        raise ModelComparisonError(f"{path}: metric: expected at least one [[metric]] table")
    parsed = []
    for index, entry in enumerate(metrics):
        where = f"{path}: metric[{index}]"
        if not isinstance(entry, dict):
            raise ModelComparisonError(f"{where}: {entry!r} is not a table")
        parsed.append(Metric(_text(entry, "column", where), _text(entry, "label", where), _text(entry, "source", where), _bounds(entry, where)))
    columns = [metric.column for metric in parsed]
    if len(set(columns)) != len(columns):
        raise ModelComparisonError(f"{path}: metric: columns repeat: {columns}")
    rules = ComparisonRules(
        _text(models, "node_local", f"{path}: models"),
        _text(models, "interleaved", f"{path}: models"),
        _text(models, "testcase", f"{path}: models"),
        tuple(parsed),
    )
    if rules.node_local == rules.interleaved:
        raise ModelComparisonError(f"{path}: models: node_local and interleaved are both {rules.node_local!r}")
    return rules
