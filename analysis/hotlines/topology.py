"""Which node each Ruby controller is on, and each line's home: from the run's config.json.

A ProtocolTrace line names its controller by machine and version
(`L1Cache 2`); config.json holds every controller as a SimObject of type
`<machine>_Controller` with that `version`, and the network that joins
them (gem5-configs/components/numalink.py): each controller's
SimpleExtLink names the switch it attaches to (`ext_node` -> `int_node`),
and SimpleIntLinks join switches (`src_node`, `dst_node`).

The node of a controller is read from that wiring, not assumed from the
machine file:
- a node's hub is the switch its memory side attaches to (the directory
  of the node's memory range); hubs are numbered as their `router_id`s
  sort (numalink.py creates them first, router_id = node);
- a controller on a hub is on the hub's node; one on another switch (a
  CPU's port switch, chi-numa) is on the node of the one hub that switch
  links to; a controller whose switch reaches no hub or two is an error.
The result is checked against the run's own `cpu_to_node` (result.json
provenance.machine) when given: the cache controller of version i is CPU
i's.

The home of a line (the controller that serialises its requests) is
selected by address bits as the protocol does (MESI_Two_Level: the L2
bank of bits [log2(line), log2(line) + l2_select_num_bits)).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.config_reader import sim_objects
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.rules import ProtocolRules

CONTROLLER_SUFFIX = "_Controller"


@dataclass(frozen=True)
class Topology:
    """Controllers' nodes and the home-bank selection of one simulated machine."""

    source: str
    line_bytes: int
    home_machine: str
    home_select_bits: int
    node_of: dict[tuple[str, int], int]  # (machine, version) -> node

    def node(self, machine: str, version: int) -> int:
        try:
            return self.node_of[(machine, version)]
        except KeyError:
            raise HotlinesError(f"{self.source}: no {machine}{CONTROLLER_SUFFIX} of version {version}, which the trace names") from None

    def home_bank(self, line: int) -> int:
        return (line // self.line_bytes) & ((1 << self.home_select_bits) - 1)

    def home_node(self, line: int) -> int:
        return self.node(self.home_machine, self.home_bank(line))

    def nodes(self) -> int:
        return len(set(self.node_of.values()))


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise HotlinesError(f"{where}: expected a number, found {value!r}")
    try:
        return int(value, 0) if isinstance(value, str) else value
    except ValueError:
        raise HotlinesError(f"{where}: expected a number, found {value!r}") from None


def read_topology(path: Path, protocol: ProtocolRules, line_bytes: int, cpu_to_node: Sequence[int] | None = None) -> Topology:
    """The topology of config.json at `path` for a machine of this protocol."""
    try:
        tree = json.loads(path.read_text())
    except OSError as exc:
        raise HotlinesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise HotlinesError(f"{path}: not JSON: {exc}") from None
    return topology_of(tree, str(path), protocol, line_bytes, cpu_to_node)


def topology_of(tree: Any, source: str, protocol: ProtocolRules, line_bytes: int, cpu_to_node: Sequence[int] | None = None) -> Topology:
    objects = list(sim_objects(tree))
    controllers: dict[str, tuple[str, int]] = {}  # path -> (machine, version)
    select_bits: set[int] = set()
    for obj in objects:
        kind = str(obj["type"])
        if kind.endswith(CONTROLLER_SUFFIX) and "version" in obj:
            machine = kind[: -len(CONTROLLER_SUFFIX)]
            controllers[obj["path"]] = (machine, _int(obj["version"], f"{source}: {obj['path']}.version"))
            if machine == protocol.cache_machine:
                select_bits.add(_int(obj.get(protocol.home_select_bits_param), f"{source}: {obj['path']}.{protocol.home_select_bits_param}"))
    if len(select_bits) != 1:
        raise HotlinesError(f"{source}: the {protocol.cache_machine} controllers' {protocol.home_select_bits_param} should be one value, found {sorted(select_bits)}")
    switch_of = {obj["ext_node"]: obj["int_node"] for obj in objects if "ext_node" in obj and "int_node" in obj}
    router_id = {obj["path"]: _int(obj.get("router_id"), f"{source}: {obj['path']}.router_id") for obj in objects if "router_id" in obj}
    neighbours: dict[str, set[str]] = {}
    for obj in objects:
        if "src_node" in obj and "dst_node" in obj and isinstance(obj["src_node"], str) and isinstance(obj["dst_node"], str):
            neighbours.setdefault(obj["src_node"], set()).add(obj["dst_node"])
    memory_switches = {switch_of.get(path) for path, (machine, _) in controllers.items() if machine == protocol.memory_machine}
    if not memory_switches or None in memory_switches:
        raise HotlinesError(f"{source}: a {protocol.memory_machine} controller without a network link (ext_links): no node can be told")
    hubs = sorted(memory_switches, key=lambda switch: router_id.get(str(switch), -1))
    hub_node = {hub: node for node, hub in enumerate(hubs)}
    node_of: dict[tuple[str, int], int] = {}
    for path, key in controllers.items():
        switch = switch_of.get(path)
        if switch is None:
            raise HotlinesError(f"{source}: {path} has no network link (ext_links): its node cannot be told")
        if switch in hub_node:
            node_of[key] = hub_node[switch]
            continue
        reached = {hub_node[hub] for hub in neighbours.get(switch, set()) if hub in hub_node}
        if len(reached) != 1:
            raise HotlinesError(f"{source}: {path} attaches to {switch}, which links to {len(reached)} node hubs, not one: its node cannot be told")
        node_of[key] = reached.pop()
    topology = Topology(source, line_bytes, protocol.home_machine, select_bits.pop(), node_of)
    for bank in range(1 << topology.home_select_bits):
        topology.node(protocol.home_machine, bank)
    for cpu, node in enumerate(cpu_to_node or ()):
        found = topology.node(protocol.cache_machine, cpu)
        if found != node:
            raise HotlinesError(f"{source}: {protocol.cache_machine} {cpu} is on node {found} by the network, but result.json's cpu_to_node puts CPU {cpu} on node {node}")
    return topology
