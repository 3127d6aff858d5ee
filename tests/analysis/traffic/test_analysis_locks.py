"""Static kernel locks from System.map, checked against the guest's registry (analysis/traffic/locks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.traffic import locks
from analysis.traffic.protocol_trace import TracedLock

BASE = locks.load_static_locks()["kernel_image_base"]


def kernel_dir(tmp_path: Path, symbols: dict[str, int]) -> dict:
    (tmp_path / "System.map").write_text("".join(f"{address:016x} D {name}\n" for name, address in symbols.items()))
    (tmp_path / "vmlinux").write_bytes(b"")
    return {"provenance": {"kernel": {"path": str(tmp_path / "vmlinux")}}}


def test_static_locks_are_placed_from_system_map(tmp_path: Path) -> None:
    result = kernel_dir(tmp_path, {"bench_area": BASE + 0x1D08100, "rename_lock": BASE + 0x1A0A4C0, "unrelated": BASE + 0x10})
    registered = [TracedLock("bench:lock", 0x1D08100, 4)]
    found = locks.static_locks(result, registered)
    assert found == [TracedLock("static:rename_lock", 0x1A0A4C0, 8)]  # only the listed symbols this map has


def test_a_map_that_is_not_the_kernel_that_ran_is_refused(tmp_path: Path) -> None:
    result = kernel_dir(tmp_path, {"bench_area": BASE + 0x1D08140, "rename_lock": BASE + 0x1A0A4C0})
    with pytest.raises(locks.StaticLocksError, match=r"bench_area gives physical 0x1d08140, the guest registered bench:lock at 0x1d08100"):
        locks.static_locks(result, [TracedLock("bench:lock", 0x1D08100, 4)])


def test_without_the_kernel_build_there_are_no_static_locks(tmp_path: Path) -> None:
    result = {"provenance": {"kernel": {"path": "<repo>/build/kernel/smp/vmlinux"}}}  # a published run
    assert locks.static_locks(result, []) == []


def test_a_rebuilt_kernel_s_map_is_not_the_run_s(tmp_path: Path) -> None:
    """The build folder was rebuilt since the run: its build-info.json names another build, so its
    System.map (whose layout may differ) places nothing, and the registry check is not made."""
    result = kernel_dir(tmp_path, {"bench_area": BASE + 0x1D08140, "rename_lock": BASE + 0x1A0A4C0})
    (tmp_path / "build-info.json").write_text('{"build_id": "today"}')
    result["provenance"]["kernel"]["build_info"] = {"build_id": "then"}
    assert locks.system_map_file(result) is None
    assert locks.static_locks(result, [TracedLock("bench:lock", 0x1D08100, 4)]) == []
    # the same build: its map is the run's, and checked
    result["provenance"]["kernel"]["build_info"] = {"build_id": "today"}
    assert locks.system_map_file(result) == tmp_path / "System.map"
    with pytest.raises(locks.StaticLocksError, match=r"not the kernel that ran"):
        locks.static_locks(result, [TracedLock("bench:lock", 0x1D08100, 4)])
