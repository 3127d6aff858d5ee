"""`run.sh handoff RUN_DIR --lock NAME`: the message sequence chart of one lock hand-off of a traced run.

Registered with the standard library only (run.sh loads every command
before .venv exists); the work is analysis/handoff_chart/, which needs
the project's environment (matplotlib for the PNG).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lockstudy.console import error

DESCRIPTION = """\
Draw one hand-off of a lock in a traced gem5 run as a message sequence chart:
one lane per cache controller (each CPU's L1, each L2 bank, each directory
with its memory; on piii-smp also the bus), grouped by NUMA node; one
arrow per coherence message, in tick order, labelled with its type, with
the line's state change at both ends; time in ticks and ns since the
release. A hand-off runs from the holder's releasing store to the next
holder's successful acquire. Without --index or --tick the median
hand-off by message count is drawn; the command says which one and how
many there are.

Writes <lock>-handoff-<K>.txt, .svg and .png into --out (default
RUN_DIR/handoff-charts/), with the run's provenance (gem5, kernel build,
image, machine file, command, the trace's sha256; no path of this machine)
in provenance.json there, and prints the text chart. A chart drawn before
from the same trace, run result, choice of hand-off and code is taken from
the machine's cache instead of drawn again. Needs a run made with
--trace protocol (Ruby machines) or --trace classic (piii-smp: lanes for
each CPU's L1d and L2, the bus and memory). Runs in .venv: needs
./run.sh setup."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "handoff",
        help="draw one lock hand-off of a traced run as a message sequence chart (text, SVG, PNG)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder written by gem5-configs/run.py (or a campaign's run folder)")
    parser.add_argument("--lock", required=True, metavar="NAME", help="a lock of the run's registry, e.g. bench:lock")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--index", type=int, metavar="K", help="draw hand-off K (0 is the trace's first)")
    choice.add_argument("--tick", type=int, metavar="T", help="draw the hand-off under tick T (or the first after it)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where the chart's files go (default RUN_DIR/handoff-charts/)")
    parser.set_defaults(func=handoff)


def handoff(args: argparse.Namespace) -> int:
    try:
        from analysis.handoff_chart.draw import draw
    except ImportError as exc:
        error(f"the Python environment lacks {exc.name}: run ./run.sh setup")
        return 1
    drawn = draw(args.run_dir, args.lock, args.index, args.tick, args.out)
    print(drawn.text, end="")
    facts = drawn.facts
    print(
        f"\ndrew hand-off {facts.handoff} of {facts.handoffs} ({facts.chosen}): "
        f"CPU{facts.from_cpu} to CPU{facts.to_cpu}, {facts.messages} messages, {facts.between_nodes} between nodes"
        + (" (kept from an earlier drawing of this trace)" if drawn.from_cache else "")
    )
    for path in drawn.files:
        print(f"  {path}")
    return 0
