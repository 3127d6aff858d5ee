"""`run.sh demo` without gem5: it says what is missing and shows the committed results."""

from __future__ import annotations

import os
import subprocess

from lockstudy.campaign.loader import load_campaign
from lockstudy.commands.demo import COMMITTED, DEMO_CAMPAIGN, HANDOFF_CHARTS
from lockstudy.paths import ROOT


def test_demo_without_gem5_explains_and_shows_committed_results() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GEM5"}
    result = subprocess.run([str(ROOT / "run.sh"), "demo"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "needs gem5: GEM5 is not set" in result.stdout
    if (COMMITTED / "handoff_bound.csv").is_file():
        assert "coherence requests per lock hand-off" in result.stdout and "verdict" in result.stdout
    else:
        assert "none committed yet" in result.stdout
    for chart in HANDOFF_CHARTS.glob("*/*.txt"):
        assert str(chart.relative_to(ROOT)) in result.stdout
        assert chart.read_text().splitlines()[0] in result.stdout


def test_the_demo_campaign_is_the_issues_sweep() -> None:
    runs = load_campaign(DEMO_CAMPAIGN).runs
    assert {r.machine for r in runs} == {"piii-smp"} and sorted({r.size for r in runs}) == [2, 4, 8]
    assert sorted({r.run.split("variant=")[1].split(",")[0] for r in runs}) == ["qspinlock", "tas", "ticket"]
