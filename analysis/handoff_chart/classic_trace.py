"""A classic-memory (piii-smp) trace on one line, as CPU requests and messages.

`--trace classic` turns on gem5's `Cache`, `CoherentXBar` and `SnoopFilter`
debug flags (gem5-configs/run.py). Each line is `tick: object: text`
(src/base/trace.cc, OstreamLogger::logMessage); a packet prints as
`Cmd [first:last]` in hex (src/mem/packet.cc, Packet::print). What this
reads, in gem5 v24.0:

- a cache's `access for <packet> hit state: ... (X) ...` or `... miss`
  (src/mem/cache/base.cc:1256): at a CPU's L1d, the CPU's request; at
  its L2, a request from the L1 (the back-side bus);
- `createMissPacket: created <packet> from <packet>` (cache.cc:571): a
  cache sending a request down;
- `handleSnoop: snoop hit for <packet>, old state is state: .. (X) ..`
  then `new state is state: .. (Y) ..` from the same cache (cache.cc:1156,
  1197, 1253): a snoop that found the line, and its state change;
- `recvTimingResp: Handling response <packet>` (base.cc:508) and `Block
  addr 0x.. (ns) moving from state: .. (X) .. to state: .. (Y) ..`
  (base.cc:1599): a response arriving at a cache, and the line's fill;
- an L2 passes a snoop up to its L1d before it prints its own `snoop
  hit` (cache.cc:1084, 1156), so the L1d's snoop is printed first at the
  same tick; an L1d whose own miss on the line is in service prints
  `Deferring snoop on in-service MSHR to blk 0x..` (cache.cc:1296) and
  handles the snoop when its miss is served, at a later tick;
- multi-line messages (an MSHR's target list) continue on indented lines
  without a tick: they are skipped (run_input.py);
- the bus (`membus`): `recvTimingReq: src <port> packet <packet>`,
  `recvTimingResp: src ...` and `recvTimingSnoopResp: src ...` (with
  `FWD RESP` when passed on), src/mem/coherent_xbar.cc:173, 467, 610, 673;
  `<port>` is `membus.cpu_side_port[N]` or `membus.mem_side_port[N]`,
  whose peer config.json names.

Not recoverable: a snoop that misses prints only under `CacheVerbose`
(cache.cc:1140), so of the bus's broadcast only the caches that hold the
line are drawn; memory prints nothing, so its response starts at the
bus's receipt; lines the bus refused (`BUSY`, `RETRY`) are retried and
drawn once, when accepted.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from analysis.handoff_chart.cpu_requests import KIND_LOAD, KIND_OTHER, KIND_RMW, KIND_STORE, CpuRequest
from analysis.handoff_chart.messages import Controller, Message, Reconstruction, Transition

LINE_FORMAT = re.compile(r"^\s*(\d+): ([^:\s]+): (.*)$")
PACKET = re.compile(r"\b([A-Za-z]+) \[([0-9a-f]+):([0-9a-f]+)\]")
STATE = re.compile(r"state: [0-9a-f]+ \((\w)\)")
CACHE_NAME = re.compile(r"\.(l1d|l1i|l2)-cache-(\d+)$")
BUS_NAME = "membus"
BUS_PORT = re.compile(r"membus\.(cpu_side_port|mem_side_port)\[(\d+)\]")
REFUSED = (" BUSY", " RETRY")
MISS = "miss"
NEW_STATE = "new state is"
MOVING = " moving from "


def fill_mark(line: int) -> str:
    """How base.cc:1599 starts the fill of `line` ("Block addr %#llx ...")."""
    return f"Block addr {line:#x} "


def deferral_mark(line: int) -> str:
    """How cache.cc:1296 says a snoop on `line` waits for the cache's own miss to `line` to be served."""
    return f"Deferring snoop on in-service MSHR to blk {line:#x} "

