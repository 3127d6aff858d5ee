"""`run.sh report`: the real gem5 fixtures through metrics, bound, per-lock tables into a report."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis_checks import FIXTURES
from lockstudy.paths import ROOT, cache_dir

CAMPAIGN = ROOT / "campaigns" / "machines.toml"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not any(FIXTURES.glob("*/stats.txt")):
        pytest.skip("no real gem5 fixtures")
    out = tmp_path_factory.mktemp("report")
    result = subprocess.run(
        [str(ROOT / "run.sh"), "report", str(CAMPAIGN), "--results", str(FIXTURES), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_report_files_are_written(report_dir: Path) -> None:
    for name in ("report.md", "report.html", "metrics.csv", "locks.csv", "provenance.json"):
        assert (report_dir / name).is_file(), name
    markdown = (report_dir / "report.md").read_text()
    for title in ("Coherence messages per lock hand-off", "Node-local and crossing traffic", "Per-lock traffic", "Provenance"):
        assert f"## {title}" in markdown
    for link in re.findall(r"\]\((figures/[^)]+)\)", markdown):
        assert (report_dir / link).is_file(), link


def test_tables_hold_the_fixtures_numbers(report_dir: Path) -> None:
    metrics = pd.read_csv(report_dir / "metrics.csv")
    assert set(metrics["machine"]) == {"piii-smp", "altix-numa"}
    locks = pd.read_csv(report_dir / "locks.csv")
    bench = locks[locks["lock"] == "bench:lock"].iloc[0]
    assert bench["shares_line_with"] == "bench:shared_noise" and bench["invalidations"] > 0


def test_published_report_names_no_path_of_this_machine(report_dir: Path) -> None:
    for path in report_dir.rglob("*"):
        if path.suffix in (".md", ".html", ".json", ".csv"):
            text = path.read_text()
            for leaked in (str(ROOT), str(cache_dir()), str(Path.home())):
                assert not re.search(re.escape(leaked) + r"(?![\w.+-])", text), (path.name, leaked)


def test_a_missing_results_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ROOT / "run.sh"), "report", str(CAMPAIGN), "--results", str(tmp_path / "none")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0 and "no results of campaign machines" in result.stderr
