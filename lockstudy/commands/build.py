"""`run.sh build TARGET`: build one stage of the pipeline.

Each stage registers a target here (a module with `register(targets)` in
TARGET_MODULES), the way commands register with the CLI: `build kernel`,
and later `build image`, `build workloads`.
"""

from __future__ import annotations

import argparse

from lockstudy import image, workloads
from lockstudy.kernel import target as kernel_target

TARGET_MODULES = [kernel_target, workloads, image]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "build",
        help="build one pipeline stage (kernel, workloads, image)",
        description="Build one stage of the pipeline. Each target skips work that is already up to date.",
    )
    targets = parser.add_subparsers(dest="target", metavar="TARGET", title="targets")
    for module in TARGET_MODULES:
        module.register(targets)
    parser.set_defaults(func=lambda args: missing_target(parser))


def missing_target(parser: argparse.ArgumentParser) -> int:
    parser.print_usage()
    print("run.sh build: error: name a target (see ./run.sh build --help)")
    return 2
