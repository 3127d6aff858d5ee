"""What each testcase of a run spec accepts, known on the host without running the guest.

The registry is lockstudy/data/testcases.toml, a copy of the limits that
live in the guest's code (the harness programs' parameter tables, /init's
spec.sh); a test checks the copy against every built program's --help and
against spec.sh. kbench's parameters are the kernel's and stay with
lockstudy/kbench.py.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from lockstudy import kbench
from lockstudy.paths import DATA
from lockstudy.validation.problems import Reason

REGISTRY_FILE = DATA / "testcases.toml"
KINDS = ("uint", "seconds", "word", "text")
# What the harness's strtod() reads as a number, within the run-spec grammar.
DECIMAL = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE]-?\d+)?")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    low: int = 0
    high: int = 0
    words: tuple[str, ...] = ()

    def allowed(self) -> str:
        if self.kind == "uint":
            return f"a whole number in [{self.low}, {self.high}]"
        if self.kind == "seconds":
            return f"a number of seconds in (0, {self.high}]"
        if self.kind == "word":
            return f"one of {', '.join(self.words)}"
        return "letters, digits and _./-"

    def reason(self, value: str) -> Reason | None:
        """Why `value` is refused for this parameter; None when it is accepted."""
        if self.kind == "uint":
            if not value.isascii() or not value.isdigit():
                return Reason(f"{self.name}={value} is not a whole number", self.allowed())
            if not self.low <= int(value) <= self.high:
                return Reason(f"{self.name}={value} is out of range", self.allowed())
        elif self.kind == "seconds" and not 0 < seconds_of(value) <= self.high:
            return Reason(f"{self.name}={value} is not a number of seconds in range", self.allowed())
        elif self.kind == "word" and value not in self.words:
            return Reason(f"{self.name}={value} is not a choice", self.allowed())
        return None


def seconds_of(text: str) -> float:
    """The number C's strtod() reads from the whole of `text` (NaN when it reads none)."""
    if DECIMAL.fullmatch(text):
        return float(text)
    try:
        return float.fromhex(text)
    except (ValueError, OverflowError):
        return math.nan


@dataclass(frozen=True)
class Testcase:
    name: str
    params: dict[str, Param]
    exclusive: tuple[tuple[str, ...], ...] = ()
    # An outside program (testcases.toml [tool.*]) that /init runs under
    # workloads/runtimed.c, whose ROI begins as soon as it has asked for
    # the detailed CPUs (0.09 simulated ms later on piii-smp).
    runtimed: bool = False

    def reasons(self, params: Mapping[str, str]) -> list[Reason]:
        """Every reason the testcase refuses `params` (empty: it accepts them)."""
        reasons: list[Reason] = []
        for key, value in params.items():
            param = self.params.get(key)
            if param is None:
                reasons.append(Reason(f"{self.name} has no parameter {key!r}", f"{self.name} takes: {', '.join(self.params)}"))
                continue
            reason = param.reason(value)
            if reason:
                reasons.append(Reason(f"{self.name}: {reason.wrong}", reason.allowed))
        for group in self.exclusive:
            given = [key for key in group if key in params]
            if len(given) > 1:
                reasons.append(Reason(f"{self.name}: {' and '.join(f'{k}=' for k in given)} given together", f"one of {', '.join(group)}"))
        return reasons


class RegistryError(ValueError):
    """The registry data file itself is malformed."""


def _param(where: str, name: str, table: object) -> Param:
    if not isinstance(table, dict) or table.get("kind") not in KINDS:
        raise RegistryError(f"{REGISTRY_FILE}:{where}.{name}: expected a table with kind = one of {', '.join(KINDS)}")
    try:
        return Param(
            name=name,
            kind=table["kind"],
            low=int(table.get("min", 0)),
            high=int(table.get("max", 0)),
            words=tuple(str(w) for w in table.get("words", ())),
        )
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"{REGISTRY_FILE}:{where}.{name}: {exc}") from None


@functools.cache
def registry(path: Path = REGISTRY_FILE) -> dict[str, Testcase]:
    """Every testcase a run spec may name but kbench, by name."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    harness = data["harness"]
    common = {name: _param("harness.params", name, table) for name, table in harness["params"].items()}
    exclusive = tuple(tuple(group) for group in harness.get("exclusive", ()))
    cases: dict[str, Testcase] = {}
    for name, table in data["testcase"].items():
        own = {key: _param(f"testcase.{name}.params", key, t) for key, t in table.get("params", {}).items()}
        kept = {key: param for key, param in common.items() if key not in table.get("without", ())}
        groups = tuple(group for group in exclusive if all(key in kept for key in group))
        cases[name] = Testcase(name, {**kept, **own}, groups)
    for name, table in data["tool"].items():
        cases[name] = Testcase(name, {key: _param(f"tool.{name}.params", key, t) for key, t in table["params"].items()}, runtimed=True)
    return cases


def names() -> list[str]:
    """Every testcase a run spec may name."""
    return sorted([*registry(), kbench.TESTCASE])


def reasons(testcase: str, params: Mapping[str, str | int | float]) -> list[Reason]:
    """Every reason the guest would refuse `testcase` with `params` (empty: it would run it)."""
    text = {key: str(value) for key, value in params.items()}
    if testcase == kbench.TESTCASE:
        try:
            kbench.check_params(text)
        except kbench.KbenchParamError as exc:
            return [Reason(f"{testcase}: {exc}")]
        return []
    known = registry()
    if testcase not in known:
        return [Reason(f"unknown testcase {testcase!r}", f"testcases: {', '.join(names())}")]
    return known[testcase].reasons(text)
