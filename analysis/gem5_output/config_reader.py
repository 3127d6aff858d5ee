"""The simulated machine's facts, read from gem5's config.json.

The metrics need what was really simulated, not what a campaign asked
for: CPU count, classic or Ruby caches (and which protocol), cache sizes
and line size, the CPU clock, memory ranges, and for Ruby every
controller: its machine and version (as ProtocolTrace and the per-event
stats name it), its role in the protocol (a CHI Cache controller is an
L1, a private L2, a home node or a DMA requester), the CPU it serves and
its node (analysis/gem5_output/ruby_wiring.py). The recognition rules are data:
analysis/data/gem5_config.toml (with their gem5 sources).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from analysis.gem5_output.ruby_wiring import WiringError, read_wiring

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "gem5_config.toml"
BOOL_TEXTS = ("true", "false")  # a Bool param's config_value() is a Python bool (params.py:1079-1080)
CONTROLLER_SUFFIX = "_Controller"  # a SLICC machine M is the SimObject type M_Controller (StateMachine.py)


class ConfigError(ValueError):
    """A config.json that does not describe a machine we can read."""


@dataclass(frozen=True)
class CacheFacts:
    path: str
    size_bytes: int
    assoc: int
    kind: str  # "classic" or "ruby"


@dataclass(frozen=True)
class ControllerFacts:
    """One Ruby controller: `machine` and `version` as ProtocolTrace prints them, its role, CPU and node."""

    path: str
    machine: str  # the SLICC machine: the type without CONTROLLER_SUFFIX
    version: int
    role: str  # gem5_config.toml [[ruby.protocols.<protocol>.role]]
    cpu: int | None  # the version of its sequencer (the CPU it serves), if it has one
    node: int | None  # from the network wiring; None when the wiring does not tell
    addr_ranges: tuple[tuple[int, int], ...]
    # The CPU whose private caches it is one of: its sequencer's CPU, or for a cache
    # no sequencer drives, the one CPU of the caches whose requests it receives
    # (gem5_config.toml `downstream_param`); None for a home, memory or DMA.
    cluster: int | None = None


@dataclass(frozen=True)
class MachineFacts:
    source: str
    num_cpus: int
    cpu_types: tuple[str, ...]
    cpu_clock_hz: float | None
    hierarchy: str  # "classic" or "ruby"
    ruby_protocol: str | None
    line_bytes: int | None
    caches: tuple[CacheFacts, ...]
    memory_ranges: tuple[tuple[int, int], ...]
    ticks_per_second: int
    objects_by_type: dict[str, int] = field(default_factory=dict)
    controllers: tuple[ControllerFacts, ...] = ()
    inter_node_links: frozenset[str] = frozenset()  # SimpleIntLink paths between switches of different nodes
    wiring_note: str = ""  # why controllers have no node, when they have none

    def versions_of(self, role: str) -> frozenset[int]:
        """The versions of the controllers of one role (the elements of their per-event stat vectors)."""
        return frozenset(c.version for c in self.controllers if c.role == role)

    def summary(self) -> dict[str, Any]:
        return {
            "num_cpus": self.num_cpus,
            "cpu_types": list(self.cpu_types),
            "cpu_clock_hz": self.cpu_clock_hz,
            "hierarchy": self.hierarchy,
            "ruby_protocol": self.ruby_protocol,
            "line_bytes": self.line_bytes,
            "caches": [c.__dict__ for c in self.caches],
            "memory_ranges": [[hex(a), hex(b)] for a, b in self.memory_ranges],
            "controllers": [[c.path, c.machine, c.version, c.role, c.cpu, c.node] for c in self.controllers],
        }


@lru_cache(maxsize=None)
def _rules(path: Path = DATA_FILE) -> dict[str, Any]:
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def sim_objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every SimObject dict in the tree (children may be dicts or lists of dicts)."""
    if isinstance(node, list):
        for item in node:
            yield from sim_objects(item)
    elif isinstance(node, dict):
        if "type" in node and "path" in node:
            yield node
        for value in node.values():
            if isinstance(value, (dict, list)):
                yield from sim_objects(value)


