"""Altix-like Ruby hierarchy on CHI: every address homed on the node whose memory holds it.

What it models (an SGI Altix 3000 / SN2 node, gem5-configs/machines/altix-numa.toml):
- each CPU has private L1I/L1D and a private L2 (the Itanium 2's own
  L2/L3), joined by the CPU's port switch (its front-side bus interface);
- each node has one home node (a CHI HN-F, the SHUB's directory; it keeps
  no data) whose address range is exactly the node's memory, and one
  memory controller (SN-F) behind it;
- a request goes to the home of its address: a line the other CPU of the
  same node holds for node-local memory is snooped and forwarded (DCT)
  without leaving the node's hub; a remote line crosses the router tree
  to its node's hub and back (numalink.py).

Built from the stdlib's CHI node classes (gem5.components.cachehierarchies.chi);
what differs from the stdlib's PrivateL1CacheHierarchy: a private L2 per
CPU, one home per node restricted to the node's range (the stdlib has one
home for all memory), the NUMAlink-like network instead of point-to-point,
the Ruby block size set to the board's line, and latencies from the
machine file.
"""

from __future__ import annotations

from m5.objects import NULL, RubyCache, RubyPortProxy, RubySequencer
from m5.objects.SubSystem import SubSystem

from gem5.coherence_protocol import CoherenceProtocol
from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.cachehierarchies.abstract_cache_hierarchy import AbstractCacheHierarchy
from gem5.components.cachehierarchies.chi.nodes.abstract_node import AbstractNode
from gem5.components.cachehierarchies.chi.nodes.directory import SimpleDirectory
from gem5.components.cachehierarchies.chi.nodes.dma_requestor import DMARequestor
from gem5.components.cachehierarchies.chi.nodes.memory_controller import MemoryController
from gem5.components.cachehierarchies.chi.nodes.private_l1_moesi_cache import PrivateL1MOESICache
from gem5.isas import ISA
from gem5.utils.override import overrides
from gem5.utils.requires import requires

from .numa_hierarchy import NumaRubyHierarchy
from .numalink import CHI_VIRTUAL_NETWORKS


def _set_message_latency(controller, cycles: int) -> None:
    # CHI's outgoing-message latencies (CHI-cache.sm; gem5 default 1 each).
    for name in ("request_latency", "response_latency", "snoop_latency", "data_latency"):
        setattr(controller, name, cycles)


class PrivateL2Cache(AbstractNode):
    """A CPU's private, inclusive-on-fill L2 between its L1s and the homes.

    Allocation policy as gem5's own CHI private L2 (configs/ruby/CHI_config.py,
    CHI_L2Controller): fills on reads and writebacks, drops a line a
    snoop invalidates.
    """

    def __init__(self, size: str, assoc: int, network, cache_line_size, clk_domain, tag_latency: int, data_latency: int):
        super().__init__(network, cache_line_size)
        self.cache = RubyCache(
            size=size,
            assoc=assoc,
            start_index_bit=self.getBlockSizeBits(),
            tagAccessLatency=tag_latency,
            dataAccessLatency=data_latency,
        )
        self.clk_domain = clk_domain
        self.sequencer = NULL
        self.send_evictions = False
        self.use_prefetcher = False
        self.prefetcher = NULL
        self.is_HN = False
        self.enable_DMT = False
        self.enable_DCT = False
        self.allow_SD = True
        self.alloc_on_seq_acc = False
        self.alloc_on_seq_line_write = False
        self.alloc_on_readshared = True
        self.alloc_on_readunique = True
        self.alloc_on_readonce = True
        self.alloc_on_writeback = True
        self.alloc_on_atomic = False
        self.dealloc_on_unique = False
        self.dealloc_on_shared = False
        self.dealloc_backinv_unique = True
        self.dealloc_backinv_shared = True
        self.number_of_TBEs = 32
        self.number_of_repl_TBEs = 32
        self.number_of_snoop_TBEs = 16
        self.number_of_DVM_TBEs = 1
        self.number_of_DVM_snoop_TBEs = 1
        self.unify_repl_TBEs = False


