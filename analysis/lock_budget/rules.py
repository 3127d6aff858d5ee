"""analysis/data/lock_budget.toml: our configurations and the seed's CPUs, validated."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from analysis.seed_verdicts.seeds import Seed, load_seed_file
from lockstudy.files import read_toml, typed_field

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "lock_budget.toml"


class LockBudgetError(ValueError):
    """The budget file cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class OurConfiguration:
    kernel_build: str
    boot: frozenset[str]  # exactly these boot arguments

    def holds(self, kernel_build: Any, boot_args: Any) -> bool:
        boot = set(boot_args.split()) if isinstance(boot_args, str) else set()
        return kernel_build == self.kernel_build and boot == self.boot


@dataclass(frozen=True)
class SeedCpu:
    name: str
    table: str
    column: str
    up: Mapping[str, Any]
    smp: Mapping[str, Any]
    ops: int
    clock_ghz: float
    extra_cycles: float
    source: str


@dataclass(frozen=True)
class Budget:
    seed: Seed
    cpus: int
    workloads: tuple[str, ...]
    up: OurConfiguration
    smp: OurConfiguration
    patched: OurConfiguration
    seed_cpus: tuple[SeedCpu, ...]


def _field(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return typed_field(table, key, kind, where, error=LockBudgetError)


def _ours(table: dict[str, Any], key: str, where: str) -> OurConfiguration:
    entry = _field(table, key, dict, where)
    return OurConfiguration(_field(entry, "kernel_build", str, f"{where}.{key}"), frozenset(_field(entry, "boot", str, f"{where}.{key}").split()))


def _positive(entry: dict[str, Any], key: str, where: str) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise LockBudgetError(f"{where}.{key}: {value!r} is not a positive number")
    return float(value)


def _seed_cpu(entry: Any, where: str, seed: Seed) -> SeedCpu:
    if not isinstance(entry, dict):
        raise LockBudgetError(f"{where}: {entry!r} is not a table")
    table = _field(entry, "table", str, where)
    try:
        columns = [column.name for column in seed.table(table).columns]
    except KeyError as exc:
        raise LockBudgetError(f"{where}.table: {exc.args[0]}") from None
    column = _field(entry, "column", str, where)
    if column not in columns:
        raise LockBudgetError(f"{where}.column: {column!r} is not a column of seed {seed.id}'s table {table!r} ({', '.join(columns)})")
    return SeedCpu(
        name=_field(entry, "name", str, where), table=table, column=column,
        up=_field(entry, "up", dict, where), smp=_field(entry, "smp", dict, where),
        ops=int(_positive(entry, "ops", where)), clock_ghz=_positive(entry, "clock_ghz", where),
        extra_cycles=_positive(entry, "extra_cycles", where), source=_field(entry, "source", str, where),
    )  # fmt: skip


@lru_cache(maxsize=None)
def load_budget(path: Path = DATA_FILE) -> Budget:
    data = read_toml(path, LockBudgetError)
    where = f"{path}: budget"
    budget = _field(data, "budget", dict, str(path))
    seed_id = _field(budget, "seed", str, where)
    seed = next((s for s in load_seed_file().seeds if s.id == seed_id), None)
    if seed is None:
        raise LockBudgetError(f"{where}.seed: {seed_id!r} is not a seed of analysis/data/seeds.toml")
    cpus = _field(budget, "cpu", list, where)
    return Budget(
        seed=seed, cpus=int(_positive(budget, "cpus", where)),
        workloads=tuple(_field(budget, "workloads", list, where)),
        up=_ours(budget, "up", where), smp=_ours(budget, "smp", where), patched=_ours(budget, "patched", where),
        seed_cpus=tuple(_seed_cpu(entry, f"{where}.cpu[{index}]", seed) for index, entry in enumerate(cpus)),
    )  # fmt: skip
