"""Reading and checking a campaign file, then expanding its matrix.

Every value that reaches a command line or a job script is checked against
a narrow character set here, before anything runs; the executors quote
them as well.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstudy import run_spec
from lockstudy.campaign.spec import Resources, RunSpec
from lockstudy.paths import ROOT

MACHINES_DIR = ROOT / "gem5-configs" / "machines"
KERNEL_BUILDS_FILE = ROOT / "kernel" / "builds.toml"

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
BOOT_ARG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(=[A-Za-z0-9_.,:/+=-]+)?$")
RUN_SPEC = re.compile(r"^[A-Za-z0-9_.,:=+/-]+$")
# The launcher sets these itself; a campaign must not.
RESERVED_BOOT_ARGS = ("lockstudy.run", "lockstudy.checkpoint", "lockstudy.m5ops", "lockstudy.numa")

CPU_MODELS = ("timing", "o3")
TRACES = ("off", "protocol", "classic")
MATRIX_FIELDS = ("machine", "cpus", "nodes", "kernel_build", "boot", "run", "cpu_model", "trace")
STUDY_FIELDS = frozenset(MATRIX_FIELDS) | {"name", "repeat", "resources", "description"}
CAMPAIGN_FIELDS = frozenset({"name", "description", "max_attempts"})
RESOURCE_FIELDS = ("time_minutes", "memory_gb", "host_cpus")
BUILT_IN_DEFAULTS: dict[str, Any] = {
    "kernel_build": "smp",
    "cpu_model": "timing",
    "trace": "off",
    "boot": "",
    "repeat": 1,
}
DEFAULT_MAX_ATTEMPTS = 2


class CampaignError(ValueError):
    """A campaign file is malformed: the message names file, field and reason."""


@dataclass(frozen=True)
class Campaign:
    name: str
    description: str
    path: Path
    max_attempts: int
    runs: list[RunSpec]


class _Checker:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, reason: str) -> CampaignError:
        return CampaignError(f"{self.path}: {where}: {reason}")

    def name(self, where: str, value: Any) -> str:
        if not isinstance(value, str) or not NAME.match(value):
            raise self.fail(where, f"{value!r} is not a name (letters, digits, '.', '_', '-')")
        return value

    def positive_int(self, where: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(where, f"{value!r} is not a positive integer")
        return value

    def choice(self, where: str, value: Any, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(where, f"{value!r} is not one of {', '.join(choices)}")
        return str(value)

    def boot(self, where: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, str):
            raise self.fail(where, f"{value!r} is not a string of kernel arguments")
        args = value.split()
        for arg in args:
            if not BOOT_ARG.match(arg):
                raise self.fail(where, f"kernel argument {arg!r} has characters outside [A-Za-z0-9_.,:/+=-]")
            if arg.split("=", 1)[0] in RESERVED_BOOT_ARGS:
                raise self.fail(where, f"{arg.split('=', 1)[0]} is set by the launcher, not by a campaign")
        return tuple(sorted(args))

    def run_spec(self, where: str, value: Any) -> str:
        if not isinstance(value, str) or not RUN_SPEC.match(value):
            raise self.fail(where, f"run spec {value!r} has characters outside [A-Za-z0-9_.,:=+/-]")
        try:
            run_spec.parse_run_spec(value)
        except run_spec.RunSpecError as exc:
            raise self.fail(where, str(exc)) from exc
        return value

    def machine(self, where: str, value: Any) -> str:
        name = self.name(where, value)
        if not (MACHINES_DIR / f"{name}.toml").is_file():
            known = sorted(p.stem for p in MACHINES_DIR.glob("*.toml"))
            raise self.fail(where, f"no machine file {name}.toml (machines: {', '.join(known) or 'none'})")
        return name

    def kernel_build(self, where: str, value: Any) -> str:
        name = self.name(where, value)
        known = kernel_build_names()
        if known and name not in known:
            raise self.fail(where, f"unknown kernel build {name!r} (builds: {', '.join(known)})")
        return name

    def known_keys(self, where: str, table: dict[str, Any], allowed: frozenset[str] | tuple[str, ...]) -> None:
        unknown = sorted(set(table) - set(allowed))
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}" if where else unknown[0], f"unknown field (allowed: {', '.join(sorted(allowed))})")


def kernel_build_names() -> list[str]:
    if not KERNEL_BUILDS_FILE.is_file():
        return []
    with open(KERNEL_BUILDS_FILE, "rb") as handle:
        data = tomllib.load(handle)
    builds = data.get("build", data)
    if isinstance(builds, list):
        return sorted(str(b["name"]) for b in builds if "name" in b)
    return sorted(str(name) for name in builds)


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def load_campaign(path: Path) -> Campaign:
    check = _Checker(path)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise CampaignError(f"{path}: no such campaign file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(f"{path}: not valid TOML: {exc}") from exc
    check.known_keys("", data, frozenset({"campaign", "defaults", "study"}))
    header = data.get("campaign")
    if not isinstance(header, dict):
        raise check.fail("campaign", "missing [campaign] table")
    check.known_keys("campaign", header, CAMPAIGN_FIELDS)
    name = check.name("campaign.name", header.get("name"))
    max_attempts = check.positive_int("campaign.max_attempts", header.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
    defaults = data.get("defaults", {})
    check.known_keys("defaults", defaults, STUDY_FIELDS - {"name"})
    studies = data.get("study")
    if not isinstance(studies, list) or not studies:
        raise check.fail("study", "a campaign needs at least one [[study]]")
    runs: dict[str, RunSpec] = {}
    study_names: set[str] = set()
    for index, study in enumerate(studies):
        specs = expand_study(check, f"study[{index}]", {**BUILT_IN_DEFAULTS, **defaults}, study)
        if specs[0].study in study_names:
            raise check.fail(f"study[{index}].name", f"{specs[0].study!r} names two studies")
        study_names.add(specs[0].study)
        for spec in specs:
            # The same run declared by two studies is one run.
            runs.setdefault(spec.run_id, spec)
    return Campaign(name, str(header.get("description", "")), path, max_attempts, list(runs.values()))


def expand_study(check: _Checker, where: str, defaults: dict[str, Any], study: Any) -> list[RunSpec]:
    if not isinstance(study, dict):
        raise check.fail(where, "a [[study]] must be a table")
    check.known_keys(where, study, STUDY_FIELDS)
    name = check.name(f"{where}.name", study.get("name"))
    merged = {**defaults, **study}
    if ("cpus" in merged) == ("nodes" in merged):
        raise check.fail(where, "give exactly one of cpus (bus machines) or nodes (NUMA machines)")
    size_unit = "cpus" if "cpus" in merged else "nodes"
    for required in ("machine", "run"):
        if required not in merged:
            raise check.fail(f"{where}.{required}", "missing")
    resources = resources_of(check, where, {**defaults.get("resources", {}), **study.get("resources", {})})
    repeat = check.positive_int(f"{where}.repeat", merged["repeat"])
    axes = {
        "machine": [check.machine(f"{where}.machine", v) for v in as_list(merged["machine"])],
        "size": [check.positive_int(f"{where}.{size_unit}", v) for v in as_list(merged[size_unit])],
        "kernel_build": [check.kernel_build(f"{where}.kernel_build", v) for v in as_list(merged["kernel_build"])],
        "boot": [check.boot(f"{where}.boot", v) for v in as_list(merged["boot"])],
        "run": [check.run_spec(f"{where}.run", v) for v in as_list(merged["run"])],
        "cpu_model": [check.choice(f"{where}.cpu_model", v, CPU_MODELS) for v in as_list(merged["cpu_model"])],
        "trace": [check.choice(f"{where}.trace", v, TRACES) for v in as_list(merged["trace"])],
        "repeat": list(range(repeat)),
    }
    for axis, values in axes.items():
        if not values:
            raise check.fail(f"{where}.{axis}", "an empty list gives no runs")
    keys = list(axes)
    return [
        RunSpec(**dict(zip(keys, combo)), size_unit=size_unit, study=name, resources=resources)
        for combo in itertools.product(*(axes[k] for k in keys))
    ]


def resources_of(check: _Checker, where: str, table: Any) -> Resources:
    if not isinstance(table, dict):
        raise check.fail(f"{where}.resources", "must be a table")
    check.known_keys(f"{where}.resources", table, RESOURCE_FIELDS)
    missing = [f for f in RESOURCE_FIELDS if f not in table]
    if missing:
        raise check.fail(f"{where}.resources.{missing[0]}", "missing (give it in the study or in [defaults.resources])")
    return Resources(**{f: check.positive_int(f"{where}.resources.{f}", table[f]) for f in RESOURCE_FIELDS})
