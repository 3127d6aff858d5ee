"""kbench in the project kernel under QEMU TCG: the in-kernel lock bench
driven from the image's /init, on a 2-node machine.

One boot runs the bench with `hbo` and `ticket` (4 vCPUs as 2 sockets of
2 cores, `lockstudy.numa=` making each socket a node); the JSON must say
mutual exclusion held, its per-thread numbers must add up to the totals,
the threads must sit on the nodes of the layout, and the lock must be the
kernel's `bench_area` (System.map). A second boot asks for a variant the
kernel does not know: the kernel refuses it and the run ends with kbench's
message. Time: two boots of about 5 s each under TCG.

Needs the smp kernel (fails when it is missing or stale: run ./run.sh setup)
and builds the image if it is out of date.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstudy import image, qemu
from lockstudy.guest_output import GuestRun, parse_console
from two_nodes import BENCH_LOCK_SYMBOL, CPU_NODE, CPUS, MEMORY_MIB, NUMA_ARG, SOCKETS, symbol_address

pytestmark = [pytest.mark.qemu, pytest.mark.kernel]

BOOT_TIMEOUT_S = 120
ROOT_ARGS = "root=/dev/sda"
BENCH_MS = 300
BENCH = f"duration_ms={BENCH_MS},hold_loops=100,think_loops=100"
VARIANTS = ("hbo", "ticket")


@pytest.fixture(scope="module")
def rootfs() -> Path:
    image.build_image()
    return image.ext2_path()


def guest(kernel: Path, rootfs: Path, log: Path, cpus: int, args: str, sockets: int = 1) -> GuestRun:
    result = qemu.boot(qemu.QemuBoot(kernel=kernel, console_log=log, cpus=cpus, sockets=sockets, memory_mib=MEMORY_MIB,
                                     kernel_args=f"{ROOT_ARGS} {args}", disk=rootfs,
                                     timeout_seconds=BOOT_TIMEOUT_S))  # fmt: skip
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    return parse_console(result.console)


def test_kbench_runs_hbo_and_ticket_on_two_nodes(smp_bzimage: Path, rootfs: Path, tmp_path: Path) -> None:
    spec = "+".join(f"kbench:variant={variant},{BENCH}" for variant in VARIANTS)
    run = guest(smp_bzimage, rootfs, tmp_path / "kbench.log", CPUS, f"{NUMA_ARG} lockstudy.run={spec}", SOCKETS)
    results = run.results()  # raises unless the run is whole and ended ok
    lock_address = symbol_address(smp_bzimage.parent / "System.map", BENCH_LOCK_SYMBOL)
    assert [r.data["params"]["variant"] for r in results] == list(VARIANTS)
    for result in results:
        data = result.data
        assert data["testcase"] == "kbench" and data["status"] == "ok"
        assert data["copies"] == CPUS and data["copy_cpu"] == list(range(CPUS))
        (bench,) = data["metrics"]["runs"]
        assert bench["variant"] == data["params"]["variant"] and bench["cpus"] == f"0-{CPUS - 1}"
        assert bench["exclusion"] == "ok" and bench["guarded_count"] == bench["acquisitions"] > 0
        assert int(bench["lock_address"], 16) == lock_address
        assert bench["lock_size"] > 0
        # The window is duration_ms on ktime_get() from the last ready thread
        # (kernel/patches/lockstudy-bench-window.patch): never shorter. The
        # jiffies deadline before it ended at a tick, up to 4 ms short at HZ=250.
        assert bench["elapsed_ns"] >= BENCH_MS * 1_000_000
        threads = bench["threads"]
        assert {t["cpu"]: t["node"] for t in threads} == CPU_NODE
        assert sum(t["acquisitions"] for t in threads) == bench["acquisitions"] == data["ops"]
        assert sum(t["handoffs_local"] for t in threads) == bench["handoffs_local"]
        assert sum(t["handoffs_remote"] for t in threads) == bench["handoffs_remote"]
        assert bench["handoffs_local"] + bench["handoffs_remote"] == bench["handoffs"]
        assert data["copy_ops"] == [t["acquisitions"] for t in threads]


def test_kbench_reports_a_variant_the_kernel_refuses(smp_bzimage: Path, rootfs: Path, tmp_path: Path) -> None:
    run = guest(smp_bzimage, rootfs, tmp_path / "refused.log", 1, "lockstudy.run=kbench:variant=nosuch,duration_ms=10")
    assert run.done is not None and run.done.reason == "testcase-failed:kbench"
    assert any("variant=nosuch: the kernel's lock bench does not know this variant" in e for e in run.errors), run.errors
    assert run.parsed == []
