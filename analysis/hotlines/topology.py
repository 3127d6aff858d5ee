"""Which node and role each Ruby controller has, and each line's home: from the run's config.json.

A ProtocolTrace line names its controller by machine and version
(`L1Cache 2`, `Cache 5`); config.json holds every controller as a
SimObject of type `<machine>_Controller` with that `version`. Its role
(analysis/data/gem5_config.toml: CHI's one Cache machine is an L1, a
private L2, a home or a DMA requester) and its node come from
analysis/gem5_output/config_reader.py, the node from the network wiring
(analysis/gem5_output/ruby_wiring.py), not from the machine file. The result is
checked against the run's own `cpu_to_node` (result.json
provenance.machine) when given: a controller of the protocol's cache
machine and role whose sequencer has version i serves CPU i.

The home of a line (the controller that serialises its requests) is
selected as the protocol does:
- `address_bits` (MESI_Two_Level): the L2 bank of bits [log2(line),
  log2(line) + l2_select_num_bits) of the address;
- `address_ranges` (CHI): the home whose `addr_ranges` hold the address
  (AbstractController::mapAddressToDownstreamMachine,
  src/mem/ruby/slicc_interface/AbstractController.cc:427-445; our homes'
  ranges are their nodes' memory, gem5-configs/components/chi_numa.py).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.gem5_output.config_reader import CONTROLLER_SUFFIX, ConfigError, ControllerFacts, ruby_controllers, sim_objects
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.rules import HOME_SELECTIONS, ProtocolRules


@dataclass(frozen=True)
class Topology:
    """Controllers' nodes and roles, and the home selection, of one simulated machine."""

    source: str
    line_bytes: int
    home_machine: str
    home_select_bits: int | None  # address_bits
    home_ranges: tuple[tuple[int, int, int], ...]  # address_ranges: (start, end, home version), by start
    node_of: dict[tuple[str, int], int]  # (machine, version) -> node
    role_of: dict[tuple[str, int], str]  # (machine, version) -> role

    def _missing(self, machine: str, version: int) -> HotlinesError:
        return HotlinesError(f"{self.source}: no {machine}{CONTROLLER_SUFFIX} of version {version}, which the trace names")

    def node(self, machine: str, version: int) -> int:
        try:
            return self.node_of[(machine, version)]
        except KeyError:
            raise self._missing(machine, version) from None

    def role(self, machine: str, version: int) -> str:
        try:
            return self.role_of[(machine, version)]
        except KeyError:
            raise self._missing(machine, version) from None

    def home_bank(self, line: int) -> int:
        """The version of the line's home controller."""
        if self.home_select_bits is not None:
            return (line // self.line_bytes) & ((1 << self.home_select_bits) - 1)
        at = bisect_right(self.home_ranges, (line, float("inf"), float("inf"))) - 1
        if at < 0 or not self.home_ranges[at][0] <= line < self.home_ranges[at][1]:
            raise HotlinesError(f"{self.source}: no {self.home_machine} home's addr_ranges hold line 0x{line:x}")
        return self.home_ranges[at][2]

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


def _select_bits(objects: list[dict[str, Any]], protocol: ProtocolRules, source: str) -> int:
    param = str(protocol.home_select_bits_param)
    kind = protocol.cache_machine + CONTROLLER_SUFFIX
    found = {_int(obj.get(param), f"{source}: {obj['path']}.{param}") for obj in objects if obj["type"] == kind and "version" in obj}
    if len(found) != 1:
        raise HotlinesError(f"{source}: the {protocol.cache_machine} controllers' {param} should be one value, found {sorted(found)}")
    return found.pop()


def _home_ranges(controllers: tuple[ControllerFacts, ...], protocol: ProtocolRules, source: str) -> tuple[tuple[int, int, int], ...]:
    homes = [c for c in controllers if c.machine == protocol.home_machine and (protocol.home_role is None or c.role == protocol.home_role)]
    ranges = sorted((start, end, home.version) for home in homes for start, end in home.addr_ranges)
    if not ranges:
        raise HotlinesError(f"{source}: no {protocol.home_machine} controller of role {protocol.home_role!r} with addr_ranges: no line has a home")
    for (_, end, first), (start, _, second) in zip(ranges, ranges[1:]):
        if start < end:
            raise HotlinesError(f"{source}: the addr_ranges of homes {first} and {second} overlap at 0x{start:x}")
    return tuple(ranges)


def topology_of(tree: Any, source: str, protocol: ProtocolRules, line_bytes: int, cpu_to_node: Sequence[int] | None = None) -> Topology:
    objects = list(sim_objects(tree))
    try:
        controllers, _links, wiring_note = ruby_controllers(objects, protocol.name, source)
    except (ConfigError, KeyError) as exc:
        raise HotlinesError(f"{source}: the controllers of {protocol.name} cannot be read: {exc}") from None
    if wiring_note:
        raise HotlinesError(wiring_note)
    node_of = {(c.machine, c.version): int(c.node) for c in controllers if c.node is not None}
    role_of = {(c.machine, c.version): c.role for c in controllers}
    by_bits = protocol.home_select == HOME_SELECTIONS[0]
    topology = Topology(
        source=source,
        line_bytes=line_bytes,
        home_machine=protocol.home_machine,
        home_select_bits=_select_bits(objects, protocol, source) if by_bits else None,
        home_ranges=() if by_bits else _home_ranges(controllers, protocol, source),
        node_of=node_of,
        role_of=role_of,
    )
    if by_bits:
        for bank in range(1 << int(topology.home_select_bits or 0)):
            topology.node(protocol.home_machine, bank)
    serving = [c for c in controllers if c.machine == protocol.cache_machine and (protocol.cache_role is None or c.role == protocol.cache_role)]
    for cpu, node in enumerate(cpu_to_node or ()):
        mine = [c for c in serving if c.cpu == cpu]
        if not mine:
            raise HotlinesError(f"{source}: no {protocol.cache_machine}{CONTROLLER_SUFFIX} serves CPU {cpu} (a sequencer of version {cpu}), which result.json's cpu_to_node names")
        for controller in mine:
            found = topology.node(controller.machine, controller.version)
            if found != node:
                raise HotlinesError(f"{source}: {controller.machine} {controller.version} is on node {found} by the network, but result.json's cpu_to_node puts CPU {cpu} on node {node}")
    return topology
