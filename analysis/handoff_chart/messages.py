"""A Ruby trace's transitions on one line, turned back into coherence messages.

ProtocolTrace prints one line per transition, at the controller that took
it (analysis/protocol_trace.py). An event raised by an arriving message is
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
from dataclasses import dataclass, field

from analysis.handoff_chart.protocol_rules import MessageRule, ProtocolRules
from analysis.protocol_trace import SEQUENCER, Event


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


def transitions(events: list[Event]) -> list[Transition]:
    out = []
    for order, event in enumerate(events):
        if event.machine == SEQUENCER:
            continue
        before, _, after = event.transition.partition(">")
        out.append(Transition(order, event.tick, Controller(event.machine, event.version), event.event, before, after, event.comment))
    return out


@dataclass
class _Send:
    transition: Transition
    paired: bool = False


@dataclass
class _Waiting:
    event: str
    woken: bool = False


class _Pairer:
    """The possible sends of each rule seen so far, and the pairing of an arrival with one of them.

    A transition sends at most one message of each kind (request, data,
    ack, ...): a Store in S sends one UPGRADE, which arrives as an UPGRADE
    or as a GETX, so once paired under one rule it is paired under both.
    """

    def __init__(self, rules: ProtocolRules) -> None:
        self.rules = rules
        self.sends: dict[int, list[_Send]] = defaultdict(list)

    def offer(self, transition: Transition) -> None:
        by_kind: dict[str, _Send] = {}
        for number, rule in enumerate(self.rules.messages):
            if transition.controller.machine in rule.senders and any(
                p.matches(transition.event, transition.before, transition.after) for p in rule.sent_on
            ):
                self.sends[number].append(by_kind.setdefault(rule.kind, _Send(transition)))

    def pair(self, rule: MessageRule, arrival: Transition) -> Transition | None:
        number = self.rules.messages.index(rule)
        named = rule.sender_named_by(arrival.comment)
        usable = [
            send for send in self.sends[number]
            if send.transition.controller != arrival.controller
            and (rule.pairing == "shared" or not send.paired)
            and named in (None, send.transition.controller.machine)
        ]  # fmt: skip
        if not usable:
            return None
        chosen = usable[0] if rule.pairing == "oldest" else usable[-1]
        chosen.paired = True
        return chosen.transition


def reconstruct(events: list[Event], rules: ProtocolRules) -> Reconstruction:
    """Every message on the line that arrived within the trace, in trace order."""
    result = Reconstruction()
    pairer = _Pairer(rules)
    waiting: dict[Controller, list[_Waiting]] = defaultdict(list)
    for transition in transitions(events):
        machine, event = transition.controller.machine, transition.event
        queue = waiting[transition.controller]
        waits = rules.waits_here(machine, event, transition.before, transition.after)
        if event in rules.cpu_request_events:
            result.cpu_transitions.append(transition)
        elif event in rules.waiting_events(machine) and any(w.woken for w in queue):
            woken = next(w for w in queue if w.woken)
            queue.remove(woken)
            if waits:
                queue.append(_Waiting(woken.event))
            result.handled_waiting.append(transition)
        elif event not in rules.internal_events:
            rule = rules.arrival_rule(machine, event)
            if rule is None:
                result.unknown.append(transition)
            else:
                send = pairer.pair(rule, transition)
                result.messages.append(Message(rule.label, rule.kind, transition.controller, transition, send, waits))
                if waits:
                    queue.append(_Waiting(event))
        if not waits and transition.before != transition.after:
            for entry in queue:
                entry.woken = True
        pairer.offer(transition)
    return result
