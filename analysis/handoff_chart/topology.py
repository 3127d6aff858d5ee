"""The chart's lanes: every coherence controller of a Ruby machine, with its CPU and NUMA node, from config.json.

gem5's config.json lists each Ruby controller (type `<Machine>_Controller`,
its `version` the number the trace prints) and each network link; an
external link joins a controller (`ext_node`) to a router (`int_node`).
The machines of the study put each node's controllers on that node's
hub router (gem5-configs/components/numalink.py), so the controllers of
one router are one node; nodes are numbered in the order of the lowest
CPU on them (node 0 holds CPU 0, as in the guest's NUMA layout). A
machine with one router, or none, is one node. The CPU cache controller
of version k serves CPU k (gem5's stdlib Ruby hierarchies connect core k
to L1 controller k).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.config_reader import sim_objects
from analysis.handoff_chart.messages import Controller
from analysis.handoff_chart.protocol_rules import ProtocolRules

CONTROLLER_SUFFIX = "_Controller"
EXT_LINK = "SimpleExtLink"
# How a lane is named, by its controller's role (the protocol's cpu_cache, home, memory).
CPU_CACHE_NAME = "CPU{version} L1"
HOME_NAME = "L2 bank {version}"
MEMORY_NAME = "dir+mem {version}"
OTHER_NAME = "{machine} {version}"


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


def _name(rules: ProtocolRules, controller: Controller) -> str:
    pattern = {rules.cpu_cache: CPU_CACHE_NAME, rules.home: HOME_NAME, rules.memory: MEMORY_NAME}.get(controller.machine, OTHER_NAME)
    return pattern.format(machine=controller.machine, version=controller.version)


def ruby_topology(config: dict[str, Any], rules: ProtocolRules, keep_machines: set[str]) -> Topology:
    """One lane per controller of the machines in `keep_machines` (by node, then CPU caches, homes, memory)."""
    objects = config_objects(config)
    controllers: dict[str, Controller] = {}
    for obj in objects:
        if obj["type"].endswith(CONTROLLER_SUFFIX) and isinstance(obj.get("version"), int):
            controllers[obj["path"]] = Controller(obj["type"][: -len(CONTROLLER_SUFFIX)], obj["version"])
    router_of: dict[Controller, str] = {}
    for obj in objects:
        if obj["type"] == EXT_LINK and obj.get("ext_node") in controllers and isinstance(obj.get("int_node"), str):
            router_of[controllers[obj["ext_node"]]] = obj["int_node"]
    routers = sorted(set(router_of.values()))
    first_cpu = {
        router: min((c.version for c, r in router_of.items() if r == router and c.machine == rules.cpu_cache), default=len(controllers))
        for router in routers
    }  # fmt: skip
    node_of_router = {router: n for n, router in enumerate(sorted(routers, key=lambda r: (first_cpu[r], r)))}
    role = {rules.cpu_cache: 0, rules.home: 1, rules.memory: 2}
    lanes = [
        Lane(c, _name(rules, c), node_of_router.get(router_of.get(c, ""), 0), c.version if c.machine == rules.cpu_cache else None)
        for c in controllers.values()
        if c.machine in keep_machines
    ]  # fmt: skip
    lanes.sort(key=lambda lane: (lane.node, role.get(lane.controller.machine, len(role)), lane.controller.machine, lane.controller.version))
    return Topology(tuple(lanes), max(len(routers), 1))


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
