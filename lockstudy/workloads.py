"""The static workload programs (workloads/): build them, list them, run them natively.

`./run.sh build workloads` builds them into build/workloads/bin. The image
recipes install them with the Makefile's `install` target, so the list of
programs lives in one place: workloads/Makefile.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from lockstudy.console import CommandFailed, error, info, run
from lockstudy.paths import ROOT, build_dir

SOURCE_DIR = ROOT / "workloads"


class WorkloadError(RuntimeError):
    """A workload program could not be built or failed its own checks."""


def output_dir() -> Path:
    return build_dir() / "workloads"


def bin_dir() -> Path:
    return output_dir() / "bin"


def _make_variable(target: str) -> str:
    result = subprocess.run(["make", "-s", "-C", str(SOURCE_DIR), target], capture_output=True, text=True)
    if result.returncode != 0:
        raise WorkloadError(f"workloads/Makefile: `make {target}` failed: {result.stderr.strip()}")
    return result.stdout.strip()


def programs() -> list[str]:
    """Every program the Makefile builds and installs (testcases and tools)."""
    return _make_variable("print-programs").split()


def install_dir() -> str:
    """Where the programs live in the image (absolute, inside the image)."""
    return _make_variable("print-bindir")


# Testcases that drive something only the lockstudy kernel has (kbench: the
# in-kernel lock bench, /sys/kernel/lockstudy/bench): natively they only
# check their arguments; they run in a guest.
KERNEL_TESTCASES = ("kbench",)


def testcases() -> list[str]:
    """Every testcase: one tc_<name>.c each (the harness ones and kbench)."""
    return sorted(p.stem.removeprefix("tc_") for p in SOURCE_DIR.glob("tc_*.c"))


def native_testcases() -> list[str]:
    """The testcases that run on this machine as well as in a guest."""
    return [name for name in testcases() if name not in KERNEL_TESTCASES]


def source_files() -> list[Path]:
    return sorted(p for p in SOURCE_DIR.iterdir() if p.is_file() and p.suffix in {".c", ".h", ""})


def build(jobs: int | None = None, *, echo: bool = True) -> Path:
    """Build every program (make decides what is out of date); returns the bin dir."""
    argv = ["make", "-C", str(SOURCE_DIR), f"O={output_dir()}", f"-j{jobs or os.cpu_count() or 1}"]
    log = output_dir() / "build.log"
    output_dir().mkdir(parents=True, exist_ok=True)
    log.write_text("")
    try:
        run(argv, log=log, echo=echo)
    except CommandFailed as exc:
        raise WorkloadError(f"{exc}\n{log.read_text()[-4000:]}") from exc
    return bin_dir()


def install(destdir: Path) -> None:
    """`make install` into destdir (the image's staging tree)."""
    argv = ["make", "-s", "-C", str(SOURCE_DIR), f"O={output_dir()}", f"DESTDIR={destdir}", "install"]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise WorkloadError(f"`make install` failed: {result.stderr.strip()}")


@dataclass(frozen=True)
class NativeRun:
    returncode: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The one JSON line, checked; raises WorkloadError when the run failed."""
        if self.returncode != 0:
            raise WorkloadError(f"exit status {self.returncode}: {self.stderr.strip()}")
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        if len(lines) != 1:
            raise WorkloadError(f"expected one JSON line on stdout, got {len(lines)}: {self.stdout!r}")
        value = json.loads(lines[0])
        if not isinstance(value, dict):
            raise WorkloadError(f"stdout is not a JSON object: {lines[0]!r}")
        return value


def run_native(program: str, args: Sequence[str], *, cwd: Path | None = None, timeout: float = 120.0,
               env: dict[str, str] | None = None) -> NativeRun:
    """Run one built program on this machine (no m5 ops)."""
    path = bin_dir() / program
    if not path.is_file():
        raise WorkloadError(f"{path} not found: run ./run.sh build workloads (or ./run.sh setup)")
    environ = dict(os.environ if env is None else env)
    environ.pop("LOCKSTUDY_M5OPS", None)
    result = subprocess.run([str(path), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environ)
    return NativeRun(result.returncode, result.stdout, result.stderr)


def run_build_workloads(args: argparse.Namespace) -> int:
    try:
        path = build(args.jobs)
    except WorkloadError as exc:
        error(str(exc))
        return 1
    info(f"{len(programs())} programs in {path}")
    return 0


def register(targets: argparse._SubParsersAction) -> None:
    parser = targets.add_parser(
        "workloads",
        help="the static benchmark programs of workloads/",
        description="Build the static workload programs (one per testcase, plus runtimed and m5) into build/workloads/bin.",
    )
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel make jobs")
    parser.set_defaults(func=run_build_workloads)
