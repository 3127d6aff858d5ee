"""Registers `run.sh analyze` (standard library only: run.sh loads it before .venv exists).

The work runs in the project's .venv (pandas, pyarrow): analysis/analyze.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess

from lockstudy.console import error
from lockstudy.paths import ROOT, venv_python

VENV_MODULES_CHECK = "import numpy, pandas, pyarrow"


def venv_ready() -> bool:
    python = venv_python()
    return python.exists() and subprocess.run([str(python), "-c", VENV_MODULES_CHECK], capture_output=True).returncode == 0


def run_in_venv(module: str, argv: list[str]) -> int:
    if not venv_ready():
        error("the Python environment (.venv with numpy, pandas, pyarrow) is missing: run ./run.sh setup")
        return 1
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([str(venv_python()), "-m", module, *argv], cwd=os.getcwd(), env=env).returncode


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "analyze",
        help="read a results folder's gem5 stats into one tidy table (Parquet + CSV)",
        description=(
            "Read every run under RESULTS_DIR (folders written by gem5-configs/run.py: stats.txt, "
            "config.json, result.json; or a campaign folder, runs/<id>/out/) and write "
            "RESULTS_DIR/analysis/stats.parquet and stats.csv: one row per run x ROI (stats dump) x "
            "stat x sub, with the run's provenance, plus runs.parquet/csv (one row per run and what "
            "happened to it) and provenance.json. Runs whose result.json says failed are reported and "
            "left out, never half-counted. A run that says ok but whose files do not read (truncated "
            "stats.txt, a dump missing for an ROI, a line that does not parse) stops the analysis with "
            "the file and line named, unless --exclude-unreadable. Stats from older gem5 releases are "
            "renamed to gem5 v24 names (recorded in the renamed_from column). Runs in .venv: needs "
            "./run.sh setup."
        ),
    )
    parser.add_argument("results_dir", help="folder of runs (run.py output folders, or a campaign folder)")
    parser.add_argument("--jobs", type=int, default=None, help="processes reading stats files (default: one per CPU)")
    parser.add_argument(
        "--exclude-unreadable",
        action="store_true",
        help="leave out runs whose outputs do not read (reported) instead of stopping with an error",
    )
    parser.set_defaults(func=analyze)


def analyze(args: argparse.Namespace) -> int:
    argv = [args.results_dir]
    if args.jobs is not None:
        argv += ["--jobs", str(args.jobs)]
    if args.exclude_unreadable:
        argv.append("--exclude-unreadable")
    return run_in_venv("analysis.analyze", argv)
