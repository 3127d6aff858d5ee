"""The hand-off chart on piii-smp's classic trace: one test-and-set hand-off written in gem5's debug format.

The machine is the committed piii-smp fixture's (its config.json and lock
registry: 2 CPUs, 32-byte lines, the bus's ports as gem5 wired them);
the trace is what `--trace classic` prints for a hand-off, line by line
in the formats of gem5 v24.0's DPRINTFs (analysis/handoff_chart/classic_trace.py
cites each): CPU0 releases with a store to a line both CPUs share (an
upgrade on the bus, whose snoop invalidates CPU1's copies), CPU1's read
misses and gets the line from CPU0's L2 (a snoop response with data),
and CPU1's xchg upgrades it again.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from analysis.handoff_chart.draw import chart_for
from analysis.handoff_chart.errors import HandoffInputError
from analysis.handoff_chart.text_chart import render_text
from lockstudy.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "gem5" / "piii-smp-2-kbench"
LOCK_NAME = "bench:lock"
WORD = "[1d08100:1d08103]"  # the lock's 4 bytes
LINE = "[1d08100:1d0811f]"  # its 32-byte line
L2_PORT = {0: 2, 1: 4}  # membus.cpu_side_ports[N] of each CPU's L2 (the fixture's config.json)
MEMORY_PORT = 1
STATE_BITS = {"M": (7, 1, 1), "O": (3, 0, 1), "S": (1, 0, 0), "I": (0, 0, 0)}


def block(state: str) -> str:
    """CacheBlk::print() (src/mem/cache/cache_blk.hh)."""
    code, writable, dirty = STATE_BITS[state]
    return f"state: {code:x} ({state}) writable: {writable} readable: {int(state != 'I')} dirty: {dirty} prefetched: 0 | tag: 0xe84 secure: 0 valid: {int(state != 'I')} | set: 0x8 way: 0"


def at(tick: int, obj: str, text: str) -> str:
    return f"{tick:7d}: board.cache_hierarchy.{obj}: {text}"


def bus_port(side: str, number: int) -> str:
    return f"board.cache_hierarchy.membus.{side}_port[{number}]"


def upgrade(cpu: int, start: int, sharer: int, sharer_state: str, cpu_request: str) -> list[str]:
    """A write to a shared line: UpgradeReq down to the bus, the sharer's snoop, the memory's UpgradeResp back up."""
    l1, l2, other_l2, other_l1 = f"l1d-cache-{cpu}", f"l2-cache-{cpu}", f"l2-cache-{sharer}", f"l1d-cache-{sharer}"
    lines = [
        at(start, l1, f"access for {cpu_request} {WORD} hit {block('S')}"),
        at(start, l1, f"createMissPacket: created UpgradeReq {LINE} from {cpu_request} {WORD}"),
        at(start + 2000, l2, f"access for UpgradeReq {LINE} hit {block('S')}"),
        at(start + 2000, l2, f"createMissPacket: created UpgradeReq {LINE} from UpgradeReq {LINE}"),
        at(start + 19000, "membus", f"recvTimingReq: src {bus_port('cpu_side', L2_PORT[cpu])} packet UpgradeReq {LINE}"),
    ]
    if sharer_state == "S":
        # The L2 passes the snoop up before it prints its own (cache.cc:1084, 1156): the L1d's comes first.
        lines += [
            at(start + 29000, other_l1, f"handleSnoop: snoop hit for UpgradeReq {LINE}, old state is {block('S')}"),
            at(start + 29000, other_l1, f"new state is {block('I')}"),
        ]
    lines += [
        at(start + 29000, other_l2, f"handleSnoop: snoop hit for UpgradeReq {LINE}, old state is {block(sharer_state)}"),
        at(start + 29000, other_l2, f"new state is {block('I')}"),
    ]
    return lines + [
        at(start + 39000, "membus", f"recvTimingResp: src {bus_port('mem_side', MEMORY_PORT)} packet UpgradeResp {LINE}"),
        at(start + 49000, l2, f"recvTimingResp: Handling response UpgradeResp {LINE}"),
        at(start + 51000, l1, f"recvTimingResp: Handling response UpgradeResp {LINE}"),
    ]


def read_from_owner(reader: int, start: int, owner: int) -> list[str]:
    """A read miss served by the owner's L2: ReadSharedReq, a snoop hit in M, its data on the bus."""
    l1, l2, owner_l2 = f"l1d-cache-{reader}", f"l2-cache-{reader}", f"l2-cache-{owner}"
    return [
        at(start, l1, f"access for ReadReq {WORD} miss"),
        at(start, l1, f"createMissPacket: created ReadSharedReq {LINE} from ReadReq {WORD}"),
        at(start + 2000, l2, f"access for ReadSharedReq {LINE} miss"),
        at(start + 2000, l2, f"createMissPacket: created ReadSharedReq {LINE} from ReadSharedReq {LINE}"),
        at(start + 20000, "membus", f"recvTimingReq: src {bus_port('cpu_side', L2_PORT[reader])} packet ReadSharedReq {LINE}"),
        at(start + 30000, owner_l2, f"handleSnoop: snoop hit for ReadSharedReq {LINE}, old state is {block('M')}"),
        at(start + 30000, owner_l2, f"new state is {block('O')}"),
        at(start + 40000, "membus", f"recvTimingSnoopResp: src {bus_port('cpu_side', L2_PORT[owner])} packet ReadResp {LINE}"),
        at(start + 40000, "membus", f"recvTimingSnoopResp: src {bus_port('cpu_side', L2_PORT[owner])} packet ReadResp {LINE} FWD RESP"),
        at(start + 50000, l2, f"recvTimingResp: Handling response ReadResp {LINE}"),
        at(start + 50000, l2, f"Block addr 0x1d08100 (ns) moving from {block('I')} to {block('S')}"),
        at(start + 52000, l1, f"recvTimingResp: Handling response ReadResp {LINE}"),
        at(start + 52000, l1, f"Block addr 0x1d08100 (ns) moving from {block('I')} to {block('S')}"),
    ]


