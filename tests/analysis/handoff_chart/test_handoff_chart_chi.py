"""The hand-off chart of a real CHI run (altix-numa, 2 nodes, 4 CPUs, kbench qspinlock).

The fixture (tests/fixtures/chi/altix-numa-2-qspinlock-handoff/, see the
README there) is one hand-off of `bench:lock` with 400 trace lines of
context on each side. The expected messages below were read off the
trace line by line with gem5's CHI .sm files (the rules' citations in
analysis/handoff_chart/data/CHI.toml): e.g. the home's one SnpUnique to
both sharers (Send_SnpUnique) reaches CPU0's L2 on its node 14 ns after
the send and CPU3's L2 on the other node 59 ns after it, the least
transits of config.json's network; each data message is two 32-byte
chunks, one arrow each.
"""

from __future__ import annotations

import json
from pathlib import Path

from analysis.gem5_output.config_reader import machine_facts
from analysis.handoff_chart.draw import chart_for
from analysis.handoff_chart.line_wiring import line_wiring
from analysis.handoff_chart.messages import ByMachine, reconstruct
from analysis.handoff_chart.protocol_rules import load_rules
from analysis.traffic.protocol_trace import Event, format_line, parse_line
from lockstudy.paths import ROOT

RUN = ROOT / "tests" / "fixtures" / "chi" / "altix-numa-2-qspinlock-handoff"
LOCK_NAME = "bench:lock"
LINE = 0x1D0C100
RELEASE_TICK = 1462245731000  # CPU1's releasing store begins
NS = 1000  # ticks
HOME, L2, L1 = "HN-F node 0", "CPU{} L2", "CPU{} l1d"

EXPECTED = [
    ("ReadUnique", L1.format(1), L2.format(1)),
    ("ReadUnique_PoC", L2.format(1), HOME),
    ("SnpUnique", HOME, L2.format(0)),
    ("SnpUnique", L2.format(0), L1.format(0)),
    ("SnpRespData_I_PD 1/2", L1.format(0), L2.format(0)),
    ("SnpRespData_I_PD 2/2", L1.format(0), L2.format(0)),
    ("ReadShared", L1.format(0), L2.format(0)),
    ("SnpRespData_I_PD 1/2", L2.format(0), HOME),
    ("SnpUnique", HOME, L2.format(3)),
    ("SnpUnique", L2.format(3), L1.format(3)),
    ("SnpRespData_I_PD 2/2", L2.format(0), HOME),
    ("SnpResp_I", L1.format(3), L2.format(3)),
    ("ReadShared", L2.format(0), HOME),
    ("SnpResp_I", L2.format(3), HOME),
    ("CompData_UD_PD 1/2", HOME, L2.format(1)),
    ("CompAck", L2.format(1), HOME),
    ("CompData_UD_PD 2/2", HOME, L2.format(1)),
    ("CompData_UD_PD 1/2", L2.format(1), L1.format(1)),
    ("CompAck", L1.format(1), L2.format(1)),
    ("CompData_UD_PD 2/2", L2.format(1), L1.format(1)),
    ("SnpSharedFwd", HOME, L2.format(1)),
    ("SnpShared", L2.format(1), L1.format(1)),
    ("SnpRespData_SC_PD 1/2", L1.format(1), L2.format(1)),
    ("SnpRespData_SC_PD 2/2", L1.format(1), L2.format(1)),
    ("CompData_SD_PD 1/2", L2.format(1), L2.format(0)),  # DCT: the owner's data straight to the requester
    ("CompAck", L2.format(0), HOME),
    ("CompData_SD_PD 2/2", L2.format(1), L2.format(0)),
    ("CompData_SD_PD 1/2", L2.format(0), L1.format(0)),
    ("CompAck", L1.format(0), L2.format(0)),
    ("CompData_SD_PD 2/2", L2.format(0), L1.format(0)),
    ("SnpResp_SC_Fwded_SD_PD", L2.format(1), HOME),
    ("CleanUnique", L1.format(0), L2.format(0)),
    ("CleanUnique", L2.format(0), HOME),
    ("SnpCleanInvalid", HOME, L2.format(1)),
    ("SnpCleanInvalid", L2.format(1), L1.format(1)),
    ("SnpResp_I", L1.format(1), L2.format(1)),
    ("SnpResp_I", L2.format(1), HOME),
    ("Comp_UC", HOME, L2.format(0)),
    ("Comp_UC", L2.format(0), L1.format(0)),
]


