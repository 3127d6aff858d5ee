"""The 2-node QEMU machine the kernel bench tests boot, and System.map look-ups.

4 vCPUs in two sockets, one per node: with a plain -smp 4 QEMU puts the four
CPUs in one LLC and the kernel complains when lockstudy.numa= splits it
(kernel/patches/README.md). The layout comes from the command line, as
under gem5 (no SRAT).
"""

from __future__ import annotations

from pathlib import Path

CPUS = 4
SOCKETS = 2
MEMORY_MIB = 512
NUMA_VALUE = "2:0-1/2-3:10,20,20,10"
NUMA_ARG = f"lockstudy.numa={NUMA_VALUE}"
CPU_NODE = {0: 0, 1: 0, 2: 1, 3: 1}
# The kernel bench's lock: the first member of this static object.
BENCH_LOCK_SYMBOL = "bench_area"


def symbol_address(system_map: Path, name: str) -> int:
    for line in system_map.read_text().splitlines():
        words = line.split()
        if len(words) == 3 and words[2] == name:
            return int(words[0], 16)
    raise AssertionError(f"{name} not in {system_map}")
