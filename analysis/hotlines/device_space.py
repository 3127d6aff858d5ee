"""A line in one of gem5 X86's device address spaces: `io:local APIC [cpu N]`, `io:I/O ports`, ...

gem5's X86 puts the local APICs, the I/O ports, the APICs' messages and
PCI configuration space at physical addresses far above memory
(analysis/data/device_spaces.toml gives them, with gem5's sources). No
memory map or System.map describes them, so before this a line there
read `unknown (heap)`; on the bus machine a CPU's write of its local
APIC's EOI or interrupt command register crosses the bus and is counted,
so such lines do reach a profile. A line there is named by its space
(and, for a per-APIC space, the CPU whose block it is in), its offset is
its first byte in that block or space, and its fields are the registers
on it (`PPR, EOI`).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.hotlines.errors import HotlinesError
from lockstudy.files import read_toml, typed_field

SPACES_FILE = Path(__file__).resolve().parent.parent / "data" / "device_spaces.toml"
PREFIX = "io:"
ADDRESS_LIMIT = 1 << 64


@dataclass(frozen=True)
class DeviceSpace:
    name: str
    start: int
    per_cpu_bytes: int | None
    registers: tuple[tuple[int, str], ...]  # (offset in a CPU's block, name), sorted


@dataclass(frozen=True)
class DeviceSpaces:
    source: str
    spaces: tuple[DeviceSpace, ...]  # by start
    starts: tuple[int, ...]

    def holding(self, line: int) -> DeviceSpace | None:
        index = bisect_right(self.starts, line) - 1
        return self.spaces[index] if index >= 0 else None

    def name(self, line: int) -> tuple[str, int] | None:
        """(name, offset) of a line in a device space; None for a line below them all (memory)."""
        space = self.holding(line)
        if space is None:
            return None
        into = line - space.start
        if space.per_cpu_bytes is None:
            return f"{PREFIX}{space.name}", into
        cpu, offset = divmod(into, space.per_cpu_bytes)
        return f"{PREFIX}{space.name} [cpu {cpu}]", offset

    def registers_on(self, line: int, line_bytes: int) -> str:
        """The registers with their first byte on the line, in address order ("" when none or not a device line)."""
        space = self.holding(line)
        if space is None or space.per_cpu_bytes is None:
            return ""
        first = (line - space.start) % space.per_cpu_bytes
        return ", ".join(name for offset, name in space.registers if first <= offset < first + line_bytes)


def _count(table: dict[str, Any], key: str, where: str, default: int) -> int:
    value = typed_field(table, key, int, where, default=default, error=HotlinesError)
    if value < 1:
        raise HotlinesError(f"{where}.{key}: {value} is not a positive count")
    return int(value)


def _registers(space: dict[str, Any], where: str, block: int | None) -> tuple[tuple[int, str], ...]:
    registers: list[tuple[int, str]] = []
    for index, entry in enumerate(typed_field(space, "register", list, where, default=[], error=HotlinesError)):
        at = f"{where}.register[{index}]"
        if not isinstance(entry, dict):
            raise HotlinesError(f"{at}: not a table")
        if block is None:
            raise HotlinesError(f"{at}: registers need the space's per_cpu_bytes (a register is at an offset in a CPU's block)")
        offset = typed_field(entry, "offset", int, at, error=HotlinesError)
        name = typed_field(entry, "name", str, at, error=HotlinesError)
        count, stride = _count(entry, "count", at, 1), _count(entry, "stride", at, 1)
        if offset < 0 or offset + (count - 1) * stride >= block:
            raise HotlinesError(f"{at}: offset {offset:#x} (and its {count} register(s)) not inside the {block:#x}-byte block")
        registers += [(offset + i * stride, f"{name}[{i}]" if count > 1 else name) for i in range(count)]
    offsets = [offset for offset, _ in registers]
    if len(set(offsets)) != len(offsets):
        raise HotlinesError(f"{where}.register: two registers at one offset")
    return tuple(sorted(registers))


@lru_cache(maxsize=None)
def load_device_spaces(path: Path = SPACES_FILE) -> DeviceSpaces:
    data = read_toml(path, HotlinesError)
    spaces = []
    for index, table in enumerate(typed_field(data, "space", list, str(path), error=HotlinesError)):
        where = f"{path}: space[{index}]"
        if not isinstance(table, dict):
            raise HotlinesError(f"{where}: not a table")
        start = typed_field(table, "start", int, where, error=HotlinesError)
        if not 0 < start < ADDRESS_LIMIT:
            raise HotlinesError(f"{where}.start: {start:#x} is not a 64-bit address above 0")
        block = _count(table, "per_cpu_bytes", where, 1) if "per_cpu_bytes" in table else None
        spaces.append(DeviceSpace(typed_field(table, "name", str, where, error=HotlinesError), start, block, _registers(table, where, block)))
    spaces.sort(key=lambda space: space.start)
    starts = [space.start for space in spaces]
    if len(set(starts)) != len(starts):
        raise HotlinesError(f"{path}: two spaces start at one address")
    return DeviceSpaces(str(path), tuple(spaces), tuple(starts))
