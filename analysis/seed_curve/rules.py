"""analysis/data/seed_curves.toml: which seed's curve, from which published rows and which of our runs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from analysis.seed_verdicts.seeds import Seed, SeedFile, load_seed_file
from lockstudy.files import read_toml, typed_field

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "seed_curves.toml"


class SeedCurveError(ValueError):
    """The curves file cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class CurveRule:
    seed: Seed
    table: str
    column: str
    rows: Mapping[str, Any]
    label: str
    variant: str
    threads_column: str


def _curve(entry: Any, where: str, seeds: SeedFile) -> CurveRule:
    if not isinstance(entry, dict):
        raise SeedCurveError(f"{where}: {entry!r} is not a table")
    field = {key: typed_field(entry, key, str, where, error=SeedCurveError) for key in ("seed", "table", "column", "label", "variant", "threads_column")}
    rows = typed_field(entry, "rows", dict, where, error=SeedCurveError)
    seed = next((s for s in seeds.seeds if s.id == field["seed"]), None)
    if seed is None:
        raise SeedCurveError(f"{where}.seed: {field['seed']!r} is not a seed of {seeds.path.name}")
    try:
        table = seed.table(field["table"])
    except KeyError as exc:
        raise SeedCurveError(f"{where}.table: {exc.args[0]}") from None
    if field["column"] not in [column.name for column in table.columns]:
        raise SeedCurveError(f"{where}.column: {field['column']!r} is not a column of table {table.name}")
    if "threads" not in table.keys:
        raise SeedCurveError(f"{where}.table: {table.name} has no threads key to draw a curve over")
    unknown = sorted(set(rows) - set(table.keys))
    if unknown:
        raise SeedCurveError(f"{where}.rows: {unknown} are not keys of table {table.name} ({', '.join(table.keys)})")
    if field["variant"] not in seed.variants:
        raise SeedCurveError(f"{where}.variant: {field['variant']!r} is not a variant of seed {seed.id} ({', '.join(seed.variants)})")
    return CurveRule(seed, field["table"], field["column"], dict(rows), field["label"], field["variant"], field["threads_column"])


@lru_cache(maxsize=None)
def load_curves(path: Path = DATA_FILE) -> tuple[CurveRule, ...]:
    data = read_toml(path, SeedCurveError)
    entries = data.get("curve")
    if not isinstance(entries, list) or not entries:
        raise SeedCurveError(f"{path}: curve: expected at least one [[curve]] table")
    seeds = load_seed_file()
    return tuple(_curve(entry, f"{path}: curve[{index}]", seeds) for index, entry in enumerate(entries))
