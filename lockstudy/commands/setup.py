"""`run.sh setup`: install every dependency and build what can be built.

Idempotent: each step first checks whether its work is already done, so
running it again when nothing changed takes seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from typing import Callable

from lockstudy import prereqs
from lockstudy.console import CommandFailed, error, info, run, step
from lockstudy.paths import VENV, venv_python
from lockstudy.venv import run_in_venv, running_in_venv

REQUIREMENTS_STAMP = VENV / "lockstudy-requirements.sha256"

BuildStep = Callable[[argparse.Namespace], None]


def build_steps() -> list[tuple[str, BuildStep]]:
    """The pipeline stages setup builds, in pipeline order.

    Each takes the parsed arguments and itself skips work that is already
    up to date. Imported here, not at start-up: `doctor` and `--help` must
    not depend on the stages' modules.
    """
    from lockstudy import image
    from lockstudy.kernel import target as kernel_target

    return [("kernel builds", kernel_target.setup_step), ("disk image", image.setup_step)]


def privileged(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return argv
    if shutil.which("sudo"):
        return ["sudo", *argv]
    raise RuntimeError(f"not root and no sudo: run as root: {' '.join(argv)}")


def install_debian_packages() -> None:
    step("Debian packages")
    packages = prereqs.debian_packages()
    names = [p.name for p in packages]
    missing = [n for n in names if n not in prereqs.installed_debian_packages(names)]
    if not missing:
        info(f"all {len(names)} installed")
        return
    if not shutil.which("apt-get"):
        raise RuntimeError(f"apt-get not found; install these Debian 12 packages by hand: {' '.join(missing)}")
    info(f"installing {len(missing)}: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(privileged(["apt-get", "update", "-q"]), env=env)
    run(privileged(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]), env=env)


def requirements_digest(requirements: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(requirements)).encode()).hexdigest()


def create_python_env() -> None:
    step("Python environment")
    requirements = prereqs.python_requirements()
    digest = requirements_digest(requirements)
    if venv_python().exists() and REQUIREMENTS_STAMP.exists() and REQUIREMENTS_STAMP.read_text().strip() == digest:
        info(f"{VENV} up to date ({len(requirements)} pinned packages)")
        return
    if not venv_python().exists():
        run([sys.executable, "-m", "venv", str(VENV)])
    run([str(venv_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements])
    REQUIREMENTS_STAMP.write_text(digest + "\n")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "setup",
        help="install Debian and Python dependencies, build kernel, workloads and image",
        description=(
            "Install the Debian packages and the pinned Python packages the project "
            "needs, create the Python environment (.venv) and build every pipeline "
            "stage that can be built without gem5. Each step skips work that is "
            "already done, so a second run takes seconds. gem5 is not built: it is "
            "a prerequisite you supply (see `./run.sh doctor`)."
        ),
    )
    parser.add_argument("--no-build", action="store_true", help="install dependencies only; build nothing")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel build jobs (default: all cores)")
    parser.set_defaults(func=run_setup)


def run_setup(args: argparse.Namespace) -> int:
    try:
        install_debian_packages()
        create_python_env()
        if not args.no_build and not running_in_venv():
            # A clean clone's set-up starts on the system's python3, without the pinned packages the
            # build steps use (pyelftools reads the struct layouts): the same set-up goes on in .venv,
            # where the steps already done are checked again and skipped, in seconds.
            info(f"continuing on {venv_python()}")
            return run_in_venv("lockstudy", ["setup", "--jobs", str(args.jobs)])
        if not args.no_build:
            for name, build in build_steps():
                step(name)
                build(args)
    except (CommandFailed, RuntimeError) as exc:
        error(str(exc))
        return 1
    step("setup complete; next: ./run.sh test")
    return 0

