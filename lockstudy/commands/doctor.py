"""`run.sh doctor`: one line per prerequisite, with how to fix what is missing."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from lockstudy import gem5, prereqs
from lockstudy.paths import VENV, venv_python

KERNEL_TARBALL_ENV = "LOCKSTUDY_KERNEL_TARBALL"
DEBIAN_KERNEL_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
SLURM_CLIENT_TOOLS = ("sbatch", "squeue", "scancel", "sinfo")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed_by: frozenset[str] = field(default_factory=frozenset)


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return Check("python >= 3.11", ok, f"{version} ({sys.executable})", "install python3 (3.11 or newer)", frozenset(prereqs.COMMANDS))


def check_debian_packages() -> list[Check]:
    packages = prereqs.debian_packages()
    installed = prereqs.installed_debian_packages([p.name for p in packages])
    return [
        Check(
            f"debian: {p.name}",
            p.name in installed,
            p.why,
            f"./run.sh setup (or: apt-get install {p.name})",
            p.needed_by,
        )
        for p in packages
    ]


def check_python_env() -> Check:
    needed = frozenset({"test", "run", "campaign"})
    if not venv_python().exists():
        return Check("python env", False, f"{VENV} does not exist", "./run.sh setup", needed)
    pins = dict(prereqs.pinned(r) for r in prereqs.python_requirements())
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in json.loads(sys.argv[1]):\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    import json

    result = subprocess.run(
        [str(venv_python()), "-c", probe, json.dumps(sorted(pins))], capture_output=True, text=True
    )
    if result.returncode != 0:
        return Check("python env", False, f"{VENV} is broken: {result.stderr.strip()[-200:]}", "rm -rf .venv && ./run.sh setup", needed)
    found = json.loads(result.stdout)
    wrong = [f"{n} {found[n] or 'missing'} (want {v})" for n, v in sorted(pins.items()) if found[n] != v]
    if wrong:
        return Check("python env", False, "; ".join(wrong), "./run.sh setup", needed)
    return Check("python env", True, f"{VENV}: {len(pins)} pinned packages", "", needed)


def check_kernel_source() -> Check:
    given = os.environ.get(KERNEL_TARBALL_ENV)
    tarball = Path(given) if given else DEBIAN_KERNEL_TARBALL
    origin = f"{KERNEL_TARBALL_ENV}={given}" if given else "Debian linux-source-6.1"
    return Check(
        "kernel source",
        tarball.is_file(),
        f"{tarball} ({origin})",
        f"./run.sh setup installs linux-source-6.1, or set {KERNEL_TARBALL_ENV} to a kernel.org 6.1.y tarball",
        frozenset({"setup", "test"}),
    )


def check_qemu() -> Check:
    binary = shutil.which("qemu-system-x86_64")
    needed = frozenset({"test"})
    if not binary:
        return Check("qemu", False, "qemu-system-x86_64 not on PATH", "./run.sh setup (or: apt-get install qemu-system-x86)", needed)
    first = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    return Check("qemu", True, f"{first[0] if first else binary}", "", needed)


def check_kvm() -> Check:
    """Informational: runs use KVM only where it really works, detected at run time."""
    usable = os.access("/dev/kvm", os.R_OK | os.W_OK)
    detail = "/dev/kvm is accessible; runs probe whether it can boot a guest" if usable else "no usable /dev/kvm: runs use QEMU TCG and gem5's AtomicSimpleCPU"
    return Check("kvm (optional)", True, detail)


def check_gem5() -> list[Check]:
    needed = frozenset({"run", "campaign"})
    try:
        found = gem5.find_gem5()
    except gem5.Gem5Unavailable as exc:
        refused = Check("gem5 at $GEM5", False, exc.cause, exc.fix or gem5.HOW_TO_GET, needed)
        if os.environ.get(gem5.variable_used(os.environ, None)):
            return [refused]  # a gem5 is named but unusable: its line says why, and probing it again would not
        # With no gem5 named at all, the per-protocol lines say which build each machine needs.
        return [refused, *check_gem5_per_protocol()]
    protocol = found.ruby_protocol or "no Ruby protocol"
    variable = gem5.variable_used(os.environ, None)
    via = "" if variable == gem5.GEM5_VARIABLE else f"; GEM5 is unset, so machines without a Ruby protocol use {variable}"
    checks = [Check("gem5 at $GEM5", True, f"gem5 {found.version}, X86, {protocol} ({found.path}){via}", "", needed)]
    return checks + check_gem5_per_protocol()


def check_gem5_per_protocol() -> list[Check]:
    """One line per Ruby protocol our machines need: which binary runs them.

    Informational: a campaign refuses, before any work, a machine whose
    protocol no binary has; a user who runs only some machines needs only
    their protocols.
    """
    from lockstudy.campaign.machines import machine_module

    module = machine_module()
    by_protocol: dict[str, list[str]] = {}
    for path in module.machine_files():
        described = module.load_machine(path)
        if described.ruby_protocol:
            by_protocol.setdefault(described.ruby_protocol, []).append(described.name)
    checks = []
    for protocol, names in sorted(by_protocol.items()):
        name = f"gem5 for {', '.join(names)}"
        try:
            found = gem5.find_gem5(protocol=protocol)
        except gem5.Gem5Unavailable as exc:
            checks.append(Check(name, False, f"needs Ruby protocol {protocol}: {exc.cause}", gem5.how_to_build(protocol)))
            continue
        extras = found.as_provenance()["extras"]
        checks.append(Check(name, True, f"{protocol}{f' + {extras}' if extras else ''} ({found.path})"))
    return checks


def check_slurm_tools() -> Check:
    missing = [tool for tool in SLURM_CLIENT_TOOLS if not shutil.which(tool)]
    return Check(
        "slurm client tools",
        not missing,
        "missing: " + ", ".join(missing) if missing else "sbatch, squeue, scancel, sinfo",
        "apt-get install slurm-client (needed only by `campaign --executor slurm`)",
        frozenset({"test"}),
    )


CHECKS: list[Callable[[], Check | list[Check]]] = [
    check_python,
    check_debian_packages,
    check_python_env,
    check_kernel_source,
    check_qemu,
    check_kvm,
    check_gem5,
    check_slurm_tools,
]


def collect() -> list[Check]:
    checks: list[Check] = []
    for make in CHECKS:
        result = make()
        checks.extend(result if isinstance(result, list) else [result])
    return checks


def report(checks: list[Check], purpose: str | None) -> int:
    """Print one line per check; return how many needed ones are missing."""
    missing_needed = 0
    width = max(len(c.name) for c in checks)
    for check in checks:
        needed = purpose is None or purpose in check.needed_by
        if check.ok:
            mark = "✓"
        elif needed:
            mark = "✗"
            missing_needed += 1
        else:
            mark = "-"
        line = f"{mark} {check.name:<{width}}  {check.detail}"
        if not check.ok:
            line += f"\n  {'':<{width}}  fix: {check.fix}"
            if not needed:
                line += f" (not needed for {purpose})"
        print(line)
    return missing_needed


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "doctor",
        help="check prerequisites and say how to fix what is missing",
        description=(
            "Print one line per prerequisite (Debian packages, the Python environment, "
            "the kernel source, QEMU, gem5 at $GEM5, Slurm client tools) with ✓ or ✗ "
            "and how to fix it. gem5 is a prerequisite you supply: the project never "
            "builds it."
        ),
        epilog="Exit status: 0 when everything the named command needs is there, 1 otherwise.",
    )
    parser.add_argument(
        "--for",
        dest="purpose",
        choices=prereqs.COMMANDS,
        help="only fail on what this command needs (default: fail on anything missing)",
    )
    parser.set_defaults(func=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    missing = report(collect(), args.purpose)
    scope = f"for `{args.purpose}`" if args.purpose else "in all"
    if missing:
        print(f"\n{missing} prerequisite(s) missing {scope}.")
        return 1
    print(f"\nEverything needed {scope} is there.")
    return 0
