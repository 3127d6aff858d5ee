"""A cache line's name: kernel symbols + offset from System.map, the lock registry's names, else unknown.

System.map lists each kernel symbol's virtual start address, sorted,
without sizes. A symbol is taken to extend to the next symbol's start
(what `perf` and `addr2line` assume too), so every byte of the kernel
image [_text, _end) is in exactly one symbol. Physical = virtual -
kernel_image_base (analysis/data/static_locks.toml, checked against the
guest's own registry by analysis/traffic/locks.py). Symbols below that base are
per-CPU offsets (the .data..percpu section is linked at 0) or absolute
values, not addresses of the image: they name no line.

A line can hold several objects: the symbol its first byte is in, any
symbol that starts inside it, and the locks the guest registered on it
(static ones and dynamic ones in slab or other heap memory). The name is
all of them in address order, " | " between them (a line shared by two
objects is a false-sharing candidate, so both are shown); the System.map
symbol is listed before a registered lock at the same address. The offset
is the line's first byte relative to the first of them (perf's
symbol+offset): 0 or more for the symbol holding the line's first byte,
which always comes first when there is one; negative when the first
object named is a registered lock that begins inside the line.

Run-time memory is named from the guest's memory map (result.json
`memory` of the ROI's testcase, kernel/patches/README.md): a slab line
is `slab:<cache>`, its offset the line's first byte in its object; a
per-CPU line is `percpu:<symbol> [cpu N]`, the symbol from System.map's
per-CPU symbols (linked at 0, at their offset in each CPU's area); a
large system hash is `table:<name>` (offset into the table), a kernel
stack `stack:<comm>/<pid>` (offset from its lowest byte), and whole
pages `page table`, `user page (anon)`, `page cache`, `reserved page` or
`free page (when the map was read)` (offset in the page). That name is one more object on the line, ordered
by its start like the others. Two boot-time allocations are named before
the reserved pages they are in: a node's pg_data_t is `pgdat:node<N>`,
followed by each of its listed fields with a byte on the line
(`zone.Normal.lock`, `__lruvec.lru_lock`, ...), and a struct page is
`struct page of <what its frame holds>` (`struct page of page cache`,
`struct page of slab:dentry`; offset in the struct page). A CPU's
per-CPU unit goes on past its static section, in the reserved pages
that start with it: `percpu (dynamic) [cpu N]` (alloc_percpu() memory).

Parts of the image are freed after boot and reused by the page allocator
(arch/x86/mm/init.c, init_64.c): the init sections [__init_begin,
__init_end), the text/rodata gap [PFN_ALIGN(_etext), __start_rodata) and
the rodata/data gap [PFN_ALIGN(__end_rodata), _sdata). System.map names
nothing there; the brk area [__brk_base, __brk_limit) holds early page
tables up to a run-time bound and free pages after it, so System.map's
aliases at its start name nothing there either ("unknown (brk area)").

A line in one of gem5 X86's device address spaces (far above memory: a
local APIC's registers, the I/O ports, PCI config) is named by its space
before anything else (`io:local APIC [cpu N]`, device_space.py).

A line that nothing names is in memory the guest does not describe:
"unknown (heap)" (pages the kernel took from the page allocator for
itself: pipe buffers, block I/O pages, vmalloc areas).
Without the run's System.map a line that no registered lock or map names
is "unknown (no System.map)".
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from analysis.hotlines.device_space import load_device_spaces
from analysis.hotlines.errors import HotlinesError
from analysis.traffic.protocol_trace import TracedLock
from lockstudy.guest_output import MemoryRange

HEX = 16
MAP_FIELDS = 3  # address, type, name
IMAGE_START = "_text"
IMAGE_END = "_end"
STATIC_PREFIX = "static:"  # analysis/traffic/locks.py names a System.map lock so
SEPARATOR = " | "
UNKNOWN_HEAP = "unknown (heap)"
UNKNOWN_NO_MAP = "unknown (no System.map)"
UNKNOWN_BRK = "unknown (brk area)"
PAGE_BYTES = 4096
PERCPU_START, PERCPU_END = "__per_cpu_start", "__per_cpu_end"
BRK_START, BRK_END = "__brk_base", "__brk_limit"
# (first symbol, rounded up to a page?, end symbol): image ranges freed after boot (module docstring)
FREED_AFTER_BOOT = (("__init_begin", False, "__init_end"), ("_etext", True, "__start_rodata"), ("__end_rodata", True, "_sdata"))
SLAB, PERCPU, TABLE, STACK = "slab", "percpu", "table", "stack"
NODE, FIELD, MEMMAP = "node", "field", "memmap"
PERCPU_DYNAMIC = "percpu-dynamic"  # derived, not in the guest's map (MemoryMap.of)
RESERVED = "reserved"
STRUCT_PAGE_OF = "struct page of "
# kinds of whole pages, and the name a line in one gets (its offset: in the page)
PAGE_KINDS = {"pagetable": "page table", "anon": "user page (anon)", "file": "page cache", "reserved": "reserved page", "free": "free page (when the map was read)"}


def _page_up(address: int) -> int:
    return -(-address // PAGE_BYTES) * PAGE_BYTES


@dataclass(frozen=True)
class SymbolTable:
    """The kernel image's symbols by physical start address."""

    source: str
    starts: tuple[int, ...]
    names: tuple[str, ...]
    image_start: int
    image_end: int
    freed: tuple[tuple[int, int], ...] = ()  # [start, end) of image parts freed after boot
    brk: tuple[int, int] | None = None
    percpu_starts: tuple[int, ...] = ()  # per-CPU symbols: offsets in each CPU's area
    percpu_names: tuple[str, ...] = ()

    def in_brk(self, line: int) -> bool:
        return self.brk is not None and self.brk[0] <= line < self.brk[1]

    def on_line(self, line: int, line_bytes: int) -> list[tuple[int, str]]:
        """(start, name) of the symbol holding the line's first byte and of every symbol starting inside the line."""
        if not self.image_start <= line < self.image_end or self.in_brk(line):
            return []
        if any(start <= line < end for start, end in self.freed):
            return []
        holder = bisect_right(self.starts, line) - 1
        first = bisect_left(self.starts, self.starts[holder]) if holder >= 0 else 0  # its aliases too
        last = bisect_left(self.starts, min(line + line_bytes, self.image_end))
        return [(self.starts[i], self.names[i]) for i in range(first, last)]

    def percpu_symbol(self, offset: int) -> tuple[int, str] | None:
        """(start, name) of the per-CPU symbol holding this offset of a CPU's area."""
        index = bisect_right(self.percpu_starts, offset) - 1
        return (self.percpu_starts[index], self.percpu_names[index]) if index >= 0 else None


