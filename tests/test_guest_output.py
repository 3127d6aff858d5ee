"""The console parser: whole runs, truncated runs, errors, noise from the kernel."""

from __future__ import annotations

import json

import pytest

from lockstudy.guest_output import IncompleteRun, MemoryRange, parse_console


def result_block(testcase: str, **extra: object) -> str:
    data = {"testcase": testcase, "seed": "002", "status": "ok", "wall_s": 0.5, "ops": 10, "ops_per_s": 20.0, **extra}
    return f"LOCKSTUDY-RESULT-BEGIN {testcase}\n{json.dumps(data)}\nLOCKSTUDY-RESULT-END\n"


HEAD = (
    "[    0.000000] Linux version 6.1.0 (lockstudy)\n"
    "LOCKSTUDY-BOOT kernel=6.1.0 cpus=4 m5ops=off checkpoint=0\n"
    "LOCKSTUDY-SPEC pft:threads=4,mb=8+samefile:threads=2\n"
    "LOCKSTUDY-SETTING spinlock=qspinlock\n"
    "LOCKSTUDY-SETTING lockref=cmpxchg\n"
)
WHOLE = (
    HEAD
    + "LOCKSTUDY-RUN pft index=0 uptime=1.50\n"
    + result_block("pft", metrics={"seed_columns": {"Gb": 0.0078}})
    + "LOCKSTUDY-RUN samefile index=1 uptime=2.25\n"
    + result_block("samefile")
    + "LOCKSTUDY-DONE status=ok reason=none results=2 uptime=3.00\n"
    + "[    3.100000] reboot: Power down\n"
)


def test_whole_run() -> None:
    run = parse_console(WHOLE)
    assert run.complete
    results = run.results()
    assert [r.testcase for r in results] == ["pft", "samefile"]
    assert results[0].metrics["seed_columns"]["Gb"] == pytest.approx(0.0078)
    assert results[1].wall_s == 0.5 and results[1].ops_per_s == 20.0
    assert run.boot == {"kernel": "6.1.0", "cpus": "4", "m5ops": "off", "checkpoint": "0"}
    assert run.spec == "pft:threads=4,mb=8+samefile:threads=2"
    assert run.settings == {"spinlock": "qspinlock", "lockref": "cmpxchg"}
    assert run.guest_seconds() == {0: pytest.approx(0.75), 1: pytest.approx(0.75)}


def test_crlf_and_kernel_noise_between_lines() -> None:
    noisy = WHOLE.replace("LOCKSTUDY-RESULT-END", "[    2.0] random: crng init done\nLOCKSTUDY-RESULT-END")
    run = parse_console(noisy.replace("\n", "\r\n"))
    assert [r.testcase for r in run.results()] == ["pft", "samefile"]


def test_missing_done_is_never_counted() -> None:
    truncated = WHOLE.split("LOCKSTUDY-DONE")[0]
    run = parse_console(truncated)
    assert not run.complete
    assert len(run.parsed) == 2  # visible for diagnosis ...
    with pytest.raises(IncompleteRun, match="no LOCKSTUDY-DONE"):
        run.results()  # ... but never handed out


def test_truncated_inside_a_block() -> None:
    cut = WHOLE.index("LOCKSTUDY-RESULT-BEGIN samefile") + len("LOCKSTUDY-RESULT-BEGIN samefile\n{\"testc")
    run = parse_console(WHOLE[:cut])
    assert not run.complete
    assert any("samefile" in p for p in run.problems)
    with pytest.raises(IncompleteRun):
        run.results()


def test_error_status_carries_the_message() -> None:
    text = HEAD + "LOCKSTUDY-ERROR bad run spec: 'pft:threads=x': threads=x: not a decimal number\n" + "LOCKSTUDY-DONE status=error reason=bad-spec results=0 uptime=1.2\n"
    run = parse_console(text)
    assert run.done is not None and run.done.reason == "bad-spec" and not run.done.ok
    assert "threads=x" in run.errors[0]
    with pytest.raises(IncompleteRun, match="bad-spec"):
        run.results()


def test_block_without_json_or_with_a_foreign_one() -> None:
    empty = HEAD + "LOCKSTUDY-RESULT-BEGIN pft\nLOCKSTUDY-RESULT-END\nLOCKSTUDY-DONE status=ok reason=none results=1\n"
    assert not parse_console(empty).complete
    foreign = HEAD + result_block("pft").replace("BEGIN pft", "BEGIN samefile") + "LOCKSTUDY-DONE status=ok reason=none results=1\n"
    assert not parse_console(foreign).complete


def test_result_count_must_match_done() -> None:
    lost = WHOLE.replace("results=2", "results=3")
    with pytest.raises(IncompleteRun, match="announces 3"):
        parse_console(lost).results()


def test_settings_absent() -> None:
    run = parse_console("LOCKSTUDY-SETTINGS absent\nLOCKSTUDY-DONE status=ok reason=none results=0\n")
    assert run.settings_absent and run.settings is None and run.results() == []


