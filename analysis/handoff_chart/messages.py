"""A Ruby trace's transitions on one line, turned back into coherence messages.

ProtocolTrace prints one line per transition, at the controller that took
it (analysis/traffic/protocol_trace.py). An event raised by an arriving message is
that message's arrival: its tick, the receiver and the line's state
change there are printed. The sender is not, so it is found with the
protocol's rules (protocol_rules.py): among the earlier transitions that
send this message (the senders' events and states the .sm files give),
the rule's pairing picks one. That send's tick and state change are the
arrow's other end. What cannot be paired (the send happened before the
trace's first line) keeps no sender and is said so on the chart.

A request that arrives while the home bank is busy with the line waits
(zz_stallAndWait): its first line is its arrival, and the line on which
the bank handles it after waking its waiters is no new message; the
waiting requests are taken in order of arrival (an UPGRADE from a cache
that lost its copy meanwhile is handled as a GETX: any waiting request
matches).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Protocol

from analysis.handoff_chart.protocol_rules import MessageRule, ProtocolRules
from analysis.traffic.protocol_trace import SEQUENCER, Event


@dataclass(frozen=True)
class Controller:
    machine: str
    version: int


@dataclass(frozen=True)
class Transition:
    """One controller line of the trace: `event` took the line from `before` to `after` at `tick`."""

    order: int  # position among the line's trace lines: breaks ties of equal ticks
    tick: int
    controller: Controller
    event: str
    before: str
    after: str
    comment: str = ""

    @property
    def states(self) -> str:
        """'S>I'; empty for a controller that has no state for the line (a bus, memory)."""
        return f"{self.before}>{self.after}" if self.before or self.after else ""


@dataclass(frozen=True)
class Message:
    label: str
    kind: str
    receiver: Controller
    arrival: Transition
    send: Transition | None
    waited: bool = False  # arrived while the bank was busy and waited

    @property
    def sender(self) -> Controller | None:
        return self.send.controller if self.send else None


@dataclass
class Reconstruction:
    """Messages in order of arrival, and the transitions that are no message's arrival."""

    messages: list[Message] = field(default_factory=list)
    cpu_transitions: list[Transition] = field(default_factory=list)  # raised by the CPU's own requests
    handled_waiting: list[Transition] = field(default_factory=list)  # a waiting request handled at last
    unknown: list[Transition] = field(default_factory=list)  # events no rule knows (a rules file to extend)
    stalled_again: list[Transition] = field(default_factory=list)  # a stalled message raised again, stalling again


def transitions(events: list[Event]) -> list[Transition]:
    out = []
    for order, event in enumerate(events):
        if event.machine == SEQUENCER:
            continue
        before, _, after = event.transition.partition(">")
        out.append(Transition(order, event.tick, Controller(event.machine, event.version), event.event, before, after, event.comment))
    return out


class Wiring(Protocol):
    """What the pairing needs to know of the run's controllers (line_wiring.LineWiring)."""

    def kind(self, controller: Controller) -> str: ...

    def related(self, relation: str, sender: Controller, receiver: Controller) -> bool: ...

    def in_time(self, send_tick: int, sender: Controller, receiver: Controller, arrival_tick: int) -> bool: ...


class ByMachine:
    """No config.json facts: controllers are named by their machine, and any sender may send."""

    def kind(self, controller: Controller) -> str:
        return controller.machine

    def related(self, relation: str, sender: Controller, receiver: Controller) -> bool:
        return sender != receiver

    def in_time(self, send_tick: int, sender: Controller, receiver: Controller, arrival_tick: int) -> bool:
        return True


@dataclass
class _DataSend:
    """A data message leaving in chunks: the chunk transitions that followed the transition that started it."""

    chunks: list[Transition] = field(default_factory=list)


@dataclass
class _Send:
    transition: Transition
    paired: bool = False
    data: _DataSend | None = None  # the data message this transition is a chunk of


@dataclass
class _Waiting:
    event: str
    woken: bool = False


