"""Altix-like Ruby hierarchy: MESI_Two_Level with one L2 bank and one directory per node.

Built from the stdlib's MESI_Two_Level controllers; what differs from the
stdlib's MESITwoLevelCacheHierarchy:
- the Ruby block size is set to the board's cache line (the stdlib leaves
  RubySystem.block_size_bytes at 64, which breaks other line sizes);
- one L2 bank per node and one directory per node's memory range, all
  attached to that node's hub in a NUMAlink-like network (numalink.py);
- controller latencies and the sequencer deadlock threshold come from the
  machine file.
MESI_Two_Level picks an address's L2 bank from the bits right above the
block offset (l2_select_low_bit is not a parameter in gem5 v24.0.0.1), so
the banks are line-interleaved across nodes, while memory and its
directory are node-local and contiguous.
"""

from __future__ import annotations

from m5.objects import DMASequencer, RubyPortProxy, RubySequencer

from gem5.coherence_protocol import CoherenceProtocol
from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.cachehierarchies.abstract_cache_hierarchy import AbstractCacheHierarchy
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.directory import Directory
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.dma_controller import DMAController
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.l1_cache import L1Cache
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.l2_cache import L2Cache
from gem5.isas import ISA
from gem5.utils.override import overrides
from gem5.utils.requires import requires

from .numa_hierarchy import NumaRubyHierarchy
from .numalink import VIRTUAL_NETWORKS

L1_LATENCIES = ("l1_request_latency", "l1_response_latency", "to_l2_latency")
L2_LATENCIES = ("l2_request_latency", "l2_response_latency", "to_l1_latency")
DIRECTORY_LATENCIES = ("directory_latency", "to_mem_ctrl_latency")


def _set_latencies(controller, protocol: dict, names: tuple) -> None:
    for name in names:
        setattr(controller, name, protocol[name])


class NumaMESITwoLevelHierarchy(NumaRubyHierarchy):
    @overrides(AbstractCacheHierarchy)
    def incorporate_cache(self, board: AbstractBoard) -> None:
        requires(coherence_protocol_required=CoherenceProtocol.MESI_TWO_LEVEL)
        instance = self._instance
        data = instance.data
        protocol = data["protocol"]
        line = self._make_ruby_system(board, VIRTUAL_NETWORKS)
        network = self.ruby_system.network
        controllers_by_node: list[list] = [[] for _ in range(instance.num_nodes)]
        cpu_node = instance.cpu_to_node()

        l1_controllers = []
        for i, core in enumerate(board.get_processor().get_cores()):
            l1 = L1Cache(
                f"{data['l1i']['size']}B",
                data["l1i"]["assoc"],
                f"{data['l1d']['size']}B",
                data["l1d"]["assoc"],
                network,
                core,
                instance.num_nodes,
                line,
                ISA.X86,
                board.get_clock_domain(),
            )
            _set_latencies(l1, protocol, L1_LATENCIES)
            l1.sequencer = RubySequencer(
                version=i,
                dcache=l1.L1Dcache,
                clk_domain=l1.clk_domain,
                deadlock_threshold=protocol["deadlock_threshold"],
            )
            if board.has_io_bus():
                l1.sequencer.connectIOPorts(board.get_io_bus())
            l1.ruby_system = self.ruby_system
            core.connect_icache(l1.sequencer.in_ports)
            core.connect_dcache(l1.sequencer.in_ports)
            core.connect_walker_ports(l1.sequencer.in_ports, l1.sequencer.in_ports)
            core.connect_interrupt(l1.sequencer.interrupt_out_port, l1.sequencer.in_ports)
            l1_controllers.append(l1)
            controllers_by_node[cpu_node[i]].append(l1)

        l2_controllers = []
        for node in range(instance.num_nodes):
            l2 = L2Cache(
                f"{data['l2_bank']['size']}B",
                data["l2_bank"]["assoc"],
                network,
                instance.num_nodes,
                line,
            )
            _set_latencies(l2, protocol, L2_LATENCIES)
            l2.ruby_system = self.ruby_system
            l2_controllers.append(l2)
            controllers_by_node[node].append(l2)

        mem_ports = board.get_mem_ports()
        if len(mem_ports) != instance.num_nodes:
            raise ValueError(f"{len(mem_ports)} memory ports for {instance.num_nodes} nodes")
        directory_controllers = []
        for node, (mem_range, port) in enumerate(mem_ports):
            directory = Directory(network, line, mem_range, port)
            _set_latencies(directory, protocol, DIRECTORY_LATENCIES)
            directory.ruby_system = self.ruby_system
            directory_controllers.append(directory)
            controllers_by_node[node].append(directory)

        dma_controllers = []
        if board.has_dma_ports():
            for i, port in enumerate(board.get_dma_ports()):
                dma = DMAController(network, line)
                dma.dma_sequencer = DMASequencer(version=i, in_ports=port)
                dma.ruby_system = self.ruby_system
                dma_controllers.append(dma)

        self.ruby_system.num_of_sequencers = len(l1_controllers) + len(dma_controllers)
        self.ruby_system.l1_controllers = l1_controllers
        self.ruby_system.l2_controllers = l2_controllers
        self.ruby_system.directory_controllers = directory_controllers
        if dma_controllers:
            self.ruby_system.dma_controllers = dma_controllers

        network.connect(controllers_by_node, dma_controllers)

        self.ruby_system.sys_port_proxy = RubyPortProxy()
        board.connect_system_port(self.ruby_system.sys_port_proxy.in_ports)