L1D, L1I, L2, BUS, MEMORY = "L1d", "L1i", "L2", "bus", "memory"
CACHE_MACHINES = {"l1d": L1D, "l1i": L1I, "l2": L2}
# What a CPU's own request to its L1d is, for the hand-off (src/mem/packet.cc's command names).
CPU_REQUEST_KINDS = {"ReadReq": KIND_LOAD, "WriteReq": KIND_STORE, "SwapReq": KIND_RMW, "LockedRMWReadReq": KIND_RMW}
LOCKED_WRITE = "LockedRMWWriteReq"
# A locked RMW's write always hits, and the cache then "responds" to the
# read's still-open MSHR itself with a made-up LockedRMWWriteResp, printed
# as a response that arrived (src/mem/cache/base.cc:264-279): no message.
LOCKED_WRITE_RESPONSE = "LockedRMWWriteResp"
WRITES = ("WriteReq", "SwapReq", "LockedRMWReadReq")  # need the line writable (NeedsWritable, packet.cc)
WRITABLE = ("M", "E")
DATA_RESPONSES = ("ReadExResp", "ReadSharedResp", "ReadCleanResp", "ReadResp", "ReadRespWithInvalidate")


@dataclass(frozen=True)
class ClassicLine:
    number: int
    tick: int
    obj: str
    text: str


@dataclass(frozen=True)
class BusPorts:
    """membus port number -> the controller on its other side (from config.json's peers)."""

    cpu_side: dict[int, Controller]
    mem_side: dict[int, Controller]


def parse_classic(number: int, text: str) -> ClassicLine | None:
    match = LINE_FORMAT.match(text)
    return ClassicLine(number, int(match.group(1)), match.group(2), match.group(3)) if match else None


def controller_of(obj: str) -> Controller | None:
    match = CACHE_NAME.search(obj)
    if match:
        return Controller(CACHE_MACHINES[match.group(1)], int(match.group(2)))
    return Controller(BUS, 0) if obj.endswith("." + BUS_NAME) else None


def bus_ports(objects: list[dict[str, Any]]) -> BusPorts:
    """Which controller sits behind each bus port: config.json gives the bus's ports' peers in order."""
    bus = next((o for o in objects if o["path"].endswith("." + BUS_NAME)), None)
    out: dict[str, dict[int, Controller]] = {"cpu_side_ports": {}, "mem_side_ports": {}}
    for side in out:
        peers = bus.get(side, {}).get("peer", []) if bus else []
        for number, peer in enumerate(peers if isinstance(peers, list) else [peers]):
            owner = str(peer).rsplit(".", 1)[0]
            controller = controller_of(owner)
            out[side][number] = controller if controller else Controller(MEMORY, 0)
    return BusPorts(out["cpu_side_ports"], out["mem_side_ports"])


def on_line(text: str, first: int, last: int) -> re.Match[str] | None:
    """The first packet in `text` that touches the line [first, last]."""
    for match in PACKET.finditer(text):
        if int(match.group(2), 16) <= last and int(match.group(3), 16) >= first:
            return match
    return None


