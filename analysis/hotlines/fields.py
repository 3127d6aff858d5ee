"""The fields a line holds: the run's kernel build's struct layouts (lockstudy/kernel/layout/).

A line in a slab object is named `slab:<cache>` with its offset in the
object (symbols.py); when the run's kernel build has a layout for that
cache, its fields on the line are given too (`vfs_inode.i_rwsem.{owner,
osq, wait_lock, wait_list}`). A line in a kernel variable the layouts
name (System.map's symbol holding the line's first byte, or for a
per-CPU line `percpu:<symbol> [cpu N]` that CPU's copy) gets the
variable's fields on it (`__lock, nr_running, ttwu_pending` of
runqueues; an array's by index, `[1].{next, head}`). The layout file must carry the build id the
run booted: a rebuild moves fields, and another build's layout would name
the wrong ones, so then there are none (as for System.map).
"""

from __future__ import annotations

from typing import Any

from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.symbols import PERCPU, MemoryMap, SymbolTable, slab_offset
from analysis.traffic.locks import kernel_build_file
from lockstudy.kernel.layout.requests import LayoutError
from lockstudy.kernel.layout.store import LAYOUT_FILE, StructLayouts, read_layouts


def layouts_for(result: dict[str, Any]) -> StructLayouts | None:
    """The struct layouts of the run's kernel build (beside the vmlinux it booted), if there and of the build id it ran."""
    path = kernel_build_file(result, LAYOUT_FILE)
    if path is None:
        return None
    try:
        layouts = read_layouts(path)
    except LayoutError as exc:
        raise HotlinesError(str(exc)) from None
    ran = (result.get("provenance", {}).get("kernel", {}).get("build_info") or {}).get("build_id")
    return layouts if ran is not None and layouts.build_id == ran else None


def slab_fields(layouts: StructLayouts | None, memory: MemoryMap | None, line: int, line_bytes: int) -> str:
    """The fields on a slab line, "" when the line is not in a slab object or its cache has no layout."""
    if layouts is None or memory is None:
        return ""
    found = memory.objects.holding(line)
    in_object = slab_offset(found, line) if found is not None else None
    if found is None or in_object is None or in_object[1]:
        return ""  # not a slab line, or the slab's tail: no object there
    return layouts.fields_on_line(found.name, in_object[0], line_bytes, found.object_bytes) or ""


def variable_fields(layouts: StructLayouts | None, symbols: SymbolTable | None, memory: MemoryMap | None, line: int, line_bytes: int) -> str:
    """The fields on a line of a kernel variable with a layout, "" when the line's first byte is in no such variable."""
    if layouts is None or not layouts.variables or symbols is None:
        return ""
    for symbol, offset in _variables_at(symbols, memory, line, line_bytes):
        fields = layouts.variable_fields(symbol, offset, line_bytes)
        if fields is not None:
            return fields
    return ""


def _variables_at(symbols: SymbolTable, memory: MemoryMap | None, line: int, line_bytes: int) -> list[tuple[str, int]]:
    """(symbol, the line's first byte's offset in it) of each name of the symbol holding the line's first byte."""
    found = memory.holding(line) if memory is not None else None
    if found is not None and found.kind == PERCPU:
        offset = line - found.physical
        symbol = symbols.percpu_symbol(offset)
        return [(symbol[1], offset - symbol[0])] if symbol is not None else []
    return [(name, line - start) for start, name in symbols.on_line(line, line_bytes) if start <= line]