def _as_int(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a number, found {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    raise ConfigError(f"{where}: expected a number, found {value!r}")


def _parse_range(text: Any, where: str) -> tuple[int, int]:
    parts = str(text).split(":")
    if len(parts) < 2:
        raise ConfigError(f"{where}: address range {text!r} is not start:end")
    return _as_int(parts[0], where), _as_int(parts[1], where)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == BOOL_TEXTS[0])


def _protocol_of(objects: list[dict[str, Any]], counts: dict[str, int], ruby_rules: dict[str, Any], source: str) -> str:
    """The one protocol whose controller types are all present and whose signature controller has its parameters."""
    found = []
    for name, signature in ruby_rules["protocols"].items():
        types_present = all(counts.get(t) for t in signature["controller_types"])
        marked = [o for o in objects if o["type"] == signature["signature_controller_type"]]
        if types_present and marked and all(p in marked[0] for p in signature["signature_params"]):
            found.append(name)
    if len(found) != 1:
        controllers = sorted(t for t in counts if t.endswith(CONTROLLER_SUFFIX))
        what = "is not recognised" if not found else f"matches several ({found})"
        raise ConfigError(f"{source}: a Ruby system whose protocol {what} (controllers {controllers}); add it to {DATA_FILE}")
    return found[0]


def _role_of(obj: dict[str, Any], roles: list[dict[str, Any]], source: str) -> str:
    """The first role of the protocol whose controller type and parameter values the controller has."""
    for role in roles:
        if obj["type"] == role["type"] and all(_same_value(obj.get(k), v) for k, v in role.get("when", {}).items()):
            return str(role["name"])
    raise ConfigError(f"{source}: {obj['path']}: a {obj['type']} that no role of {DATA_FILE} describes")


def _same_value(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, bool):
        return isinstance(found, (bool, str)) and str(found).lower() in BOOL_TEXTS and _truthy(found) == wanted
    return found == wanted


def _sequencer_version(obj: dict[str, Any], child: str, source: str) -> int | None:
    sequencer = obj.get(child)
    if isinstance(sequencer, dict) and "version" in sequencer:
        return _as_int(sequencer["version"], f"{source}: {sequencer.get('path')}.version")
    return None


def ruby_controllers(objects: list[dict[str, Any]], protocol: str, source: str) -> tuple[tuple[ControllerFacts, ...], frozenset[str], str]:
    """(every controller of the protocol with its role, CPU and node; the inter-node links; why nodes are missing, if they are)."""
    rules = _rules()["ruby"]
    protocol_rules = rules["protocols"][protocol]
    roles = protocol_rules["role"]
    found = [o for o in objects if str(o["type"]).endswith(CONTROLLER_SUFFIX) and "version" in o]
    memory_side = [o["path"] for o in found if o["type"] in protocol_rules["memory_side_types"]]
    note = ""
    try:
        wiring = read_wiring(objects, [o["path"] for o in found], memory_side, source)
        nodes, crossing = wiring.node_of, wiring.inter_node_links
    except WiringError as exc:
        nodes, crossing, note = {}, frozenset(), str(exc)
    controllers = []
    for obj in found:
        where = f"{source}: {obj['path']}"
        ranges = tuple(_parse_range(r, f"{where}.addr_ranges") for r in obj.get("addr_ranges", []))
        controllers.append(
            ControllerFacts(
                path=obj["path"],
                machine=str(obj["type"])[: -len(CONTROLLER_SUFFIX)],
                version=_as_int(obj["version"], f"{where}.version"),
                role=_role_of(obj, roles, source),
                cpu=_sequencer_version(obj, rules["sequencer_child"], source),
                node=nodes.get(obj["path"]),
                addr_ranges=ranges,
            )
        )
    controllers = _with_clusters(controllers, found, rules["downstream_param"])
    return tuple(sorted(controllers, key=lambda c: (c.machine, c.version))), crossing, note


def _with_clusters(controllers: list[ControllerFacts], objects: list[dict[str, Any]], downstream_param: str) -> list[ControllerFacts]:
    """Each controller with its cluster: its own CPU, else the one CPU of the CPU caches that send to it."""
    cpu_of = {c.path: c.cpu for c in controllers}
    senders_cpus: dict[str, set[int]] = {}
    for obj in objects:
        cpu = cpu_of.get(obj["path"])
        targets = obj.get(downstream_param)
        if cpu is None or not isinstance(targets, list):
            continue
        for target in targets:
            if isinstance(target, str):
                senders_cpus.setdefault(target, set()).add(cpu)
    out = []
    for c in controllers:
        cpus = senders_cpus.get(c.path, set())
        cluster = c.cpu if c.cpu is not None else (next(iter(cpus)) if len(cpus) == 1 else None)
        out.append(replace(c, cluster=cluster))
    return out


def read_config(path: Path, ticks_per_second: int | None = None) -> MachineFacts:
    path = Path(path)
    try:
        tree = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (gem5 writes config.json next to stats.txt)") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    return machine_facts(tree, str(path), ticks_per_second)


def machine_facts(tree: Any, source: str, ticks_per_second: int | None = None) -> MachineFacts:
    rules = _rules()
    tps = ticks_per_second or int(rules["default_ticks_per_second"])
    objects = list(sim_objects(tree))
    if not objects:
        raise ConfigError(f"{source}: no SimObjects (expected gem5's config.json: dicts with type and path)")
    by_path = {o["path"]: o for o in objects}
    counts: dict[str, int] = {}
    for obj in objects:
        counts[obj["type"]] = counts.get(obj["type"], 0) + 1

    required = rules["cpu"]["required_params"]
    cpus = [o for o in objects if all(p in o for p in required)]
    active = [o for o in cpus if not _truthy(o.get("switched_out"))]
    if not active:
        raise ConfigError(f"{source}: no active CPU (objects with {required} and switched_out false)")

    clock_hz = None
    domain = active[0].get("clk_domain")
    domain_obj = by_path.get(domain) if isinstance(domain, str) else None
    if domain_obj and isinstance(domain_obj.get("clock"), list) and domain_obj["clock"]:
        period = _as_int(domain_obj["clock"][0], f"{source}: {domain}.clock")
        if period > 0:
            clock_hz = tps / period

    ruby_rules = rules["ruby"]
    ruby_systems = [o for o in objects if o["type"] == ruby_rules["system_type"]]
    caches: list[CacheFacts] = []
    protocol = None
    controllers: tuple[ControllerFacts, ...] = ()
    inter_node_links: frozenset[str] = frozenset()
    wiring_note = ""
    if ruby_systems:
        hierarchy = "ruby"
        line = _as_int(ruby_systems[0].get("block_size_bytes"), f"{source}: {ruby_systems[0]['path']}.block_size_bytes")
        for obj in objects:
            if obj["type"] == ruby_rules["cache_type"]:
                caches.append(CacheFacts(obj["path"], _as_int(obj["size"], obj["path"]), _as_int(obj["assoc"], obj["path"]), "ruby"))
        protocol = _protocol_of(objects, counts, ruby_rules, source)
        controllers, inter_node_links, wiring_note = ruby_controllers(objects, protocol, source)
    else:
        hierarchy = "classic"
        line = None
        for obj in objects:
            if obj["type"] in rules["classic_cache"]["types"]:
                caches.append(CacheFacts(obj["path"], _as_int(obj["size"], obj["path"]), _as_int(obj["assoc"], obj["path"]), "classic"))
    systems = [o for o in objects if "cache_line_size" in o and "mem_ranges" in o]
    ranges: list[tuple[int, int]] = []
    if systems:
        board = systems[0]
        board_line = _as_int(board["cache_line_size"], f"{source}: {board['path']}.cache_line_size")
        if line is not None and board_line != line:
            raise ConfigError(f"{source}: the board's cache_line_size {board_line} differs from Ruby's block_size_bytes {line}")
        line = board_line
        ranges = [_parse_range(r, f"{source}: {board['path']}.mem_ranges") for r in board["mem_ranges"]]
    return MachineFacts(
        source=source,
        num_cpus=len(active),
        cpu_types=tuple(sorted({o["type"] for o in active})),
        cpu_clock_hz=clock_hz,
        hierarchy=hierarchy,
        ruby_protocol=protocol,
        line_bytes=line,
        caches=tuple(caches),
        memory_ranges=tuple(ranges),
        ticks_per_second=tps,
        objects_by_type=counts,
        controllers=controllers,
        inter_node_links=inter_node_links,
        wiring_note=wiring_note,
    )