class _Pairer:
    """The possible sends of each rule seen so far, and the pairing of an arrival with one of them.

    A transition sends at most one message of each kind (request, data,
    ack, ...): a Store in S sends one UPGRADE, which arrives as an UPGRADE
    or as a GETX, so once paired under one rule it is paired under both.
    A chunked rule's matching transition sends nothing itself: each chunk
    transition of the same controller after it is one message of it.
    Among the unpaired sends of the rule whose sender stands to the
    receiver as the rule says and was sent early enough to have arrived,
    `oldest` takes the first, `latest` and `shared` the last.
    """

    def __init__(self, rules: ProtocolRules, wiring: Wiring) -> None:
        self.rules = rules
        self.wiring = wiring
        self.sends: dict[int, list[_Send]] = defaultdict(list)
        self.pending_data: dict[Controller, tuple[list[int], _DataSend]] = {}

    def offer(self, transition: Transition) -> None:
        controller = transition.controller
        if transition.event == self.rules.data_chunk_event:
            numbers, data = self.pending_data.get(controller, ([], _DataSend()))
            data.chunks.append(transition)
            by_kind: dict[str, _Send] = {}
            for number in numbers:
                self.sends[number].append(by_kind.setdefault(self.rules.messages[number].kind, _Send(transition, data=data)))
            return
        kind = self.wiring.kind(controller)
        by_kind = {}
        chunked: list[int] = []
        for number, rule in enumerate(self.rules.messages):
            if kind in rule.sender_kinds() and any(p.matches(transition.event, transition.before, transition.after) for p in rule.sent_on):
                if rule.chunked:
                    chunked.append(number)
                else:
                    self.sends[number].append(by_kind.setdefault(rule.kind, _Send(transition)))
        if chunked:
            self.pending_data[controller] = (chunked, _DataSend())

    def pair(self, rule: MessageRule, arrival: Transition) -> _Send | None:
        number = self.rules.messages.index(rule)
        named = rule.sender_named_by(arrival.comment)
        receiver = arrival.controller
        if rule.pairing != "shared":
            self.sends[number] = [send for send in self.sends[number] if not send.paired]  # paired ones are spent
        candidates = self.sends[number] if rule.pairing == "oldest" else reversed(self.sends[number])
        chosen = next((
            send for send in candidates
            if send.transition.controller != receiver
            and (rule.pairing == "shared" or not send.paired)
            and named in (None, send.transition.controller.machine)
            and self._may_have_sent(rule, send.transition, arrival)
        ), None)  # fmt: skip
        if chosen is not None:
            chosen.paired = True
        return chosen

    def _may_have_sent(self, rule: MessageRule, send: Transition, arrival: Transition) -> bool:
        sender, receiver = send.controller, arrival.controller
        relations = rule.relations_of(self.wiring.kind(sender))
        return any(self.wiring.related(r, sender, receiver) for r in relations) and self.wiring.in_time(send.tick, sender, receiver, arrival.tick)


def _chunk_label(label: str, send: _Send | None) -> str:
    if send is None or send.data is None:
        return label
    return f"{label} {send.data.chunks.index(send.transition) + 1}/{len(send.data.chunks)}"


def _pair_first(pairer: _Pairer, rules: list[MessageRule], arrival: Transition) -> tuple[MessageRule, _Send | None]:
    """The first rule that finds the arrival a send, with it; else the first rule, without one."""
    for rule in rules:
        send = pairer.pair(rule, arrival)
        if send is not None:
            return rule, send
    return rules[0], None


def reconstruct(events: list[Event], rules: ProtocolRules, wiring: Wiring | None = None) -> Reconstruction:
    """Every message on the line that arrived within the trace, in trace order."""
    wiring = wiring or ByMachine()
    result = Reconstruction()
    pairer = _Pairer(rules, wiring)
    waiting: dict[Controller, list[_Waiting]] = defaultdict(list)
    previous: dict[Controller, Transition] = {}
    sent: list[_Send | None] = []
    for transition in transitions(events):
        kind, event = wiring.kind(transition.controller), transition.event
        queue = waiting[transition.controller]
        waits = rules.waits_here(kind, event, transition.before, transition.after)
        rule = None if event in rules.cpu_request_events or event in rules.internal_events else rules.arrival_rule(kind, event)
        if event in rules.cpu_request_events:
            result.cpu_transitions.append(transition)
        elif rule is not None and rule.after_allocation and rules.allocation is not None:
            before = previous.get(transition.controller)
            if before is not None and before.event in rules.allocation.events and before.tick == transition.tick:
                rule, send = _pair_first(pairer, rules.arrival_rules(kind, event), transition)
                stalls = transition.before == transition.after and transition.before in rules.allocation.stall_states
                result.messages.append(Message(rule.label_for(event), rule.kind, transition.controller, transition, send.transition if send else None, stalls))
                sent.append(send)
            elif transition.before != transition.after:
                result.handled_waiting.append(transition)  # raised again after a wake-up, and handled
            else:
                result.stalled_again.append(transition)
        elif event in rules.waiting_events(kind) and any(w.woken for w in queue):
            woken = next(w for w in queue if w.woken)
            queue.remove(woken)
            if waits:
                queue.append(_Waiting(woken.event))
            result.handled_waiting.append(transition)
        elif event not in rules.internal_events:
            if rule is None:
                result.unknown.append(transition)
            else:
                rule, send = _pair_first(pairer, rules.arrival_rules(kind, event), transition)
                result.messages.append(Message(rule.label_for(event), rule.kind, transition.controller, transition, send.transition if send else None, waits))
                sent.append(send)
                if waits:
                    queue.append(_Waiting(event))
        if not waits and transition.before != transition.after:
            for entry in queue:
                entry.woken = True
        pairer.offer(transition)
        previous[transition.controller] = transition
    result.messages = [replace(m, label=_chunk_label(m.label, send)) for m, send in zip(result.messages, sent)]
    return result
