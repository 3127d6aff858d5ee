"""Write the kernel command line that tells the image's /init what to run.

The grammar is /init's (disk-image/overlay/opt/lockstudy/lib/spec.sh):

    lockstudy.run=ITEM[+ITEM...]    ITEM := TESTCASE[:KEY=VALUE[,KEY=VALUE...]]
    lockstudy.checkpoint=0|1        lockstudy.m5ops=off|inst|addr

This module checks the syntax before a boot is spent on it, and each
item's testcase, keys and values against what the guest accepts
(lockstudy/validation/testcases.py: the registry of testcases and their
parameters, kept in step with the guest's code by a test; kbench's lock
variants against kernel/variants.toml). `reasons()` gives every reason a
spec is refused, so a campaign reports them all at once.

`check_with_guest_code()` runs /init's own validation (spec.sh, under
busybox sh as in the guest) on the host against the built workload
programs: every key, range and `--check` of every testcase, a second
opinion before a campaign spends a boot on a spec the guest would refuse.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from lockstudy import kbench
from lockstudy.paths import ROOT
from lockstudy.validation import testcases

SPEC_LIBRARY = ROOT / "disk-image" / "overlay" / "opt" / "lockstudy" / "lib" / "spec.sh"
GUEST_SHELL = ("/bin/busybox", "sh")  # the guest's shell (busybox-static)
CHECK_TIMEOUT_S = 60
# Validate $1 as /init does; print LS_ERROR when it is refused.
VALIDATE_SCRIPT = '. "$0"; ls_validate_run "$1" || { echo "$LS_ERROR"; exit 1; }'

TESTCASE = re.compile(r"[a-z][a-z0-9_]*")
KEY = re.compile(r"[a-z][a-z0-9_]*")
VALUE = re.compile(r"[A-Za-z0-9_./-]+")
SPEC_CHARACTERS = re.compile(r"[A-Za-z0-9_./:,=+-]*")  # spec.sh's ls_validate_run: all a spec may hold
M5OPS_FORMS = ("off", "inst", "addr")


class RunSpecError(ValueError):
    """A testcase, key or value /init would refuse."""


@dataclass(frozen=True)
class Item:
    testcase: str
    params: Mapping[str, str | int | float] = field(default_factory=dict)

    def text(self) -> str:
        """The item as the spec writes it; RunSpecError with the first reason the guest would refuse it."""
        text = self.syntax()
        refused = testcases.reasons(self.testcase, self.params)
        if refused:
            reason = refused[0]
            raise RunSpecError(reason.wrong + (f" ({reason.allowed})" if reason.allowed else ""))
        return text

    def syntax(self) -> str:
        """The item as the spec writes it; RunSpecError when it breaks the grammar."""
        if not TESTCASE.fullmatch(self.testcase):
            raise RunSpecError(f"testcase {self.testcase!r}: expected [a-z][a-z0-9_]*")
        words = []
        for key, value in self.params.items():
            shown = str(value)
            if not KEY.fullmatch(key):
                raise RunSpecError(f"{self.testcase}: key {key!r}: expected [a-z][a-z0-9_]*")
            if not VALUE.fullmatch(shown):
                raise RunSpecError(f"{self.testcase}: {key}={shown!r}: expected [A-Za-z0-9_./-]+")
            words.append(f"{key}={shown}")
        return self.testcase + (":" + ",".join(words) if words else "")


def run_spec(items: list[Item]) -> str:
    return "+".join(item.text() for item in items)


def parse_run_spec(spec: str) -> list[Item]:
    """The items of a lockstudy.run= value, checked as run_spec() checks them."""
    items = parse_syntax(spec)
    for item in items:
        item.text()
    return items


def reasons(spec: str) -> list[testcases.Reason]:
    """Every reason the guest would refuse a lockstudy.run= value (empty: it would run it)."""
    try:
        items = parse_syntax(spec)
    except RunSpecError as exc:
        return [testcases.Reason(str(exc))]
    return [reason for item in items for reason in testcases.reasons(item.testcase, item.params)]


def start_perturbation_reasons(spec: str) -> list[testcases.Reason]:
    """Why the runs of `spec` cannot have the start of their ROI perturbed (empty: they can).

    The perturbation delays the switch to the detailed CPUs after a testcase
    asks for them, so the delay must end inside the testcase's set-up. A
    program timed by runtimed begins its ROI 0.09 simulated ms after it asks
    (campaigns/README.md, "Repeats are perturbed"): almost every delay would
    outlast that, and the start would not be perturbed at all."""
    try:
        items = parse_syntax(spec)
    except RunSpecError:
        return []  # the spec's own check names what is wrong with it
    known = testcases.registry()
    timed = [item.testcase for item in items if item.testcase in known and known[item.testcase].runtimed]
    if not timed:
        return []
    return [
        testcases.Reason(
            f"{', '.join(timed)} is timed by runtimed, whose ROI begins 0.09 ms after it asks for the detailed CPUs: "
            "a start delay would outlast it",
            "perturb_start_us = 0 for its runs (perturb_ns alone), in a study of their own",
        )
    ]


def build_reasons(spec: str, build_patches: tuple[str, ...], cpus: int | None) -> list[testcases.Reason]:
    """Why `spec` cannot run on a kernel build whose extra patches are `build_patches`, with `cpus` CPUs
    (None: not known before the boot): a kbench feature that only another build's patch has."""
    try:
        items = parse_syntax(spec)
    except RunSpecError:
        return []  # the spec's own check names what is wrong with it
    return [
        testcases.Reason(text, "a kernel_build whose extra_patches have it, or another run spec")
        for item in items if item.testcase == kbench.TESTCASE
        for text in kbench.build_reasons(item.params, build_patches, cpus)
    ]  # fmt: skip


