"""`./run.sh analyze RESULTS_DIR`: gem5 outputs -> the tidy stats table.

Runs in the project's .venv (pandas, pyarrow); analysis/command.py starts
it. Writes RESULTS_DIR/analysis/: stats (the tidy table), runs, metrics
(coherence metrics per run and ROI, analysis/metrics.py), handoff_bound
(messages per hand-off against the bound, analysis/handoffs.py) and, for
runs with a ROI trace, lock_events and locks (analysis/locks.py), each as
.parquet and .csv, plus provenance.json; and prints a summary.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import sys
import time
from pathlib import Path
from typing import Any

from analysis import config_reader, stat_rules
from analysis.runs import ANALYSIS_DIR, RESULT_FILE, RunLayoutError, load_results
from analysis.stats_reader import default_vocabulary
from analysis.handoffs import bound_table
from analysis.locks import lock_tables
from analysis.metrics import MetricsError, metrics_table
from analysis.tidy import runs_table, stats_table, write_table

EXIT_UNREADABLE = 1
PACKAGES = ("numpy", "pandas", "pyarrow")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="run.sh analyze")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", type=Path, help="folder of runs (run.py output folders, or a campaign folder)")
    parser.add_argument("--jobs", type=int, default=None, help="processes reading stats files and ROI traces (default: one per CPU)")
    parser.add_argument(
        "--exclude-unreadable",
        action="store_true",
        help="leave out runs whose outputs do not read (reported) instead of stopping with an error",
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance(args: argparse.Namespace, runs: list[Any], excluded: list[Any], errors: list[Any]) -> dict[str, Any]:
    return {
        "command": ["run.sh", "analyze", *sys.argv[1:]],
        "results_dir": str(args.results_dir.resolve()),
        "versions": {name: importlib.metadata.version(name) for name in PACKAGES} | {"python": sys.version.split()[0]},
        "rules": {p.name: _sha256(p) for p in (stat_rules.DATA_FILE, config_reader.DATA_FILE)},
        "runs": {
            run.info.run_id: {"result_json_sha256": _sha256(run.info.gem5_dir / RESULT_FILE), "stats_bytes": run.stats_path.stat().st_size}
            for run in runs
        },
        "excluded": {info.run_id: f"{info.status}: {info.reason}" for info in excluded},
        "unreadable": {info.run_id: message for info, message in errors},
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.monotonic()
    try:
        results, errors = load_results(args.results_dir, args.jobs)
    except (RunLayoutError, stat_rules.RulesError) as exc:
        print(f"analyze: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    runs = sorted(results.runs.values(), key=lambda r: r.info.run_id)
    for info in results.excluded:
        print(f"excluded (status {info.status}): {info.run_id}: {info.reason or 'no reason recorded'}")
    for info, message in errors:
        print(f"unreadable: {info.run_id}: {message}", file=sys.stderr)
    if errors and not args.exclude_unreadable:
        print(f"analyze: {len(errors)} run(s) say ok but their outputs do not read (above); nothing written. "
              "Fix or remove them, or pass --exclude-unreadable to leave them out.", file=sys.stderr)
        return EXIT_UNREADABLE
    if not runs:
        print("analyze: no finished run to analyse (every run failed or is unreadable); nothing written", file=sys.stderr)
        return EXIT_UNREADABLE
    read_seconds = time.monotonic() - started
    table = stats_table(runs)
    out = args.results_dir / ANALYSIS_DIR
    written = write_table(table, out, "stats")
    written += write_table(runs_table(runs, results.excluded, errors), out, "runs")
    try:
        coherence = metrics_table(results)
    except MetricsError as exc:
        print(f"analyze: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    written += write_table(coherence, out, "metrics")
    written += write_table(bound_table(coherence), out, "handoff_bound")
    lock_events, lock_summary = lock_tables(results, args.jobs)
    if not lock_summary.empty:
        written += write_table(lock_events, out, "lock_events")
        written += write_table(lock_summary, out, "locks")
    record = out / "provenance.json"
    record.write_text(json.dumps(provenance(args, runs, results.excluded, errors), indent=2, sort_keys=True) + "\n")
    renamed = sorted({name for name in table["renamed_from"].cat.categories if name})
    machines = table.groupby("machine", observed=True)["run_id"].nunique().to_dict()
    print(f"runs: {len(runs)} read, {len(results.excluded)} excluded (failed, killed or still running), {len(errors)} unreadable")
    print(f"rows: {len(table):,} ({table['stat'].nunique():,} stats, {int(table.groupby('run_id', observed=True)['roi'].nunique().sum())} run x ROI dumps)")
    print(f"machines: {', '.join(f'{m} ({n} runs)' for m, n in machines.items()) or '-'}")
    if renamed:
        print(f"renamed from older gem5 names: {len(renamed)} (e.g. {', '.join(renamed[:3])}); see the renamed_from column")
    print(f"read in {read_seconds:.1f} s, total {time.monotonic() - started:.1f} s; vocabulary {len(default_vocabulary().names):,} names")
    for path in [*written, record]:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
