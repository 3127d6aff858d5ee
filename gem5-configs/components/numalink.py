"""A NUMAlink-like SimpleNetwork: a hub router per node joined by a router tree.

Every controller of a node (its CPUs' L1s, its L2 bank, its directory)
attaches to the node's hub, or, for a CPU's private caches when the
machine has `cpu_port_latency` (chi-numa), to a port switch of that CPU
joined to the hub (the CPU's front-side bus interface: its L1s reach its
L2 without crossing the hub); hubs are the leaves of a tree of routers
whose fan-out per level comes from the machine file (`tree_fanout`), so
two nodes whose lowest common router sits at level L are 2L-1 routers
apart, the hop count the kernel's distances are derived from
(machine.MachineInstance.router_hops). Links are one-way in Ruby, so
every tree edge is two links. I/O (DMA) attaches to node 0's hub.
"""

from __future__ import annotations

from m5.objects import SimpleExtLink, SimpleIntLink, SimpleNetwork, Switch

VIRTUAL_NETWORKS = 3  # MESI_Two_Level uses three virtual networks
CHI_VIRTUAL_NETWORKS = 4  # CHI: request, snoop, response, data


def _switch(router_id: int, latency: int) -> Switch:
    # SimpleNetwork's Switch routes with int_/ext_routing_latency; their
    # defaults are BasicRouter's class default (1), not this `latency`.
    return Switch(
        router_id=router_id,
        latency=latency,
        int_routing_latency=latency,
        ext_routing_latency=latency,
    )


class NumaLinkNetwork(SimpleNetwork):
    def __init__(self, ruby_system, machine_instance, virtual_networks: int = VIRTUAL_NETWORKS) -> None:
        super().__init__()
        self.ruby_system = ruby_system
        self.number_of_virtual_networks = virtual_networks
        self.netifs = []
        self._instance = machine_instance

    def connect(self, controllers_by_node: list[list], io_controllers: list, cpu_ports: list[list] | None = None) -> None:
        """Attach controllers: `controllers_by_node[n]` and `cpu_ports[c]` (a
        CPU's private caches, behind its port switch on its node's hub)."""
        instance = self._instance
        network = instance.data["network"]
        hub_latency = instance.cycles(network["node_router_latency"])
        router_latency = instance.cycles(network["router_latency"])
        link_latency = instance.cycles(network["link_latency"])
        ext_latency = instance.cycles(network["ext_link_latency"])

        # Every switch first, adopted under names that say what it is (gem5
        # names a SimObject after the first attribute that holds it; a link
        # would otherwise adopt its switch as `src_node`). Stats then read
        # network.hubs<N> (a node's SHUB), network.numalink_routers<N> (the
        # router tree: every message one of them sends crossed one NUMAlink
        # router) and network.cpu_ports<N>.
        hubs = [_switch(node, hub_latency) for node in range(instance.num_nodes)]
        tree_routers, tree_edges = [], []  # (child, parent) pairs
        level = hubs[:]  # the routers of the level being grouped
        for fanout in instance.tree_levels():
            parents = []
            for first in range(0, len(level), fanout):
                parent = _switch(len(hubs) + len(tree_routers), router_latency)
                tree_routers.append(parent)
                parents.append(parent)
                tree_edges.extend((child, parent) for child in level[first:first + fanout])
            level = parents
        cpu_node = instance.cpu_to_node()
        port_latency = instance.cycles(network["cpu_port_latency"]) if cpu_ports else 0
        ports = [_switch(len(hubs) + len(tree_routers) + cpu, port_latency) for cpu in range(len(cpu_ports or []))]
        self.hubs = hubs
        if tree_routers:
            self.numalink_routers = tree_routers
        if ports:
            self.cpu_ports = ports
        self.routers = hubs + tree_routers + ports

        int_links = []

        def join(child: Switch, parent: Switch, latency: int) -> None:
            for src, dst in ((child, parent), (parent, child)):
                int_links.append(
                    SimpleIntLink(
                        link_id=len(int_links),
                        src_node=src,
                        dst_node=dst,
                        latency=latency,
                        bandwidth_factor=network["bandwidth_factor"],
                    )
                )

        for child, parent in tree_edges:
            join(child, parent, link_latency)
        for cpu, port in enumerate(ports):
            join(port, hubs[cpu_node[cpu]], ext_latency)

        ext_links = []
        for cpu, controllers in enumerate(cpu_ports or []):
            for controller in controllers:
                ext_links.append(
                    SimpleExtLink(link_id=len(ext_links), ext_node=controller, int_node=ports[cpu], latency=ext_latency)
                )
        for node, controllers in enumerate(controllers_by_node):
            for controller in controllers:
                ext_links.append(
                    SimpleExtLink(link_id=len(ext_links), ext_node=controller, int_node=hubs[node], latency=ext_latency)
                )
        for controller in io_controllers:
            ext_links.append(
                SimpleExtLink(link_id=len(ext_links), ext_node=controller, int_node=hubs[0], latency=ext_latency)
            )

        self.int_links = int_links
        self.ext_links = ext_links
        self.setup_buffers()