def test_spec_from_readfile_replaces_the_command_line_one() -> None:
    """After a gem5 checkpoint /init prints the spec `m5 readfile` gave: that one ran."""
    restored = WHOLE.replace(
        "LOCKSTUDY-SETTING spinlock=qspinlock\n",
        "LOCKSTUDY-SETTING spinlock=qspinlock\nLOCKSTUDY-SPEC pft:threads=4,mb=8+samefile:threads=2 source=readfile\n",
    ).replace("LOCKSTUDY-SPEC pft:threads=4,mb=8+samefile:threads=2\n", "LOCKSTUDY-SPEC (none)\n", 1)
    run = parse_console(restored)
    assert run.complete
    assert run.spec == "pft:threads=4,mb=8+samefile:threads=2" and run.spec_source == "readfile"
    plain = parse_console(WHOLE)
    assert plain.spec_source == "cmdline"


def test_lock_registry_after_a_result_is_kept_by_testcase_index() -> None:
    registry = (
        "LOCKSTUDY-LOCKS-BEGIN pft\n"
        "0xffffffff81d07100 0x0000000001d07100 4 bench:lock\n"
        "[    2.0] random: crng init done\n"
        "0xffff888010210060 0x0000000010210060 40 mm:57 mmap_lock\n"
        "LOCKSTUDY-LOCKS-END\n"
    )
    text = WHOLE.replace("LOCKSTUDY-RUN samefile", registry + "LOCKSTUDY-RUN samefile")
    run = parse_console(text)
    assert run.complete
    assert [(lock.address, lock.physical, lock.size, lock.name) for lock in run.locks[0]] == [
        (0xFFFFFFFF81D07100, 0x1D07100, 4, "bench:lock"),
        (0xFFFF888010210060, 0x10210060, 40, "mm:57 mmap_lock"),
    ]
    assert 1 not in run.locks


def test_memory_map_after_a_result_is_kept_by_testcase_index() -> None:
    memory = (
        "LOCKSTUDY-MEMORY-BEGIN pft\n"
        "percpu 0x000000001f400000 127512 0\n"
        "slab 0x0000000002048000 16384 16384 960 mm_struct\n"
        "[    2.0] random: crng init done\n"
        "pagetable 0x000000000204e000 8192\n"
        "table 0x0000000002260000 65536 0 futex\n"
        "table 0x0000000002270000 4096 8192 Dentry cache\n"
        "stack 0x00000000020c4000 16384 1 init\n"
        "stack 0x0000000002114000 16384 0 swapper/1\n"
        "anon 0x0000000003000000 8192\n"
        "file 0x0000000003002000 4096\n"
        "reserved 0x0000000000001000 4096\n"
        "node 0x000000003fffb000 17792 0\n"
        "field 0x000000003fffb440 4 0 zone.Normal.lock\n"
        "memmap 0x000000003e600000 2097152 0 64\n"
        "table 0x0000000002270000 4096 Dentry cache\n"  # malformed: no offset, so not a map line
        "field 0x000000003fffb440 4 0 zone Normal lock\n"  # malformed: a field's name has no spaces
        "LOCKSTUDY-MEMORY-END\n"
    )
    run = parse_console(WHOLE.replace("LOCKSTUDY-RUN samefile", memory + "LOCKSTUDY-RUN samefile"))
    assert run.complete
    assert [(m.kind, m.physical, m.size, m.slab_bytes, m.object_bytes, m.name, m.table_offset) for m in run.memory[0]] == [
        ("percpu", 0x1F400000, 127512, 0, 0, "0", 0),
        ("slab", 0x2048000, 16384, 16384, 960, "mm_struct", 0),
        ("pagetable", 0x204E000, 8192, 0, 0, "", 0),
        ("table", 0x2260000, 65536, 0, 0, "futex", 0),
        ("table", 0x2270000, 4096, 0, 0, "Dentry cache", 8192),
        ("stack", 0x20C4000, 16384, 0, 0, "init/1", 0),
        ("stack", 0x2114000, 16384, 0, 0, "swapper/1/0", 0),
        ("anon", 0x3000000, 8192, 0, 0, "", 0),
        ("file", 0x3002000, 4096, 0, 0, "", 0),
        ("reserved", 0x1000, 4096, 0, 0, "", 0),
        ("node", 0x3FFFB000, 17792, 0, 0, "0", 0),
        ("field", 0x3FFFB440, 4, 0, 0, "zone.Normal.lock", 0),
        ("memmap", 0x3E600000, 2097152, 0, 64, "", 0),
    ]
    assert [MemoryRange.from_list(m.as_list()) for m in run.memory[0]] == run.memory[0]
    assert 1 not in run.memory


