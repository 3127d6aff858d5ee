"""The board: gem5's X86Board plus what booting our 6.1 kernel needs."""

from __future__ import annotations

from typing import List

from m5.objects import (
    X86ACPIMadt,
    X86ACPIMadtIntSourceOverride,
    X86ACPIMadtIOAPIC,
    X86ACPIMadtLAPIC,
    X86IntelMPIOAPIC,
    X86IntelMPIOIntAssignment,
    X86IntelMPProcessor,
)

from gem5.components.boards.kernel_disk_workload import KernelDiskWorkload
from gem5.components.boards.x86_board import X86Board
from gem5.utils.override import overrides

# ACPI MADT flags: a processor-local APIC record is usable when bit 0 is set.
MADT_LAPIC_ENABLED = 1
# The ISA bus id the X86Board's Intel MP table uses for legacy IRQs.
MP_TABLE_ISA_BUS_ID = 1
# In an ACPI interrupt source override the source bus is always ISA (0).
ACPI_ISA_BUS = 0
OEM_ID = "LOCKST"


class LockstudyX86Board(X86Board):
    """X86Board with an ACPI MADT, a configurable root device and line size.

    gem5 v24.0.0.1's X86Board describes CPUs and interrupts only in an
    Intel MP table; kernels of the 6.x era may insist on an ACPI MADT
    (gem5 issue #1504). With `acpi_madt` the MADT is built from the MP
    table the board has just written, so the two always agree.
    """

    def __init__(
        self,
        clk_freq: str,
        processor,
        memory,
        cache_hierarchy,
        cache_line_size: int,
        root_device: str,
        acpi_madt: bool,
    ) -> None:
        super().__init__(
            clk_freq=clk_freq,
            processor=processor,
            memory=memory,
            cache_hierarchy=cache_hierarchy,
        )
        self._root_device = root_device
        # Read by caches (classic block_size) and by our Ruby hierarchy.
        self.cache_line_size = cache_line_size
        if acpi_madt:
            self._add_acpi_madt()

    def _add_acpi_madt(self) -> None:
        records = []
        for entry in self.workload.intel_mp_table.base_entries:
            if isinstance(entry, X86IntelMPProcessor):
                records.append(
                    X86ACPIMadtLAPIC(
                        acpi_processor_id=int(entry.local_apic_id),
                        apic_id=int(entry.local_apic_id),
                        flags=MADT_LAPIC_ENABLED if bool(entry.enable) else 0,
                    )
                )
            elif isinstance(entry, X86IntelMPIOAPIC):
                records.append(X86ACPIMadtIOAPIC(id=int(entry.id), address=int(entry.address), int_base=0))
            elif (
                isinstance(entry, X86IntelMPIOIntAssignment)
                and str(entry.interrupt_type) == "INT"
                and int(entry.source_bus_id) == MP_TABLE_ISA_BUS_ID
            ):
                records.append(
                    X86ACPIMadtIntSourceOverride(
                        bus_source=ACPI_ISA_BUS,
                        irq_source=int(entry.source_bus_irq),
                        sys_int=int(entry.dest_io_apic_intin),
                        flags=0,  # conforms to the bus: edge, active high for ISA
                    )
                )
        madt = X86ACPIMadt(local_apic_address=0, records=records, oem_id=OEM_ID)
        rsdp = self.workload.acpi_description_table_pointer
        rsdp.oem_id = OEM_ID
        rsdp.rsdt.oem_id = OEM_ID
        rsdp.xsdt.oem_id = OEM_ID
        rsdp.rsdt.entries = [madt]
        rsdp.xsdt.entries = [madt]

    @overrides(KernelDiskWorkload)
    def get_disk_device(self) -> str:
        # X86Board says /dev/hda; with CONFIG_ATA_PIIX the kernel names it sda.
        return self._root_device

    @overrides(KernelDiskWorkload)
    def get_default_kernel_args(self) -> List[str]:
        # X86Board's defaults minus `disk_device=`, which no kernel reads.
        return [arg for arg in super().get_default_kernel_args() if not arg.startswith("disk_device=")]