@lru_cache(maxsize=None)
def read_system_map(path: Path, image_base: int) -> SymbolTable:
    """A System.map's image symbols (read once per file: every run of a kernel build shares it)."""
    symbols: list[tuple[int, str]] = []
    low: list[tuple[int, str]] = []  # below the image base: per-CPU offsets and absolute values
    try:
        text = path.read_text()
    except OSError as exc:
        raise HotlinesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if len(words) != MAP_FIELDS:
            raise HotlinesError(f"{path}:{number}: not 'address type name': {line!r}")
        try:
            address = int(words[0], HEX)
        except ValueError:
            raise HotlinesError(f"{path}:{number}: address {words[0]!r} is not hex") from None
        if address >= image_base:
            symbols.append((address - image_base, words[2]))
        else:
            low.append((address, words[2]))
    symbols.sort()
    by_name = {name: start for start, name in symbols}
    for bound in (IMAGE_START, IMAGE_END):
        if bound not in by_name:
            raise HotlinesError(f"{path}: no symbol {bound}: the image's bounds are not known")
    freed = tuple(
        (_page_up(by_name[first]) if round_up else by_name[first], by_name[end])
        for first, round_up, end in FREED_AFTER_BOOT
        if first in by_name and end in by_name
    )
    brk = (by_name[BRK_START], by_name[BRK_END]) if BRK_START in by_name and BRK_END in by_name else None
    low_by_name = {name: address for address, name in low}
    percpu: list[tuple[int, str]] = []
    if PERCPU_START in low_by_name and PERCPU_END in low_by_name:
        begin, end = low_by_name[PERCPU_START], low_by_name[PERCPU_END]
        percpu = sorted((address - begin, name) for address, name in low if begin <= address < end and name != PERCPU_START)
    return SymbolTable(
        str(path), tuple(s for s, _ in symbols), tuple(n for _, n in symbols), by_name[IMAGE_START], by_name[IMAGE_END],
        freed, brk, tuple(a for a, _ in percpu), tuple(n for _, n in percpu),
    )  # fmt: skip


