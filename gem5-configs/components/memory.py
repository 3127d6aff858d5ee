"""Memory: one fixed-latency memory per node, each over its own contiguous range."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from m5.objects import AddrRange, MemCtrl, Port, SimpleMemory

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.memory.abstract_memory_system import AbstractMemorySystem
from gem5.utils.override import overrides


class NodeLocalMemory(AbstractMemorySystem):
    """`len(node_ranges)` SimpleMemory modules, module i serving node i's range.

    The board hands over one range [0, size); it must be exactly the union
    of the node ranges the machine file derived, which are also the ranges
    the kernel is told (lockstudy.numa=) and the Ruby directories serve.
    With one node this is a single SDRAM-era memory behind the chipset.
    `latency_var_ps` > 0 perturbs a run: each access waits a uniformly
    random extra [0, latency_var_ps] (SimpleMemory.latency_var).
    """

    def __init__(self, node_ranges: List[Tuple[int, int]], latency_ps: int, bandwidth: str, latency_var_ps: int = 0) -> None:
        super().__init__()
        self._node_ranges = list(node_ranges)
        self._size = node_ranges[-1][1] - node_ranges[0][0]
        self.modules = [
            SimpleMemory(latency=f"{latency_ps}ps", latency_var=f"{latency_var_ps}ps", bandwidth=bandwidth)
            for _ in self._node_ranges
        ]

    @overrides(AbstractMemorySystem)
    def incorporate_memory(self, board: AbstractBoard) -> None:
        pass

    @overrides(AbstractMemorySystem)
    def get_mem_ports(self) -> Sequence[Tuple[AddrRange, Port]]:
        return [(module.range, module.port) for module in self.modules]

    @overrides(AbstractMemorySystem)
    def get_memory_controllers(self) -> List[MemCtrl]:
        return list(self.modules)

    @overrides(AbstractMemorySystem)
    def get_size(self) -> int:
        return self._size

    @overrides(AbstractMemorySystem)
    def set_memory_range(self, ranges: List[AddrRange]) -> None:
        if len(ranges) != 1 or int(ranges[0].start) != self._node_ranges[0][0] or ranges[0].size() != self._size:
            raise ValueError(
                f"NodeLocalMemory serves [{self._node_ranges[0][0]:#x}, {self._node_ranges[-1][1]:#x}); "
                f"the board asked for {ranges}"
            )
        self._board_range = ranges[0]
        for module, (start, end) in zip(self.modules, self._node_ranges):
            module.range = AddrRange(start=start, end=end)

    @overrides(AbstractMemorySystem)
    def get_uninterleaved_range(self) -> List[AddrRange]:
        return [self._board_range]
