"""A cache line's name: kernel symbols + offset from System.map, the lock registry's names, else unknown.

System.map lists each kernel symbol's virtual start address, sorted,
without sizes. A symbol is taken to extend to the next symbol's start
(what `perf` and `addr2line` assume too), so every byte of the kernel
image [_text, _end) is in exactly one symbol. Physical = virtual -
kernel_image_base (analysis/data/static_locks.toml, checked against the
guest's own registry by analysis/locks.py). Symbols below that base are
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

A line with no System.map symbol and no registered lock is outside the
image in memory the guest does not describe: "unknown (heap)" (slab
objects, per-CPU areas, page tables, stacks; see analysis/README.md for
what the guest would have to report). Without the run's System.map a line
that no registered lock names is "unknown (no System.map)".
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from analysis.hotlines.errors import HotlinesError
from analysis.protocol_trace import TracedLock

HEX = 16
MAP_FIELDS = 3  # address, type, name
IMAGE_START = "_text"
IMAGE_END = "_end"
STATIC_PREFIX = "static:"  # analysis/locks.py names a System.map lock so
SEPARATOR = " | "
UNKNOWN_HEAP = "unknown (heap)"
UNKNOWN_NO_MAP = "unknown (no System.map)"


@dataclass(frozen=True)
class SymbolTable:
    """The kernel image's symbols by physical start address."""

    source: str
    starts: tuple[int, ...]
    names: tuple[str, ...]
    image_start: int
    image_end: int

    def on_line(self, line: int, line_bytes: int) -> list[tuple[int, str]]:
        """(start, name) of the symbol holding the line's first byte and of every symbol starting inside the line."""
        if not self.image_start <= line < self.image_end:
            return []
        holder = bisect_right(self.starts, line) - 1
        first = bisect_left(self.starts, self.starts[holder]) if holder >= 0 else 0  # its aliases too
        last = bisect_left(self.starts, min(line + line_bytes, self.image_end))
        return [(self.starts[i], self.names[i]) for i in range(first, last)]


@lru_cache(maxsize=None)
def read_system_map(path: Path, image_base: int) -> SymbolTable:
    """A System.map's image symbols (read once per file: every run of a kernel build shares it)."""
    symbols: list[tuple[int, str]] = []
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
    symbols.sort()
    by_name = {name: start for start, name in symbols}
    for bound in (IMAGE_START, IMAGE_END):
        if bound not in by_name:
            raise HotlinesError(f"{path}: no symbol {bound}: the image's bounds are not known")
    return SymbolTable(str(path), tuple(s for s, _ in symbols), tuple(n for _, n in symbols), by_name[IMAGE_START], by_name[IMAGE_END])


def locks_on_line(locks: Iterable[TracedLock], line: int, line_bytes: int) -> list[tuple[int, str]]:
    return sorted((lock.physical, lock.name) for lock in locks if lock.physical < line + line_bytes and lock.physical + max(lock.size, 1) > line)


def symbolise(line: int, line_bytes: int, symbols: SymbolTable | None, locks: Iterable[TracedLock]) -> tuple[str, int | None]:
    """(name, offset) of a line: see the module's docstring for which object comes first and why."""
    named = symbols.on_line(line, line_bytes) if symbols is not None else []
    seen = {name for _, name in named}
    registered = [(start, name) for start, name in locks_on_line(locks, line, line_bytes) if name.removeprefix(STATIC_PREFIX) not in seen]
    objects = sorted([(start, 0, name) for start, name in named] + [(start, 1, name) for start, name in registered])
    if not objects:
        return (UNKNOWN_HEAP if symbols is not None else UNKNOWN_NO_MAP), None
    return SEPARATOR.join(name for _, _, name in objects), line - objects[0][0]
