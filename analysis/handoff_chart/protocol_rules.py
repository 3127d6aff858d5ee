"""The rules that turn a Ruby protocol's transitions back into messages (data/<protocol>.toml).

A ProtocolTrace line is printed by the controller that took a transition
(analysis/traffic/protocol_trace.py): it says which event arrived and how the
line's state changed there, not who sent the message. Each rule names
the receiving controller's events that are one message's arrival, and
the transitions of the sending controllers whose actions enqueue it
(read from the protocol's .sm files; the data file cites them).

Controllers are named in the rules by their SLICC machine (MESI_Two_Level:
one machine per level) or, with `controllers_by = "role"`, by their role
from config.json (analysis/gem5_output/config_reader.py: CHI's one machine `Cache` is
every level). A rule's senders may say how the sender stands to the
receiver (RELATIONS); a data message leaving in chunks (CHI) is sent by
the data-chunk transitions that follow the transition that starts it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.handoff_chart.errors import HandoffInputError
from lockstudy.files import read_toml

DATA_DIR = Path(__file__).resolve().parent / "data"
PAIRINGS = ("oldest", "latest", "shared")
ANY_STATE = "*"
NAMED_BY = ("machine", "role")
# How a sender stands to the receiver (messages.py checks them with the run's config.json):
#   any     = no constraint but not the receiver itself;
#   cluster = both are private caches of the same CPU;
#   home    = one of the two is the line's home (the home whose address ranges hold it);
#   memory  = one of the two is the line's memory controller.
RELATIONS = ("any", "cluster", "home", "memory")
LABEL_EVENT = "{event}"  # in a label: the arrival's event name


class ProtocolRulesError(ValueError):
    """A protocol rules file that is malformed: a bug of ours, named with file and field."""


@dataclass(frozen=True)
class SendPattern:
    """'Event' or 'Event:From>To' with '*' for any state: a transition that sends a message."""

    event: str
    before: str = ANY_STATE
    after: str = ANY_STATE

    @classmethod
    def parse(cls, text: str, where: str) -> "SendPattern":
        event, _, states = text.partition(":")
        if not states:
            return cls(event)
        before, arrow, after = states.partition(">")
        if not event or not arrow or not before or not after:
            raise ProtocolRulesError(f"{where}: {text!r} is not Event or Event:From>To")
        return cls(event, before, after)

    def matches(self, event: str, before: str, after: str) -> bool:
        return (
            event == self.event
            and self.before in (ANY_STATE, before)
            and self.after in (ANY_STATE, after)
        )  # fmt: skip


@dataclass(frozen=True)
class Sender:
    """A controller kind that sends the message, and how it must stand to the receiver."""

    name: str
    relation: str = "any"


@dataclass(frozen=True)
class MessageRule:
    label: str
    kind: str
    at: tuple[str, ...]
    events: tuple[str, ...]
    senders: tuple[Sender, ...]
    sent_on: tuple[SendPattern, ...]
    pairing: str
    other_instance: bool
    comment_senders: tuple[tuple[re.Pattern[str], str], ...] = ()
    chunked: bool = False  # sent as data chunks: each chunk transition after a `sent_on` one is one message
    after_allocation: bool = False  # arrives through an allocation event first (Allocation)

    def label_for(self, event: str) -> str:
        return self.label.replace(LABEL_EVENT, event)

    def sender_kinds(self) -> frozenset[str]:
        return frozenset(sender.name for sender in self.senders)

    def relations_of(self, kind: str) -> tuple[str, ...]:
        return tuple(sender.relation for sender in self.senders if sender.name == kind)

    def sender_named_by(self, comment: str) -> str | None:
        """The sending machine the arrival's comment names, if a `comment_senders` pattern matches it."""
        return next((machine for pattern, machine in self.comment_senders if pattern.search(comment)), None)


@dataclass(frozen=True)
class WaitRule:
    machine: str
    states: frozenset[str]
    events: frozenset[str]


