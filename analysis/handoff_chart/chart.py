"""The chart of one hand-off, independent of how it is drawn (text, SVG, PNG).

Rows in time order: an arrow per message that arrives within the
hand-off (from its send to its arrival, each end with the line's state
change there), and marks for what is no message: the CPUs' requests that
change the line's state in their own cache (misses, the release, the
acquire) and a home bank handling a request that had to wait. Read hits
(a waiter spinning on its copy) change nothing and are counted, not drawn.
"""

from __future__ import annotations

from collections import Counter
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Union

from analysis.handoff_chart.cpu_requests import CpuRequest
from analysis.handoff_chart.handoff_finder import Handoff
from analysis.handoff_chart.messages import Controller, Reconstruction, Transition
from analysis.handoff_chart.topology import Lane, Topology

FIRST_AT_TICK, LAST_AT_TICK = -1, 1 << 62  # orders before and after every trace line
PS_PER_NS = 1000  # gem5's tick is 1 ps unless a script changes it (analysis/data/gem5_config.toml)


@dataclass(frozen=True)
class Arrow:
    tick: int  # the arrival
    order: int  # the arrival's place among the line's trace lines (ties of equal ticks)
    label: str
    kind: str
    sender: int | None  # lane index; None when the send is before the trace
    receiver: int
    send_tick: int | None
    sender_states: str
    receiver_states: str
    crosses_nodes: bool
    waited: bool


@dataclass(frozen=True)
class Mark:
    tick: int
    order: int
    lane: int
    text: str


Row = Union[Arrow, Mark]


@dataclass(frozen=True)
class Chart:
    title: str
    facts: tuple[str, ...]
    lanes: tuple[Lane, ...]
    nodes: int
    rows: tuple[Row, ...]
    start_tick: int
    end_tick: int
    ticks_per_ns: float
    notes: tuple[str, ...]

    def ns(self, tick: int) -> float:
        """Nanoseconds since the release began (negative for a message sent before it)."""
        return (tick - self.start_tick) / self.ticks_per_ns

    @property
    def arrows(self) -> list[Arrow]:
        return [row for row in self.rows if isinstance(row, Arrow)]

    def message_list(self) -> list[tuple[str, str, str]]:
        """(label, sender lane, receiver lane) of every arrow, in order: what the tests compare."""
        return [
            (a.label, self.lanes[a.sender].label if a.sender is not None else "?", self.lanes[a.receiver].label)
            for a in self.arrows
        ]  # fmt: skip


def messages_in(reconstruction: Reconstruction, handoff: Handoff) -> int:
    return sum(handoff.start <= m.arrival.tick <= handoff.end for m in reconstruction.messages)


def message_counts(reconstruction: Reconstruction, handoffs: list[Handoff]) -> list[int]:
    """messages_in of every hand-off, from the arrival ticks sorted once (a trace has ~10^5 messages, ~10^3 hand-offs)."""
    ticks = sorted(m.arrival.tick for m in reconstruction.messages)
    return [bisect_right(ticks, handoff.end) - bisect_left(ticks, handoff.start) for handoff in handoffs]


def _lane_index(topology: Topology, controller: Controller) -> int | None:
    return next((n for n, lane in enumerate(topology.lanes) if lane.controller == controller), None)


REQUEST_WORDS = {"store": "store", "rmw": "locked RMW", "load": "load"}


def _request_text(request: CpuRequest, role: str) -> str:
    return f"{role}: {REQUEST_WORDS.get(request.kind, request.request_type)} to {request.address:#x}"


@dataclass(frozen=True)
class ChartContext:
    """What the chart says about where it comes from."""

    lock: str
    line: int
    run_name: str
    machine: str
    memory_system: str  # "Ruby MESI_Two_Level", "classic caches"
    chosen_how: str
    handoff_count: int
    ticks_per_second: int
    message_counts: tuple[int, ...] = ()  # of every hand-off in the trace: where this one stands


