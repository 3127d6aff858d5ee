"""Which node each Ruby controller is on, read from the network wiring in config.json.

config.json holds the network that joins the controllers
(gem5-configs/components/numalink.py): each controller's SimpleExtLink
names the switch it attaches to (`ext_node` -> `int_node`,
src/mem/ruby/network/BasicLink.py), and SimpleIntLinks join switches
(`src_node`, `dst_node`). The node of a controller is read from that
wiring, not assumed from the machine file:
- a node's hub is the switch its memory side attaches to (the memory
  controller of the node's range: MESI_Two_Level's directory, CHI's
  SN-F); hubs are numbered as their `router_id`s sort (numalink.py
  creates them first, router_id = node);
- a controller on a hub is on the hub's node; one on another switch (a
  CPU's port switch, chi-numa) is on the node of the one hub that switch
  links to; a controller whose switch reaches no hub or two is an error;
- a link between two switches crosses nodes unless both are on the same
  node (a switch of the router tree is on no node).
`transit_cycles` reads the same wiring for the least time a message takes
from one controller to another (the hand-off chart's pairing uses it).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

EXT_NODE, INT_NODE = "ext_node", "int_node"
SRC_NODE, DST_NODE = "src_node", "dst_node"
ROUTER_ID = "router_id"
NO_ROUTER_ID = -1


class WiringError(ValueError):
    """config.json's network does not tell a controller's node: one line naming the object."""


@dataclass(frozen=True)
class Wiring:
    """Each controller's node (path -> node) and the internal links whose two switches are on different nodes."""

    node_of: dict[str, int]
    inter_node_links: frozenset[str]


def _router_id(obj: Mapping[str, Any], source: str) -> int:
    value = obj.get(ROUTER_ID)
    if isinstance(value, bool) or not isinstance(value, int):
        raise WiringError(f"{source}: {obj['path']}.{ROUTER_ID}: expected a number, found {value!r}")
    return value


def _end(value: Any) -> str | None:
    """A link's end: a switch is named by its path, or held as a child (a dict with its path) when the link adopted it."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("path"), str):
        return str(value["path"])
    return None


def read_wiring(objects: Iterable[Mapping[str, Any]], controllers: Iterable[str], memory_side: Iterable[str], source: str) -> Wiring:
    """The wiring of `controllers` (paths); `memory_side` are the paths of the controllers that mark a node's hub."""
    objects = list(objects)
    switch_of = {_end(obj.get(EXT_NODE)): _end(obj.get(INT_NODE)) for obj in objects if EXT_NODE in obj and INT_NODE in obj}
    router_id = {obj["path"]: _router_id(obj, source) for obj in objects if ROUTER_ID in obj}
    links = {obj["path"]: (_end(obj.get(SRC_NODE)), _end(obj.get(DST_NODE))) for obj in objects if SRC_NODE in obj and DST_NODE in obj}
    links = {path: (src, dst) for path, (src, dst) in links.items() if src is not None and dst is not None}
    neighbours: dict[str, set[str]] = {}
    for src, dst in links.values():
        neighbours.setdefault(src, set()).add(dst)
    memory_switches = {switch_of.get(path) for path in memory_side}
    if not memory_switches or None in memory_switches:
        raise WiringError(f"{source}: a memory-side controller without a network link (ext_links): no node can be told")
    hubs = sorted(memory_switches, key=lambda switch: router_id.get(str(switch), NO_ROUTER_ID))
    hub_node = {hub: node for node, hub in enumerate(hubs)}

    def switch_node(switch: str) -> int | None:
        if switch in hub_node:
            return hub_node[switch]
        reached = {hub_node[hub] for hub in neighbours.get(switch, set()) if hub in hub_node}
        return reached.pop() if len(reached) == 1 else None

    node_of: dict[str, int] = {}
    for path in controllers:
        switch = switch_of.get(path)
        if switch is None:
            raise WiringError(f"{source}: {path} has no network link (ext_links): its node cannot be told")
        node = switch_node(switch)
        if node is None:
            reached = len({hub for hub in neighbours.get(switch, set()) if hub in hub_node})
            raise WiringError(f"{source}: {path} attaches to {switch}, which links to {reached} node hubs, not one: its node cannot be told")
        node_of[path] = node
    on_node = {switch: switch_node(switch) for ends in links.values() for switch in ends}
    crossing = frozenset(path for path, (src, dst) in links.items() if on_node[src] is None or on_node[src] != on_node[dst])
    return Wiring(node_of, crossing)


LATENCY = "latency"  # a link's or a switch's delay in cycles (src/mem/ruby/network/BasicLink.py, BasicRouter.py)


def transit_cycles(objects: Iterable[Mapping[str, Any]], controllers: Iterable[str], source: str) -> dict[tuple[str, str], int]:
    """The least delay, in network cycles, of a message from each controller to each other one (paths in, both ways).

    A message goes over its sender's SimpleExtLink into a switch, through
    switches joined by SimpleIntLinks (each one way: `src_node` to
    `dst_node`), and out over the receiver's ext link; every link and
    every switch it passes adds its `latency`. Queues and link bandwidth
    only add to that sum, so no message arrives sooner: it is a floor.
    Controllers with no path between them are left out.
    """
    objects = list(objects)
    wanted = set(controllers)
    switch_delay = {obj["path"]: _cycles(obj, source) for obj in objects if ROUTER_ID in obj}
    edges: dict[str, list[tuple[str, int]]] = {}
    for obj in objects:
        if EXT_NODE in obj and INT_NODE in obj:
            controller, switch = _end(obj.get(EXT_NODE)), _end(obj.get(INT_NODE))
            if controller in wanted and switch is not None:
                delay = _cycles(obj, source)
                edges.setdefault(controller, []).append((switch, delay + switch_delay.get(switch, 0)))
                edges.setdefault(switch, []).append((controller, delay))
        elif SRC_NODE in obj and DST_NODE in obj:
            src, dst = _end(obj.get(SRC_NODE)), _end(obj.get(DST_NODE))
            if src is not None and dst is not None:
                edges.setdefault(src, []).append((dst, _cycles(obj, source) + switch_delay.get(dst, 0)))
    out: dict[tuple[str, str], int] = {}
    for start in wanted:
        best = {start: 0}
        frontier = [(0, start)]
        while frontier:
            cost, at = heapq.heappop(frontier)
            if cost > best.get(at, cost):
                continue
            if at != start and at in wanted:
                out[(start, at)] = cost
                continue  # a controller forwards nothing
            for to, delay in edges.get(at, []):
                if cost + delay < best.get(to, cost + delay + 1):
                    best[to] = cost + delay
                    heapq.heappush(frontier, (cost + delay, to))
    return out


def _cycles(obj: Mapping[str, Any], source: str) -> int:
    value = obj.get(LATENCY, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WiringError(f"{source}: {obj['path']}.{LATENCY}: expected a number of cycles, found {value!r}")
    return value
