"""The project kernel + the image under QEMU TCG: every testcase at 1 and 4
vCPUs, results that parse, and a bad spec that ends in a clean power-off.

Needs the smp kernel and the image from ./run.sh setup. The guest-side time
of each testcase goes to build/image/qemu-timings.json (the benchmark the
issue asks for).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lockstudy import guest_output, image
from lockstudy.guest_output import GuestRun, IncompleteRun, parse_console
from lockstudy.kernel.build import kernel_output_dir
from lockstudy.qemu import BootResult, QemuBoot, boot
from analysis.hotlines.symbols import MemoryMap

pytestmark = pytest.mark.qemu

KERNEL_BUILD = "smp"
BOOT_TIMEOUT_S = 150.0
MEMORY_MIB = 512
ROOT_ARGS = "root=/dev/sda"
TIMINGS = "qemu-timings.json"


def every_testcase(copies: int) -> str:
    """Each testcase but dbench once, small enough for TCG (dbench has its own test)."""
    threads = f"threads={copies}"
    return "+".join(
        [
            f"write1b:{threads},iterations=2000,warmup=10",
            f"fsmix:{threads},iterations=100,warmup=4,files=8",
            f"pft:{threads},mb=8,iterations=2",
            f"mmapsem:{threads},iterations=40,forkevery=8",
            f"samefile:{threads},iterations=300",
            f"samefile:{threads},iterations=100,ops=stat",
            "dd1b:count=20000",
        ]
    )


@pytest.fixture(scope="module")
def kernel() -> Path:
    bzimage = kernel_output_dir(KERNEL_BUILD) / "bzImage"
    if not bzimage.is_file():
        pytest.fail(f"{bzimage} missing: run ./run.sh setup (or ./run.sh build kernel)")
    return bzimage


@pytest.fixture(scope="module")
def rootfs() -> Path:
    image.build_image()
    return image.ext2_path()


def guest(kernel: Path, tmp_path: Path, name: str, cpus: int, args: str, *, initrd: Path | None = None, disk: Path | None = None) -> tuple[BootResult, GuestRun]:
    result = boot(
        QemuBoot(
            kernel=kernel,
            console_log=tmp_path / f"{name}.log",
            cpus=cpus,
            memory_mib=MEMORY_MIB,
            kernel_args=args,
            disk=disk,
            initrd=initrd,
            timeout_seconds=BOOT_TIMEOUT_S,
        )
    )
    return result, parse_console(result.console)


def record_timings(name: str, boot_result: BootResult, run: GuestRun) -> None:
    path = image.output_dir() / TIMINGS
    timings = json.loads(path.read_text()) if path.exists() else {}
    spans = run.guest_seconds()
    timings[name] = {
        "qemu_wall_s": round(boot_result.wall_seconds, 2),
        "accel": boot_result.accel,
        "testcase_guest_s": {f"{index}:{tc}": round(spans.get(index, -1.0), 2) for index, (tc, _) in enumerate(run.started)},
    }
    path.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("cpus", [1, 4])
def test_every_testcase_boots_runs_and_parses(kernel: Path, rootfs: Path, tmp_path: Path, cpus: int) -> None:
    spec = every_testcase(cpus)
    result, run = guest(kernel, tmp_path, f"all-{cpus}", cpus, f"{ROOT_ARGS} lockstudy.memory_map=1 lockstudy.run={spec}", disk=rootfs)
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    results = run.results()  # raises if the run is incomplete
    assert [r.testcase for r in results] == [item.split(":")[0] for item in spec.split("+")]
    assert run.boot["cpus"] == str(cpus) and run.spec == spec
    assert run.settings is not None or run.settings_absent
    # /init's numa_probe: no NUMA layout given, so one node holds every CPU
    assert run.numa is not None and run.numa.done
    assert run.numa.cpu_node == {cpu: 0 for cpu in range(cpus)} and run.numa.nodes() == 1
    for r in results:
        assert r.data["status"] == "ok" and r.wall_s > 0
        if "copies" in r.data:
            assert r.data["copies"] == cpus and r.data["online_cpus"] == cpus
    pft = next(r for r in results if r.testcase == "pft")
    assert pft.metrics["seed_columns"]["Threads"] == cpus
    check_lock_registries(run, results)
    check_memory_maps(run, results, cpus, result.console)
    assert run.lock_event_counts == {}, "the smp build has no lock event counters"
    record_timings(f"ext2-{cpus}cpu", result, run)


# The locks each testcase asks the kernel's registry to list (the harness's
# lock_requests and samefile's path), as name patterns; every registry also
# holds the static ones (the bench's, and seed 000's padded locks of the
# ext2 root and its disk's writeback).
REQUESTED_LOCKS = {
    "write1b": [r"files:\d+ file_lock"],
    "fsmix": [],
    "pft": [r"mm:\d+ mmap_lock", r"mm:\d+ mmap_lock\.wait_lock", r"mm:\d+ page_table_lock"],
    "mmapsem": [r"mm:\d+ mmap_lock", r"mm:\d+ mmap_lock\.wait_lock", r"mm:\d+ page_table_lock"],
    "samefile": [r"dentry:/scratch/samefile\.\d+/target d_lockref", r"dentry:/scratch/samefile\.\d+/target parent_d_lockref"],
    "dd1b": [],
}
STATIC_LOCKS = [r"bench:lock", r"ext2:sda s_rsv_window_lock", r"ext2:sda s_next_gen_lock", r"bdi:\S+ wb\.list_lock"]
REQUESTED_KINDS = re.compile(r"^(mm|files|dentry):")


# The slab cache each requested or registered lock's object comes from (include/linux/*: the allocation
# of mm_struct, files_struct, dentry; ext2_sb_info and backing_dev_info are kzalloc'ed).
LOCK_CACHES = {r"mm:": r"mm_struct", r"files:": r"files_cache", r"dentry:": r"dentry", r"ext2:": r"kmalloc-\w+", r"bdi:": r"kmalloc-\w+"}


def check_memory_maps(run: GuestRun, results: list[guest_output.TestcaseResult], cpus: int, console: str) -> None:
    """Each testcase's memory map parses whole, names every dynamic lock's object by its cache, has one per-CPU area
    and one idle stack per CPU, PID 1's stack, and the dentry, inode and futex hash tables."""
    # a kernel message printed inside a map line is taken out first, as the parser does
    console = guest_output.KERNEL_MESSAGE_INSIDE_A_LINE.sub("", console.replace("\r", ""))
    blocks = re.findall(r"LOCKSTUDY-MEMORY-BEGIN \S+\n(.*?)LOCKSTUDY-MEMORY-END", console, re.S)
    assert len(blocks) == len(results)
    for index, r in enumerate(results):
        ranges = run.memory.get(index, [])
        printed = [line for line in blocks[index].splitlines() if line and not line.startswith("[")]  # kernel messages aside
        assert len(ranges) == len(printed), f"{r.testcase}: lines the parser did not take: {set(printed) - {line for line in printed if guest_output.memory_range(line)}}"
        assert sorted(int(m.name) for m in ranges if m.kind == "percpu") == list(range(cpus)), f"{r.testcase}: per-CPU areas"
        stacks = [m.name for m in ranges if m.kind == "stack"]
        assert "init/1" in stacks and sum(name.endswith("/0") for name in stacks) == cpus, f"{r.testcase}: stacks {stacks[:8]}"
        assert {"Dentry cache", "Inode-cache", "futex"} <= {m.name for m in ranges if m.kind == "table"}, f"{r.testcase}: hash tables"
        check_node_data_and_struct_pages(r.testcase, ranges)
        memory = MemoryMap.of(ranges)
        for lock in run.locks.get(index, []):
            cache = next((c for prefix, c in LOCK_CACHES.items() if lock.name.startswith(prefix)), None)
            if cache is None:
                continue
            holder = memory.holding(lock.physical)
            assert holder is not None and holder.kind == "slab", f"{r.testcase}: {lock.name} at 0x{lock.physical:x} is in no slab of the map"
            assert re.fullmatch(cache, holder.name), f"{r.testcase}: {lock.name} is in slab cache {holder.name}, not {cache}"


