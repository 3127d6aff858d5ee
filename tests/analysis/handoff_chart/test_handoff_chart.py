"""The hand-off chart on a synthetic trace whose hand-offs and messages are known.

Three CPUs under a test-and-set lock on one node (MESI_Two_Level, one L2
bank): the trace below is what gem5 prints for three hand-offs, written
step by step from the protocol (MESI_Two_Level-L1cache.sm, -L2cache.sm).
Hand-off 0 starts with both waiters sharing the line (16 messages),
hand-off 1 with the holder owning it alone (9), hand-off 2 with one
waiter sharing it (14): the median is hand-off 2.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from analysis.handoff_chart.cpu_requests import KIND_RMW, KIND_STORE, cpu_requests
from analysis.handoff_chart.draw import chart_for
from analysis.handoff_chart.errors import HandoffInputError
from analysis.handoff_chart.handoff_finder import median_handoff
from analysis.handoff_chart.layout import layout_chart
from analysis.handoff_chart.text_chart import render_text
from analysis.traffic.protocol_trace import Event, format_line, parse_line

LOCK = 0x1000
LOCK_NAME = "bench:lock"
CPUS = 3
CYCLE_TICKS = 1000  # a 1 GHz clock
STEP = 10 * CYCLE_TICKS  # one message's flight in this made-up machine
L1, L2, SEQ = "L1Cache", "L2Cache", "Seq"
HOME = "L2 bank 0"


def cpu(n: int) -> str:
    return f"CPU{n} L1"


class TraceWriter:
    """gem5's ProtocolTrace lines for one line, in the order gem5 prints them."""

    def __init__(self) -> None:
        self.tick = 1_000_000_000
        self.lines: list[str] = []

    def wait(self, ticks: int = STEP) -> None:
        self.tick += ticks

    def line(self, version: int, machine: str, event: str, states: str = ">", comment: str = "", address: int = LOCK) -> None:
        self.lines.append(format_line(Event(self.tick, version, machine, event, "" if machine == SEQ else states, address, LOCK, comment)))

    def begin(self, cpu_number: int, kind: str) -> None:
        self.line(cpu_number, SEQ, "Begin", comment=kind)

    def done(self, cpu_number: int) -> None:
        self.line(cpu_number, SEQ, "Done", comment="1 cycles")

    # -- the protocol's steps --------------------------------------------

    def release_shared(self, holder: int, sharers: list[int]) -> None:
        """The holder's store to a line others share: UPGRADE, an ack from the bank, one INV and ACK per sharer."""
        self.wait()
        self.begin(holder, "ST")
        self.wait(CYCLE_TICKS)
        self.line(holder, L1, "Store", "S>SM")
        self.wait()
        self.line(0, L2, "L1_UPGRADE", "SS>SS_MB")
        self.wait()
        self.line(holder, L1, "Ack", "SM>SM", f"-{len(sharers)} p: {len(sharers)}")
        for sharer in sharers:
            self.wait(CYCLE_TICKS)
            self.line(sharer, L1, "Inv", "S>I")
        for left, sharer in reversed(list(enumerate(sharers))):
            self.wait()
            if left:
                self.line(holder, L1, "Ack", "SM>SM", f"1 p: {left}")
            else:
                self.done(holder)
                self.line(holder, L1, "Ack_all", "SM>M")
        self.wait()
        self.line(0, L2, "Exclusive_Unblock", "SS_MB>MT")

    def release_owned(self, holder: int) -> None:
        """The holder's store to a line it owns alone: a hit, no message."""
        self.wait()
        self.begin(holder, "ST")
        self.wait(CYCLE_TICKS)
        self.done(holder)
        self.line(holder, L1, "Store", "M>M")

    def spin_read(self, reader: int, owner: int) -> None:
        """A waiter's read miss on the owner's modified line: GETS, FWD_GETS, DATA, WB_DATA, UNBLOCK."""
        self.wait()
        self.begin(reader, "LD")
        self.wait(CYCLE_TICKS)
        self.line(reader, L1, "Load", "I>IS")
        self.wait()
        self.line(0, L2, "L1_GETS", "MT>MT_IIB")
        self.wait()
        self.line(owner, L1, "Fwd_GETS", "M>S")
        self.wait()
        self.done(reader)
        self.line(reader, L1, "DataS_fromL1", "IS>S")
        self.wait(CYCLE_TICKS)
        self.line(0, L2, "WB_Data", "MT_IIB>MT_SB")
        self.wait(CYCLE_TICKS)
        self.line(0, L2, "Unblock", "MT_SB>SS")

    def acquire_xchg(self, taker: int, sharer: int) -> None:
        """The waiter's xchg on a line it shares with one other: a locked RMW (two ST), UPGRADE, acks, INV."""
        self.wait()
        self.begin(taker, "ST")
        self.wait(CYCLE_TICKS)
        self.line(taker, L1, "Store", "S>SM")
        self.wait()
        self.line(0, L2, "L1_UPGRADE", "SS>SS_MB")
        self.wait()
        self.line(taker, L1, "Ack", "SM>SM", "-1 p: 1")
        self.wait(CYCLE_TICKS)
        self.line(sharer, L1, "Inv", "S>I")
        self.wait()
        self.done(taker)
        self.line(taker, L1, "Ack_all", "SM>M")
        self.wait(CYCLE_TICKS)
        self.begin(taker, "ST")  # the locked write, in the cycle after the read
        self.wait(CYCLE_TICKS)
        self.done(taker)
        self.line(taker, L1, "Store", "M>M")
        self.wait()
        self.line(0, L2, "Exclusive_Unblock", "SS_MB>MT")
        self.wait(STEP * 10)


    def read_from_bank(self, reader: int) -> None:
        """A read miss on a line the bank holds shared: GETS, DATA from the bank."""
        self.wait()
        self.begin(reader, "LD")
        self.wait(CYCLE_TICKS)
        self.line(reader, L1, "Load", "I>IS")
        self.wait()
        self.line(0, L2, "L1_GETS", "SS>SS")
        self.wait()
        self.done(reader)
        self.line(reader, L1, "Data_all_Acks", "IS>S")


