"""`./run.sh build kernel` and the kernel step of `./run.sh setup`."""

from __future__ import annotations

import argparse
import os

from lockstudy.console import error, info
from lockstudy.kernel.build import BuildFailed, build_kernel, plan_build
from lockstudy.kernel.kconfig import ConfigError
from lockstudy.kernel.source import SourceError, locate_source, read_series
from lockstudy.kernel.specs import BUILDS_FILE, BuildSpec, SpecError, default_build, load_builds

KERNEL_ERRORS = (BuildFailed, ConfigError, SourceError, SpecError)


def availability(builds: dict[str, BuildSpec], defined: frozenset[str]) -> dict[str, str | None]:
    """Build name -> None when buildable, else why it is not yet available."""
    reasons: dict[str, str | None] = {}
    for name, spec in builds.items():
        missing = spec.missing_symbols(defined)
        reasons[name] = (
            f"not yet available: needs Kconfig symbol(s) {', '.join('CONFIG_' + s for s in missing)}, "
            f"which no patch in kernel/patches/series defines yet"
            if missing
            else None
        )
    return reasons


def build_selected(names: list[str] | None, every: bool, jobs: int, *, force: bool = False, clean: bool = False) -> None:
    """Build the named builds (default: the default build; every: all available)."""
    builds = load_builds()
    source = locate_source()
    series = read_series()
    reasons = availability(builds, series.defined_kconfig_symbols())
    if every:
        selected = list(builds)
    elif names:
        unknown = [n for n in names if n not in builds]
        if unknown:
            raise SpecError(f"unknown build(s) {unknown}; {BUILDS_FILE} defines {sorted(builds)}")
        blocked = [f"{n}: {reasons[n]}" for n in names if reasons[n]]
        if blocked:
            raise SpecError("; ".join(blocked))
        selected = names
    else:
        selected = [default_build(builds).name]
    for name in selected:
        if reasons[name]:
            info(f"[{name}] skipped: {reasons[name]}")
            continue
        build_kernel(plan_build(builds[name], source, series), jobs, force=force, clean=clean)


def run_build_kernel(args: argparse.Namespace) -> int:
    try:
        build_selected(args.build, args.all, args.jobs, force=args.force, clean=args.clean)
    except KERNEL_ERRORS as exc:
        error(str(exc))
        return 1
    return 0


def setup_step(args: argparse.Namespace) -> None:
    """Every available kernel build; each skips itself when up to date."""
    try:
        build_selected(None, True, args.jobs)
    except KERNEL_ERRORS as exc:
        raise RuntimeError(str(exc)) from exc


def register(targets: argparse._SubParsersAction) -> None:
    parser = targets.add_parser(
        "kernel",
        help="Linux 6.1 + kernel/patches/series, per kernel/builds.toml",
        description=(
            "Build the lockstudy kernel: the 6.1 source (Debian linux-source-6.1, or the tarball "
            "named by LOCKSTUDY_KERNEL_TARBALL) with kernel/patches/series applied, configured from "
            "kernel/configs/ as kernel/builds.toml says. Outputs go to build/kernel/<build>/ "
            "(vmlinux, bzImage, System.map, config, build-info.json). A build whose inputs did not "
            "change is skipped."
        ),
    )
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--build", action="append", metavar="NAME", help="a build of kernel/builds.toml (repeatable; default: smp)")
    choice.add_argument("--all", action="store_true", help="every build that is available")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel make jobs (default: all cores)")
    parser.add_argument("--force", action="store_true", help="run make even when the outputs are up to date")
    parser.add_argument("--clean", action="store_true", help="start from an empty object dir (compiles still come from ccache)")
    parser.set_defaults(func=run_build_kernel)