def test_the_real_chi_handoff_has_exactly_its_messages_each_with_a_sender() -> None:
    chart, handoff, _count, _how = chart_for(RUN, LOCK_NAME, tick=RELEASE_TICK)
    assert (handoff.releaser, handoff.acquirer, handoff.start, handoff.acquire.kind) == (1, 0, RELEASE_TICK, "store")
    assert chart.message_list() == EXPECTED
    assert all(arrow.sender is not None for arrow in chart.arrows)
    crossing = [(chart.lanes[a.sender].label, chart.lanes[a.receiver].label) for a in chart.arrows if a.crosses_nodes]  # type: ignore[index]
    assert crossing == [(HOME, L2.format(3)), (L2.format(3), HOME)]
    assert not any("no rule knows" in note for note in chart.notes)


def test_lanes_are_each_cpus_l1d_and_l2_then_each_nodes_home_and_memory() -> None:
    chart, _handoff, _count, _how = chart_for(RUN, LOCK_NAME, tick=RELEASE_TICK)
    labels = [(lane.label, lane.node) for lane in chart.lanes]
    assert labels == [
        ("CPU0 l1d", 0), ("CPU0 L2", 0), ("CPU1 l1d", 0), ("CPU1 L2", 0), (HOME, 0), ("SN-F node 0", 0),
        ("CPU2 l1d", 1), ("CPU2 L2", 1), ("CPU3 l1d", 1), ("CPU3 L2", 1), ("HN-F node 1", 1), ("SN-F node 1", 1),
    ]  # fmt: skip


def _line(tick: int, version: int, event: str, states: str) -> str:
    return format_line(Event(tick, version, "Cache", event, states, LINE, LINE, ""))


def test_a_remote_request_sent_first_does_not_take_the_local_ones_earlier_arrival() -> None:
    """CPU3's L2 (node 1) asks the home on node 0 first, CPU0's L2 (node 0) 10 ns later; the local one arrives first."""
    config = json.loads((RUN / "config.json").read_text())
    machine = machine_facts(config, "config.json")
    rules = load_rules("CHI")
    wiring = line_wiring(machine, config, LINE, rules.named_by, NS)
    remote_l2, local_l2, home = 13, 4, 0  # the Cache versions of CPU3's L2, CPU0's L2, node 0's home
    t = 1_000_000 * NS
    trace = [
        _line(t, remote_l2, "SendReadShared", "BUSY_BLKD>BUSY_INTR"),
        _line(t + 10 * NS, local_l2, "SendReadShared", "BUSY_BLKD>BUSY_INTR"),
        _line(t + 24 * NS, home, "AllocRequest", "RU>RU"),  # 14 ns: node 0's least transit
        _line(t + 24 * NS, home, "ReadShared", "RU>BUSY_BLKD"),
        _line(t + 59 * NS, home, "AllocRequest", "BUSY_BLKD>BUSY_BLKD"),  # 59 ns: across the NUMAlink
        _line(t + 59 * NS, home, "ReadShared", "BUSY_BLKD>BUSY_BLKD"),
    ]
    events = [parse_line(text) for text in trace]
    paired = [m.sender.version for m in reconstruct(events, rules, wiring).messages if m.sender]
    assert paired == [local_l2, remote_l2]
    plain_fifo = [m.sender.version for m in reconstruct(events, rules, _RolesOnly(wiring)).messages if m.sender]
    assert plain_fifo == [remote_l2, local_l2]  # what the oldest send from any L2 would say


class _RolesOnly(ByMachine):
    """The rules' roles, but neither relations nor transit: plain FIFO among the senders of the role."""

    def __init__(self, wiring) -> None:  # type: ignore[no-untyped-def]
        self.wiring = wiring

    def kind(self, controller):  # type: ignore[no-untyped-def]
        return self.wiring.kind(controller)


def test_no_two_texts_of_the_chi_drawing_overlap() -> None:
    from analysis.handoff_chart.layout import layout_chart

    chart, _handoff, _count, _how = chart_for(RUN, LOCK_NAME, tick=RELEASE_TICK)
    boxes = [text.box() for text in layout_chart(chart).texts]
    clashes = [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
               if boxes[i][0] < boxes[j][2] and boxes[j][0] < boxes[i][2] and boxes[i][1] < boxes[j][3] and boxes[j][1] < boxes[i][3]]  # fmt: skip
    assert not clashes