def parse_syntax(spec: str) -> list[Item]:
    """The items of a lockstudy.run= value, checked against the grammar only."""
    if not spec:
        return []
    items = []
    for text in spec.split("+"):
        name, sep, args = text.partition(":")
        if not text or (sep and not args):
            raise RunSpecError(f"run spec {spec!r}: empty item or ':' with nothing after it")
        Item(name).syntax()  # the name first: the messages below show it as written
        params: dict[str, str | int | float] = {}
        for word in args.split(",") if args else []:
            key, eq, value = word.partition("=")
            if not eq:
                raise RunSpecError(f"{name}: {word!r} is not KEY=VALUE")
            if key in params:
                # The programs would disagree on it: spec.sh reads the first, the harness the last.
                raise RunSpecError(f"{name}: key {key!r} given twice")
            params[key] = value
        item = Item(name, params)
        item.syntax()
        items.append(item)
    return items


def kernel_args(items: list[Item], *, m5ops: str = "off", checkpoint: bool = False) -> str:
    """The lockstudy.* words of the kernel command line for one guest run."""
    if m5ops not in M5OPS_FORMS:
        raise RunSpecError(f"m5ops={m5ops!r}: expected one of {', '.join(M5OPS_FORMS)}")
    words = [f"lockstudy.m5ops={m5ops}", f"lockstudy.checkpoint={int(checkpoint)}"]
    if items:
        words.insert(0, f"lockstudy.run={run_spec(items)}")
    return " ".join(words)


def check_with_guest_code(spec: str, workloads_bin: Path) -> None:
    """Refuse `spec` exactly as the guest's /init would, on the host; RunSpecError with its reason."""
    if not (workloads_bin / kbench.TESTCASE).is_file():
        raise RunSpecError(f"{workloads_bin}: no built workload programs to check run specs against (./run.sh build workloads)")
    if not SPEC_CHARACTERS.fullmatch(spec):
        # What spec.sh says of it; a NUL could not even be passed to the shell.
        raise RunSpecError(f"run spec {spec!r}: characters outside [A-Za-z0-9_./:,=+-]")
    result = subprocess.run(
        [*GUEST_SHELL, "-c", VALIDATE_SCRIPT, str(SPEC_LIBRARY), spec],
        env={"LS_BIN": str(workloads_bin), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=CHECK_TIMEOUT_S,
    )  # fmt: skip
    if result.returncode != 0:
        raise RunSpecError((result.stdout.strip() or result.stderr.strip() or f"refused (status {result.returncode})"))
