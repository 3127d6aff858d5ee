"""The project's Python environment (.venv): whether it is ready, and running a module in it.

Standard library only: run.sh loads this before .venv exists (a clean
clone's set-up starts on the system's python3).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lockstudy.console import error
from lockstudy.paths import ROOT, VENV, venv_python

ANALYSIS_MODULES = ("numpy", "pandas", "pyarrow")  # what analysis/ and the set-up's later steps import
TEST_MODULES = ("pytest",)


def venv_has(modules: tuple[str, ...]) -> bool:
    """True when .venv's python exists and imports every one of `modules`."""
    python = venv_python()
    if not python.exists():
        return False
    check = "import " + ", ".join(modules)
    return subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0


def running_in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def run_in_venv(module: str, argv: list[str]) -> int:
    """Run `python -m module argv` on .venv's python, in the caller's directory; its exit status."""
    if not venv_has(ANALYSIS_MODULES):
        error(f"the Python environment (.venv with {', '.join(ANALYSIS_MODULES)}) is missing: run ./run.sh setup")
        return 1
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([str(venv_python()), "-m", module, *argv], cwd=os.getcwd(), env=env).returncode
