"""What both NUMA Ruby hierarchies share: a machine instance, a checked line, the RubySystem."""

from __future__ import annotations

from m5.objects import RubySystem

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.cachehierarchies.ruby.abstract_ruby_cache_hierarchy import AbstractRubyCacheHierarchy

from .numalink import NumaLinkNetwork


class NumaRubyHierarchy(AbstractRubyCacheHierarchy):
    """A Ruby hierarchy built from one size of a NUMA machine file."""

    def __init__(self, machine_instance) -> None:
        super().__init__()
        self._instance = machine_instance

    def _make_ruby_system(self, board: AbstractBoard, virtual_networks: int) -> int:
        """The RubySystem and its NUMAlink network; returns the board's line size.

        The stdlib leaves RubySystem.block_size_bytes at 64; ours is the
        board's line, which must be the machine's (run.py sets both)."""
        instance = self._instance
        line = board.get_cache_line_size()
        if int(line) != instance.line_bytes:
            raise ValueError(f"board line {int(line)} != machine line {instance.line_bytes}")
        self.ruby_system = RubySystem(block_size_bytes=instance.line_bytes)
        self.ruby_system.number_of_virtual_networks = virtual_networks
        self.ruby_system.network = NumaLinkNetwork(self.ruby_system, instance, virtual_networks)
        return line
