"""Registers `run.sh analyze` and `run.sh report` (standard library only: run.sh loads it before .venv exists).

The work runs in the project's .venv (pandas, pyarrow, matplotlib):
analysis/analyze.py and analysis/reporting/report.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lockstudy.console import error
from lockstudy.paths import ROOT
from lockstudy.venv import run_in_venv

RUNS_FOLDER = "runs"  # a campaign results folder keeps one folder per run here (lockstudy/campaign/store.py)


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
    parser.add_argument("--jobs", type=int, default=None, help="processes reading stats files and ROI traces (default: one per CPU)")
    parser.add_argument(
        "--exclude-unreadable",
        action="store_true",
        help="leave out runs whose outputs do not read (reported) instead of stopping with an error",
    )
    parser.set_defaults(func=analyze)
    register_report(commands)


def register_report(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report",
        help="a campaign's results as tables, plots and a report (Markdown + one HTML page)",
        description=(
            "Read every finished run of CAMPAIGN (its results folder: --results, default "
            "$LOCKSTUDY_RESULTS/<name> or results/raw/<name>) and write into --out (default "
            "results/<name>/): metrics.csv (coherence metrics per run and ROI), handoff_bound.csv "
            "(messages per hand-off against the analytical bound), locks.csv (per-lock traffic from ROI "
            "traces), hotlines.csv (the top cache lines of every traced ROI: requests, invalidations, node "
            "crossings, symbol), figures/ (PNG + SVG), report.md, report.html (self-contained) and provenance.json. "
            "Failed runs are listed and left out. Runs in .venv: needs ./run.sh setup."
        ),
    )
    parser.add_argument("campaign", type=Path, help="the campaign file (campaigns/NAME.toml)")
    parser.add_argument("--results", type=Path, help="the campaign's results folder, or the results root holding it (as campaign --results)")
    parser.add_argument("--out", type=Path, help="where the report goes (default results/<name>/)")
    parser.set_defaults(func=report)


def campaign_folder(given: Path, name: str) -> Path:
    """--results as the campaign's folder, or as the results root holding it (how `campaign --results` takes it)."""
    if not (given / RUNS_FOLDER).is_dir() and (given / name / RUNS_FOLDER).is_dir():
        return given / name
    return given


def report(args: argparse.Namespace) -> int:
    from lockstudy.campaign.loader import CampaignError, load_campaign
    from lockstudy.campaign.store import results_root

    try:
        name = load_campaign(args.campaign).name
    except CampaignError as exc:
        error(str(exc))
        return 1
    results = campaign_folder(args.results, name) if args.results else results_root() / name
    if not results.is_dir():
        error(f"{results}: no results of campaign {name} (run ./run.sh campaign {args.campaign} first, or pass --results)")
        return 1
    out = args.out or ROOT / "results" / name
    return run_in_venv("analysis.reporting.report", [str(args.campaign), "--results", str(results), "--out", str(out)])


def analyze(args: argparse.Namespace) -> int:
    argv = [args.results_dir]
    if args.jobs is not None:
        argv += ["--jobs", str(args.jobs)]
    if args.exclude_unreadable:
        argv.append("--exclude-unreadable")
    return run_in_venv("analysis.analyze", argv)
