"""What each Ruby protocol's ProtocolTrace transitions count as: analysis/data/hotlines.toml, checked.

A transition is (machine, version, event, state, next state) on a line;
the rules say which transitions are coherence requests at the line's
home, which are invalidations a private cache received, and how many
messages between the printing controller and the line's home each one
stands for (the only messages whose two ends a transition names).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.hotlines.errors import HotlinesError
from lockstudy.files import read_toml, typed_field

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "hotlines.toml"


@dataclass(frozen=True)
class MessageRule:
    """`home` messages between the printing controller and the line's home, for these transitions."""

    machine: str
    events: frozenset[str]
    from_states: frozenset[str] | None  # None: any state
    home: int

    def matches(self, machine: str, event: str, state: str) -> bool:
        return machine == self.machine and event in self.events and (self.from_states is None or state in self.from_states)


@dataclass(frozen=True)
class ProtocolRules:
    name: str
    machines: tuple[str, ...]
    cache_machine: str
    home_machine: str
    memory_machine: str
    home_select_bits_param: str
    request_events: frozenset[str]
    request_waits: frozenset[tuple[str, str]]  # (state, event) the home sets aside for later
    invalidation_machine: str
    invalidation_events: frozenset[str]
    messages: tuple[MessageRule, ...]

    def is_request(self, machine: str, event: str, state: str) -> bool:
        return machine == self.home_machine and event in self.request_events and (state, event) not in self.request_waits

    def is_invalidation(self, machine: str, event: str) -> bool:
        return machine == self.invalidation_machine and event in self.invalidation_events

    def home_messages(self, machine: str, event: str, state: str) -> int:
        return sum(rule.home for rule in self.messages if rule.matches(machine, event, state))


@dataclass(frozen=True)
class HotlineRules:
    source: str
    csv_top_lines: int
    report_top_lines: int
    sequencer_machine: str
    protocols: dict[str, ProtocolRules]

    def protocol(self, name: str | None, where: str) -> ProtocolRules:
        if name not in self.protocols:
            raise HotlinesError(f"{where}: Ruby protocol {name!r} has no hot-line rules in {self.source} (rules for: {', '.join(sorted(self.protocols))})")
        return self.protocols[name]


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = typed_field(table, key, list, where, error=HotlinesError)
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value:
            raise HotlinesError(f"{where}.{key}[{index}]: expected a non-empty string, found {value!r}")
    return tuple(values)


def _count(table: dict[str, Any], key: str, where: str, minimum: int) -> int:
    value = typed_field(table, key, int, where, error=HotlinesError)
    if value < minimum:
        raise HotlinesError(f"{where}.{key}: {value} is below {minimum}")
    return int(value)


def _protocol(name: str, table: dict[str, Any], where: str) -> ProtocolRules:
    machines = _strings(table, "machines", where)
    roles = {}
    for role in ("cache_machine", "home_machine", "memory_machine"):
        roles[role] = typed_field(table, role, str, where, error=HotlinesError)
        if roles[role] not in machines:
            raise HotlinesError(f"{where}.{role}: {roles[role]!r} is not one of machines {list(machines)}")
    waits = set()
    for index, wait in enumerate(typed_field(table, "request_wait", list, where, default=[], error=HotlinesError)):
        at = f"{where}.request_wait[{index}]"
        waits |= {(state, event) for state in _strings(wait, "states", at) for event in _strings(wait, "events", at)}
    invalidations = typed_field(table, "invalidations", dict, where, error=HotlinesError)
    messages = []
    for index, rule in enumerate(typed_field(table, "message", list, where, error=HotlinesError)):
        at = f"{where}.message[{index}]"
        machine = typed_field(rule, "machine", str, at, error=HotlinesError)
        if machine not in machines:
            raise HotlinesError(f"{at}.machine: {machine!r} is not one of machines {list(machines)}")
        typed_field(rule, "why", str, at, error=HotlinesError)
        states = frozenset(_strings(rule, "from", at)) if "from" in rule else None
        messages.append(MessageRule(machine, frozenset(_strings(rule, "events", at)), states, _count(rule, "home", at, 1)))
    return ProtocolRules(
        name=name,
        machines=machines,
        cache_machine=roles["cache_machine"],
        home_machine=roles["home_machine"],
        memory_machine=roles["memory_machine"],
        home_select_bits_param=typed_field(table, "home_select_bits_param", str, where, error=HotlinesError),
        request_events=frozenset(_strings(table, "request_events", where)),
        request_waits=frozenset(waits),
        invalidation_machine=typed_field(invalidations, "machine", str, f"{where}.invalidations", error=HotlinesError),
        invalidation_events=frozenset(_strings(invalidations, "events", f"{where}.invalidations")),
        messages=tuple(messages),
    )


@lru_cache(maxsize=None)
def load_rules(path: Path = RULES_FILE) -> HotlineRules:
    data = read_toml(path, HotlinesError)
    where = str(path)
    protocols = typed_field(data, "protocol", dict, where, error=HotlinesError)
    return HotlineRules(
        source=where,
        csv_top_lines=_count(data, "csv_top_lines", where, 1),
        report_top_lines=_count(data, "report_top_lines", where, 1),
        sequencer_machine=typed_field(data, "sequencer_machine", str, where, error=HotlinesError),
        protocols={name: _protocol(name, typed_field(protocols, name, dict, f"{where}: [protocol]", error=HotlinesError), f"{where}: [protocol.{name}]") for name in protocols},
    )
