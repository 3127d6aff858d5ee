"""`run.sh demo`: the teaching demo in one command.

With gem5 (GEM5 set): runs campaigns/demo.toml (kbench with test-and-set,
ticket and queued spinlocks on piii-smp with 2, 4 and 8 CPUs; resumable
like any campaign), writes its report into build/demo/ and prints the
table of coherence requests per hand-off against the bound and where the
plot is (opened when a display is there). Without gem5: says what is
missing and shows the study's committed results instead, with the
committed charts of single hand-offs (results/handoffs/).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
from pathlib import Path

from lockstudy import gem5 as gem5_finder
from lockstudy.console import error, step
from lockstudy.paths import ROOT, build_dir

DEMO_CAMPAIGN = ROOT / "campaigns" / "demo.toml"
COMMITTED = ROOT / "results" / "seeds"
HANDOFF_CHARTS = ROOT / "results" / "handoffs"  # `run.sh handoff` charts of single hand-offs
BOUND_TABLE = "handoff_bound.csv"
PLOT = "figures/handoff-piii-smp.png"
REPORT = "report.html"


def print_table(path: Path) -> None:
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        print("    (no contended hand-off in these results)")
        return
    columns = ["machine", "variant", "sizes", "per_handoff", "expected_order", "measured_order", "verdict"]
    widths = {c: max(len(c), *(len(row.get(c, "")) for row in rows)) for c in columns}
    print("    " + "  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("    " + "  ".join(row.get(c, "").ljust(widths[c]) for c in columns))


def show_committed(reason: str) -> int:
    print(f"The demo simulates, and needs gem5: {reason}")
    print("Until then, here are the study's committed results (real gem5 runs, with provenance):")
    table = COMMITTED / BOUND_TABLE
    if table.is_file():
        print(f"\n  coherence requests per lock hand-off against the bound ({table.relative_to(ROOT)}):")
        print_table(table)
        print(f"\n  plots and the full report: {(COMMITTED / REPORT).relative_to(ROOT)} (and report.md next to it)")
    else:
        print(f"  (none committed yet: {COMMITTED.relative_to(ROOT)} is empty)")
    show_handoff_charts()
    return 0


def show_handoff_charts() -> None:
    """The committed charts of single hand-offs: each one's title line and where its SVG and PNG are."""
    charts = sorted(HANDOFF_CHARTS.glob("*/*.txt"))
    if not charts:
        return
    print("\n  one lock hand-off, message by message (./run.sh handoff draws one from a traced run):")
    for chart in charts:
        title = chart.read_text().splitlines()[0]
        print(f"    {title}\n      {chart.relative_to(ROOT)} (and .svg, .png next to it)")


def open_plot(path: Path) -> None:
    opener = shutil.which("xdg-open")
    if opener and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        subprocess.run([opener, str(path)], check=False)


def demo(_args: argparse.Namespace) -> int:
    try:
        gem5_finder.find_gem5()
    except gem5_finder.Gem5Unavailable as exc:
        return show_committed(str(exc))
    out = build_dir() / "demo"
    step(f"demo: {DEMO_CAMPAIGN.relative_to(ROOT)} on gem5 (resumable: run it again after a stop)")
    status = subprocess.run([str(ROOT / "run.sh"), "campaign", str(DEMO_CAMPAIGN)]).returncode
    if status != 0:
        error("the demo campaign did not finish every run (see above); ./run.sh demo again resumes it")
        return status
    step(f"demo: report into {out}")
    status = subprocess.run([str(ROOT / "run.sh"), "report", str(DEMO_CAMPAIGN), "--out", str(out)]).returncode
    if status != 0:
        return status
    print("\n  coherence requests per lock hand-off against the bound:")
    print_table(out / BOUND_TABLE)
    print(f"\n  plot: {out / PLOT}\n  report: {out / REPORT}")
    open_plot(out / PLOT)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="the teaching demo: lock hand-off traffic vs CPUs for test-and-set, ticket and queued locks",
        description=__doc__.split("\n\n", 1)[1],
    )
    parser.set_defaults(func=demo)
