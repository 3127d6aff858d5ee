"""The study's committed report (results/seeds/): it renders, and every figure and table is there.

The report is what `./run.sh report campaigns/seeds.toml` wrote from the
real gem5 runs; this opens its HTML page in a headless browser and counts,
in the DOM the browser built, the figures and tables the Markdown lists.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from lockstudy.paths import ROOT
from tests.report_dom import BROWSER_TIMEOUT_SECONDS, DomCensus, find_browser

RESULTS = ROOT / "results" / "seeds"
PROVENANCE_KEYS = ("gem5", "machine", "kernel_build_id", "image_sha256", "command")


@pytest.fixture(scope="module")
def markdown() -> str:
    if not (RESULTS / "report.md").is_file():
        pytest.skip(f"{RESULTS.relative_to(ROOT)}/report.md is not committed yet (./run.sh report campaigns/seeds.toml)")
    return (RESULTS / "report.md").read_text()


def test_every_figure_of_the_markdown_is_committed(markdown: str) -> None:
    links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", markdown)
    assert links, "the report has no figure"
    for link in links:
        assert (RESULTS / link).is_file() and (RESULTS / link).with_suffix(".svg").is_file(), link


def test_every_run_has_provenance(markdown: str) -> None:
    provenance = json.loads((RESULTS / "provenance.json").read_text())
    metrics = pd.read_csv(RESULTS / "metrics.csv")
    assert set(metrics["run_id"].astype(str)) <= set(provenance["runs"])
    for run_id, record in provenance["runs"].items():
        for key in PROVENANCE_KEYS:
            assert record.get(key), f"{run_id}: no {key}"


def test_the_html_renders_every_figure_and_table(markdown: str, tmp_path: Path) -> None:
    browser = find_browser()
    if browser is None:
        pytest.skip("no headless browser: chromium not on PATH (Debian package `chromium`, installed by ./run.sh setup)")
    result = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", (RESULTS / "report.html").resolve().as_uri()],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT_SECONDS,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    census = DomCensus()
    census.feed(result.stdout)
    census.close()
    figures = len(re.findall(r"^\*\*Figure \d+\.\*\*", markdown, flags=re.M))
    tables = len(re.findall(r"^\*\*Table \d+\.\*\*", markdown, flags=re.M))
    assert census.figure_svgs == [f"fig-{n}" for n in range(1, figures + 1)]
    assert census.tables == [f"tbl-{n}" for n in range(1, tables + 1)]
    assert all(census.svg_children.get(f"fig-{n}", 0) > 0 for n in range(1, figures + 1)), "an empty figure"
    assert census.body.get("data-figures") == str(figures) and census.body.get("data-tables") == str(tables)


def test_every_seed_with_runs_has_its_traffic_and_a_current_reading(markdown: str) -> None:
    """Each seed's claim comes with what moved where and our reading of it, written for these runs."""
    from analysis.seed_verdicts.seeds import load_seeds

    for seed in load_seeds():
        if f"#### Seed {seed.id}: the traffic behind it" not in markdown:
            continue  # no run of its study yet: its claims say "not run"
        assert f"#### Seed {seed.id}: our reading" in markdown, f"seed {seed.id} has runs but no reading in campaigns/seeds.discussion.toml"
    assert "### Hand-offs: our reading" in markdown
    assert "Written when" not in markdown, "a reading was written for other results: update campaigns/seeds.discussion.toml"