def one_tas_handoff() -> list[str]:
    lines = upgrade(0, 1000, sharer=1, sharer_state="S", cpu_request="WriteReq")  # CPU0 releases
    lines += [at(55000, "l1i-cache-0", "access for ReadReq [4000:4003] hit " + block("S"))]  # another line: skipped
    lines += read_from_owner(1, 60000, owner=0)  # CPU1 sees the lock free
    lines += upgrade(1, 120000, sharer=0, sharer_state="O", cpu_request="LockedRMWReadReq")  # CPU1's xchg
    lines += [at(173000, "l1d-cache-1", f"access for LockedRMWWriteReq {WORD} hit {block('M')}")]
    lines += [at(300000, "l1d-cache-1", f"access for WriteReq {WORD} hit {block('M')}")]  # CPU1 releases
    return lines


L1D, L2, BUS, MEMORY = "CPU{} L1d", "CPU{} L2", "bus (FSB)", "memory"
EXPECTED = [
    ("UpgradeReq", L1D.format(0), L2.format(0)),
    ("UpgradeReq", L2.format(0), BUS),
    ("snoop UpgradeReq", BUS, L2.format(1)),
    ("snoop UpgradeReq", L2.format(1), L1D.format(1)),
    ("UpgradeResp", MEMORY, BUS),
    ("UpgradeResp", BUS, L2.format(0)),
    ("UpgradeResp", L2.format(0), L1D.format(0)),
    ("ReadSharedReq", L1D.format(1), L2.format(1)),
    ("ReadSharedReq", L2.format(1), BUS),
    ("snoop ReadSharedReq", BUS, L2.format(0)),
    ("ReadResp (from a cache)", L2.format(0), BUS),
    ("ReadResp", BUS, L2.format(1)),
    ("ReadResp", L2.format(1), L1D.format(1)),
    ("UpgradeReq", L1D.format(1), L2.format(1)),
    ("UpgradeReq", L2.format(1), BUS),
    ("snoop UpgradeReq", BUS, L2.format(0)),
    ("UpgradeResp", MEMORY, BUS),
    ("UpgradeResp", BUS, L2.format(1)),
    ("UpgradeResp", L2.format(1), L1D.format(1)),
]


def write_run(folder: Path, lines: list[str] | None) -> Path:
    folder.mkdir(parents=True)
    for name in ("config.json", "result.json"):
        shutil.copy(FIXTURE / name, folder / name)
    if lines is not None:
        with gzip.open(folder / "roi.trace.gz", "wt") as handle:
            handle.write("\n".join(lines) + "\n")
    return folder


def test_the_classic_chart_of_a_known_handoff_has_exactly_its_messages(tmp_path: Path) -> None:
    chart, handoff, count, _how = chart_for(write_run(tmp_path / "piii", one_tas_handoff()), LOCK_NAME)
    assert count == 1 and (handoff.releaser, handoff.acquirer, handoff.acquire.kind) == (0, 1, "rmw")
    assert [lane.label for lane in chart.lanes] == [L1D.format(0), L2.format(0), L1D.format(1), L2.format(1), BUS, MEMORY]
    assert chart.message_list() == EXPECTED
    states = {(a.label, chart.lanes[a.receiver].label): a.receiver_states for a in chart.arrows}
    assert states[("snoop UpgradeReq", L1D.format(1))] == "S>I"
    assert states[("snoop ReadSharedReq", L2.format(0))] == "M>O"
    assert states[("ReadResp", L2.format(1))] == "I>S"
    text = render_text(chart)
    assert "classic caches" in text and "a snoop that misses is not printed" in text


def test_a_classic_run_without_a_trace_is_told_the_classic_option(tmp_path: Path) -> None:
    with pytest.raises(HandoffInputError, match=r"not traced; trace one with gem5-configs/run\.py --trace classic"):
        chart_for(write_run(tmp_path / "untraced", None), LOCK_NAME)


def test_a_classic_line_not_in_gem5s_format_names_the_file_and_line(tmp_path: Path) -> None:
    lines = one_tas_handoff()
    lines[3] = lines[3].replace(": board", " board", 1)
    with pytest.raises(HandoffInputError, match=r"roi\.trace\.gz:4: not a gem5 debug line"):
        chart_for(write_run(tmp_path / "junk", lines), LOCK_NAME)
