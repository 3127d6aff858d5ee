"""Who each Ruby controller is for one cache line: its kind, CPU cluster and node, the line's home and memory.

All of it comes from config.json through the analysis' one reading of it
(analysis/gem5_output/config_reader.py: each controller's machine, version, role,
CPU cluster and node; analysis/gem5_output/ruby_wiring.py: the least time a message
takes between two controllers). The pairing of arrivals with sends
(messages.py) asks it whether a sender stands to a receiver as a rule
says (protocol_rules.RELATIONS) and whether the send is early enough to
have arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analysis.gem5_output.config_reader import ControllerFacts, MachineFacts, sim_objects
from analysis.gem5_output.ruby_wiring import WiringError, transit_cycles
from analysis.handoff_chart.messages import Controller

HOME_ROLE, MEMORY_ROLE = "home", "memory"


@dataclass(frozen=True)
class LineWiring:
    facts: dict[Controller, ControllerFacts]
    named_by: str  # "machine" or "role": how the rules name controllers
    home: Controller | None = None  # the home whose address ranges hold the line
    memory: Controller | None = None  # the memory controller whose ranges hold it
    transit_ticks: dict[tuple[Controller, Controller], int] = field(default_factory=dict)

    def kind(self, controller: Controller) -> str:
        """The name the rules give the controller: its role, or its SLICC machine."""
        facts = self.facts.get(controller)
        return facts.role if facts is not None and self.named_by == "role" else controller.machine

    def cluster(self, controller: Controller) -> int | None:
        facts = self.facts.get(controller)
        return facts.cluster if facts is not None else None

    def node(self, controller: Controller) -> int | None:
        facts = self.facts.get(controller)
        return facts.node if facts is not None else None

    def related(self, relation: str, sender: Controller, receiver: Controller) -> bool:
        """Whether `sender` stands to `receiver` as `relation` (protocol_rules.RELATIONS) says."""
        if sender == receiver:
            return False
        if relation == "cluster":
            cluster = self.cluster(sender)
            return cluster is not None and cluster == self.cluster(receiver)
        if relation == "home":
            return self.home is not None and self.home in (sender, receiver)
        if relation == "memory":
            return self.memory is not None and self.memory in (sender, receiver)
        return True

    def in_time(self, send_tick: int, sender: Controller, receiver: Controller, arrival_tick: int) -> bool:
        """A send can be an arrival's only if the least transit between the two fits between them."""
        return send_tick + self.transit_ticks.get((sender, receiver), 0) <= arrival_tick


def _holds(facts: ControllerFacts, line: int) -> bool:
    return any(start <= line < end for start, end in facts.addr_ranges)


def _the_one(candidates: Iterable[ControllerFacts], line: int) -> Controller | None:
    holding = [c for c in candidates if _holds(c, line)]
    return Controller(holding[0].machine, holding[0].version) if len(holding) == 1 else None


def line_wiring(machine: MachineFacts, config: dict[str, Any], line: int, named_by: str, cycle_ticks: int) -> LineWiring:
    """The wiring of every Ruby controller of the run, for `line` (transit in ticks of `cycle_ticks` per network cycle)."""
    facts = {Controller(c.machine, c.version): c for c in machine.controllers}
    by_path = {c.path: controller for controller, c in facts.items()}
    try:
        cycles = transit_cycles(sim_objects(config), by_path, machine.source)
    except WiringError:
        cycles = {}  # no network to read: no floor, every send is early enough
    transit = {(by_path[a], by_path[b]): n * cycle_ticks for (a, b), n in cycles.items()}
    home = _the_one((c for c in facts.values() if c.role == HOME_ROLE), line)
    memory = _the_one((c for c in facts.values() if c.role == MEMORY_ROLE), line)
    return LineWiring(facts, named_by, home, memory, transit)