def test_a_kernel_message_printed_inside_a_map_line_is_taken_out() -> None:
    """Seen in a QEMU boot: printk wrote its line in the middle of one of /init's."""
    memory = (
        "LOCKSTUDY-MEMORY-BEGIN pft\n"
        "slab 0[    1.658524] tsc: Refined TSC clocksource calibration: 2596.105 MHz\n"
        "x0000000002108000 32768 32768 2112 sighand_cache\n"
        "LOCKSTUDY-MEMORY-END\n"
    )
    run = parse_console(WHOLE.replace("LOCKSTUDY-RUN samefile", memory + "LOCKSTUDY-RUN samefile"))
    assert run.complete
    assert [(m.kind, m.physical, m.name) for m in run.memory[0]] == [("slab", 0x2108000, "sighand_cache")]


def test_several_kernel_messages_in_a_row_inside_a_map_line_are_taken_out() -> None:
    """Seen in CI: two messages, one after the other, in the middle of one line."""
    memory = (
        "LOCKSTUDY-MEMORY-BEGIN pft\n"
        "slab 0x[    1.421002] tsc: Refined TSC clocksource calibration: 2596.105 MHz\n"
        "[    1.422562] clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x256bde824e1, max_idle_ns: 440795301549 ns\n"
        "0000000002314000 4096 4096 104 anon_vma\n"
        "LOCKSTUDY-MEMORY-END\n"
    )
    run = parse_console(WHOLE.replace("LOCKSTUDY-RUN samefile", memory + "LOCKSTUDY-RUN samefile"))
    assert run.complete
    assert [(m.kind, m.physical, m.name) for m in run.memory[0]] == [("slab", 0x2314000, "anon_vma")]


@pytest.mark.parametrize(
    "block, problem",
    [
        ("LOCKSTUDY-MEMORY-BEGIN pft\nslab 0x0000000002048000 16384 16384 960 mm_struct\n", "memory map interrupted by LOCKSTUDY-RUN"),
        ("LOCKSTUDY-MEMORY-END\n", "LOCKSTUDY-MEMORY-END without a BEGIN"),
        ("LOCKSTUDY-MEMORY-BEGIN samefile\nLOCKSTUDY-MEMORY-END\n", "memory map of 'samefile' does not follow its result"),
    ],
)
def test_a_broken_memory_map_makes_the_run_incomplete(block: str, problem: str) -> None:
    run = parse_console(WHOLE.replace("LOCKSTUDY-RUN samefile", block + "LOCKSTUDY-RUN samefile"))
    assert not run.complete
    assert problem in run.problems


def test_unterminated_lock_registry_makes_the_run_incomplete() -> None:
    text = WHOLE.replace("LOCKSTUDY-RUN samefile", "LOCKSTUDY-LOCKS-BEGIN pft\n0xffffffff81d07100 0x0000000001d07100 4 bench:lock\nLOCKSTUDY-RUN samefile")
    run = parse_console(text)
    assert not run.complete
    assert any("lock registry interrupted" in problem for problem in run.problems)


def test_lock_event_counts_after_a_result_are_kept_by_testcase_index() -> None:
    counts = "LOCKSTUDY-LOCKEVENTS pft rwsem_sleep_reader=12 rwsem_wake_skipped=0 lock_pending=3\n"
    run = parse_console(WHOLE.replace("LOCKSTUDY-RUN samefile", counts + "LOCKSTUDY-RUN samefile"))
    assert run.complete
    assert run.lock_event_counts == {0: {"rwsem_sleep_reader": 12, "rwsem_wake_skipped": 0, "lock_pending": 3}}


def test_a_kernel_without_lock_event_counters_prints_none() -> None:
    assert parse_console(WHOLE).lock_event_counts == {}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("LOCKSTUDY-LOCKEVENTS samefile rwsem_wake_reader=1\n", "lock event counts of 'samefile' do not follow its result"),
        ("LOCKSTUDY-LOCKEVENTS pft rwsem_wake_reader=x\n", "lock event count 'rwsem_wake_reader=x' of pft is not <event>=<count>"),
    ],
)
def test_misplaced_or_malformed_lock_event_counts_make_the_run_incomplete(line: str, problem: str) -> None:
    run = parse_console(WHOLE.replace("LOCKSTUDY-RUN samefile", line + "LOCKSTUDY-RUN samefile"))
    assert not run.complete
    assert problem in run.problems
    assert run.lock_event_counts == {}


def test_a_registry_cut_short_by_a_guest_that_stopped_keeps_its_whole_lines() -> None:
    """The console of a real run stopped as stuck after its ROI (altix-numa, kbench hbo) ends inside the registry,
    its last line cut after "bench": the whole lines are kept, the cut one is not taken for a lock named "bench"."""
    head = WHOLE.split("LOCKSTUDY-RUN samefile")[0]
    text = (
        head + "LOCKSTUDY-LOCKS-BEGIN pft\n"
        "0xffffffff81d0c100 0x0000000001d0c100 4 bench:lock\n"
        "0xffffffff81d0c104 0x0000000001d0c104 4 bench"
    )
    run = parse_console(text)
    assert not run.complete
    assert [lock.name for lock in run.locks[0]] == ["bench:lock"]
    assert "lock registry of 'pft' cut short: its 1 whole line(s) kept" in run.problems