@dataclass(frozen=True)
class Allocation:
    """CHI: a message is first given a TBE (an allocation event), then raises its own event in the same cycle.

    A message's event printed right after its controller's allocation line
    is its arrival; printed without one, it is a stalled message raised
    again after a wake-up (no new message). Raised in a `stall_states`
    state and left there, the message stalls (it waits).
    """

    events: frozenset[str]
    stall_states: frozenset[str]


@dataclass(frozen=True)
class ProtocolRules:
    protocol: str
    cpu_cache: str
    home: str
    memory: str
    cpu_request_events: frozenset[str]
    internal_events: frozenset[str]
    waits: tuple[WaitRule, ...]
    messages: tuple[MessageRule, ...]
    named_by: str = "machine"
    lane_kinds: tuple[str, ...] = ()  # the kinds that get a lane, in lane order within a node
    touching_only: frozenset[str] = frozenset()  # lane kinds shown only for controllers with a transition on the line
    data_chunk_event: str | None = None
    allocation: Allocation | None = None
    lane_names: dict[str, str] = field(default_factory=dict)  # kind -> "CPU{cpu} {name}" ({machine} {version} {cpu} {node} {name})

    def arrival_rule(self, kind: str, event: str) -> MessageRule | None:
        """The message whose arrival at a controller of `kind` raises `event`; None for the CPU's own and internal events."""
        return next(iter(self.arrival_rules(kind, event)), None)

    def arrival_rules(self, kind: str, event: str) -> list[MessageRule]:
        """Every rule whose arrival this is, in file order: the pairing tries them until one finds a send."""
        return [rule for rule in self.messages if kind in rule.at and event in rule.events]

    def waits_here(self, machine: str, event: str, before: str, after: str) -> bool:
        """A request that arrived in a state where it waits (printed with its state unchanged)."""
        return before == after and any(
            wait.machine == machine and before in wait.states and event in wait.events for wait in self.waits
        )

    def waiting_events(self, machine: str) -> frozenset[str]:
        return frozenset(event for wait in self.waits if wait.machine == machine for event in wait.events)


