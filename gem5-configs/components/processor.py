"""The processor: a fast-forward core that hands over to a detailed core.

The slot that is active at start is always called `boot`, whatever its CPU
type, so a checkpoint written by the fast-forward cores restores into
whatever cores are built in the `boot` slot: fast-forward ones that hand
over when the testcase asks, or, with run.py's --restore-detailed, the
detailed ones (gem5 checkpoints are keyed by SimObject name; switched-out
CPUs save no thread state).
"""

from __future__ import annotations

from typing import Optional

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.boards.mem_mode import MemMode
from gem5.components.processors.cpu_types import CPUTypes, get_mem_mode
from gem5.components.processors.simple_core import SimpleCore
from gem5.components.processors.switchable_processor import SwitchableProcessor
from gem5.isas import ISA
from gem5.utils.override import overrides

BOOT_SLOT = "boot"
ROI_SLOT = "roi"

CPU_TYPE_BY_NAME = {
    "atomic": CPUTypes.ATOMIC,
    "kvm": CPUTypes.KVM,
    "timing": CPUTypes.TIMING,
    "o3": CPUTypes.O3,
}


class FastForwardProcessor(SwitchableProcessor):
    """`boot` cores start; `switch_to_roi()` hands over to the `roi` cores.

    With `roi_type=None` there is one slot only (a run restored with
    --restore-detailed, which starts on its detailed cores).
    """

    def __init__(
        self,
        boot_type: CPUTypes,
        roi_type: Optional[CPUTypes],
        num_cores: int,
        line_bytes: int,
    ) -> None:
        slots = {BOOT_SLOT: self._cores(boot_type, num_cores, line_bytes)}
        if roi_type is not None:
            slots[ROI_SLOT] = self._cores(roi_type, num_cores, line_bytes)
        self._boot_mem_mode = get_mem_mode(boot_type)
        self._on_roi = roi_type is None
        super().__init__(switchable_cores=slots, starting_cores=BOOT_SLOT)

    @staticmethod
    def _cores(cpu_type: CPUTypes, num_cores: int, line_bytes: int) -> list:
        cores = [SimpleCore(cpu_type=cpu_type, core_id=i, isa=ISA.X86) for i in range(num_cores)]
        for core in cores:
            if cpu_type == CPUTypes.KVM:
                # Nested or restricted hosts have no usable perf counters
                # (gem5 v24 facts §7); without them KVM still runs.
                core.get_simobject().usePerf = False
            if cpu_type == CPUTypes.O3:
                # O3 fatals when its fetch buffer is wider than a cache line.
                core.get_simobject().fetchBufferSize = line_bytes
        return cores

    @overrides(SwitchableProcessor)
    def incorporate_processor(self, board: AbstractBoard) -> None:
        super().incorporate_processor(board=board)
        mem_mode = self._boot_mem_mode
        if board.get_cache_hierarchy().is_ruby() and mem_mode == MemMode.ATOMIC:
            # Ruby answers atomic accesses only with caches bypassed
            # (RubyPort::MemResponsePort::recvAtomic panics otherwise):
            # atomic fast-forward on Ruby reads and writes memory directly.
            mem_mode = MemMode.ATOMIC_NONCACHING
        board.set_mem_mode(mem_mode)

    def switch_to_roi(self) -> bool:
        """Hand over to the detailed cores; False if already on them."""
        if self._on_roi:
            return False
        self.switch_to_processor(ROI_SLOT)
        self._on_roi = True
        return True
