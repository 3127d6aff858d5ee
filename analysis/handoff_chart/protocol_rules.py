"""The rules that turn a Ruby protocol's transitions back into messages (data/<protocol>.toml).

A ProtocolTrace line is printed by the controller that took a transition
(analysis/protocol_trace.py): it says which event arrived and how the
line's state changed there, not who sent the message. Each rule names
the receiving controller's events that are one message's arrival, and
the transitions of the sending controllers whose actions enqueue it
(read from the protocol's .sm files; the data file cites them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.handoff_chart.errors import HandoffInputError
from lockstudy.files import read_toml

DATA_DIR = Path(__file__).resolve().parent / "data"
PAIRINGS = ("oldest", "latest", "shared")
ANY_STATE = "*"


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
class MessageRule:
    label: str
    kind: str
    at: str
    events: tuple[str, ...]
    senders: tuple[str, ...]
    sent_on: tuple[SendPattern, ...]
    pairing: str
    other_instance: bool
    comment_senders: tuple[tuple[re.Pattern[str], str], ...] = ()

    def sender_named_by(self, comment: str) -> str | None:
        """The sending machine the arrival's comment names, if a `comment_senders` pattern matches it."""
        return next((machine for pattern, machine in self.comment_senders if pattern.search(comment)), None)


@dataclass(frozen=True)
class WaitRule:
    machine: str
    states: frozenset[str]
    events: frozenset[str]


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

    def arrival_rule(self, machine: str, event: str) -> MessageRule | None:
        """The message whose arrival at `machine` raises `event`; None for the CPU's own and internal events."""
        return next((rule for rule in self.messages if rule.at == machine and event in rule.events), None)

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


def _message(entry: dict[str, Any], where: str) -> MessageRule:
    pairing = _text(entry, "pairing", where)
    if pairing not in PAIRINGS:
        raise ProtocolRulesError(f"{where}.pairing: {pairing!r} is not one of {PAIRINGS}")
    other = entry.get("other_instance", False)
    if not isinstance(other, bool):
        raise ProtocolRulesError(f"{where}.other_instance: {other!r} is not true or false")
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
        at=_text(entry, "at", where),
        events=_strings(entry, "events", where),
        senders=_strings(entry, "from", where),
        sent_on=tuple(SendPattern.parse(text, f"{where}.sent_on") for text in _strings(entry, "sent_on", where)),
        pairing=pairing,
        other_instance=other,
        comment_senders=tuple(comment_senders),
    )


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
    return ProtocolRules(
        protocol=_text(data, "protocol", where),
        cpu_cache=_text(data, "cpu_cache", where),
        home=_text(data, "home", where),
        memory=_text(data, "memory", where),
        cpu_request_events=frozenset(_strings(data, "cpu_request_events", where)),
        internal_events=frozenset(_strings(data, "internal_events", where)),
        waits=waits,
        messages=messages,
    )
