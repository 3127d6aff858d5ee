"""`./run.sh analyze RESULTS_DIR`: gem5 outputs -> the tidy stats table.

Runs in the project's .venv (pandas, pyarrow); analysis/command.py starts
it. Writes RESULTS_DIR/analysis/: stats (the tidy table), runs, metrics
(coherence metrics per run and ROI, analysis/traffic/metrics.py), handoff_bound
(messages per hand-off against the bound, analysis/traffic/handoffs.py) and, for
runs with a ROI trace, lock_events and locks (analysis/traffic/locks.py), each as
.parquet and .csv, plus provenance.json; and prints a summary.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from analysis.gem5_output import config_reader, stat_rules
from analysis.gem5_output.runs import ANALYSIS_DIR, RESULT_FILE, load_results
from analysis.gem5_output.stats_reader import default_vocabulary
from analysis.gem5_output.tidy import runs_table, stats_table, write_table
from analysis.input_errors import INPUT_ERRORS, messages
from analysis.traffic.handoffs import bound_table
from analysis.traffic.locks import lock_tables
from analysis.traffic.metrics import metrics_table

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
    try:
        return analyze(args)
    except INPUT_ERRORS as exc:
        lines = messages(exc)
        lines[-1] += "; nothing written"
        for line in lines:
            print(f"analyze: {line}", file=sys.stderr)
        return EXIT_UNREADABLE


def write_folder(out: Path, tables: dict[str, Any], record: dict[str, Any]) -> list[Path]:
    """Every table and provenance.json into `out`, which readers see whole or not at all.

    They are written into a staging folder beside it, which then takes its
    place: a failure midway leaves the previous analysis as it was.
    """
    staging = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for stem, frame in tables.items():
            write_table(frame, staging, stem)
        (staging / "provenance.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        previous = out.with_name(f".{out.name}.previous-{os.getpid()}")
        if out.exists():
            out.rename(previous)
        staging.rename(out)
        shutil.rmtree(previous, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(out.iterdir())


def analyze(args: argparse.Namespace) -> int:
    started = time.monotonic()
    results, errors = load_results(args.results_dir, args.jobs)
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
    # Every table is computed before any is written: a run that fails a metric writes nothing.
    table = stats_table(runs)
    coherence = metrics_table(results)
    tables = {
        "stats": table,
        "runs": runs_table(runs, results.excluded, errors),
        "metrics": coherence,
        "handoff_bound": bound_table(coherence),
    }
    lock_events, lock_summary = lock_tables(results, args.jobs)
    if not lock_summary.empty:
        tables |= {"lock_events": lock_events, "locks": lock_summary}
    written = write_folder(args.results_dir / ANALYSIS_DIR, tables, provenance(args, runs, results.excluded, errors))
    renamed = sorted({name for name in table["renamed_from"].cat.categories if name})
    machines = table.groupby("machine", observed=True)["run_id"].nunique().to_dict()
    print(f"runs: {len(runs)} read, {len(results.excluded)} excluded (failed, killed or still running), {len(errors)} unreadable")
    print(f"rows: {len(table):,} ({table['stat'].nunique():,} stats, {int(table.groupby('run_id', observed=True)['roi'].nunique().sum())} run x ROI dumps)")
    print(f"machines: {', '.join(f'{m} ({n} runs)' for m, n in machines.items()) or '-'}")
    if renamed:
        print(f"renamed from older gem5 names: {len(renamed)} (e.g. {', '.join(renamed[:3])}); see the renamed_from column")
    print(f"read in {read_seconds:.1f} s, total {time.monotonic() - started:.1f} s; vocabulary {len(default_vocabulary().names):,} names")
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
