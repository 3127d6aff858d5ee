"""`run.sh test`: the whole test suite, as CI runs it."""

from __future__ import annotations

import argparse
import os
import subprocess

from lockstudy.venv import TEST_MODULES, venv_has
from lockstudy.console import error
from lockstudy.paths import ROOT, venv_python

PYTEST_NO_TESTS = 5
# tests/fuzzing.py reads it: the long budget of tests/fuzz.toml, fresh random inputs.
FUZZ_VARIABLE = "LOCKSTUDY_FUZZ"
FUZZ_PYTEST_ARGS = ["-m", "fuzz", "--hypothesis-show-statistics"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "test",
        help="run the whole test suite (what CI runs)",
        description=(
            "Run every test with pytest. Tests that need gem5 run when GEM5 names a "
            "gem5 binary and are otherwise skipped with the reason shown; the summary "
            "counts them. Anything after `--` goes to pytest (e.g. `-- -k kernel -x`). "
            "The suite fuzzes each front door (campaign and machine files, run specs, stats.txt, "
            "result.json, ROI traces) with a small fixed budget; --fuzz runs only those tests, "
            "with the long budget of tests/fuzz.toml and fresh random inputs, and prints how many "
            "inputs each took."
        ),
    )
    parser.add_argument("--fuzz", action="store_true", help="only the fuzz tests, with their long budget (minutes)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments, after --")
    parser.set_defaults(func=run_tests)


def run_tests(args: argparse.Namespace) -> int:
    if not venv_has(TEST_MODULES):
        error("the Python environment is missing: run ./run.sh setup first")
        return 1
    extra = [a for a in args.pytest_args if a != "--"] if args.pytest_args else []
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if args.fuzz:
        env[FUZZ_VARIABLE] = "1"
        extra = FUZZ_PYTEST_ARGS + extra
    if not env.get("GEM5"):
        print("note: GEM5 is not set, so the tests that need gem5 will be skipped (reasons below).", flush=True)
    result = subprocess.run([str(venv_python()), "-m", "pytest", *extra], cwd=ROOT, env=env)
    if result.returncode == PYTEST_NO_TESTS:
        error("pytest collected no tests")
    return result.returncode