def three_tas_handoffs() -> list[str]:
    trace = TraceWriter()
    trace.release_shared(0, [1, 2])  # hand-off 0: CPU0 to CPU1
    trace.spin_read(1, owner=0)
    trace.acquire_xchg(1, sharer=0)
    trace.release_owned(1)  # hand-off 1: CPU1 to CPU2
    trace.spin_read(2, owner=1)
    trace.acquire_xchg(2, sharer=1)
    trace.spin_read(0, owner=2)  # CPU0 waits on the line while CPU2 holds the lock
    trace.release_shared(2, [0])  # hand-off 2: CPU2 to CPU0
    trace.spin_read(0, owner=2)
    trace.acquire_xchg(0, sharer=2)
    trace.release_owned(0)
    return trace.lines


def two_ticket_handoffs() -> list[str]:
    """A ticket lock: both waiters took their tickets before the trace; after a release they only read."""
    trace = TraceWriter()
    trace.release_shared(0, [1, 2])  # hand-off 0: CPU0 to CPU1, whose read then shows its turn
    trace.spin_read(1, owner=0)
    trace.read_from_bank(2)  # not CPU2's turn yet
    trace.release_shared(1, [0, 2])  # hand-off 1: CPU1 to CPU2
    trace.spin_read(2, owner=1)
    trace.release_shared(2, [1])
    return trace.lines


HANDOFF_0 = [
    ("UPGRADE", cpu(0), HOME),
    ("ACK", HOME, cpu(0)),
    ("INV", HOME, cpu(1)),
    ("INV", HOME, cpu(2)),
    ("ACK", cpu(2), cpu(0)),
    ("ACK", cpu(1), cpu(0)),
    ("EXCLUSIVE_UNBLOCK", cpu(0), HOME),
    ("GETS", cpu(1), HOME),
    ("FWD_GETS", HOME, cpu(0)),
    ("DATA", cpu(0), cpu(1)),
    ("WB_DATA", cpu(0), HOME),
    ("UNBLOCK", cpu(1), HOME),
    ("UPGRADE", cpu(1), HOME),
    ("ACK", HOME, cpu(1)),
    ("INV", HOME, cpu(0)),
    ("ACK", cpu(0), cpu(1)),
]
COUNTS = [16, 9, 14]


