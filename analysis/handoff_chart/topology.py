"""The chart's lanes: every coherence controller of a Ruby machine, with its CPU and NUMA node, from config.json.

Who each controller is comes from the analysis' one reading of
config.json (analysis/gem5_output/config_reader.py `ControllerFacts`: machine and
version as the trace prints them, role, the CPU whose private caches it
is one of, and its node, read from the network wiring by
analysis/gem5_output/ruby_wiring.py). A machine whose wiring tells no node (no
network links) is one node. Lanes are named by the rules' kinds
(protocol_rules.py: the SLICC machine, or the role for CHI) with the
rules file's `lane_names`, and ordered by node, then CPU (its caches in
the rules' `lanes` order), then homes and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.gem5_output.config_reader import ControllerFacts, sim_objects
from analysis.handoff_chart.line_wiring import LineWiring
from analysis.handoff_chart.messages import Controller
from analysis.handoff_chart.protocol_rules import ProtocolRules

# How a lane is named when the rules file names none, by its controller's kind
# (the protocol's cpu_cache, home, memory): MESI_Two_Level's names.
CPU_CACHE_NAME = "CPU{cpu} L1"
HOME_NAME = "L2 bank {version}"
MEMORY_NAME = "dir+mem {version}"
OTHER_NAME = "{machine} {version}"
NOT_A_CPU = 1 << 30  # sorts homes and memory after every CPU's caches


@dataclass(frozen=True)
class Lane:
    controller: Controller
    label: str
    node: int
    cpu: int | None  # the CPU a CPU cache serves


@dataclass(frozen=True)
class Topology:
    lanes: tuple[Lane, ...]
    nodes: int

    def lane_of(self, controller: Controller) -> Lane | None:
        return next((lane for lane in self.lanes if lane.controller == controller), None)

    def node_of(self, controller: Controller) -> int | None:
        lane = self.lane_of(controller)
        return lane.node if lane else None


def config_objects(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Every SimObject of config.json (a dict with type and path), children included."""
    return list(sim_objects(config))


def _cpu(rules: ProtocolRules, kind: str, facts: ControllerFacts) -> int | None:
    """The CPU a private cache serves; a CPU cache without a sequencer in config.json serves the CPU of its version
    (gem5's stdlib Ruby hierarchies connect core k to L1 controller k)."""
    if facts.role == rules.home or kind in (rules.home, rules.memory):
        return None
    return facts.cluster if facts.cluster is not None else facts.version if kind == rules.cpu_cache else None


def _name(rules: ProtocolRules, kind: str, facts: ControllerFacts, cpu: int | None) -> str:
    defaults = {rules.cpu_cache: CPU_CACHE_NAME, rules.home: HOME_NAME, rules.memory: MEMORY_NAME}
    pattern = rules.lane_names.get(kind) or defaults.get(kind, OTHER_NAME)
    short = facts.path.rsplit(".", 1)[-1]
    return pattern.format(machine=facts.machine, version=facts.version, cpu=cpu, node=facts.node, name=short)


def ruby_topology(wiring: LineWiring, rules: ProtocolRules, touching: set[Controller]) -> Topology:
    """A lane per controller of the rules' lane kinds (default: CPU caches, homes, memory; `touching_only` ones and others only where they touch the line)."""
    ordered = rules.lane_kinds or (rules.cpu_cache, rules.home, rules.memory)
    order = {kind: n for n, kind in enumerate(ordered)}
    always = set(ordered) - rules.touching_only
    lanes = []
    for controller, facts in wiring.facts.items():
        kind = wiring.kind(controller)
        if kind not in always and controller not in touching:
            continue
        cpu = _cpu(rules, kind, facts)
        lanes.append((Lane(controller, _name(rules, kind, facts, cpu), facts.node or 0, cpu), kind))
    lanes.sort(key=lambda item: (item[0].node, NOT_A_CPU if item[0].cpu is None else item[0].cpu,
                                 order.get(item[1], len(order)), item[0].controller.machine, item[0].controller.version))  # fmt: skip
    nodes = {facts.node for facts in wiring.facts.values() if facts.node is not None}
    return Topology(tuple(lane for lane, _kind in lanes), max(len(nodes), 1))


# Classic (piii-smp): each CPU's L1d and private L2, the front-side bus, the memory behind it.
CLASSIC_LANE_NAMES = {"L1d": "CPU{version} L1d", "L2": "CPU{version} L2", "bus": "bus (FSB)", "memory": "memory"}


def classic_topology(cpus: int) -> Topology:
    """Each CPU's L1d and L2 side by side, then the bus and memory: one node, so no crossings."""
    controllers = [Controller(machine, cpu) for cpu in range(cpus) for machine in ("L1d", "L2")]
    controllers += [Controller("bus", 0), Controller("memory", 0)]
    lanes = tuple(
        Lane(c, CLASSIC_LANE_NAMES[c.machine].format(version=c.version), 0, c.version if c.machine == "L1d" else None)
        for c in controllers
    )  # fmt: skip
    return Topology(lanes, 1)
