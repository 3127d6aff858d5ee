"""What each Ruby protocol's ProtocolTrace transitions count as: analysis/data/hotlines.toml, checked.

A transition is (machine, version, event, state, next state) on a line;
the rules say which transitions are coherence requests at the line's
home, which are invalidations a private cache received, and how many
messages between the printing controller and the line's home each one
stands for (the only messages whose two ends a transition names).

A rule may also name a controller role (config.json's, see
analysis/data/gem5_config.toml): CHI's one Cache machine is every cache
level and the home, told apart by version; and states a transition must
not come from (`not_from`: a request or snoop parked while its line is
busy prints a transition then, and another when it is served).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.hotlines.errors import HotlinesError
from lockstudy.files import read_toml, typed_field

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "hotlines.toml"


HOME_SELECTIONS = ("address_bits", "address_ranges")


@dataclass(frozen=True)
class TransitionSet:
    """Transitions of one machine (and role, when given) on these events, out of these states (None: any) but not those."""

    machine: str
    role: str | None
    events: frozenset[str]
    from_states: frozenset[str] | None
    not_from: frozenset[str]

    def matches(self, machine: str, role: str, event: str, state: str) -> bool:
        return (
            machine == self.machine
            and (self.role is None or role == self.role)
            and event in self.events
            and (self.from_states is None or state in self.from_states)
            and state not in self.not_from
        )


@dataclass(frozen=True)
class MessageRule:
    """`home` messages between the printing controller and the line's home, for these transitions."""

    transitions: TransitionSet
    home: int


@dataclass(frozen=True)
class ProtocolRules:
    name: str
    machines: tuple[str, ...]
    cache_machine: str
    cache_role: str | None  # the controllers that serve a CPU (sequencer version = CPU), checked against cpu_to_node
    home_machine: str
    home_role: str | None
    memory_machine: str
    home_select: str  # HOME_SELECTIONS
    home_select_bits_param: str | None  # address_bits: the cache controllers' parameter
    request_events: frozenset[str]
    request_waits: frozenset[tuple[str, str]]  # (state, event) the home sets aside for later
    invalidations: TransitionSet
    messages: tuple[MessageRule, ...]

    def is_request(self, machine: str, role: str, event: str, state: str) -> bool:
        return (
            machine == self.home_machine
            and (self.home_role is None or role == self.home_role)
            and event in self.request_events
            and (state, event) not in self.request_waits
        )

    def is_invalidation(self, machine: str, role: str, event: str, state: str) -> bool:
        return self.invalidations.matches(machine, role, event, state)

    def home_messages(self, machine: str, role: str, event: str, state: str) -> int:
        return sum(rule.home for rule in self.messages if rule.transitions.matches(machine, role, event, state))


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


def _optional_string(table: dict[str, Any], key: str, where: str) -> str | None:
    return typed_field(table, key, str, where, error=HotlinesError) if key in table else None


def _transitions(table: dict[str, Any], where: str, machines: tuple[str, ...]) -> TransitionSet:
    machine = typed_field(table, "machine", str, where, error=HotlinesError)
    if machine not in machines:
        raise HotlinesError(f"{where}.machine: {machine!r} is not one of machines {list(machines)}")
    return TransitionSet(
        machine=machine,
        role=_optional_string(table, "role", where),
        events=frozenset(_strings(table, "events", where)),
        from_states=frozenset(_strings(table, "from", where)) if "from" in table else None,
        not_from=frozenset(_strings(table, "not_from", where)) if "not_from" in table else frozenset(),
    )


def _protocol(name: str, table: dict[str, Any], where: str) -> ProtocolRules:
    machines = _strings(table, "machines", where)
    roles = {}
    for role in ("cache_machine", "home_machine", "memory_machine"):
        roles[role] = typed_field(table, role, str, where, error=HotlinesError)
        if roles[role] not in machines:
            raise HotlinesError(f"{where}.{role}: {roles[role]!r} is not one of machines {list(machines)}")
    home_select = typed_field(table, "home_select", str, where, error=HotlinesError)
    if home_select not in HOME_SELECTIONS:
        raise HotlinesError(f"{where}.home_select: {home_select!r} is not one of {list(HOME_SELECTIONS)}")
    bits_param = _optional_string(table, "home_select_bits_param", where)
    if home_select == HOME_SELECTIONS[0] and bits_param is None:
        raise HotlinesError(f"{where}.home_select_bits_param: missing (home_select = {home_select!r} needs it)")
    waits = set()
    for index, wait in enumerate(typed_field(table, "request_wait", list, where, default=[], error=HotlinesError)):
        at = f"{where}.request_wait[{index}]"
        waits |= {(state, event) for state in _strings(wait, "states", at) for event in _strings(wait, "events", at)}
    invalidations = typed_field(table, "invalidations", dict, where, error=HotlinesError)
    messages = []
    for index, rule in enumerate(typed_field(table, "message", list, where, error=HotlinesError)):
        at = f"{where}.message[{index}]"
        typed_field(rule, "why", str, at, error=HotlinesError)
        messages.append(MessageRule(_transitions(rule, at, machines), _count(rule, "home", at, 1)))
    return ProtocolRules(
        name=name,
        machines=machines,
        cache_machine=roles["cache_machine"],
        cache_role=_optional_string(table, "cache_role", where),
        home_machine=roles["home_machine"],
        home_role=_optional_string(table, "home_role", where),
        memory_machine=roles["memory_machine"],
        home_select=home_select,
        home_select_bits_param=bits_param,
        request_events=frozenset(_strings(table, "request_events", where)),
        request_waits=frozenset(waits),
        invalidations=_transitions(invalidations, f"{where}.invalidations", machines),
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
