"""A line's fields (analysis/hotlines/fields.py): slab objects and kernel variables, from the run's own kernel build's layouts, never another build's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.fields import layouts_for, slab_fields, variable_fields
from analysis.hotlines.symbols import MemoryMap, SymbolTable
from analysis.hotlines.table import RunNamer
from lockstudy.guest_output import MemoryRange
from lockstudy.kernel.layout.members import ARRAY, SCALAR, STRUCT, Member
from lockstudy.kernel.layout.store import CacheLayout, StructLayouts, VariableLayout, write_layouts

LINE = 64
# a 96-byte object: a lock word, a 56-byte name, then a pointer pair (a struct) at 64 and a counter at 80
THING = Member(
    None,
    0,
    96,
    STRUCT,
    (
        Member("lock", 0, 8, SCALAR),
        Member("name", 8, 56, SCALAR),
        Member("pair", 64, 16, STRUCT, (Member("next", 0, 8, SCALAR), Member("prev", 8, 8, SCALAR))),
        Member("count", 80, 8, SCALAR),
    ),
)
LAYOUTS = StructLayouts("build-a", "sha", 2, {"thing": CacheLayout("thing", "struct thing", THING)})
# one 4 KiB slab of "thing" objects every 128 bytes (32 of them) at 0x100000, and one of a cache with no layout
MEMORY = MemoryMap.of([MemoryRange("slab", 0x100000, 4096, 4096, 128, "thing"), MemoryRange("slab", 0x200000, 4096, 4096, 64, "kmalloc-64")])


def test_a_slab_line_gets_the_fields_of_its_object() -> None:
    assert slab_fields(LAYOUTS, MEMORY, 0x100000 + 128, LINE) == "lock, name"  # object 1's first line
    assert slab_fields(LAYOUTS, MEMORY, 0x100000 + 128 + 64, LINE) == "pair, count; (past the struct)"  # its second: 96..128 is slab padding


def test_no_fields_without_a_layout_for_the_cache_or_outside_a_slab() -> None:
    assert slab_fields(LAYOUTS, MEMORY, 0x200040, LINE) == ""  # kmalloc-64: no type
    assert slab_fields(LAYOUTS, MEMORY, 0x300000, LINE) == ""  # not in the map
    assert slab_fields(None, MEMORY, 0x100000, LINE) == ""  # the build has no layout file
    assert slab_fields(LAYOUTS, None, 0x100000, LINE) == ""  # the guest printed no map


def test_a_run_namer_gives_the_fields_of_its_roi() -> None:
    namer = RunNamer(LINE, None, (), (None, MEMORY), LAYOUTS)
    assert namer.fields(0x100000, 1) == "lock, name"
    assert namer.fields(0x100000, 0) == ""  # ROI 0 has no memory map


# kernel variables: a static `thing` (one THING) and a per-CPU array of four 32-byte nodes
NODE = Member(None, 0, 32, STRUCT, (Member("next", 0, 8, SCALAR), Member("head", 8, 8, SCALAR), Member("count", 16, 16, SCALAR)))
NODES = Member(None, 0, 128, ARRAY, element=NODE, count=4)
WITH_VARIABLES = StructLayouts(
    "build-a", "sha", 3, {}, {"static_thing": VariableLayout("static_thing", "kernel/thing.c", THING), "nodes": VariableLayout("nodes", "kernel/nodes.c", NODES)}
)
# the image: static_thing at 0x1000 (96 bytes: the next symbol at 0x1060), other_thing after it;
# per-CPU symbols linked at 0: nodes at 0x40, each CPU's copy of the section at 0x500000 + cpu x 0x1000
SYMBOLS = SymbolTable("System.map", (0x1000, 0x1060, 0x2000), ("static_thing", "other_thing", "_end"), 0x1000, 0x2000, percpu_starts=(0x0, 0x40), percpu_names=("before", "nodes"))
PERCPU = MemoryMap.of([MemoryRange("percpu", 0x500000 + cpu * 0x1000, 0x1000, name=str(cpu)) for cpu in range(2)])


def test_a_static_variables_line_gets_its_fields() -> None:
    assert variable_fields(WITH_VARIABLES, SYMBOLS, None, 0x1000, LINE) == "lock, name"
    # its second line: its last 32 bytes, then other_thing's (named by the line's name, not as fields)
    assert variable_fields(WITH_VARIABLES, SYMBOLS, None, 0x1040, LINE) == "pair, count"
    assert variable_fields(WITH_VARIABLES, SYMBOLS, None, 0x1080, LINE) == ""  # other_thing: no layout


def test_a_per_cpu_line_gets_the_fields_of_that_cpus_copy() -> None:
    # CPU 1's copy of nodes starts at 0x501040: a line there holds nodes [0] and [1] whole, one 32 bytes on [1] and [2]
    assert variable_fields(WITH_VARIABLES, SYMBOLS, PERCPU, 0x501040, LINE) == "[0..1]"
    assert variable_fields(WITH_VARIABLES, SYMBOLS, PERCPU, 0x501060, LINE) == "[1..2]"
    assert variable_fields(WITH_VARIABLES, SYMBOLS, PERCPU, 0x501050, 32) == "[0].count; [1].{next, head}"
    assert variable_fields(WITH_VARIABLES, SYMBOLS, PERCPU, 0x501000, LINE) == ""  # `before`: no layout


def test_no_variable_fields_without_layouts_or_a_system_map() -> None:
    assert variable_fields(None, SYMBOLS, PERCPU, 0x1000, LINE) == ""
    assert variable_fields(WITH_VARIABLES, None, PERCPU, 0x501040, LINE) == ""
    assert variable_fields(LAYOUTS, SYMBOLS, None, 0x1000, LINE) == ""  # layouts of caches only


def test_a_run_namer_names_slab_fields_first_then_variables() -> None:
    both = StructLayouts("build-a", "sha", 3, LAYOUTS.caches, WITH_VARIABLES.variables)
    namer = RunNamer(LINE, SYMBOLS, (), (MEMORY,), both)
    assert namer.fields(0x100000) == "lock, name"  # a slab object
    assert namer.fields(0x1040) == "pair, count"  # a static variable


def run_result(kernel_dir: Path, build_id: str | None) -> dict[str, Any]:
    build_info = {"build_id": build_id} if build_id is not None else {}
    return {"provenance": {"kernel": {"path": str(kernel_dir / "vmlinux"), "build_info": build_info}}}


def test_the_layouts_are_the_runs_kernel_builds_only(tmp_path: Path) -> None:
    write_layouts(tmp_path, LAYOUTS)
    assert layouts_for(run_result(tmp_path, "build-a")) == LAYOUTS
    assert layouts_for(run_result(tmp_path, "build-b")) is None  # rebuilt since the run: its fields moved
    assert layouts_for(run_result(tmp_path, None)) is None  # a run that recorded no build id
    assert layouts_for(run_result(tmp_path / "gone", "build-a")) is None
    assert layouts_for({}) is None


def test_a_damaged_layout_file_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "struct-layouts.json").write_text("{")
    with pytest.raises(HotlinesError, match="struct-layouts.json: not a struct layout file"):
        layouts_for(run_result(tmp_path, "build-a"))


def test_the_reports_table_cuts_long_fields_after_a_whole_name() -> None:
    from analysis.hotlines.section import shortened

    many = ", ".join(f"field_{index}" for index in range(40))
    short = shortened(many, 60)
    assert short.endswith(", field_5 ...") and len(short) <= 64
    assert shortened("a.{b, c}; d", 60) == "a.{b, c}; d"
