"""The in-kernel lock bench on a 2-node layout, and the lock registry.

One boot of the smp kernel under QEMU TCG: 4 vCPUs in 2 sockets, and the
command-line NUMA layout `lockstudy.numa=2:0-1/2-3:...` (what gem5 uses).
The guest runs the bench for every spinlock variant of kernel/variants.toml
on all four CPUs, then exercises /sys/kernel/lockstudy/locks and
locks_request.

Checked for every variant: mutual exclusion held; node-local plus remote
hand-offs add up to the hand-offs, and the threads' counts add up to the
totals; each thread ran on the node the layout gives its CPU. HBO and CNA
are the NUMA-aware variants: their node-local share of hand-offs is printed
next to the others' (the figures are in kernel/patches/README.md).

Checked for the threads: one kthread per CPU of the list, kept from run to
run, replaced when the list changes.

Checked for the registry: the bench lock is listed at the bench's own
lock address, which is the `bench_area` symbol of System.map; a request
("mm", "files", "path ...") adds the caller's locks, "clear" removes them,
and a bad request is refused.

Time: one boot, the bench runs BENCH_MS per variant (7 s in all under
TCG, measured).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lockstudy import qemu
from lockstudy.kernel import lock_bench, specs
from lockstudy.kernel.initramfs import busybox_initramfs
from two_nodes import BENCH_LOCK_SYMBOL, CPU_NODE, CPUS, MEMORY_MIB, NUMA_ARG, SOCKETS, symbol_address

pytestmark = [pytest.mark.qemu, pytest.mark.kernel]

# x86-64 __START_KERNEL_map (arch/x86/include/asm/page_64_types.h)
KERNEL_IMAGE_BASE = 0xFFFFFFFF80000000
# x86-64 PAGE_OFFSET with 4-level paging and no KASLR (Documentation/x86/x86_64/mm.rst)
DIRECT_MAP_BASE = 0xFFFF888000000000
BENCH_MS = 400
HOLD_LOOPS = 200
THINK_LOOPS = 200
BOOT_TIMEOUT_SECONDS = 240
TWO_CPUS = 2


def guest_script(variants: list[str]) -> str:
    lines = lock_bench.variant_sweep(variants, CPUS, BENCH_MS, HOLD_LOOPS, THINK_LOOPS)
    lines += [
        *lock_bench.thread_listing("after-sweep"),
        f"echo 1 > {lock_bench.BENCH_DIR}/run",
        *lock_bench.thread_listing("after-another-run"),
        f"echo 0-{TWO_CPUS - 1} > {lock_bench.BENCH_DIR}/cpus",
        *lock_bench.thread_listing("two-cpus"),
        *lock_bench.registry_dump("initial"),
        *(lock_bench.registry_request(r) for r in ("mm", "files", "path /init")),
        *lock_bench.registry_dump("requested"),
        lock_bench.registry_request("clear"),
        *lock_bench.registry_dump("cleared"),
        f"if {lock_bench.registry_request('nonsense')}; then echo REQUEST-BAD accepted; else echo REQUEST-BAD refused; fi",
        "poweroff -f",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def guest_console(smp_bzimage: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    work = tmp_path_factory.mktemp("lock-bench")
    variants = [v.name for v in specs.load_spinlock_variants()]
    initramfs = busybox_initramfs(guest_script(variants), work / "initramfs.cpio.gz")
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=work / "console.log", cpus=CPUS, sockets=SOCKETS,
                                     memory_mib=MEMORY_MIB, kernel_args=NUMA_ARG,
                                     initrd=initramfs, timeout_seconds=BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert result.ok, f"{result.describe()}\n{result.console[-3000:]}"
    return result.console


@pytest.mark.parametrize("variant", [v.name for v in specs.load_spinlock_variants()])
def test_bench_counts_add_up_on_two_nodes(guest_console: str, variant: str) -> None:
    results = lock_bench.parse_bench_results(guest_console)
    assert variant in results, f"no bench result for {variant}"
    bench = results[variant]
    assert bench.values["variant"] == variant
    assert bench.values["exclusion"] == "ok"
    local, remote, handoffs = (bench.number(k) for k in ("handoffs_local", "handoffs_remote", "handoffs"))
    assert local + remote == handoffs > 0
    assert bench.number("guarded_count") == bench.number("acquisitions")
    assert sorted(t["cpu"] for t in bench.threads) == list(range(CPUS))
    for thread in bench.threads:
        assert thread["node"] == CPU_NODE[thread["cpu"]], f"cpu {thread['cpu']} ran on node {thread['node']}"
    for key in ("acquisitions", "handoffs_local", "handoffs_remote"):
        assert sum(t[key] for t in bench.threads) == bench.number(key), key
    print(f"{variant}: {handoffs} hand-offs, {100 * bench.local_share():.0f}% node-local, {bench.values['acquisitions_per_sec']} acquisitions/s")


def test_bench_threads_outlive_a_run_and_follow_the_cpu_list(guest_console: str) -> None:
    """Runs reuse the kthreads that writing `cpus` made; a new list replaces them (no thread is made or
    stopped inside a run, which a study times and profiles whole)."""
    listings = lock_bench.parse_thread_listings(guest_console)
    swept, again, two = (listings[label] for label in ("after-sweep", "after-another-run", "two-cpus"))
    assert sorted(swept.values()) == list(range(CPUS)), swept
    assert again == swept, "a run made or stopped threads"
    assert sorted(two.values()) == list(range(TWO_CPUS)), two
    assert not set(two) & set(swept), "the old threads were kept for a new CPU list"


def test_registry_lists_the_bench_lock_at_its_symbol(guest_console: str, smp_bzimage: Path) -> None:
    locks = lock_bench.parse_registries(guest_console)["initial"]
    lock = locks["bench:lock"]
    address = lock.address
    assert lock.size == 4
    # kernel image: physical = virtual - __START_KERNEL_map (no KASLR, phys_base 0)
    assert lock.physical == address - KERNEL_IMAGE_BASE
    assert address == symbol_address(smp_bzimage.parent / "System.map", BENCH_LOCK_SYMBOL)
    bench = lock_bench.parse_bench_results(guest_console)["qspinlock"]
    assert int(bench.values["lock_address"], 16) == address
    assert "bench:shared_noise" in locks and "bench:guarded_data" in locks


def test_registry_requests_add_and_clear_dynamic_locks(guest_console: str) -> None:
    registries = lock_bench.parse_registries(guest_console)
    initial, requested, cleared = (registries[k] for k in ("initial", "requested", "cleared"))
    added = set(requested) - set(initial)
    kinds = sorted(re.sub(r":\d+ ", ":PID ", name) for name in added)
    assert kinds == [
        "dentry:/init d_lockref", "dentry:/init parent_d_lockref",
        "files:PID file_lock", "mm:PID mmap_lock", "mm:PID mmap_lock.wait_lock", "mm:PID page_table_lock",
    ]  # fmt: skip
    for name in added:  # slab objects: the direct map, physical = virtual - PAGE_OFFSET
        assert requested[name].physical == requested[name].address - DIRECT_MAP_BASE, name
    assert cleared == initial
    assert "REQUEST-BAD refused" in guest_console
