"""What a run records for the cost model: a gem5 process's host seconds and peak resident memory."""

from __future__ import annotations

import sys
from pathlib import Path

from lockstudy.campaign.measured import run_measured

ALLOCATED_MIB = 120


def test_peak_memory_is_the_childs_high_water_mark_and_its_status_is_kept(tmp_path: Path) -> None:
    # The child touches ALLOCATED_MIB, frees it and exits non-zero: the peak
    # is still seen (the kernel keeps it), and the status is the child's.
    program = f"x = bytearray({ALLOCATED_MIB} * 1024 * 1024); del x; print('done'); raise SystemExit(3)"
    measured = run_measured([sys.executable, "-c", program], tmp_path / "child.log")
    assert measured.returncode == 3
    assert ALLOCATED_MIB <= measured.peak_rss_mib < ALLOCATED_MIB * 3
    assert measured.host_seconds > 0
    assert (tmp_path / "child.log").read_text().strip() == "done"


def test_each_child_is_measured_on_its_own(tmp_path: Path) -> None:
    """A large child measured first does not make a small one look large (RUSAGE_CHILDREN would)."""
    run_measured([sys.executable, "-c", f"x = bytearray({ALLOCATED_MIB} * 1024 * 1024)"], tmp_path / "big.log")
    small = run_measured([sys.executable, "-c", "pass"], tmp_path / "small.log")
    assert small.returncode == 0
    assert small.peak_rss_mib < ALLOCATED_MIB