def build_chart(
    context: ChartContext,
    handoff: Handoff,
    reconstruction: Reconstruction,
    requests: list[CpuRequest],
    topology: Topology,
    inference_note: str,
) -> Chart:
    start, end = handoff.start, handoff.end
    rows: list[Row] = []
    notes: list[str] = []
    unsent = 0
    for message in reconstruction.messages:
        if not start <= message.arrival.tick <= end:
            continue
        receiver = _lane_index(topology, message.receiver)
        sender = _lane_index(topology, message.sender) if message.sender else None
        if receiver is None:
            continue
        unsent += message.send is None
        crosses = sender is not None and topology.lanes[sender].node != topology.lanes[receiver].node
        rows.append(Arrow(
            message.arrival.tick, message.arrival.order, message.label, message.kind, sender, receiver,
            message.send.tick if message.send else None,
            message.send.states if message.send else "", message.arrival.states, crosses, message.waited,
        ))  # fmt: skip
    cpu_lane: dict[int, int] = {}
    for n, lane in enumerate(topology.lanes):
        if lane.cpu is not None:
            cpu_lane.setdefault(lane.cpu, n)  # the CPU's first lane: its own cache (CHI: the L1 before its L2)
    misses: list[Transition] = [t for t in reconstruction.cpu_transitions if start <= t.tick <= end and t.before != t.after]  # a hit changes nothing
    for transition in misses:
        lane = _lane_index(topology, transition.controller)
        if lane is not None:
            states = f": {transition.states}" if transition.after else f" in {transition.before}"
            rows.append(Mark(transition.tick, transition.order, lane, f"{transition.event} misses{states}"))
    for transition in reconstruction.handled_waiting:
        lane = _lane_index(topology, transition.controller)
        if start <= transition.tick <= end and lane is not None:
            rows.append(Mark(transition.tick, transition.order, lane, f"takes up the waiting request: {transition.event} {transition.states}"))
    # The release's Begin comes first at its tick, the acquire's Done last at its own.
    for request, role, tick, order in (
        (handoff.release, "release begins", handoff.release.begin, FIRST_AT_TICK),
        (handoff.acquire, "acquire done", handoff.acquire.end, LAST_AT_TICK),
    ):
        if request.cpu in cpu_lane:
            rows.append(Mark(tick, order, cpu_lane[request.cpu], _request_text(request, role)))
    hits = Counter(r.cpu for r in requests if start <= r.begin <= end and r not in (handoff.release, handoff.acquire))
    hit_cpus = sorted(cpu for cpu in hits if cpu in cpu_lane)
    rows.sort(key=lambda row: (row.tick, row.order))
    arrows = [row for row in rows if isinstance(row, Arrow)]
    ticks_per_ns = context.ticks_per_second / 1e9 if context.ticks_per_second else PS_PER_NS
    releaser, acquirer = cpu_lane.get(handoff.releaser), cpu_lane.get(handoff.acquirer)
    node = lambda lane: f" (node {topology.lanes[lane].node})" if lane is not None and topology.nodes > 1 else ""  # noqa: E731
    title = (
        f"{context.lock}: hand-off {handoff.index} of {context.handoff_count} ({context.chosen_how}), "
        f"CPU{handoff.releaser}{node(releaser)} to CPU{handoff.acquirer}{node(acquirer)}"
    )
    crossings = sum(a.crosses_nodes for a in arrows)
    facts = (
        f"{context.run_name}: {context.machine}, {context.memory_system}, line {context.line:#x}",
        f"{len(arrows)} messages, {crossings} between nodes; ticks {start} to {end} ({(end - start) / ticks_per_ns:.1f} ns)",
    )
    if context.message_counts:
        ordered = sorted(context.message_counts)
        facts += (f"the trace's {len(ordered)} hand-offs of this lock: {ordered[0]} to {ordered[-1]} messages, median {ordered[(len(ordered) - 1) // 2]}",)
    notes.append(inference_note)
    if unsent:
        notes.append(f"{unsent} message(s) sent before the trace's first line: drawn from their arrival only.")
    if hit_cpus:
        counts = ", ".join(f"CPU{cpu} {hits[cpu]}" for cpu in hit_cpus)
        notes.append(f"Other CPU requests on the line meanwhile: {counts} (misses drawn; hits change nothing).")
    unknown = sorted({f"{t.controller.machine}:{t.event}" for t in reconstruction.unknown if start <= t.tick <= end})
    if unknown:
        notes.append("Events no rule knows, not drawn: " + ", ".join(unknown) + ".")
    return Chart(title, facts, topology.lanes, topology.nodes, tuple(rows), start, end, ticks_per_ns, tuple(notes))
