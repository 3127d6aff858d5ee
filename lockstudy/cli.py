"""The `run.sh` command line: one entry point for every stage."""

from __future__ import annotations

import argparse
import os
import sys

from analysis import command as analysis_commands
from lockstudy import publish
from lockstudy.commands import bench, build, campaign, costs, demo, doctor, handoff, setup, test
from lockstudy.console import error
from lockstudy.validation.problems import InputError

USAGE_ERROR = 2
BROKEN_PIPE = 141  # what a shell reports for a process ended by SIGPIPE (128 + 13)

DESCRIPTION = """\
lockstudy: how much cache-coherence traffic does each Linux lock design cost,
per lock, on an SMP bus and on a NUMA machine, measured in gem5 full-system
simulation.

Start with `./run.sh setup`, then `./run.sh test`. `./run.sh COMMAND --help`
explains each command."""

COMMAND_MODULES = [doctor, setup, build, test, campaign, costs, analysis_commands, handoff, bench, publish, demo]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.sh", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_usage(sys.stderr)
        print("run.sh: error: name a command (see ./run.sh --help)", file=sys.stderr)
        return USAGE_ERROR
    try:
        return int(args.func(args))
    except InputError as exc:
        # Input the user can fix: its problems, one line each, never a traceback.
        error(str(exc))
        return USAGE_ERROR
    except BrokenPipeError:
        # The reader went away (`run.sh campaign ... --dry-run | head`): not an error of ours.
        # Point stdout at /dev/null so Python's exit flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
