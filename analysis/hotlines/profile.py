"""Per cache line of one ROI: coherence requests, invalidations, node crossings, share of the ROI's requests.

From the counted transitions (scan.py), the protocol's rules (rules.py)
and the machine's topology (topology.py):

- requests: the coherence requests the line's home served (each once,
  retries after a wait not counted again);
- invalidations: the invalidations private caches received for it;
- home_messages: the messages between a controller and the line's home
  that one transition names both ends of (rules.py); crossings: those of
  them whose two controllers are on different nodes;
- share: the line's requests over all requests of the ROI (every line,
  not only the ones kept).

Sequencer lines (CPU accesses, hits included) and stalled transitions
count for nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from analysis.gem5_output.trace_chunks import TraceFormatError
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.rules import HotlineRules, ProtocolRules
from analysis.hotlines.scan import TransitionKey
from analysis.hotlines.topology import Topology

HEX = 16
STATE_MARK = ">"


class UnreadableTransition(TraceFormatError):
    """A trace line that has gem5's shape but names what the machine does not have; `key` finds it again."""

    def __init__(self, key: TransitionKey, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


@dataclass(slots=True)
class LineTraffic:
    line: int
    requests: int = 0
    invalidations: int = 0
    home_messages: int = 0
    crossings: int = 0


@dataclass(frozen=True)
class RoiProfile:
    """Every line with traffic in one ROI, and the ROI's totals."""

    lines: dict[int, LineTraffic]
    total_requests: int
    total_invalidations: int
    total_crossings: int

    @classmethod
    def of_lines(cls, lines: dict[int, LineTraffic]) -> "RoiProfile":
        """The profile of these lines, its totals summed from them."""
        return cls(lines, sum(t.requests for t in lines.values()), sum(t.invalidations for t in lines.values()), sum(t.crossings for t in lines.values()))

    def ranked(self) -> list[LineTraffic]:
        """Lines by requests, then invalidations, then crossings (most first), then address."""
        return sorted(self.lines.values(), key=lambda t: (-t.requests, -t.invalidations, -t.crossings, t.line))

    def share(self, traffic: LineTraffic) -> float:
        return traffic.requests / self.total_requests if self.total_requests else 0.0


def split_names(first: str, second: str, machines: tuple[str, ...]) -> tuple[str, str] | None:
    """(machine, event) from the two name words; one word when they ran together (`L2CacheL2_Replacement`)."""
    if second:
        return first, second
    for machine in machines:
        if first.startswith(machine) and len(first) > len(machine):
            return machine, first[len(machine) :]
    return None


class ProfileBuilder:
    """One ROI's lines, built from its transitions' counts a chunk at a time; memory: one entry per line with traffic."""

    def __init__(self, rules: HotlineRules, protocol: ProtocolRules, topology: Topology) -> None:
        self.rules = rules
        self.protocol = protocol
        self.topology = topology
        self.known = (*protocol.machines, rules.sequencer_machine)
        self.lines: dict[int, LineTraffic] = {}
        # (version, names, state change) -> (machine, event, requests?, invalidations?, messages each): the rules, asked once
        self._meaning: dict[tuple[bytes, bytes, bytes, bytes], tuple[str, str, bool, bool, int] | None] = {}

    def _meaning_of(self, key: TransitionKey) -> tuple[str, str, bool, bool, int] | None:
        """What a transition counts for (None: nothing, e.g. a CPU access); UnreadableTransition for an unknown controller.

        The controller's version is part of what is asked: its role (CHI's
        Cache is an L1, an L2 or a home) decides what the same event means."""
        version, first, second, change, _line, _stall = key
        cached_key = (version, first, second, change)
        if cached_key in self._meaning:
            return self._meaning[cached_key]
        names = split_names(first.decode(errors="replace"), second.decode(errors="replace"), self.known)
        if names is None or names[0] not in self.known:
            shown = (first + b" " + second).strip().decode(errors="replace")
            raise UnreadableTransition(key, f"{shown!r} is no machine of {self.protocol.name} ({', '.join(self.known)}) followed by an event")
        machine, event = names
        meaning = None
        if machine != self.rules.sequencer_machine:
            try:
                role = self.topology.role(machine, int(version))
            except HotlinesError as exc:
                raise UnreadableTransition(key, str(exc)) from None
            state = change.decode(errors="replace").partition(STATE_MARK)[0]
            meaning = (
                machine,
                event,
                self.protocol.is_request(machine, role, event, state),
                self.protocol.is_invalidation(machine, role, event, state),
                self.protocol.home_messages(machine, role, event, state),
            )
            if not any(meaning[2:]):
                meaning = None
        self._meaning[cached_key] = meaning
        return meaning

    def add(self, counts: Counter[TransitionKey]) -> None:
        for key, count in counts.items():
            if key[5]:  # stalled: retried later, counted then
                continue
            meaning = self._meaning_of(key)
            if meaning is None:
                continue
            machine, _event, request, invalidation, messages = meaning
            line = int(key[4], HEX)
            traffic = self.lines.get(line)
            if traffic is None:
                traffic = self.lines[line] = LineTraffic(line)
            if request:
                traffic.requests += count
            if invalidation:
                traffic.invalidations += count
            if messages:
                traffic.home_messages += count * messages
                try:
                    crossing = self.topology.node(machine, int(key[0])) != self.topology.home_node(line)
                except HotlinesError as exc:
                    raise UnreadableTransition(key, str(exc)) from None
                if crossing:
                    traffic.crossings += count * messages

    def result(self) -> RoiProfile:
        return RoiProfile.of_lines(self.lines)


def roi_profile(counts: Counter[TransitionKey], rules: HotlineRules, protocol: ProtocolRules, topology: Topology) -> RoiProfile:
    """The lines of one ROI's counted transitions (UnreadableTransition for a controller the machine lacks)."""
    builder = ProfileBuilder(rules, protocol, topology)
    builder.add(counts)
    return builder.result()
