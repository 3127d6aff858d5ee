"""The CPUs' requests on one cache line, from a Ruby trace's sequencer lines.

Each request the sequencer issues prints a `Begin` line with its exact
physical address and type, and a `Done` line (`SC_Failed` for a failed
store-conditional) when it completes (src/mem/ruby/system/Sequencer.cc:
1107 and 408). The type printed is the *secondary* request type: an x86
locked read-modify-write (lock cmpxchg, xchg, lock xadd) reaches Ruby as a
Locked_RMW_Read and a Locked_RMW_Write and both print `ST`
(Sequencer.cc:951-966). The pair is recognisable all the same: between
them the sequencer blocks the line for everything but the write
(Sequencer.cc:1020-1027), so the write's Begin follows the read's Done
at once, at the same address. A `ST` whose Done is followed that closely
by another `ST` of the same CPU at the same address is one locked RMW;
any other `ST` is a plain store.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass

from analysis.traffic.protocol_trace import SEQ_BEGIN, SEQUENCER, Event

SEQ_DONE = "Done"
SEQ_SC_FAILED = "SC_Failed"
STORE = "ST"
LOAD = "LD"
# The locked write starts in the cycle after the read completes: measured
# one cycle (1000 ticks at 1 GHz) on every locked RMW of the committed
# altix-numa trace (timing CPU); two allow a CPU model a cycle more.
LOCKED_WRITE_GAP_CYCLES = 2

# What a request is, for the hand-off: plain store, locked RMW, or a read.
KIND_STORE = "store"
KIND_RMW = "rmw"
KIND_LOAD = "load"
KIND_OTHER = "other"


@dataclass(frozen=True)
class CpuRequest:
    """One request of a CPU on the line; a locked RMW is one request from the read's Begin to the write's Done."""

    cpu: int
    kind: str
    request_type: str  # as printed (ST, LD, IFETCH, ...)
    address: int
    begin: int
    done: int | None
    failed: bool = False  # a store-conditional that failed (SC_Failed)

    @property
    def end(self) -> int:
        return self.done if self.done is not None else self.begin

    def on(self, first: int, size: int) -> bool:
        return first <= self.address < first + max(size, 1)


@dataclass
class _Open:
    event: Event
    done: int | None = None
    failed: bool = False


def _kind(request_type: str) -> str:
    if request_type == STORE:
        return KIND_STORE
    if request_type == LOAD:
        return KIND_LOAD
    return KIND_OTHER


def sequencer_requests(events: Iterable[Event]) -> list[_Open]:
    """Begin lines matched with their Done (per CPU, the oldest open request at the same address)."""
    opened: dict[tuple[int, int], deque[_Open]] = defaultdict(deque)
    requests: list[_Open] = []
    for event in events:
        if event.machine != SEQUENCER:
            continue
        if event.event == SEQ_BEGIN:
            request = _Open(event)
            opened[(event.version, event.address)].append(request)
            requests.append(request)
        elif event.event in (SEQ_DONE, SEQ_SC_FAILED):
            waiting = opened.get((event.version, event.address))
            if waiting:  # a Done whose Begin is before the trace's start has nothing to close
                request = waiting.popleft()
                request.done = event.tick
                request.failed = event.event == SEQ_SC_FAILED
    return requests


def cpu_requests(events: Iterable[Event], cycle_ticks: int) -> list[CpuRequest]:
    """The CPUs' requests in order of their Begin, locked RMW pairs joined into one `rmw` request."""
    raw = sequencer_requests(events)
    last_of_cpu: dict[int, int] = {}
    out: list[CpuRequest] = []
    for request in raw:
        event = request.event
        previous_index = last_of_cpu.get(event.version)
        previous = out[previous_index] if previous_index is not None else None
        if (
            previous is not None
            and previous.kind == KIND_STORE
            and event.comment == STORE
            and previous.address == event.address
            and previous.done is not None
            and 0 <= event.tick - previous.done <= LOCKED_WRITE_GAP_CYCLES * cycle_ticks
        ):
            out[previous_index] = CpuRequest(previous.cpu, KIND_RMW, STORE, previous.address, previous.begin, request.done, request.failed)  # type: ignore[index]
            continue
        last_of_cpu[event.version] = len(out)
        out.append(CpuRequest(event.version, _kind(event.comment), event.comment, event.address, event.tick, request.done, request.failed))
    return out