def config_json(cpus: int) -> dict:
    """The parts of gem5's config.json the chart reads: CPUs and their clock, the Ruby controllers."""
    ruby = "board.cache_hierarchy.ruby_system"
    cache = lambda name, path: {"type": "RubyCache", "name": name, "path": path, "size": 16384, "assoc": 4}  # noqa: E731
    l1s = [
        {"type": "L1Cache_Controller", "name": f"l1_controllers{i}", "path": f"{ruby}.l1_controllers{i}", "version": i,
         "l2_select_num_bits": 0, "L1Icache": cache("L1Icache", f"{ruby}.l1_controllers{i}.L1Icache"),
         "L1Dcache": cache("L1Dcache", f"{ruby}.l1_controllers{i}.L1Dcache")}
        for i in range(cpus)
    ]  # fmt: skip
    return {"type": "Root", "name": "root", "path": "root", "board": {
        "type": "Board", "name": "board", "path": "board", "cache_line_size": 64, "mem_ranges": ["0:1073741824"],
        "clk_domain": {"type": "SrcClockDomain", "name": "clk_domain", "path": "board.clk_domain", "clock": [CYCLE_TICKS]},
        "processor": {"type": "Processor", "name": "processor", "path": "board.processor", "cores": [
            {"type": "X86TimingSimpleCPU", "name": f"core{i}", "path": f"board.processor.core{i}", "cpu_id": i,
             "switched_out": False, "numThreads": 1, "clk_domain": "board.clk_domain"} for i in range(cpus)]},
        "cache_hierarchy": {"type": "Hierarchy", "name": "cache_hierarchy", "path": "board.cache_hierarchy", "ruby_system": {
            "type": "RubySystem", "name": "ruby_system", "path": ruby, "block_size_bytes": 64, "l1_controllers": l1s,
            "l2_controllers": [{"type": "L2Cache_Controller", "name": "l2_controllers0", "path": f"{ruby}.l2_controllers0", "version": 0,
                                "L2cache": cache("L2cache", f"{ruby}.l2_controllers0.L2cache")}],
            "directory_controllers": [{"type": "Directory_Controller", "name": "directory_controllers0",
                                       "path": f"{ruby}.directory_controllers0", "version": 0}]}},
    }}  # fmt: skip


def result_json() -> dict:
    return {"provenance": {"machine": {"name": "tas-test-machine"}}, "guest": {"results": [{"locks": [
        {"name": LOCK_NAME, "address": "0xffffffff81001000", "physical": hex(LOCK), "size": 4},
        {"name": "bench:shared_noise", "address": "0xffffffff81001004", "physical": hex(LOCK + 4), "size": 4},
    ]}]}}  # fmt: skip


def write_run(folder: Path, trace_lines: list[str] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config_json(CPUS)))
    (folder / "result.json").write_text(json.dumps(result_json()))
    if trace_lines is not None:
        with gzip.open(folder / "roi.trace.gz", "wt") as handle:
            handle.write("\n".join(trace_lines) + "\n")
    return folder


@pytest.fixture
def tas_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "tas-3", three_tas_handoffs())


def test_the_trace_is_gem5s_format() -> None:
    for text in three_tas_handoffs():
        assert format_line(parse_line(text)) == text


def test_a_locked_rmw_is_two_st_requests_joined_and_a_release_a_lone_store() -> None:
    requests = cpu_requests([parse_line(text) for text in three_tas_handoffs()], CYCLE_TICKS)
    on_lock = [(r.cpu, r.kind) for r in requests if r.kind in (KIND_STORE, KIND_RMW)]
    assert on_lock == [(0, KIND_STORE), (1, KIND_RMW), (1, KIND_STORE), (2, KIND_RMW), (2, KIND_STORE), (0, KIND_RMW), (0, KIND_STORE)]