@dataclass(frozen=True)
class _Ranges:
    """Ranges that do not overlap, by physical start."""

    starts: tuple[int, ...]
    ranges: tuple[MemoryRange, ...]

    @classmethod
    def of(cls, ranges: Iterable[MemoryRange]) -> "_Ranges":
        ordered = sorted(ranges, key=lambda r: r.physical)
        return cls(tuple(r.physical for r in ordered), tuple(ordered))

    def holding(self, address: int) -> MemoryRange | None:
        index = bisect_right(self.starts, address) - 1
        if index < 0:
            return None
        found = self.ranges[index]
        return found if address < found.physical + found.size else None

    def overlapping(self, start: int, end: int) -> list[MemoryRange]:
        first = max(bisect_right(self.starts, start) - 1, 0)
        last = bisect_left(self.starts, end)
        return [r for r in self.ranges[first:last] if r.physical < end and start < r.physical + r.size]


@dataclass(frozen=True)
class MemoryMap:
    """One ROI's memory map from the guest (kernel/patches/README.md).

    The map's kinds overlap: the node data and the struct pages are
    boot-time allocations, so their pages are listed as reserved too, and
    a node's fields lie inside its pg_data_t. Objects are the ranges of
    every kind but fields and whole pages (they do not overlap each
    other); a line's object is looked up there first, then in the pages."""

    objects: _Ranges
    pages: _Ranges
    fields: _Ranges

    @classmethod
    def of(cls, ranges: Iterable[MemoryRange]) -> "MemoryMap":
        listed = list(ranges)
        listed += _percpu_dynamic(listed)
        return cls(
            _Ranges.of(r for r in listed if r.kind not in PAGE_KINDS and r.kind != FIELD),
            _Ranges.of(r for r in listed if r.kind in PAGE_KINDS),
            _Ranges.of(r for r in listed if r.kind == FIELD),
        )

    def holding(self, line: int) -> MemoryRange | None:
        """The most specific range holding the address: an object's, else its page's."""
        return self.objects.holding(line) or self.pages.holding(line)

    def fields_on(self, line: int, line_bytes: int) -> list[tuple[int, str]]:
        """(start, name) of each node data field with a byte on the line."""
        return [(r.physical, r.name) for r in self.fields.overlapping(line, line + line_bytes)]

    def frame_name(self, frame: int) -> str:
        """What a page frame holds, as the map names the object at its start."""
        named = self.object_on(frame * PAGE_BYTES, None, describe_frames=False)
        return named[1] if named is not None else UNKNOWN_HEAP

    def object_on(self, line: int, symbols: SymbolTable | None, describe_frames: bool = True) -> tuple[int, str] | None:
        """(start, name) of the run-time object holding the line's first byte, or None."""
        found = self.holding(line)
        if found is None:
            return None
        offset = line - found.physical
        if found.kind == PERCPU_DYNAMIC:
            return found.physical, f"percpu (dynamic) [cpu {found.name}]"
        if found.kind == NODE:
            return found.physical, f"pgdat:node{found.name}"
        if found.kind == MEMMAP and found.object_bytes > 0:
            index, in_page = divmod(offset, found.object_bytes)
            frame = f"frame {found.table_offset + index}" if not describe_frames else self.frame_name(found.table_offset + index)
            return line - in_page, f"{STRUCT_PAGE_OF}{frame}"
        in_object = slab_offset(found, line)
        if in_object is not None:
            into, tail = in_object
            return line - into, f"slab:{found.name}" + (" (slab tail)" if tail else "")
        if found.kind == PERCPU:
            symbol = symbols.percpu_symbol(offset) if symbols is not None else None
            if symbol is None:
                return found.physical, f"percpu [cpu {found.name}]"
            return found.physical + symbol[0], f"percpu:{symbol[1]} [cpu {found.name}]"
        if found.kind == TABLE:
            return found.physical - found.table_offset, f"table:{found.name}"
        if found.kind == STACK:
            return found.physical, f"stack:{found.name}"
        if found.kind in PAGE_KINDS:
            return line - offset % PAGE_BYTES, PAGE_KINDS[found.kind]
        return found.physical, found.kind


