"""kbench in the project kernel under QEMU TCG: the in-kernel lock bench
driven from the image's /init, on a 2-node machine.

One boot runs the bench with `hbo` and `ticket` (4 vCPUs as 2 sockets of
2 cores, `lockstudy.numa=` making each socket a node); the JSON must say
mutual exclusion held, its per-thread numbers must add up to the totals,
the threads must sit on the nodes of the layout, and the lock must be the
kernel's `bench_area` (System.map). A second boot asks for a variant the
kernel does not know: the kernel refuses it and the run ends with kbench's
message. Time: two boots of about 5 s each under TCG. The builds with the
bench's extra patches (smp-rwsem-bench, smp-bench-pair) get a boot each,
and the smp build a boot that asks each for what it lacks.

Needs the smp kernel (fails when it is missing or stale: run ./run.sh setup)
and builds the image if it is out of date.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstudy import image, qemu
from lockstudy.kernel.build import kernel_output_dir
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


# Seed 003's mechanism in the bench: 4 threads on one rwsem, 2 writers and 2 readers,
# critical sections of a few cpu_relax(), waiters woken inside wait_lock (the 2013
# rwsem_wake()), on the one build with the bench's rwsem, which also counts the
# wakers the flag lets go.
RWSEM_BENCH = "kbench:lock=rwsem,writers=2,duration_ms=300,hold_loops=10,think_loops=10"
RWSEM_SWITCHES = "lockstudy.rwsem_wake_in_lock=1 lockstudy.rwsem_wakeflag=1"


def test_kbench_rwsem_lets_wakers_meet_and_the_flag_skip_them(rootfs: Path, tmp_path: Path) -> None:
    """lock=rwsem: readers and writers of the bench's rwsem from every CPU. Exclusion holds (the
    writers' guarded counter, no reader beside a writer), the writers are the first threads, and
    releases come close enough together that a second waker finds one pending: with the waker
    flag on, the kernel counts skipped wakers (rwsem_wake_skipped), which the mmapsem load never
    gave (kernel/patches/lockstudy-bench-rwsem.patch)."""
    kernel_image = kernel_output_dir("smp-rwsem-bench") / "bzImage"
    if not kernel_image.is_file():
        pytest.fail(f"{kernel_image} missing: run ./run.sh setup")
    args = f"{NUMA_ARG} {RWSEM_SWITCHES} lockstudy.run={RWSEM_BENCH}"
    run = guest(kernel_image, rootfs, tmp_path / "rwsem.log", CPUS, args, SOCKETS)
    (result,) = run.results()
    data = result.data
    assert data["params"]["lock"] == "rwsem" and data["params"]["writers"] == 2 and data["seed"] == "003"
    (bench,) = data["metrics"]["runs"]
    assert bench["lock"] == "rwsem" and bench["writers"] == 2 and bench["exclusion"] == "ok"
    assert bench["reader_overlaps"] == 0 and bench["guarded_count"] == bench["write_acquisitions"]
    threads = bench["threads"]
    assert bench["write_acquisitions"] == threads[0]["acquisitions"] + threads[1]["acquisitions"] > 0
    assert bench["acquisitions"] > bench["write_acquisitions"]  # the readers took it too
    bench_area = symbol_address(kernel_image.parent / "System.map", BENCH_LOCK_SYMBOL)
    assert int(bench["lock_address"], 16) > bench_area  # the rwsem's own line, after the spinlock's
    counts = run.lock_event_counts[0]
    print({name: counts[name] for name in sorted(counts) if name.startswith("rwsem")})
    assert counts["rwsem_wake_skipped"] > 0, counts


def test_kbench_refuses_the_rwsem_on_a_build_without_it(smp_bzimage: Path, rootfs: Path, tmp_path: Path) -> None:
    """Every build but smp-rwsem-bench has the bench as before lockstudy-bench-rwsem.patch."""
    run = guest(smp_bzimage, rootfs, tmp_path / "no-rwsem.log", 1, "lockstudy.run=kbench:lock=rwsem,writers=1,duration_ms=10")
    assert run.done is not None and run.done.reason == "testcase-failed:kbench"
    assert any("lock=rwsem: this kernel's bench has no rwsem" in e for e in run.errors), run.errors


# Seed 000's precondition: the bench's lock pair (kernel/patches/lockstudy-bench-lock-pair.patch), the
# seed's lock, packed then padded, in one boot. Every other thread (in CPU order) takes the second lock.
PAIR_BENCH = "variant=tas,duration_ms=300,hold_loops=10,think_loops=100"
PAIR_PLACEMENTS = ("pair-packed", "pair-padded")
CACHE_LINE_BYTES = 64  # x86


def test_kbench_lock_pair_packs_the_second_lock_on_the_first_ones_line(rootfs: Path, tmp_path: Path) -> None:
    """Packed, the second lock is on the bench lock's cache line; padded, on another. Each lock's
    exclusion holds (the kernel checks each guarded counter against its own threads), and the
    threads' counts add up."""
    kernel_image = kernel_output_dir("smp-bench-pair") / "bzImage"
    if not kernel_image.is_file():
        pytest.fail(f"{kernel_image} missing: run ./run.sh setup")
    spec = "+".join(f"kbench:{PAIR_BENCH},placement={placement}" for placement in PAIR_PLACEMENTS)
    run = guest(kernel_image, rootfs, tmp_path / "pair.log", CPUS, f"{NUMA_ARG} lockstudy.run={spec}", SOCKETS)
    results = run.results()
    bench_area = symbol_address(kernel_image.parent / "System.map", BENCH_LOCK_SYMBOL)
    lines = {}
    for result, placement in zip(results, PAIR_PLACEMENTS, strict=True):
        (bench,) = result.data["metrics"]["runs"]
        assert bench["placement"] == placement and bench["exclusion"] == "ok"
        assert bench["guarded_count"] == bench["acquisitions"] == sum(t["acquisitions"] for t in bench["threads"]) > 0
        assert all(t["acquisitions"] > 0 for t in bench["threads"])  # both locks taken
        first, second = int(bench["lock_address"], 16), int(bench["pair_lock_address"], 16)
        assert first == bench_area and second != first
        lines[placement] = (first // CACHE_LINE_BYTES, second // CACHE_LINE_BYTES)
    assert lines["pair-packed"][0] == lines["pair-packed"][1]
    assert lines["pair-padded"][0] != lines["pair-padded"][1]


def test_kbench_refuses_the_lock_pair_on_a_build_without_it(smp_bzimage: Path, rootfs: Path, tmp_path: Path) -> None:
    """Every build but smp-bench-pair has the bench without lockstudy-bench-lock-pair.patch."""
    run = guest(smp_bzimage, rootfs, tmp_path / "no-pair.log", 2, "lockstudy.run=kbench:placement=pair-packed,duration_ms=10")
    assert run.done is not None and run.done.reason == "testcase-failed:kbench"
    assert any("placement=pair-packed: this kernel's bench has no lock pair" in e for e in run.errors), run.errors
