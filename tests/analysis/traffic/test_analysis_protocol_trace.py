"""Ruby ProtocolTrace lines -> per-lock events (analysis/traffic/protocol_trace.py).

The lines here are written with gem5's own printf format, spelled out in
this file from the gem5 v24 source (StateMachine.py:1653, Sequencer.cc:1107),
not with the module's formatter; the expected counts are counted from the
text with plain substring tests, independently of the parser. The last
test runs on a real gem5 trace (tests/fixtures/gem5/altix-numa-2-kbench:
50,000 lines of a kbench ROI on 2 Altix nodes) with counts taken by
splitting its lines on whitespace, as `grep | awk` would.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from analysis.traffic.protocol_trace import TracedLock, TraceFormatError, attribute_lines, attribute_trace, format_line, parse_line
from lockstudy.paths import ROOT

GEM5_FORMAT = "%15d %3s %10s%20s %6s>%-6s %s %s"
LINE_BYTES = 64
LOCK = TracedLock("bench:lock", 0x1D08100, 4)
NOISE = TracedLock("bench:shared_noise", 0x1D08104, 4)
FAR = TracedLock("mm:57 mmap_lock", 0x2048420, 40)


def gem5_line(tick: int, version: int, machine: str, event: str, state: str, next_state: str, address: int, comment: str = "") -> str:
    line = address - address % LINE_BYTES
    return GEM5_FORMAT % (tick, version, machine, event, state, next_state, f"[0x{address:x}, line 0x{line:x}]", comment)


TRACE = [
    gem5_line(1000, 0, "Seq", "Begin", "", "", 0x1D08100, "Locked_RMW_Read"),
    gem5_line(1500, 0, "L1Cache", "Store", "I", "IM", 0x1D08100),
    gem5_line(2000, 1, "L2Cache", "L1_GETX", "MT", "MT_MB", 0x1D08100),
    gem5_line(2500, 1, "L1Cache", "Fwd_GETX", "M", "I", 0x1D08100),
    gem5_line(3000, 0, "L1Cache", "Data_Exclusive", "IM", "M", 0x1D08100),
    gem5_line(3100, 0, "Seq", "Done", "", "", 0x1D08100, "420 cycles"),
    gem5_line(3200, 1, "Seq", "Begin", "", "", 0x1D08104, "ATOMIC"),
    gem5_line(3300, 1, "Seq", "Begin", "", "", 0x1D08108, "LD"),
    gem5_line(3400, 2, "L1Cache", "Load", "I", "IS", 0x3000040),  # an unrelated line
    gem5_line(3500, 3, "L2Cache", "L2_Replacement_clean", "SS", "I", 0x2048440),  # 20 chars: runs into L2Cache
    gem5_line(3600, 0, "L1Cache", "Inv", "S", "I", 0x2048420),
    "      3700   0    L1Cache                Load      I>IS     [0x99ffe0, line 0x99ffc0] ",
]


def test_parse_line_reads_gem5s_format() -> None:
    event = parse_line(TRACE[2])
    assert (event.tick, event.version, event.machine, event.event, event.transition) == (2000, 1, "L2Cache", "L1_GETX", "MT>MT_MB")
    assert (event.address, event.line) == (0x1D08100, 0x1D08100)
    seq = parse_line(TRACE[0])
    assert (seq.machine, seq.event, seq.transition, seq.comment) == ("Seq", "Begin", "", "Locked_RMW_Read")


def test_a_long_event_name_runs_into_the_machine_and_is_split_off() -> None:
    assert "L2CacheL2_Replacement_clean" in TRACE[9]
    event = parse_line(TRACE[9])
    assert (event.machine, event.event, event.transition) == ("L2Cache", "L2_Replacement_clean", "SS>I")


def test_format_line_prints_what_gem5_prints() -> None:
    for text in TRACE[:11]:
        assert format_line(parse_line(text)) == text.rstrip()


def test_events_and_requests_are_attributed_to_the_locks_on_their_line() -> None:
    result = attribute_lines(TRACE, [LOCK, NOISE, FAR], LINE_BYTES)
    on_bench_line = [t for t in TRACE if "line 0x1d08100]" in t]
    on_mmap_lines = [t for t in TRACE if "line 0x2048400]" in t or "line 0x2048440]" in t]
    assert result.lines_read == len(TRACE)
    assert result.lines_on_locks == len(on_bench_line) + len(on_mmap_lines)
    controller_lines = [t for t in on_bench_line if " Seq " not in t]
    assert sum(c for (line, *_), c in result.events.items() if line == 0x1D08100) == len(controller_lines)
    by_lock = result.events_by_lock()
    # both locks share the line: every controller event there counts for each
    assert by_lock[("bench:lock", "L1Cache", "Fwd_GETX")] == 1
    assert by_lock[("bench:shared_noise", "L1Cache", "Fwd_GETX")] == 1
    assert by_lock[("mm:57 mmap_lock", "L2Cache", "L2_Replacement_clean")] == 1
    assert by_lock[("mm:57 mmap_lock", "L1Cache", "Inv")] == 1
    # sequencer requests: by the bytes they touch
    assert result.requests == {
        ("bench:lock", 0x1D08100, "Locked_RMW_Read"): 1,
        ("bench:shared_noise", 0x1D08100, "ATOMIC"): 1,
        ("other", 0x1D08100, "LD"): 1,
    }


def test_a_lock_across_two_lines_counts_on_both(tmp_path: Path) -> None:
    # the 40-byte rw_semaphore at 0x2048420 spans lines 0x2048400 and 0x2048440
    result = attribute_lines(TRACE, [FAR], LINE_BYTES)
    assert set(result.lock_lines) == {0x2048400, 0x2048440}


def test_gzip_traces_stream(tmp_path: Path) -> None:
    path = tmp_path / "trace.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(TRACE) + "\n")
    assert attribute_trace(path, [LOCK], LINE_BYTES).events == attribute_lines(TRACE, [LOCK], LINE_BYTES).events


def test_a_broken_line_on_a_lock_line_names_the_file_and_line() -> None:
    broken = [*TRACE[:3], "garbage 0x garbage [0x1d08100, line 0x1d08100]"]
    with pytest.raises(TraceFormatError, match=r"trace:4: "):
        attribute_lines(broken, [LOCK], LINE_BYTES)


@pytest.mark.parametrize("chunk_bytes", [64, 1000, 1 << 22])
def test_the_chunked_file_reader_agrees_with_the_line_reader(tmp_path: Path, chunk_bytes: int) -> None:
    path = tmp_path / "trace.txt"
    path.write_text("\n".join(TRACE))  # no newline at the end
    by_file = attribute_trace(path, [LOCK, NOISE, FAR], LINE_BYTES, chunk_bytes=chunk_bytes)
    by_lines = attribute_lines(TRACE, [LOCK, NOISE, FAR], LINE_BYTES)
    assert (by_file.events, by_file.requests) == (by_lines.events, by_lines.requests)
    assert (by_file.lines_read, by_file.lines_on_locks) == (len(TRACE), by_lines.lines_on_locks)


def test_a_broken_line_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join([*TRACE[:5], "garbage 0x garbage [0x1d08100, line 0x1d08100]", *TRACE[5:]]) + "\n")
    with pytest.raises(TraceFormatError, match=rf"{path}:6: "):
        attribute_trace(path, [LOCK], LINE_BYTES, chunk_bytes=100)


REAL_RUN = ROOT / "tests" / "fixtures" / "gem5" / "altix-numa-2-kbench"
# Controller events that move a lock line between caches (MESI_Two_Level).
COHERENCE_EVENTS = ("Inv", "Fwd_GETX", "Fwd_GETS", "L1_GETX", "L1_GETS", "L1_UPGRADE", "Data_Exclusive", "Ack")


def test_a_real_gem5_trace_is_attributed_as_a_plain_count_says() -> None:
    trace = REAL_RUN / "roi.trace.gz"
    if not trace.is_file():
        pytest.skip(f"{trace} is not there")
    result = json.loads((REAL_RUN / "result.json").read_text())
    registry = result["guest"]["results"][0]["locks"]
    locks = [TracedLock(lock["name"], int(lock["physical"], 16), lock["size"]) for lock in registry]
    line_bytes = result["provenance"]["machine"]["line_bytes"]
    attribution = attribute_trace(trace, locks, line_bytes)

    text = gzip.open(trace, "rt").read().splitlines()
    assert attribution.lines_read == len(text)
    bench_line = int(next(lock["physical"] for lock in registry if lock["name"] == "bench:lock"), 16) // line_bytes * line_bytes
    on_bench_line = [line.split() for line in text if f"line 0x{bench_line:x}]" in line]
    plain = Counter((words[2], words[3]) for words in on_bench_line if words[2] != "Seq")
    counted = Counter()
    for (line, machine, _version, event), count in attribution.events.items():
        if line == bench_line:
            counted[(machine, event)] += count
    for machine in ("L1Cache", "L2Cache"):
        for event in COHERENCE_EVENTS:
            assert counted[(machine, event)] == plain[(machine, event)], (machine, event)
    # the excerpt is from the middle of a contended ROI: the lock line really moves
    assert plain[("L1Cache", "Inv")] > 0 and plain[("L2Cache", "L1_GETX")] > 0
    begins = [words for words in on_bench_line if words[2] == "Seq" and words[3] == "Begin"]
    requests = sum(count for (_lock, line, _kind), count in attribution.requests.items() if line == bench_line)
    assert requests == len(begins) > 0
    all_lines = {int(lock["physical"], 16) // line_bytes * line_bytes for lock in registry}
    assert attribution.lines_on_locks == sum(1 for line in text if any(f"line 0x{a:x}]" in line for a in all_lines))


def test_a_line_whose_tick_is_no_number_is_refused_with_its_line(tmp_path: Path) -> None:
    """Lines are counted without their tick; a tick that is not a number still stops the attribution."""
    path = tmp_path / "trace.txt"
    bad_tick = TRACE[1].replace(" 1500 ", " 15x0 ")
    path.write_text("\n".join([*TRACE[:3], bad_tick, *TRACE[3:]]) + "\n")
    with pytest.raises(TraceFormatError, match=rf"{path}:4: "):
        attribute_trace(path, [LOCK], LINE_BYTES)
