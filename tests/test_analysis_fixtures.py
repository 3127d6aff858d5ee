"""The analysis checks on real gem5 outputs: tests/fixtures/gem5/<run>/ (issue #5).

Each committed fixture run (stats.txt, config.json, result.json,
console.log as gem5-configs/run.py writes them) goes through the same
checks the generated runs pass in test_analysis_reader.py. Until the
fixtures land, this skips with the reason shown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis_checks import NO_FIXTURES_REASON, check_run_folder, fixture_runs

RUNS = fixture_runs()


@pytest.mark.parametrize("folder", RUNS or [None], ids=[p.name for p in RUNS] or ["none"])
def test_real_gem5_fixture(folder: Path | None) -> None:
    if folder is None:
        pytest.skip(NO_FIXTURES_REASON)
    check_run_folder(folder)