class ClassicReader:
    """Reads one line's classic trace lines into CPU requests and messages, in file order."""

    def __init__(self, first: int, line_bytes: int, ports: BusPorts) -> None:
        self.first, self.last = first, first + line_bytes - 1
        self.ports = ports
        self.result = Reconstruction()
        self.requests: list[CpuRequest] = []
        self.sends: dict[tuple[Controller, str], Transition] = {}
        self.snooped: dict[Controller, Transition] = {}  # a snoop hit waiting for its "new state is"
        self.open_requests: dict[int, int] = {}  # CPU -> index in requests of its miss waiting for the response
        # An L1d's snoop, printed before the snoop of the L2 that forwarded it up
        # (Cache::handleSnoop forwards a snoop to the caches above before it
        # prints its own "snoop hit", src/mem/cache/cache.cc:1084 and 1156): held
        # until that L2's snoop at the same tick, which is its sender.
        self.held_snoops: dict[int, list[Transition]] = {}
        self.last_message_to: dict[Controller, int] = {}  # each controller's latest arrival, for its fill's states
        # A snoop an L1d deferred (its own miss on the line is in service) is
        # handled when that miss is served, at a later tick: its sender is the
        # snoop its L2 forwarded at the tick it was deferred (cache.cc:1296).
        self.deferred_at: dict[int, int] = {}
        self.deferred_senders: dict[int, deque[Transition]] = defaultdict(deque)
        self.order = 0

    def _transition(self, line: ClassicLine, controller: Controller, event: str, before: str = "", after: str = "") -> Transition:
        self.order += 1
        return Transition(self.order, line.tick, controller, event, before, after)

    def _arrow(self, label: str, kind: str, arrival: Transition, send: Transition | None) -> None:
        self.last_message_to[arrival.controller] = len(self.result.messages)
        self.result.messages.append(Message(label, kind, arrival.controller, arrival, send))

    def read(self, line: ClassicLine) -> None:
        self._release_held_snoops(before_tick=line.tick)
        controller = controller_of(line.obj)
        if controller is None:
            return
        if line.text.startswith(NEW_STATE) and controller in self.snooped:
            self._snoop_done(line, controller)
            return
        if line.text.startswith(fill_mark(self.first)) and MOVING in line.text:
            self._fill(line, controller)
            return
        if line.text.startswith(deferral_mark(self.first)) and controller.machine == L1D:
            self.deferred_at[controller.version] = line.tick
            return
        packet = on_line(line.text, self.first, self.last)
        if packet is None:
            return
        command = packet.group(1)
        if controller.machine == BUS:
            self._bus(line, command)
        elif line.text.startswith("access for "):
            self._access(line, controller, command, int(packet.group(2), 16))
        elif line.text.startswith("createMissPacket: created "):
            self.sends[(controller, "request")] = self._transition(line, controller, command)
        elif line.text.startswith("handleSnoop: snoop hit for "):
            states = STATE.findall(line.text)
            self.snooped[controller] = self._transition(line, controller, command, states[0] if states else "?")
        elif line.text.startswith("recvTimingResp: Handling response "):
            self._response(line, controller, command)

    def _access(self, line: ClassicLine, controller: Controller, command: str, address: int) -> None:
        missed = line.text.endswith(MISS)
        hit = STATE.search(line.text)
        state = "I" if missed or not hit else hit.group(1)
        if controller.machine == L1D and (command in CPU_REQUEST_KINDS or command == LOCKED_WRITE):
            # A write to a line held without permission (S, O) prints "hit" and goes down as an UpgradeReq.
            waits = missed or (command in WRITES and state not in WRITABLE)
            self._cpu_request(line, controller.version, command, address, waits)
            if waits:
                self.result.cpu_transitions.append(self._transition(line, controller, command, state))
        elif controller.machine == L2:
            arrival = self._transition(line, controller, command, state, state)
            self._arrow(command, "request", arrival, self._request_send(line, Controller(L1D, controller.version), command))
            self.sends[(controller, "answer")] = arrival

    def _request_send(self, line: ClassicLine, sender: Controller, command: str) -> Transition:
        """The sender's createMissPacket of this command; a request made otherwise (a writeback,
        a CleanEvict) prints no send, and is drawn as sent when it arrives."""
        send = self.sends.pop((sender, "request"), None)
        return send if send is not None and send.event == command else self._transition(line, sender, command)

    def _cpu_request(self, line: ClassicLine, cpu: int, command: str, address: int, waits: bool) -> None:
        if command == LOCKED_WRITE:
            opened = next((n for n in range(len(self.requests) - 1, -1, -1) if self.requests[n].cpu == cpu and self.requests[n].kind == KIND_RMW), None)
            if opened is not None:
                read = self.requests[opened]
                self.requests[opened] = CpuRequest(cpu, KIND_RMW, read.request_type, read.address, read.begin, line.tick)
            return
        self.requests.append(CpuRequest(cpu, CPU_REQUEST_KINDS.get(command, KIND_OTHER), command, address, line.tick, line.tick))
        if waits:
            self.open_requests[cpu] = len(self.requests) - 1
        else:
            self.open_requests.pop(cpu, None)

    def _snoop_done(self, line: ClassicLine, controller: Controller) -> None:
        snoop = self.snooped.pop(controller)
        states = STATE.findall(line.text)
        arrival = Transition(snoop.order, snoop.tick, controller, snoop.event, snoop.before, states[0] if states else "?")
        self.sends[(controller, "answer")] = arrival
        cpu = controller.version
        if controller.machine != L2:
            if self.deferred_senders[cpu]:
                self.order += 1
                self._snoop_arrow(Transition(self.order, arrival.tick, controller, arrival.event, arrival.before, arrival.after), self.deferred_senders[cpu].popleft())
            else:
                self.held_snoops.setdefault(cpu, []).append(arrival)
            return
        self._snoop_arrow(arrival, self.sends.get((Controller(BUS, 0), "snoop")))
        self.sends[(controller, "snoop")] = arrival
        self._release_held_snoops(cpu=cpu, sender=arrival)
        if self.deferred_at.get(cpu) == arrival.tick:
            del self.deferred_at[cpu]
            self.deferred_senders[cpu].append(arrival)

    def _snoop_arrow(self, arrival: Transition, send: Transition | None) -> None:
        self._arrow(f"snoop {arrival.event}", "invalidation" if arrival.after == "I" else "forward", arrival, send)

    def _release_held_snoops(self, before_tick: int | None = None, cpu: int | None = None, sender: Transition | None = None) -> None:
        """Draw the held L1d snoops: those of `cpu`, sent by its L2's snoop `sender`; or, at a
        later tick (`before_tick`), those whose L2 printed no snoop (it no longer held the
        line; a snoop miss prints nothing): sent by that L2 at the same tick all the same."""
        for version in [cpu] if cpu is not None else list(self.held_snoops):
            held = self.held_snoops.get(version, [])
            if not held or (before_tick is not None and held[0].tick >= before_tick):
                continue
            for arrival in self.held_snoops.pop(version):
                send = sender or Transition(arrival.order, arrival.tick, Controller(L2, version), arrival.event, "", "")
                self.order += 1
                self._snoop_arrow(Transition(self.order, arrival.tick, arrival.controller, arrival.event, arrival.before, arrival.after), send)

    def finish(self) -> None:
        """Draw what is still held at the trace's end."""
        self._release_held_snoops(before_tick=2**63)

    def _bus(self, line: ClassicLine, command: str) -> None:
        if any(line.text.endswith(word) or word + " " in line.text for word in REFUSED):
            return
        port = BUS_PORT.search(line.text)
        if port is None:
            return
        side, number = port.group(1), int(port.group(2))
        sender = (self.ports.cpu_side if side == "cpu_side_port" else self.ports.mem_side).get(number, Controller(MEMORY, 0))
        arrival = self._transition(line, Controller(BUS, 0), command)
        if line.text.startswith("recvTimingReq:"):
            self._arrow(command, "request", arrival, self._request_send(line, sender, command))
            self.sends[(Controller(BUS, 0), "snoop")] = arrival
        elif line.text.startswith("recvTimingSnoopResp:"):
            if "FWD RESP" in line.text:
                self.sends[(Controller(BUS, 0), "answer")] = arrival
                return
            self._arrow(f"{command} (from a cache)", "data", arrival, self.sends.get((sender, "answer")))
            self.sends[(Controller(BUS, 0), "answer")] = arrival
        elif line.text.startswith("recvTimingResp:"):
            memory_send = self._transition(line, sender, command)
            self._arrow(command, "data" if command in DATA_RESPONSES else "ack", arrival, memory_send)
            self.sends[(Controller(BUS, 0), "answer")] = arrival

    def _response(self, line: ClassicLine, controller: Controller, command: str) -> None:
        if command == LOCKED_WRITE_RESPONSE:
            return  # the cache's own: no message arrived
        arrival = self._transition(line, controller, command)
        source = Controller(BUS, 0) if controller.machine == L2 else Controller(L2, controller.version)
        self._arrow(command, "data" if command in DATA_RESPONSES else "ack", arrival, self.sends.get((source, "answer")))
        self.sends[(controller, "answer")] = arrival
        if controller.machine == L1D and controller.version in self.open_requests:
            index = self.open_requests.pop(controller.version)
            request = self.requests[index]
            self.requests[index] = CpuRequest(request.cpu, request.kind, request.request_type, request.address, request.begin, line.tick)

    def _fill(self, line: ClassicLine, controller: Controller) -> None:
        """The fill after a response: the state change of that response's arrow."""
        states = STATE.findall(line.text)
        number = self.last_message_to.get(controller)
        if len(states) != 2 or number is None:
            return  # a block new to the cache prints no state before ("moving from  to ..."): no change to draw
        message = self.result.messages[number]
        if message.arrival.tick <= line.tick:
            arrival = message.arrival
            self.result.messages[number] = Message(message.label, message.kind, controller,
                Transition(arrival.order, arrival.tick, controller, arrival.event, states[0], states[1]), message.send)  # fmt: skip