def slab_offset(found: MemoryRange, line: int) -> tuple[int, bool] | None:
    """(the line's first byte in its slab object, whether it is in the slab's tail where no whole object fits);
    None unless `found` is a slab range with its slab and object sizes."""
    if found.kind != SLAB or found.slab_bytes <= 0 or found.object_bytes <= 0:
        return None
    in_slab = (line - found.physical) % found.slab_bytes
    tail = (in_slab // found.object_bytes + 1) * found.object_bytes > found.slab_bytes
    return in_slab % found.object_bytes, tail


def _percpu_dynamic(ranges: list[MemoryRange]) -> list[MemoryRange]:
    """Each CPU's per-CPU area past its static section: the reserved and dynamic parts of its unit.

    The map lists a CPU's static per-CPU section only; its unit goes on
    with the first chunk's reserved and dynamic areas (alloc_percpu():
    zones' page lists, node statistics, per-CPU counters), all boot-time
    memory, so the reserved pages starting at the unit's first byte end
    where the unit ends (the embedding allocator gives back the rest)."""
    reserved = _Ranges.of(r for r in ranges if r.kind == RESERVED)
    derived = []
    for area in (r for r in ranges if r.kind == PERCPU):
        pages = reserved.holding(area.physical)
        start = area.physical + area.size
        if pages is not None and pages.physical + pages.size > start:
            derived.append(MemoryRange(PERCPU_DYNAMIC, start, pages.physical + pages.size - start, name=area.name))
    return derived


def locks_on_line(locks: Iterable[TracedLock], line: int, line_bytes: int) -> list[tuple[int, str]]:
    return sorted((lock.physical, lock.name) for lock in locks if lock.physical < line + line_bytes and lock.physical + max(lock.size, 1) > line)


def symbolise(
    line: int, line_bytes: int, symbols: SymbolTable | None, locks: Iterable[TracedLock], memory: MemoryMap | None = None
) -> tuple[str, int | None]:
    """(name, offset) of a line: see the module's docstring for which object comes first and why."""
    device = load_device_spaces().name(line)
    if device is not None:
        return device
    named = symbols.on_line(line, line_bytes) if symbols is not None else []
    seen = {name for _, name in named}
    registered = [(start, name) for start, name in locks_on_line(locks, line, line_bytes) if name.removeprefix(STATIC_PREFIX) not in seen]
    run_time = memory.object_on(line, symbols) if memory is not None else None
    if run_time is not None and named and run_time[1] in PAGE_KINDS.values():
        run_time = None  # a page kind (the image's pages are reserved) says less than the symbol the line is in
    fields = memory.fields_on(line, line_bytes) if memory is not None else []
    objects = sorted(
        [(start, 0, name) for start, name in named]
        + ([(run_time[0], 1, run_time[1])] if run_time else [])
        + [(start, 2, name) for start, name in fields]
        + [(start, 3, name) for start, name in registered]
    )
    if not objects:
        if symbols is not None and symbols.in_brk(line):
            return UNKNOWN_BRK, None
        return (UNKNOWN_HEAP if symbols is not None else UNKNOWN_NO_MAP), None
    return SEPARATOR.join(name for _, _, name in objects), line - objects[0][0]
