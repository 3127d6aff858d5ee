"""PIII-like classic hierarchy: private L1I/L1D and L2 per CPU on one snooping bus.

Each CPU's L1s meet its L2 on a private L2XBar (the back-side bus); every
L2 sits on the front-side bus, a SystemXBar in its own clock domain and
without a snoop filter, so each request is broadcast to every other L2.
The bus is the point of coherency and carries what the P6 bus carried:
the memory controller, the I/O bridge (system port, coherent I/O cache in
front of the IDE DMA) and the interrupt messages.

Why one bus only: gem5's classic crossbars accept a snoop from below only
as an express snoop sent by a cache (`CoherentXBar::recvTimingSnoopReq`
asserts `pkt->isExpressSnoop()`), so a crossbar cannot hang directly
under another one in timing mode. The two-bus 8-way layout would need a
cache between each bus and the chipset that the real machine did not
have (gem5-configs/README.md).
"""

from __future__ import annotations

from m5.objects import (
    BadAddr,
    Cache,
    L2XBar,
    Port,
    SnoopFilter,
    SrcClockDomain,
    SystemXBar,
    VoltageDomain,
)
from m5.params import NULL

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.cachehierarchies.abstract_cache_hierarchy import AbstractCacheHierarchy
from gem5.components.cachehierarchies.classic.abstract_classic_cache_hierarchy import (
    AbstractClassicCacheHierarchy,
)
from gem5.utils.override import overrides

# The stdlib's coherent I/O cache in front of the IDE DMA port (its values).
XBAR_LATENCY_FIELDS = ("frontend_latency", "forward_latency", "response_latency", "snoop_response_latency")


def _clock_domain(hz: int) -> SrcClockDomain:
    return SrcClockDomain(clock=f"{hz}Hz", voltage_domain=VoltageDomain())


def _cache(table: dict, **extra) -> Cache:
    """A classic cache from a machine-file table (no prefetcher, like the P6)."""
    return Cache(
        size=f"{table['size']}B",
        assoc=table["assoc"],
        tag_latency=table["tag_latency"],
        data_latency=table["data_latency"],
        response_latency=table["response_latency"],
        mshrs=table["mshrs"],
        tgts_per_mshr=table["tgts_per_mshr"],
        **extra,
    )


class PiiiFsbCacheHierarchy(AbstractClassicCacheHierarchy):
    """Private L1s + private L2 per CPU on one broadcast front-side bus."""

    def __init__(self, machine_instance) -> None:
        super().__init__()
        self._instance = machine_instance
        fsb = machine_instance.data["fsb"]
        # Named membus like the stdlib's, so stats read board.cache_hierarchy.membus.
        self.membus = SystemXBar(
            width=fsb["width_bytes"],
            clk_domain=_clock_domain(fsb["clock"]),
            snoop_filter=SnoopFilter() if fsb["snoop_filter"] else NULL,
            **{name: fsb[name] for name in XBAR_LATENCY_FIELDS},
        )
        # An address nobody serves gets a bad-address response, not a routing panic.
        self.membus.badaddr_responder = BadAddr()
        self.membus.default = self.membus.badaddr_responder.pio

    @overrides(AbstractClassicCacheHierarchy)
    def get_mem_side_port(self) -> Port:
        return self.membus.mem_side_ports

    @overrides(AbstractClassicCacheHierarchy)
    def get_cpu_side_port(self) -> Port:
        return self.membus.cpu_side_ports

    @overrides(AbstractCacheHierarchy)
    def incorporate_cache(self, board: AbstractBoard) -> None:
        data = self._instance.data
        board.connect_system_port(self.membus.cpu_side_ports)
        for _, port in board.get_memory().get_mem_ports():
            self.membus.mem_side_ports = port

        cores = board.get_processor().get_cores()
        backside = data["backside_bus"]
        self.l2buses = [
            L2XBar(width=backside["width_bytes"], **{name: backside[name] for name in XBAR_LATENCY_FIELDS}) for _ in cores
        ]
        for i, core in enumerate(cores):
            # Same SimObject names as the stdlib's private-L2 hierarchy,
            # so stats read board.cache_hierarchy.l1d-cache-0 and so on.
            l2_node = self.add_root_child(f"l2-cache-{i}", _cache(data["l2"]))
            l1i_node = l2_node.add_child(f"l1i-cache-{i}", _cache(data["l1i"]))
            l1d_node = l2_node.add_child(f"l1d-cache-{i}", _cache(data["l1d"]))

            l1i_node.cache.mem_side = self.l2buses[i].cpu_side_ports
            l1d_node.cache.mem_side = self.l2buses[i].cpu_side_ports
            self.l2buses[i].mem_side_ports = l2_node.cache.cpu_side
            l2_node.cache.mem_side = self.membus.cpu_side_ports

            core.connect_icache(l1i_node.cache.cpu_side)
            core.connect_dcache(l1d_node.cache.cpu_side)
            # Page walks go through the CPU's own L2, like its other misses.
            core.connect_walker_ports(self.l2buses[i].cpu_side_ports, self.l2buses[i].cpu_side_ports)
            # Local APIC messages travel on the bus (x86 in gem5 routes
            # interrupts through the memory system).
            core.connect_interrupt(self.membus.mem_side_ports, self.membus.cpu_side_ports)

        if board.has_coherent_io():
            # Coherent DMA's cache in the chipset; every bus request snoops
            # it (machine file [iocache] says why its latencies matter).
            self.iocache = _cache(data["iocache"], addr_ranges=board.mem_ranges)
            self.iocache.mem_side = self.membus.cpu_side_ports
            self.iocache.cpu_side = board.get_mem_side_coherent_io_port()
