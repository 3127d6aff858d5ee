"""kbench's run-spec parameters, checked on the host.

kbench (workloads/tc_kbench.c) drives the kernel's lock bench. In the
guest it checks its own arguments (`kbench ... --check`), but it cannot
know the lock variants: those are the kernel's, and a name the kernel does
not know fails only when the bench runs, after a boot. Here the variant is
checked against kernel/variants.toml, and the rest against
lockstudy/data/kbench.toml, so a campaign or a test learns of a bad spec
before anything boots.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from lockstudy.kernel import specs
from lockstudy.paths import DATA

TESTCASE = "kbench"
PARAMS_FILE = DATA / "kbench.toml"
# A CPU list in a run spec: ranges joined by '.' (',' separates the spec's pairs).
CPU_LIST = re.compile(r"\d+(?:-\d+)?(?:[.,]\d+(?:-\d+)?)*")
# The placements that split the threads over two locks (lockstudy-bench-lock-pair.patch).
PAIR_PREFIX = "pair-"


class KbenchParamError(ValueError):
    """A kbench parameter the guest (or the kernel) would refuse."""


@dataclass(frozen=True)
class KbenchParams:
    uint_ranges: dict[str, tuple[int, int]]
    placements: tuple[str, ...]
    locks: tuple[str, ...]  # the first is the default
    m5ops_forms: tuple[str, ...]
    variant_boot: str
    cpus_all: str
    needs_patch: dict[str, dict[str, str]]  # parameter -> word -> the extra patch that has it

    @property
    def keys(self) -> tuple[str, ...]:
        return ("variant", "cpus", *self.uint_ranges, "placement", "lock", "m5ops")


def load_params(path: Path = PARAMS_FILE) -> KbenchParams:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    try:
        ranges = {name: (int(spec["min"]), int(spec["max"])) for name, spec in data["uint"].items()}
        words = data["words"]
        return KbenchParams(
            uint_ranges=ranges,
            placements=tuple(words["placement"]),
            locks=tuple(words["lock"]),
            m5ops_forms=tuple(words["m5ops"]),
            variant_boot=str(words["variant_boot"]),
            cpus_all=str(words["cpus_all"]),
            needs_patch={str(key): {str(w): str(p) for w, p in table.items()} for key, table in data.get("needs_patch", {}).items()},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise KbenchParamError(f"{path}: malformed ({exc!r})") from exc


def check_params(params: Mapping[str, str | int | float], *, variants_file: Path = specs.VARIANTS_FILE) -> None:
    """Raise KbenchParamError naming the first parameter kbench or the kernel would refuse."""
    known = load_params()
    for key, raw in params.items():
        value = str(raw)
        if key not in known.keys:
            raise KbenchParamError(f"unknown parameter {key!r} (kbench takes: {', '.join(known.keys)})")
        if key in known.uint_ranges:
            low, high = known.uint_ranges[key]
            if not value.isdigit() or not low <= int(value) <= high:
                raise KbenchParamError(f"{key}={value}: expected a whole number in [{low}, {high}] ({PARAMS_FILE.name})")
        elif key == "variant":
            names = [v.name for v in specs.load_spinlock_variants(variants_file)]
            if value != known.variant_boot and value not in names:
                raise KbenchParamError(
                    f"variant={value}: not a lock variant of {variants_file.name} ({', '.join(names)}) nor {known.variant_boot!r}"
                )
        elif key == "cpus":
            if value != known.cpus_all and not _cpu_list_ok(value):
                raise KbenchParamError(f"cpus={value}: expected {known.cpus_all!r} or a CPU list like 0-3 or 0-1.4-5")
        elif key == "placement" and value not in known.placements:
            raise KbenchParamError(f"placement={value}: expected one of {', '.join(known.placements)}")
        elif key == "lock" and value not in known.locks:
            raise KbenchParamError(f"lock={value}: expected one of {', '.join(known.locks)}")
        elif key == "m5ops" and value not in known.m5ops_forms:
            raise KbenchParamError(f"m5ops={value}: expected one of {', '.join(known.m5ops_forms)}")
    _check_lock(params, known)


def _check_lock(params: Mapping[str, str | int | float], known: KbenchParams) -> None:
    """The parameters that go with lock=: an rwsem's wait_lock is the boot variant's spinlock and its line
    its own, so it takes neither variant= (but boot) nor placement=; only an rwsem has writers=, no more
    than a CPU list gives threads."""
    lock = str(params.get("lock", known.locks[0]))
    if lock == known.locks[0]:
        if "writers" in params:
            raise KbenchParamError(f"writers={params['writers']}: only lock={known.locks[1]} has readers and writers")
        _check_pair(params, known)
        return
    if str(params.get("variant", known.variant_boot)) != known.variant_boot:
        raise KbenchParamError(f"variant={params['variant']}: lock={lock} runs the boot variant (its wait_lock is the kernel's)")
    if "placement" in params:
        raise KbenchParamError(f"placement={params['placement']}: lock={lock} has its cache line to itself")
    cpus = str(params.get("cpus", known.cpus_all))
    if "writers" in params and cpus != known.cpus_all and int(str(params["writers"])) > _cpu_count(cpus):
        raise KbenchParamError(f"writers={params['writers']}: more writers than the {_cpu_count(cpus)} CPUs of cpus={cpus}")


def _pair_refusal(params: Mapping[str, str | int | float], known: KbenchParams, online: int | None) -> str | None:
    """Why a lock pair (placement=pair-*, every other thread on a second lock) cannot run: fewer than two
    threads, from an explicit cpus= list or, with cpus=all, from the `online` CPUs (None: not known)."""
    placement = str(params.get("placement", known.placements[0]))
    cpus = str(params.get("cpus", known.cpus_all))
    threads = online if cpus == known.cpus_all else _cpu_count(cpus)
    if not placement.startswith(PAIR_PREFIX) or threads is None or threads >= 2:
        return None
    given = f"{online} CPU" if cpus == known.cpus_all else f"cpus={cpus}"
    return f"placement={placement}: a lock pair needs two bench threads or more; {given} gives one"


def _check_pair(params: Mapping[str, str | int | float], known: KbenchParams) -> None:
    refusal = _pair_refusal(params, known, online=None)
    if refusal is not None:
        raise KbenchParamError(refusal)


def build_reasons(params: Mapping[str, str | int | float], build_patches: tuple[str, ...], cpus: int | None) -> list[str]:
    """Why a build whose extra patches are `build_patches`, with `cpus` CPUs online (None: not known
    here), cannot run kbench with `params` (empty: it can); lockstudy/data/kbench.toml [needs_patch]."""
    known = load_params()
    reasons = [
        f"{key}={params[key]} needs {patch}, which this kernel build does not apply (kernel/builds.toml extra_patches)"
        for key, words in known.needs_patch.items()
        if key in params and (patch := words.get(str(params[key]))) is not None and patch not in build_patches
    ]
    if str(params.get("cpus", known.cpus_all)) == known.cpus_all and (refusal := _pair_refusal(params, known, cpus)) is not None:
        reasons.append(refusal)
    return reasons


def _cpu_count(value: str) -> int:
    cpus: set[int] = set()
    for part in re.split(r"[.,]", value):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return len(cpus)


def _cpu_list_ok(value: str) -> bool:
    if not CPU_LIST.fullmatch(value):
        return False
    for part in re.split(r"[.,]", value):
        first, _, last = part.partition("-")
        if last and int(first) > int(last):
            return False
    return True
