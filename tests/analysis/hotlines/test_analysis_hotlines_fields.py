"""A slab line's fields (analysis/hotlines/fields.py): from the run's own kernel build's layouts, never another build's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.fields import layouts_for, slab_fields
from analysis.hotlines.symbols import MemoryMap
from analysis.hotlines.table import RunNamer
from lockstudy.guest_output import MemoryRange
from lockstudy.kernel.layout.members import SCALAR, STRUCT, Member
from lockstudy.kernel.layout.store import CacheLayout, StructLayouts, write_layouts

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
