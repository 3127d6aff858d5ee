"""A run's result.json checked against the fields the analysis reads (analysis/data/result_json.toml).

Every problem is one line, `file:field: value: what is wrong (what is
allowed)`; `problems()` gives them all, the reader raises them together.
"""

from __future__ import annotations

import functools
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any, Callable, Iterator

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "result_json.toml"
EACH = "[]"
NULLABLE = " or null"
TICK_MAX = 2**63 - 1  # gem5's Tick is a uint64; numpy's int64 column holds up to this
HEX = re.compile(r"(0x)?[0-9a-fA-F]+")
SHOWN_MAX_CHARS = 60


def is_count(value: Any) -> bool:
    """A JSON integer, not a bool (which Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A JSON number, an integer or a float, not a bool."""
    return is_count(value) or isinstance(value, float)


def _tick_pairs(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(is_count(t) and 0 <= t <= TICK_MAX for t in pair) and pair[0] <= pair[1]
        for pair in value
    )


TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: is_count(v) and 0 <= v <= TICK_MAX,
    "positive integer": lambda v: is_count(v) and 0 < v <= TICK_MAX,
    "number": lambda v: is_number(v) and math.isfinite(v),
    "object": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "tick pairs": _tick_pairs,
    "hex": lambda v: isinstance(v, str) and HEX.fullmatch(v) is not None,
}


@functools.cache
def fields() -> dict[str, str]:
    with open(DATA_FILE, "rb") as handle:
        table = tomllib.load(handle)["fields"]
    for field, kind in table.items():
        if kind.removesuffix(NULLABLE) not in TYPES:
            raise ValueError(f"{DATA_FILE}:{field}: {kind!r}: not a type (types: {', '.join(TYPES)})")
    return dict(table)


def _found(data: Any, parts: list[str], where: str) -> Iterator[tuple[str, Any]]:
    """(concrete path, value) of every place a field's path names in `data`."""
    if not parts:
        yield where, data
        return
    head, rest = parts[0], parts[1:]
    each = head.endswith(EACH)
    key = head.removesuffix(EACH)
    if not isinstance(data, dict) or key not in data:
        return
    child = f"{where}.{key}" if where else key
    if not each:
        yield from _found(data[key], rest, child)
    elif isinstance(data[key], list):
        for index, element in enumerate(data[key]):
            yield from _found(element, rest, f"{child}[{index}]")


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= SHOWN_MAX_CHARS else text[: SHOWN_MAX_CHARS - 3] + "..."


def problems(path: Path, data: Any) -> list[str]:
    """Every field of `data` (a result.json's content) that is not what the analysis reads."""
    if not isinstance(data, dict):
        return [f"{path}: {_shown(data)}: is not a JSON object (a result.json written by gem5-configs/run.py)"]
    lines = []
    for field, kind in fields().items():
        check = TYPES[kind.removesuffix(NULLABLE)]
        for where, value in _found(data, field.split("."), ""):
            if value is None and kind.endswith(NULLABLE):
                continue
            if not check(value):
                lines.append(f"{path}:{where}: {_shown(value)}: is not what the analysis reads ({kind})")
    return lines