def test_the_chart_of_a_known_handoff_has_exactly_its_messages(tas_run: Path) -> None:
    chart, handoff, count, _how = chart_for(tas_run, LOCK_NAME, index=0)
    assert count == len(COUNTS)
    assert (handoff.releaser, handoff.acquirer) == (0, 1)
    assert chart.message_list() == HANDOFF_0
    assert [lane.label for lane in chart.lanes] == [cpu(0), cpu(1), cpu(2), HOME, "dir+mem 0"]
    assert not any(arrow.crosses_nodes for arrow in chart.arrows)  # one node


def test_every_handoff_is_found_with_its_message_count(tas_run: Path) -> None:
    pairs, counts = [], []
    for index in range(len(COUNTS)):
        chart, handoff, _count, _how = chart_for(tas_run, LOCK_NAME, index=index)
        pairs.append((handoff.releaser, handoff.acquirer))
        counts.append(len(chart.arrows))
    assert pairs == [(0, 1), (1, 2), (2, 0)]
    assert counts == COUNTS


def test_without_a_choice_the_median_handoff_is_drawn(tas_run: Path) -> None:
    chart, handoff, _count, how = chart_for(tas_run, LOCK_NAME)
    assert handoff.index == 2 and how == "median by message count"
    assert "hand-off 2 of 3 (median by message count)" in chart.title
    assert "the trace's 3 hand-offs of this lock: 9 to 16 messages, median 14" in chart.facts


def test_the_median_is_the_lower_middle_and_the_earliest_of_equals() -> None:
    handoffs = ["a", "b", "c", "d"]
    assert median_handoff(handoffs, [5, 1, 9, 5]) == "a"  # type: ignore[arg-type]
    assert median_handoff(handoffs, [4, 3, 2, 1]) == "c"  # type: ignore[arg-type]


def test_a_tick_picks_the_handoff_under_it(tas_run: Path) -> None:
    _chart, second, _count, _how = chart_for(tas_run, LOCK_NAME, index=1)
    _chart, picked, _count, how = chart_for(tas_run, LOCK_NAME, tick=second.start + CYCLE_TICKS)
    assert picked.index == 1 and how.startswith("at --tick")


def test_an_index_out_of_range_says_which_there_are(tas_run: Path) -> None:
    with pytest.raises(HandoffInputError, match=r"--index 7: the trace has hand-offs 0 to 2"):
        chart_for(tas_run, LOCK_NAME, index=7)


def test_the_text_chart_shows_lanes_messages_and_states(tas_run: Path) -> None:
    chart, _handoff, _count, _how = chart_for(tas_run, LOCK_NAME, index=0)
    text = render_text(chart)
    assert all(lane.label in text for lane in chart.lanes)
    assert "UPGRADE: CPU0 L1 S>SM" in text and "-> L2 bank 0 SS>SS_MB" in text
    assert "DATA: CPU0 L1 M>S" in text and "-> CPU1 L1 IS>S" in text
    assert "release begins: store to 0x1000" in text and "acquire done: locked RMW to 0x1000" in text


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_no_two_texts_of_the_drawing_overlap(tas_run: Path) -> None:
    chart, _handoff, _count, _how = chart_for(tas_run, LOCK_NAME, index=0)
    boxes = [text.box() for text in layout_chart(chart).texts]
    clashes = [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if _overlaps(boxes[i], boxes[j])]
    assert not clashes


def test_a_ticket_waiter_acquires_with_its_first_read_after_the_release(tmp_path: Path) -> None:
    run = write_run(tmp_path / "ticket-3", two_ticket_handoffs())
    chart, handoff, count, _how = chart_for(run, LOCK_NAME, index=0)
    assert count == 2 and (handoff.releaser, handoff.acquirer, handoff.acquire.kind) == (0, 1, "load")
    assert chart.message_list() == HANDOFF_0[:7] + [("GETS", cpu(1), HOME), ("FWD_GETS", HOME, cpu(0)), ("DATA", cpu(0), cpu(1))]
    assert "acquire done: load to 0x1000" in render_text(chart)
    _chart, second, _count, _how = chart_for(run, LOCK_NAME, index=1)
    assert (second.releaser, second.acquirer, second.acquire.kind) == (1, 2, "load")


