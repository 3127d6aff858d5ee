"""Reading and checking a campaign file, then expanding its matrix.

Every value that reaches a command line or a job script is checked against
a narrow character set here, before anything runs; the executors quote
them as well. Every run the matrix gives is then checked as the launch
would check it (lockstudy/validation/: the machine's sizes and trace, the
kernel switches, each run spec's testcases and parameters), so that
`--dry-run` refuses exactly what a launch refuses. Every problem of the
file is reported at once, one line each: `file:field: value: what is wrong
(what is allowed)`.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lockstudy import run_spec
from lockstudy.campaign.machines import machine_module
from lockstudy.campaign.spec import Resources, RunSpec
from lockstudy.kernel.specs import BUILDS_FILE, SpecError, load_builds
from lockstudy.paths import ROOT
from lockstudy.validation import runs as run_rules
from lockstudy.validation.problems import InputError, Problem, Reason, shown

MACHINES_DIR = ROOT / "gem5-configs" / "machines"

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
BOOT_ARG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(=[A-Za-z0-9_.,:/+=-]+)?$")
RUN_SPEC = re.compile(r"^[A-Za-z0-9_.,:=+/-]+$")

CPU_MODELS = ("timing", "o3")
TRACES = run_rules.TRACES
SIZE_UNITS = ("cpus", "nodes")
MATRIX_FIELDS = ("machine", "cpus", "nodes", "kernel_build", "boot", "run", "cpu_model", "trace")
STUDY_FIELDS = frozenset(MATRIX_FIELDS) | {"name", "repeat", "perturb_ns", "perturb_start_us", "resources", "description"}
CAMPAIGN_FIELDS = frozenset({"name", "description", "max_attempts"})
TOP_FIELDS = frozenset({"campaign", "defaults", "study"})
RESOURCE_FIELDS = ("time_minutes", "memory_gb", "host_cpus")
OPTIONAL_RESOURCE_FIELDS = ("after_roi_ms",)
BUILT_IN_DEFAULTS: dict[str, Any] = {
    "kernel_build": "smp",
    "cpu_model": "timing",
    "trace": "off",
    "boot": "",
    "repeat": 1,
    "perturb_ns": 0,
    "perturb_start_us": 0,
}
# A perturbation is small against what it perturbs (a memory access of
# 80-130 ns on our machines): larger ones are refused as a likely unit slip.
MAX_PERTURB_NS = 100
# A start delay must end inside the testcase's set-up, before its ROI
# (campaigns/README.md: 5-70 ms for the harness's testcases, 0.09 ms for
# runtimed's); the bound is the calibration testcases' 20 ms TSC sleep.
MAX_PERTURB_START_US = 20_000
DEFAULT_MAX_ATTEMPTS = 2
MISSING = "(missing)"


class CampaignError(InputError):
    """A campaign file is malformed: one line per problem, each naming file, field, value and reason."""


@dataclass(frozen=True)
class Campaign:
    name: str
    description: str
    path: Path
    max_attempts: int
    runs: list[RunSpec]


class _Checker:
    """Checks values of one file, collecting a line per problem; a check returns None for a value it refused."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []
        self._kernel_builds: dict[str, tuple[str, ...]] | None = None

    def kernel_builds(self) -> dict[str, tuple[str, ...]]:
        """kernel_builds(), read once for the whole file rather than once per study."""
        if self._kernel_builds is None:
            self._kernel_builds = kernel_builds()
        return self._kernel_builds

    def fail(self, where: str, value: Any, wrong: str, allowed: str = "") -> None:
        self.lines.append(Problem(str(self.path), where, shown(value), wrong, allowed).line())

    def refuse(self, where: str, value: Any, reasons: list[Reason]) -> bool:
        """Record each reason against `value`; True when there was none."""
        for reason in reasons:
            self.fail(where, value, reason.wrong, reason.allowed)
        return not reasons

    def name(self, where: str, value: Any) -> str | None:
        if not isinstance(value, str) or not NAME.match(value):
            self.fail(where, MISSING if value is None else value, "is not a name", "letters, digits, '.', '_', '-'")
            return None
        return value

    def positive_int(self, where: str, value: Any) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(where, value, "is not a positive integer")
            return None
        return value

    def choice(self, where: str, value: Any, choices: tuple[str, ...]) -> str | None:
        if not isinstance(value, str) or value not in choices:
            self.fail(where, value, "is not a choice", f"one of {', '.join(choices)}")
            return None
        return value

    def boot(self, where: str, value: Any) -> tuple[str, ...] | None:
        if not isinstance(value, str):
            self.fail(where, value, "is not a string of kernel arguments")
            return None
        args = value.split()
        bad = [arg for arg in args if not BOOT_ARG.match(arg)]
        for arg in bad:
            self.fail(where, arg, "has characters outside the kernel argument set", "A-Za-z0-9_.,:/+=-")
        if bad or not self.refuse(where, value, run_rules.boot_reasons(args)):
            return None
        return tuple(sorted(args))

    def run_spec(self, where: str, value: Any) -> str | None:
        if not isinstance(value, str) or not RUN_SPEC.match(value):
            self.fail(where, value, "is not a run spec", "TESTCASE[:KEY=VALUE,...][+...] of A-Za-z0-9_.,:=+/-")
            return None
        return value if self.refuse(where, value, run_spec.reasons(value)) else None

    def machine(self, where: str, value: Any) -> Any | None:
        """The machine family (gem5-configs/machine.py) of a name, or None."""
        name = self.name(where, value)
        if name is None:
            return None
        module = machine_module()
        if not (MACHINES_DIR / f"{name}.toml").is_file():
            known = sorted(p.stem for p in MACHINES_DIR.glob("*.toml"))
            self.fail(where, name, "has no machine file", f"machines: {', '.join(known) or 'none'}")
            return None
        try:
            return module.load_machine(MACHINES_DIR / f"{name}.toml")
        except module.MachineError as exc:
            self.lines.extend(str(exc).splitlines())
            return None

    def kernel_build(self, where: str, value: Any) -> str | None:
        name = self.name(where, value)
        known = sorted(self.kernel_builds())
        if name is not None and known and name not in known:
            self.fail(where, name, "is not a kernel build", f"builds: {', '.join(known)}")
            return None
        return name

    def known_keys(self, where: str, table: dict[str, Any], allowed: frozenset[str] | tuple[str, ...]) -> None:
        for key in sorted(set(table) - set(allowed)):
            self.fail(f"{where}.{key}" if where else key, table[key] if isinstance(table[key], (str, int)) else "...",
                      "is an unknown field", f"allowed: {', '.join(sorted(allowed))}")