def _strings(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise ProtocolRulesError(f"{where}.{key}: {value!r} is not a name or a list of names")
    return tuple(value)


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolRulesError(f"{where}.{key}: {value!r} is not a name")
    return value


def _senders(entry: dict[str, Any], where: str) -> tuple[Sender, ...]:
    """`from` (names, any relation) or `senders` (tables of `from` and `relation`)."""
    if "senders" not in entry:
        return tuple(Sender(name) for name in _strings(entry, "from", where))
    items = entry["senders"]
    if not isinstance(items, list) or not items:
        raise ProtocolRulesError(f"{where}.senders: {items!r} is not a list of tables")
    out = []
    for n, item in enumerate(items):
        here = f"{where}.senders[{n}]"
        if not isinstance(item, dict):
            raise ProtocolRulesError(f"{here}: {item!r} is not a table")
        relation = item.get("relation", "any")
        if relation not in RELATIONS:
            raise ProtocolRulesError(f"{here}.relation: {relation!r} is not one of {RELATIONS}")
        out.append(Sender(_text(item, "from", here), relation))
    return tuple(out)


def _flag(entry: dict[str, Any], key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise ProtocolRulesError(f"{where}.{key}: {value!r} is not true or false")
    return value


def _message(entry: dict[str, Any], where: str) -> MessageRule:
    pairing = _text(entry, "pairing", where)
    if pairing not in PAIRINGS:
        raise ProtocolRulesError(f"{where}.pairing: {pairing!r} is not one of {PAIRINGS}")
    other = _flag(entry, "other_instance", where)
    comment_senders = []
    for n, item in enumerate(entry.get("comment_senders", [])):
        here = f"{where}.comment_senders[{n}]"
        if not isinstance(item, dict):
            raise ProtocolRulesError(f"{here}: not a table")
        try:
            pattern = re.compile(_text(item, "pattern", here))
        except re.error as exc:
            raise ProtocolRulesError(f"{here}.pattern: {exc}") from None
        comment_senders.append((pattern, _text(item, "from", here)))
    return MessageRule(
        label=_text(entry, "label", where),
        kind=_text(entry, "kind", where),
        at=_strings(entry, "at", where),
        events=_strings(entry, "events", where),
        senders=_senders(entry, where),
        sent_on=tuple(SendPattern.parse(text, f"{where}.sent_on") for text in _strings(entry, "sent_on", where)),
        pairing=pairing,
        other_instance=other,
        comment_senders=tuple(comment_senders),
        chunked=_flag(entry, "chunked", where),
        after_allocation=_flag(entry, "after_allocation", where),
    )


def _allocation(data: dict[str, Any], where: str) -> Allocation | None:
    entry = data.get("allocation")
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise ProtocolRulesError(f"{where}: allocation: {entry!r} is not a table")
    return Allocation(frozenset(_strings(entry, "events", f"{where}: allocation")),
                      frozenset(_strings(entry, "stall_states", f"{where}: allocation")))  # fmt: skip


def _lane_names(data: dict[str, Any], where: str) -> dict[str, str]:
    names = data.get("lane_names", {})
    if not isinstance(names, dict) or not all(isinstance(v, str) and v for v in names.values()):
        raise ProtocolRulesError(f"{where}: lane_names: {names!r} is not a table of kind = \"name pattern\"")
    return dict(names)


def rules_file(protocol: str) -> Path:
    return DATA_DIR / f"{protocol}.toml"


def known_protocols() -> list[str]:
    return sorted(path.stem for path in DATA_DIR.glob("*.toml") if path.stem != "layout")


@lru_cache(maxsize=None)
def load_rules(protocol: str) -> ProtocolRules:
    """The rules of `protocol`; a protocol without a rules file is bad input (the chart cannot be drawn)."""
    path = rules_file(protocol)
    if not path.is_file():
        raise HandoffInputError(
            f"no message rules for the Ruby protocol {protocol} (analysis/handoff_chart/data/; known: {', '.join(known_protocols())})"
        )
    data = read_toml(path, ProtocolRulesError)
    where = str(path)
    waits = tuple(
        WaitRule(_text(entry, "machine", f"{where}: waits[{n}]"),
                 frozenset(_strings(entry, "states", f"{where}: waits[{n}]")),
                 frozenset(_strings(entry, "events", f"{where}: waits[{n}]")))
        for n, entry in enumerate(data.get("waits", []))
    )  # fmt: skip
    messages = tuple(_message(entry, f"{where}: message[{n}]") for n, entry in enumerate(data.get("message", [])))
    if not messages:
        raise ProtocolRulesError(f"{where}: no [[message]] rules")
    named_by = data.get("controllers_by", NAMED_BY[0])
    if named_by not in NAMED_BY:
        raise ProtocolRulesError(f"{where}: controllers_by: {named_by!r} is not one of {NAMED_BY}")
    chunk = data.get("data_chunk_event")
    if chunk is not None and not (isinstance(chunk, str) and chunk):
        raise ProtocolRulesError(f"{where}: data_chunk_event: {chunk!r} is not an event name")
    if chunk is None and any(rule.chunked for rule in messages):
        raise ProtocolRulesError(f"{where}: chunked messages but no data_chunk_event")
    return ProtocolRules(
        protocol=_text(data, "protocol", where),
        cpu_cache=_text(data, "cpu_cache", where),
        home=_text(data, "home", where),
        memory=_text(data, "memory", where),
        cpu_request_events=frozenset(_strings(data, "cpu_request_events", where)),
        internal_events=frozenset(_strings(data, "internal_events", where)),
        waits=waits,
        messages=messages,
        named_by=named_by,
        lane_kinds=_strings(data, "lanes", where) if "lanes" in data else (),
        data_chunk_event=chunk,
        allocation=_allocation(data, where),
        lane_names=_lane_names(data, where),
        touching_only=frozenset(_strings(data, "touching_only", where)) if "touching_only" in data else frozenset(),
    )