def test_a_lock_without_handoffs_says_so(tmp_path: Path) -> None:
    trace = TraceWriter()
    trace.release_shared(0, [1])
    run = write_run(tmp_path / "one-release", trace.lines)
    with pytest.raises(HandoffInputError, match=r"^no hand-off of lock 'bench:lock' \(.*roi\.trace\.gz\) in the trace"):
        chart_for(run, LOCK_NAME)


def test_a_junk_trace_line_names_the_file_and_line(tmp_path: Path) -> None:
    lines = three_tas_handoffs()
    lines[5] = lines[5].replace("L1Cache", "Gadget")
    run = write_run(tmp_path / "junk", lines)
    with pytest.raises(HandoffInputError, match=r"roi\.trace\.gz:6: "):
        chart_for(run, LOCK_NAME)


def test_a_line_without_a_tick_names_the_file_and_line(tmp_path: Path) -> None:
    lines = three_tas_handoffs()
    lines.insert(2, "garbage from a crashed simulator")
    run = write_run(tmp_path / "garbage", lines)
    with pytest.raises(HandoffInputError, match=r"roi\.trace\.gz:3: not a gem5 trace line"):
        chart_for(run, LOCK_NAME)


def test_a_lock_not_in_the_registry_lists_the_traced_locks(tas_run: Path) -> None:
    with pytest.raises(HandoffInputError, match=r"no lock 'nope' in this run's registry; traced locks: bench:lock$"):
        chart_for(tas_run, "nope")


def test_a_run_without_a_trace_says_how_to_trace_one(tmp_path: Path) -> None:
    run = write_run(tmp_path / "untraced", None)
    with pytest.raises(HandoffInputError, match=r"not traced; trace one with gem5-configs/run\.py --trace protocol"):
        chart_for(run, LOCK_NAME)


def test_message_counts_equal_counting_each_handoff_alone(tmp_path: Path) -> None:
    from analysis.handoff_chart.chart import message_counts, messages_in
    from analysis.handoff_chart.draw import _ruby
    from analysis.handoff_chart.handoff_finder import find_handoffs
    from analysis.handoff_chart.run_input import open_run

    run = open_run(write_run(tmp_path / "three", three_tas_handoffs()), LOCK_NAME)
    traced = _ruby(run)
    handoffs = find_handoffs(traced.requests, run.lock)
    assert len(handoffs) >= 2
    assert message_counts(traced.reconstruction, handoffs) == [messages_in(traced.reconstruction, h) for h in handoffs]


def test_the_lines_of_the_locks_line_are_read_from_the_trace_once(tas_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report draws the same hand-offs every time: the trace (gigabytes for kbench) is read once, then kept."""
    from analysis.handoff_chart import run_input

    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    reads: list[Path] = []
    reader = run_input._trace_lines

    def counting(run: run_input.TracedRun):  # type: ignore[no-untyped-def]
        reads.append(run.trace)
        return reader(run)

    monkeypatch.setattr(run_input, "_trace_lines", counting)
    first = chart_for(tas_run, LOCK_NAME, index=0)[0].message_list()
    assert chart_for(tas_run, LOCK_NAME, index=0)[0].message_list() == first == HANDOFF_0
    assert len(reads) == 1, "the second chart is drawn from the kept lines"
    assert list((tmp_path / "cache" / run_input.LINE_CACHE_FOLDER).rglob("*.json")), "kept in the trace cache"
    write_run(tas_run, three_tas_handoffs()[:-1])  # the trace changes: what was kept is stale
    chart_for(tas_run, LOCK_NAME, index=0)
    assert len(reads) == 2
