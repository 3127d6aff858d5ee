"""A NUMAlink-like SimpleNetwork: a hub router per node joined by a router tree.

Every controller of a node (its CPUs' L1s, its L2 bank, its directory)
attaches to the node's hub; hubs are the leaves of a tree of routers
whose fan-out per level comes from the machine file (`tree_fanout`), so
two nodes whose lowest common router sits at level L are 2L-1 routers
apart, the hop count the kernel's distances are derived from
(machine.MachineInstance.router_hops). Links are one-way in Ruby, so
every tree edge is two links. I/O (DMA) attaches to node 0's hub.
"""

from __future__ import annotations

from m5.objects import SimpleExtLink, SimpleIntLink, SimpleNetwork, Switch

VIRTUAL_NETWORKS = 3  # MESI_Two_Level uses three virtual networks


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
    def __init__(self, ruby_system, machine_instance) -> None:
        super().__init__()
        self.ruby_system = ruby_system
        self.number_of_virtual_networks = VIRTUAL_NETWORKS
        self.netifs = []
        self._instance = machine_instance

    def connect(self, controllers_by_node: list[list], io_controllers: list) -> None:
        instance = self._instance
        network = instance.data["network"]
        hub_latency = instance.cycles(network["node_router_latency"])
        router_latency = instance.cycles(network["router_latency"])
        link_latency = instance.cycles(network["link_latency"])
        ext_latency = instance.cycles(network["ext_link_latency"])

        routers = [_switch(node, hub_latency) for node in range(instance.num_nodes)]
        int_links = []

        def join(child: Switch, parent: Switch) -> None:
            for src, dst in ((child, parent), (parent, child)):
                int_links.append(
                    SimpleIntLink(
                        link_id=len(int_links),
                        src_node=src,
                        dst_node=dst,
                        latency=link_latency,
                        bandwidth_factor=network["bandwidth_factor"],
                    )
                )

        level = routers[:]  # the routers of the level being grouped
        for fanout in instance.tree_levels():
            parents = []
            for first in range(0, len(level), fanout):
                parent = _switch(len(routers), router_latency)
                routers.append(parent)
                parents.append(parent)
                for child in level[first:first + fanout]:
                    join(child, parent)
            level = parents

        ext_links = []
        for node, controllers in enumerate(controllers_by_node):
            for controller in controllers:
                ext_links.append(
                    SimpleExtLink(link_id=len(ext_links), ext_node=controller, int_node=routers[node], latency=ext_latency)
                )
        for controller in io_controllers:
            ext_links.append(
                SimpleExtLink(link_id=len(ext_links), ext_node=controller, int_node=routers[0], latency=ext_latency)
            )

        self.routers = routers
        self.int_links = int_links
        self.ext_links = ext_links
        self.setup_buffers()
