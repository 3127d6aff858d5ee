"""The calibration testcases (workloads/tc_cal_*.c) natively: their numbers have the right order, their refusals name the cause.

Natively the TSC is the host's, so only orders are checked (an L1 hit is
cheaper than a miss to memory), never values; the QEMU test boots them in
the guest and gem5 measures the machines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstudy import workloads

L1_KIB = 8  # below any x86 L1D
MEMORY_KIB = 64 * 1024  # above the host's caches


@pytest.fixture(scope="session")
def programs() -> Path:
    return workloads.build(echo=False)


def metrics(program: str, args: list[str]) -> dict[str, float]:
    result = workloads.run_native(program, args).result()
    assert result["status"] == "ok" and result["testcase"] == program
    return dict(result["metrics"])


def test_pointer_chase_l1_is_cheaper_than_memory(programs: Path) -> None:
    l1 = metrics("cal_latency", [f"kib={L1_KIB}", "iterations=8"])
    memory = metrics("cal_latency", [f"kib={MEMORY_KIB}", "iterations=4", "warmup=0", "node=0"])
    assert 0 < l1["cycles_per_load"] < memory["cycles_per_load"]
    assert memory["working_set_bytes"] == MEMORY_KIB * 1024 and memory["mem_node"] == 0 and memory["distance"] == 10
    assert l1["ns_per_load"] == pytest.approx(l1["cycles_per_load"] * 1000 / l1["tsc_mhz"], rel=1e-3)


def test_rmw_reports_every_kind_and_the_lock_prefix_difference(programs: Path) -> None:
    m = metrics("cal_rmw", ["iterations=4"])
    kinds = ("add", "xadd", "lock_xadd", "cmpxchg", "lock_cmpxchg")
    assert all(m[f"cycles_{kind}"] > 0 for kind in kinds)
    assert m["extra_cycles_lock_xadd"] == pytest.approx(m["cycles_lock_xadd"] - m["cycles_xadd"], abs=1e-5)
    assert m["extra_cycles_lock_cmpxchg"] == pytest.approx(m["cycles_lock_cmpxchg"] - m["cycles_cmpxchg"], abs=1e-5)


def test_contended_rmw_and_stream_span_every_copy(programs: Path) -> None:
    contend = workloads.run_native("cal_contend", ["threads=2", "iterations=8", "reps=16"]).result()
    assert contend["ops"] == 2 * 8 * 16 and contend["metrics"]["cycles_per_rmw"] > 0
    assert contend["metrics"]["rmw_per_kcycle"] == pytest.approx(1000 / contend["metrics"]["cycles_per_rmw"], rel=1e-3)
    stream = workloads.run_native("cal_stream", ["kib=1024", "iterations=2", "line=64"]).result()
    assert stream["ops"] == 2 * 1024 * 1024 // 64 and stream["metrics"]["bytes_per_cycle"] > 0


@pytest.mark.parametrize("state", ["dirty", "clean"])
def test_c2c_times_the_readers_load_of_the_owners_line(programs: Path, state: str) -> None:
    result = workloads.run_native("cal_c2c", ["threads=2", "owner=1", "reader=0", f"state={state}", "iterations=16", "evict_kib=1024"]).result()
    m = result["metrics"]
    assert (m["owner_cpu"], m["reader_cpu"], m["state"], m["samples"]) == (1, 0, state, 16)
    assert result["copy_cpu"] == [1, 0] and result["copy_ops"] == [0, 16]


def test_the_parent_runs_on_copy_0s_cpu_so_its_memory_is_on_copy_0s_node(programs: Path) -> None:
    """Its barriers and the copies' contexts are first touched on copy 0's node; pin=0 leaves it to the scheduler."""
    pinned = workloads.run_native("cal_contend", ["threads=2", "iterations=8"]).result()
    assert pinned["parent_cpu"] == pinned["copy_cpu"][0] >= 0
    unpinned = workloads.run_native("cal_contend", ["threads=2", "iterations=8", "pin=0"]).result()
    assert unpinned["parent_cpu"] == -1


@pytest.mark.parametrize(
    ("program", "args", "message"),
    [
        ("cal_latency", ["threads=2"], "the chase runs on one copy"),
        ("cal_latency", ["steps=12"], "not a multiple of 8"),
        ("cal_latency", ["line=48"], "not a power of two"),
        ("cal_latency", ["node=far"], "node=far: expected local or a node number"),
        ("cal_latency", ["node=63", "kib=64"], "mbind of 65536 bytes to node 63"),
        ("cal_c2c", ["threads=1"], "needs threads=2"),
        ("cal_c2c", ["threads=2", "owner=1", "reader=1"], "name the same CPU 1"),
        ("cal_c2c", ["threads=2", "state=shared"], "state=shared: expected dirty or clean"),
        ("cal_rmw", ["reps=6"], "not a multiple of 4"),
        ("cal_stream", ["processes=2"], "threads only"),
    ],
)
def test_bad_calibration_arguments_are_named(programs: Path, program: str, args: list[str], message: str) -> None:
    run = workloads.run_native(program, args)
    assert run.returncode != 0 and run.stdout == ""
    assert message in run.stderr, run.stderr