class NumaCHIHierarchy(NumaRubyHierarchy):
    @overrides(AbstractCacheHierarchy)
    def incorporate_cache(self, board: AbstractBoard) -> None:
        requires(coherence_protocol_required=CoherenceProtocol.CHI)
        instance = self._instance
        data = instance.data
        protocol = data["protocol"]
        line = self._make_ruby_system(board, CHI_VIRTUAL_NETWORKS)
        network = self.ruby_system.network
        clk_domain = board.get_clock_domain()

        mem_ports = board.get_mem_ports()
        if len(mem_ports) != instance.num_nodes:
            raise ValueError(f"{len(mem_ports)} memory ports for {instance.num_nodes} nodes")
        homes, memory_controllers, node_groups = [], [], []
        for node, (mem_range, port) in enumerate(mem_ports):
            memory_controller = MemoryController(network, [mem_range], port)
            memory_controller.to_memory_controller_latency = protocol["memory_controller_latency"]
            memory_controller.ruby_system = self.ruby_system
            home = SimpleDirectory(network, line, clk_domain)
            # Adopted before the home names its memory controller downstream
            # (gem5 adopts an orphan SimObject into the first object that
            # refers to it); these names are the ones in stats and traces.
            group = SubSystem()
            group.home, group.memory_controller = home, memory_controller
            node_groups.append(group)
            home.cache.tagAccessLatency = protocol["home_tag_latency"]
            # This home serves exactly its node's memory: requesters pick
            # the home of an address by these ranges.
            home.addr_ranges = [mem_range]
            home.downstream_destinations = [memory_controller]
            _set_message_latency(home, protocol["message_latency"])
            home.ruby_system = self.ruby_system
            homes.append(home)
            memory_controllers.append(memory_controller)
        self.numa_nodes = node_groups

        cpu_ports = []
        clusters = []
        for i, core in enumerate(board.get_processor().get_cores()):
            l1i, l1d = (
                PrivateL1MOESICache(
                    size=f"{data[level]['size']}B",
                    assoc=data[level]["assoc"],
                    network=network,
                    core=core,
                    cache_line_size=line,
                    target_isa=ISA.X86,
                    clk_domain=clk_domain,
                )
                for level in ("l1i", "l1d")
            )
            l2 = PrivateL2Cache(
                f"{data['l2']['size']}B",
                data["l2"]["assoc"],
                network,
                line,
                clk_domain,
                protocol["l2_tag_latency"],
                protocol["l2_data_latency"],
            )
            # Adopted here, before the L1s name the L2 downstream.
            cluster = SubSystem()
            cluster.l1i, cluster.l1d, cluster.l2 = l1i, l1d, l2
            clusters.append(cluster)
            for cache in (l1i, l1d):
                cache.cache.tagAccessLatency = protocol["l1_tag_latency"]
                cache.cache.dataAccessLatency = protocol["l1_data_latency"]
                cache.downstream_destinations = [l2]
            l2.downstream_destinations = homes
            for cache in (l1i, l1d, l2):
                _set_message_latency(cache, protocol["message_latency"])
                cache.ruby_system = self.ruby_system

            l1i.sequencer = RubySequencer(
                version=i,
                dcache=NULL,
                clk_domain=clk_domain,
                deadlock_threshold=protocol["deadlock_threshold"],
            )
            l1d.sequencer = RubySequencer(
                version=i,
                dcache=l1d.cache,
                clk_domain=clk_domain,
                deadlock_threshold=protocol["deadlock_threshold"],
            )
            if board.has_io_bus():
                l1d.sequencer.connectIOPorts(board.get_io_bus())
            core.connect_icache(l1i.sequencer.in_ports)
            core.connect_dcache(l1d.sequencer.in_ports)
            core.connect_walker_ports(l1d.sequencer.in_ports, l1i.sequencer.in_ports)
            core.connect_interrupt(l1d.sequencer.interrupt_out_port, l1d.sequencer.in_ports)
            cpu_ports.append([l1i, l1d, l2])

        dma_controllers = []
        if board.has_dma_ports():
            for i, port in enumerate(board.get_dma_ports()):
                dma = DMARequestor(network, line, clk_domain)
                dma.sequencer = RubySequencer(version=instance.num_cpus + i, in_ports=port)
                dma.sequencer.dcache = NULL
                dma.ruby_system = self.ruby_system
                dma.sequencer.ruby_system = self.ruby_system
                dma.downstream_destinations = homes
                dma_controllers.append(dma)

        # Two sequencers (I and D) per CPU, plus one per DMA port.
        self.ruby_system.num_of_sequencers = 2 * instance.num_cpus + len(dma_controllers)
        self.core_clusters = clusters
        if dma_controllers:
            self.dma_controllers = dma_controllers

        controllers_by_node = [[homes[node], memory_controllers[node]] for node in range(instance.num_nodes)]
        network.connect(controllers_by_node, dma_controllers, cpu_ports)

        self.ruby_system.sys_port_proxy = RubyPortProxy()
        board.connect_system_port(self.ruby_system.sys_port_proxy.in_ports)