def kernel_builds() -> dict[str, tuple[str, ...]]:
    """Each kernel build of kernel/builds.toml by name, with its extra_patches; empty when the file is missing.

    Read with the kernel builder's own loader, so that a build the builder
    would refuse is refused here too, before any run is expanded."""
    if not BUILDS_FILE.is_file():
        return {}
    try:
        builds = load_builds()
    except SpecError as exc:
        raise CampaignError(str(exc)) from None
    return {name: spec.extra_patches for name, spec in builds.items()}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML; CampaignError (one line) when it cannot be read as TOML."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise CampaignError(Problem(str(path), "", "no such file", "a campaign file is needed").line()) from None
    except IsADirectoryError:
        raise CampaignError(Problem(str(path), "", "a folder", "a campaign file is needed").line()) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CampaignError(Problem(str(path), "", "not valid TOML", str(exc).replace("\n", " ")).line()) from None


def load_campaign(path: Path) -> Campaign:
    """The campaign of a file, every run checked; CampaignError naming every problem of the file."""
    check = _Checker(path)
    data = read_toml(path)
    check.known_keys("", data, TOP_FIELDS)
    header = data.get("campaign")
    name, max_attempts, description = None, None, ""
    if not isinstance(header, dict):
        check.fail("campaign", MISSING if header is None else header, "is not a table", "a [campaign] table with name")
    else:
        check.known_keys("campaign", header, CAMPAIGN_FIELDS)
        name = check.name("campaign.name", header.get("name"))
        max_attempts = check.positive_int("campaign.max_attempts", header.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
        description = str(header.get("description", ""))
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        check.fail("defaults", defaults, "is not a table")
        defaults = {}
    check.known_keys("defaults", defaults, STUDY_FIELDS - {"name"})
    studies = data.get("study")
    if not isinstance(studies, list) or not studies:
        check.fail("study", MISSING if studies is None else studies, "gives no study", "at least one [[study]]")
        studies = []
    runs: dict[str, RunSpec] = {}
    study_names: set[str] = set()
    for index, study in enumerate(studies):
        where = f"study[{index}]"
        specs = expand_study(check, where, {**BUILT_IN_DEFAULTS, **defaults}, study)
        if isinstance(study, dict) and isinstance(study.get("name"), str):
            if study["name"] in study_names:
                check.fail(f"{where}.name", study["name"], "names two studies")
            study_names.add(study["name"])
        for spec in specs:
            # The same run declared by two studies is one run.
            runs.setdefault(spec.run_id, spec)
    if check.lines:
        raise CampaignError.of(check.lines)
    assert name is not None and max_attempts is not None
    return Campaign(name, description, path, max_attempts, list(runs.values()))


def axis(check: _Checker, where: str, raw: Any, checker: Callable[[str, Any], Any]) -> list[Any]:
    """The checked values of one matrix axis (a value or a list of them); refused ones are left out."""
    values = as_list(raw)
    if not values:
        check.fail(where, raw, "an empty list gives no runs", "one value or a list of them")
    checked = [checker(where, value) for value in values]
    return [value for value in checked if value is not None]


def expand_study(check: _Checker, where: str, defaults: dict[str, Any], study: Any) -> list[RunSpec]:
    """The runs of one [[study]]; none when any of its fields is refused (the checker says why)."""
    if not isinstance(study, dict):
        check.fail(where, study, "is not a table", "a [[study]] table")
        return []
    found = len(check.lines)
    check.known_keys(where, study, STUDY_FIELDS)
    name = check.name(f"{where}.name", study.get("name"))
    merged = {**defaults, **study}
    units = [unit for unit in SIZE_UNITS if unit in merged]
    if len(units) != 1:
        check.fail(where, " and ".join(units) or MISSING, "gives no size", "exactly one of cpus (bus machines) or nodes (NUMA machines)")
    for required in ("machine", "run"):
        if required not in merged:
            check.fail(f"{where}.{required}", MISSING, "is required")
    resources = resources_of(check, where, defaults.get("resources", {}), study.get("resources", {}))
    repeat = check.positive_int(f"{where}.repeat", merged["repeat"])
    perturb_ns = merged["perturb_ns"]
    if isinstance(perturb_ns, bool) or not isinstance(perturb_ns, int) or not 0 <= perturb_ns <= MAX_PERTURB_NS:
        check.fail(f"{where}.perturb_ns", perturb_ns, "is not a whole number of ns in [0, 100]", "e.g. 4: up to 4 ns extra per memory access")
        perturb_ns = None
    perturb_start_us = merged["perturb_start_us"]
    if isinstance(perturb_start_us, bool) or not isinstance(perturb_start_us, int) or not 0 <= perturb_start_us <= MAX_PERTURB_START_US:
        check.fail(
            f"{where}.perturb_start_us", perturb_start_us, f"is not a whole number of us in [0, {MAX_PERTURB_START_US}]",
            "e.g. 4000: the ROI starts up to one 250 Hz timer tick later",
        )
        perturb_start_us = None
    if repeat and repeat > 1 and perturb_ns == 0 and perturb_start_us == 0:
        check.fail(
            f"{where}.repeat", repeat, "repeats without perturbation are identical runs (gem5 is deterministic)",
            "set perturb_ns (e.g. 4) and perturb_start_us (e.g. 4000) so that each repeat follows another interleaving",
        )
    size_unit = units[0] if len(units) == 1 else None
    machines = axis(check, f"{where}.machine", merged["machine"], check.machine) if "machine" in merged else []
    axes = {
        "machine": [machine.name for machine in machines],
        "size": axis(check, f"{where}.{size_unit}", merged[size_unit], check.positive_int) if size_unit else [],
        "kernel_build": axis(check, f"{where}.kernel_build", merged["kernel_build"], check.kernel_build),
        "boot": axis(check, f"{where}.boot", merged["boot"], check.boot),
        "run": axis(check, f"{where}.run", merged["run"], check.run_spec) if "run" in merged else [],
        "cpu_model": axis(check, f"{where}.cpu_model", merged["cpu_model"], lambda w, v: check.choice(w, v, CPU_MODELS)),
        "trace": axis(check, f"{where}.trace", merged["trace"], lambda w, v: check.choice(w, v, TRACES)),
        "repeat": list(range(repeat or 0)),
    }
    for machine in machines:
        for size in axes["size"]:
            check.refuse(f"{where}.{size_unit}", size, run_rules.size_reasons(machine, size_unit or "", size))
        for trace in axes["trace"]:
            check.refuse(f"{where}.trace", trace, run_rules.trace_reasons(machine, trace))
        if perturb_ns:
            check.refuse(f"{where}.perturb_ns", perturb_ns, run_rules.perturbation_reasons(machine, perturb_ns))
    if perturb_start_us:
        for spec in axes["run"]:
            check.refuse(f"{where}.perturb_start_us", perturb_start_us, run_spec.start_perturbation_reasons(spec))
    patches = check.kernel_builds()
    for build, spec in itertools.product(axes["kernel_build"], axes["run"]):
        for cpus in axes["size"] if size_unit == "cpus" else [None]:
            check.refuse(f"{where}.run", spec, [
                Reason(f"{reason.wrong} (kernel_build {build}{f', {cpus} CPU' if cpus is not None else ''})", reason.allowed)
                for reason in run_spec.build_reasons(spec, patches.get(build, ()), cpus)
            ])  # fmt: skip
    if len(check.lines) > found or size_unit is None or name is None or resources is None or perturb_ns is None or perturb_start_us is None:
        return []
    keys = list(axes)
    return [
        RunSpec(
            **dict(zip(keys, combo)), size_unit=size_unit, study=name, resources=resources,
            perturb_ns=perturb_ns, perturb_start_us=perturb_start_us,
        )
        for combo in itertools.product(*(axes[k] for k in keys))
    ]


def resources_of(check: _Checker, where: str, defaults: Any, own: Any) -> Resources | None:
    for table, place in ((defaults, "defaults.resources"), (own, f"{where}.resources")):
        if not isinstance(table, dict):
            check.fail(place, table, "is not a table", f"a table of {', '.join(RESOURCE_FIELDS)}")
            return None
    table = {**defaults, **own}
    check.known_keys(f"{where}.resources", table, RESOURCE_FIELDS + OPTIONAL_RESOURCE_FIELDS)
    values: dict[str, int | None] = {}
    for field in RESOURCE_FIELDS:
        if field not in table:
            check.fail(f"{where}.resources.{field}", MISSING, "is required", "give it in the study or in [defaults.resources]")
            values[field] = None
        else:
            values[field] = check.positive_int(f"{where}.resources.{field}", table[field])
    if any(value is None for value in values.values()):
        return None
    for field in OPTIONAL_RESOURCE_FIELDS:
        if field in table:
            values[field] = check.positive_int(f"{where}.resources.{field}", table[field])
            if values[field] is None:
                return None
    return Resources(**values)  # type: ignore[arg-type]
