"""`run.sh costs`: the cost model's measurements, and how well it predicts them.

    run.sh costs collect RESULTS_DIR   add every measured run of RESULTS_DIR to results/costs/runs.csv
    run.sh costs check                 leave-one-out predictions against measured host time
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from lockstudy.console import error
from lockstudy.costmodel.check import leave_one_out, median_abs_percent_error
from lockstudy.costmodel.collect import collect_rows
from lockstudy.costmodel.model import CostModel, Estimate
from lockstudy.costmodel.settings import load_settings
from lockstudy.costmodel.table import CostRow, merged, read_cost_table, write_cost_table

USAGE = """\
run.sh costs collect RESULTS_DIR [--table CSV]
       run.sh costs check [--table CSV]"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "costs",
        help="the cost model's measurement table, and a check of its predictions",
        usage=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "collect: every measured boot and restored gem5 run under RESULTS_DIR (a campaign's\n"
            "         results folder, or a folder of them) into the measurement table, replacing\n"
            "         rows of the same runs; the cost model fits its coefficients from this table.\n"
            "check:   each measured run's host time predicted by the model fitted on the other\n"
            "         rows (leave-one-out), and the median absolute percentage error."
        ),
    )
    parser.add_argument("words", nargs="+", metavar="collect RESULTS_DIR | check")
    parser.add_argument("--table", type=Path, help="the measurement table (default: results/costs/runs.csv)")
    parser.set_defaults(func=costs_command, parser=parser)


def costs_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    table = args.table or settings.table
    words: list[str] = args.words
    if words[0] == "collect" and len(words) == 2:
        return collect(Path(words[1]), table)
    if words == ["check"]:
        return check(table)
    args.parser.error("say `collect RESULTS_DIR` or `check`")
    return 2


def collect(results: Path, table: Path) -> int:
    if not results.is_dir():
        error(f"{results}: not a folder of campaign results")
        return 2
    old = read_cost_table(table)
    new = collect_rows(results)
    rows = merged(old, new)
    write_cost_table(table, rows)
    boots = sum(1 for row in new if row.phase == "boot")
    print(f"{table}: {len(new)} measured row(s) from {results} ({boots} boot(s), {len(new) - boots} restored run(s)); {len(rows)} row(s) now")
    return 0


def share_text(row: CostRow) -> str:
    return f"{row.core_share:.2f}" if row.cpu_seconds else "-"


def check(table: Path) -> int:
    settings = dataclasses.replace(load_settings(), table=table)
    rows = read_cost_table(table)
    checked = leave_one_out(rows, settings)
    print(f"{table}: {len(rows)} row(s); {len(checked)} with a measured host time, each predicted from the others (leave-one-out)")
    if checked:
        print("(own-core s: the wall time scaled by the share of a core the process had, its CPU s / wall s; "
              "a share of '-' was not recorded and counts as 1)")
        print(f"{'source':<12} {'phase':<7} {'machine':<22} {'cpus':>4} {'cpu':<6} {'trace':<8} {'wall s':>7} {'share':>5} "
              f"{'own-core s':>10} {'predicted s':>11} {'error %':>7}")
    for item in checked:
        row = item.row
        predicted = f"{item.prediction.value:.0f}" if isinstance(item.prediction, Estimate) else "-"
        error_text = f"{item.error_percent:.1f}" if item.error_percent is not None else "-"
        note = " (fallback rule)" if isinstance(item.prediction, Estimate) and item.prediction.fallback else ""
        print(
            f"{row.source:<12} {row.phase:<7} {row.machine:<22} {row.cpus:>4} {row.cpu_model:<6} {row.trace:<8} "
            f"{row.host_seconds:>7.0f} {share_text(row):>5} {row.own_core_seconds:>10.0f} {predicted:>11} {error_text:>7}{note}"
        )
    measured = [item for item in checked if item.row.source == settings.preferred_source]
    predicted = [item for item in measured if item.error_percent is not None]
    all_median = median_abs_percent_error(checked)
    median = median_abs_percent_error(measured)
    print(f"\nmedian absolute percentage error, every row predicted: {'-' if all_median is None else f'{all_median:.1f} %'} "
          f"({sum(1 for item in checked if item.error_percent is not None)} of {len(checked)} predicted)")
    goal = f"<= {settings.goal_median_abs_percent_error:g} % over >= {settings.goal_min_runs} {settings.preferred_source} runs"
    if median is None:
        verdict = f"not judged: no {settings.preferred_source} row could be predicted"
    elif len(predicted) < settings.goal_min_runs:
        verdict = f"not judged: {len(predicted)} {settings.preferred_source} run(s) predicted, {median:.1f} % so far"
    else:
        met = "met" if median <= settings.goal_median_abs_percent_error else "NOT met"
        verdict = f"{median:.1f} % over {len(predicted)} runs: {met}"
    print(f"median absolute percentage error, {settings.preferred_source} rows: {'-' if median is None else f'{median:.1f} %'}")
    with_share = [item for item in measured if item.row.cpu_seconds]
    share_median = median_abs_percent_error(with_share)
    if share_median is not None:
        print(f"median absolute percentage error, {settings.preferred_source} rows whose CPU time was recorded: "
              f"{share_median:.1f} % over {sum(1 for item in with_share if item.error_percent is not None)} run(s)")
    print(f"goal ({goal}): {verdict}")
    print("\nfitted now on every row:")
    model = CostModel.fit(rows, settings)
    for law_set in (model.roi_rate, model.outside_roi, model.boot, model.memory):
        groups = sorted(law_set.points, key=str)
        if not groups:
            print(f"  {law_set.label}: no rows")
        for group in groups:
            law = law_set.laws.get(group)
            shown = law.describe() if law else f"{len(law_set.points[group])} point(s): no fit of its own"
            print(f"  {law_set.label} {'/'.join(map(str, group))}: {shown}")
    return 0