def check_node_data_and_struct_pages(testcase: str, ranges: list[guest_output.MemoryRange]) -> None:
    """One node (no NUMA layout given) whose pg_data_t holds its fields, the populated zones' locks among them,
    inside reserved pages; struct pages for every frame the page walk listed, in reserved pages too."""
    nodes = [m for m in ranges if m.kind == "node"]
    assert [m.name for m in nodes] == ["0"], f"{testcase}: nodes {nodes}"
    node = nodes[0]
    fields = {m.name: m for m in ranges if m.kind == "field"}
    assert {"__lruvec.lru_lock", "__lruvec.lists", "vm_stat"} <= set(fields), f"{testcase}: node fields {sorted(fields)}"
    # QEMU's 512 MiB are all below 4 GiB: DMA and DMA32 zones, no Normal one
    assert {"zone.DMA32.lock", "zone.DMA32.free_area"} <= set(fields), f"{testcase}: node fields {sorted(fields)}"
    for field in fields.values():
        assert node.physical <= field.physical and field.physical + field.size <= node.physical + node.size, f"{testcase}: {field} outside {node}"
    reserved = MemoryMap.of([m for m in ranges if m.kind == "reserved"])
    assert reserved.holding(node.physical) is not None, f"{testcase}: the node data is not in reserved pages"
    memmaps = [m for m in ranges if m.kind == "memmap"]
    assert memmaps and all(m.object_bytes == 64 for m in memmaps), f"{testcase}: struct pages {memmaps}"
    described = [range(m.table_offset, m.table_offset + m.size // m.object_bytes) for m in memmaps]
    walked = [m for m in ranges if m.kind in ("slab", "pagetable", "anon", "file", "reserved", "free")]
    for m in walked[:: max(len(walked) // 50, 1)]:
        assert any(m.physical // 4096 in frames for frames in described), f"{testcase}: no struct page for {m}"
    for m in memmaps:
        assert reserved.holding(m.physical) is not None, f"{testcase}: struct pages {m} not in reserved pages"


def check_lock_registries(run: GuestRun, results: list[guest_output.TestcaseResult]) -> None:
    for index, r in enumerate(results):
        names = [lock.name for lock in run.locks.get(index, [])]
        assert names, f"no lock registry after {r.testcase}"
        for pattern in STATIC_LOCKS:
            assert any(re.fullmatch(pattern, n) for n in names), f"{r.testcase}: no {pattern} in {names}"
        requested = sorted(n for n in names if REQUESTED_KINDS.match(n))
        expected = REQUESTED_LOCKS[r.testcase]
        # threads share one process: each request appears once
        assert len(requested) == len(expected), f"{r.testcase}: requested locks {requested}"
        for pattern in expected:
            assert any(re.fullmatch(pattern, n) for n in requested), f"{r.testcase}: no {pattern} in {requested}"


@pytest.mark.parametrize("cpus", [1, 4])
def test_dbench(kernel: Path, rootfs: Path, tmp_path: Path, cpus: int) -> None:
    config = kernel.parent / "config"
    # dbench keeps its state in System V shared memory: the base config enables it.
    assert "CONFIG_SYSVIPC=y" in config.read_text().splitlines(), f"{config}: CONFIG_SYSVIPC is off"
    spec = f"dbench:clients={cpus},seconds=2+dbench:clients={cpus},seconds=2,dir=/tmp"
    result, run = guest(kernel, tmp_path, f"dbench-{cpus}", cpus, f"{ROOT_ARGS} lockstudy.run={spec}", disk=rootfs)
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    results = run.results()
    assert [r.testcase for r in results] == ["dbench", "dbench"]
    assert all(r.metrics["throughput_mb_s"] > 0 for r in results)
    # not asked for (lockstudy.memory_map=1): no memory map, and no page walk after the testcases
    assert run.memory == {} and "LOCKSTUDY-MEMORY-BEGIN" not in result.console
    record_timings(f"dbench-{cpus}cpu", result, run)


def test_initramfs_boots_too(kernel: Path, rootfs: Path, tmp_path: Path) -> None:
    args = "lockstudy.run=samefile:threads=2,iterations=200+dd1b:count=5000 lockstudy.checkpoint=1"
    result, run = guest(kernel, tmp_path, "cpio", 2, args, initrd=image.cpio_path())
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    assert [r.testcase for r in run.results()] == ["samefile", "dd1b"]
    # a checkpoint needs gem5's m5 ops: under QEMU (m5ops off) it is refused, loudly
    assert run.boot["checkpoint"] == "1" and any("no checkpoint taken" in e for e in run.errors)
    record_timings("cpio-2cpu", result, run)


def test_bad_spec_ends_in_a_clean_power_off(kernel: Path, rootfs: Path, tmp_path: Path) -> None:
    bad = "pft:threads=2+samefile:speed=9"
    result, run = guest(kernel, tmp_path, "bad-spec", 1, f"{ROOT_ARGS} lockstudy.run={bad}", disk=rootfs)
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"  # powered off, no panic, no timeout
    assert run.done is not None and run.done.status == "error" and run.done.reason == "bad-spec"
    assert any("samefile:speed=9" in e and "unknown parameter 'speed'" in e for e in run.errors), run.errors
    assert run.parsed == [] and run.started == []  # nothing ran


def test_bad_m5ops_ends_in_a_clean_power_off(kernel: Path, rootfs: Path, tmp_path: Path) -> None:
    result, run = guest(kernel, tmp_path, "bad-m5ops", 1, f"{ROOT_ARGS} lockstudy.m5ops=kvm lockstudy.run=dd1b", disk=rootfs)
    assert result.ok, result.describe()
    assert run.done is not None and run.done.reason == "bad-cmdline"
    assert any("lockstudy.m5ops=kvm" in e for e in run.errors), run.errors


def test_m5ops_address_form_maps_under_the_project_kernel(kernel: Path, rootfs: Path, tmp_path: Path) -> None:
    """m5ops=addr maps 0xFFFF0000 from /dev/mem (what gem5 on KVM needs); under
    QEMU that page is ROM, so the ops are harmless loads and the run completes."""
    args = f"{ROOT_ARGS} lockstudy.m5ops=addr lockstudy.run=samefile:threads=2,iterations=100+dd1b:count=1000"
    result, run = guest(kernel, tmp_path, "m5addr", 2, args, disk=rootfs)
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    assert [r.data["m5ops"] for r in run.results()] == ["addr", "addr"]
    assert run.boot["m5ops"] == "addr" and run.errors == []
    # the last testcase ended the run itself (workloads/report.h); its m5 exit ended nothing here,
    # and /init powered off without a second LOCKSTUDY-DONE
    assert result.console.count("LOCKSTUDY-DONE") == 1 and run.done is not None and run.done.fields["results"] == "2"


def test_checkpoint_readfile_outside_gem5_fails_cleanly(kernel: Path, rootfs: Path, tmp_path: Path) -> None:
    """After `m5 checkpoint` /init asks gem5 for the run spec (`m5 readfile`).
    Under QEMU the address form reads the BIOS ROM instead: m5 refuses the
    nonsense byte count, and the run ends with that error, not a hang."""
    args = f"{ROOT_ARGS} lockstudy.m5ops=addr lockstudy.checkpoint=1 lockstudy.run=dd1b:count=1000"
    result, run = guest(kernel, tmp_path, "m5addr-ckpt", 1, args, disk=rootfs)
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    assert run.done is not None and run.done.reason == "readfile-failed"
    assert any("m5 readfile failed" in e and "not gem5?" in e for e in run.errors), run.errors
    assert run.started == []


def test_failing_testcase_stops_the_run_cleanly(kernel: Path, rootfs: Path, tmp_path: Path) -> None:
    args = f"{ROOT_ARGS} lockstudy.run=dd1b:count=100+fsmix:dir=/nonexistent+samefile"
    result, run = guest(kernel, tmp_path, "fails", 1, args, disk=rootfs)
    assert result.ok, result.describe()
    assert run.done is not None and run.done.reason == "testcase-failed:fsmix"
    assert [r.testcase for r in run.parsed] == ["dd1b"] and [t for t, _ in run.started] == ["dd1b", "fsmix"]
    assert any("/nonexistent" in e for e in run.errors), run.errors
    with pytest.raises(IncompleteRun):
        run.results()


# Seed 000's padded locks, as the registry names them on the image's root.
HOT_LOCKS = re.compile(r"^(ext2:sda \S+|bdi:8:0 wb\.list_lock)$")
CACHE_LINE_BYTES = 64  # x86-64 L1 line: the unit the padding aligns to


def hot_lock_lines(kernel_build: str, tmp_path: Path) -> dict[str, int]:
    kernel_image = kernel_output_dir(kernel_build) / "bzImage"
    if not kernel_image.is_file():
        pytest.fail(f"{kernel_image} missing: run ./run.sh setup")
    spec = "fsmix:threads=1,iterations=10,warmup=1,files=4"
    result, run = guest(kernel_image, tmp_path, f"layout-{kernel_build}", 1, f"{ROOT_ARGS} lockstudy.run={spec}", disk=image.ext2_path())
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    run.results()
    return {lock.name: lock.address // CACHE_LINE_BYTES for lock in run.locks[0] if HOT_LOCKS.match(lock.name)}


def test_padding_gives_each_hot_lock_its_own_line_and_packed_does_not(rootfs: Path, tmp_path: Path) -> None:
    padded = hot_lock_lines("smp", tmp_path)
    packed = hot_lock_lines("smp-packed", tmp_path)
    assert set(padded) == set(packed) and len(padded) == 6, sorted(padded)
    assert len(set(padded.values())) == len(padded), f"smp: hot locks share lines: {padded}"
    assert len(set(packed.values())) < len(packed), f"smp-packed: every hot lock on its own line: {packed}"


def test_mm_ptlock_build_boots_and_faults_from_every_thread(rootfs: Path, tmp_path: Path) -> None:
    """Seed 002's precondition build: pft's threads all fault under the mm's one
    page_table_lock; the run completes, checks its faults, and the registry
    names that lock."""
    kernel_image = kernel_output_dir("smp-mm-ptlock") / "bzImage"
    if not kernel_image.is_file():
        pytest.fail(f"{kernel_image} missing: run ./run.sh setup")
    cpus = 4
    spec = f"pft:threads={cpus},mb=16,iterations=2"
    result, run = guest(kernel_image, tmp_path, "mm-ptlock", cpus, f"{ROOT_ARGS} lockstudy.run={spec}", disk=image.ext2_path())
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    (pft,) = run.results()
    assert pft.metrics["seed_columns"]["Threads"] == cpus
    names = [lock.name for lock in run.locks[0]]
    assert any(re.fullmatch(r"mm:\d+ page_table_lock", n) for n in names), names


# Seed 003's load: readers and writers of one mm's mmap_lock from every CPU.
LOCK_EVENTS_SPEC = "mmapsem:threads=4,iterations=40,forkevery=8"
# rwsem.c's wakeup events, and the one rwsem-wakeflag.patch adds.
RWSEM_WAKE_EVENTS = {"rwsem_wake_reader", "rwsem_wake_writer", "rwsem_wake_skipped", "rwsem_wake_again"}


@pytest.mark.parametrize(("wakeflag", "wake_in_lock"), [(0, 0), (1, 0), (1, 1)])
def test_lock_event_counts_build_reports_each_testcases_rwsem_wakeups(rootfs: Path, tmp_path: Path, wakeflag: int, wake_in_lock: int) -> None:
    """Seed 003's precondition build: /init prints the kernel's lock event
    counters over the testcase; with the waker flag off no wakeup is ever
    skipped (the counter moves only on the flag's path). The precondition
    (wakeups inside wait_lock) runs the same load to its end."""
    kernel_image = kernel_output_dir("smp-lockevents") / "bzImage"
    if not kernel_image.is_file():
        pytest.fail(f"{kernel_image} missing: run ./run.sh setup")
    switches = f"lockstudy.rwsem_wakeflag={wakeflag} lockstudy.rwsem_wake_in_lock={wake_in_lock}"
    args = f"{ROOT_ARGS} {switches} lockstudy.run={LOCK_EVENTS_SPEC}"
    result, run = guest(kernel_image, tmp_path, f"lockevents-{wakeflag}-{wake_in_lock}", 4, args, disk=image.ext2_path())
    assert result.ok, f"{result.describe()}; console tail:\n{result.console[-3000:]}"
    run.results()
    assert run.settings is not None and run.settings["rwsem_wakeflag"] == str(wakeflag)
    assert run.settings["rwsem_wake_in_lock"] == str(wake_in_lock)
    counts = run.lock_event_counts[0]
    assert RWSEM_WAKE_EVENTS <= counts.keys(), sorted(counts)
    if not wakeflag:
        assert counts["rwsem_wake_skipped"] == 0 and counts["rwsem_wake_again"] == 0, counts
