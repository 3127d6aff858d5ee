"""Naming a cache line (analysis/hotlines/symbols.py) against a small System.map written here.

The map's image is linked at kernel_image_base (static_locks.toml), so a
symbol at virtual 0xffffffff81001000 is at physical 0x1001000. Lines are
64 bytes. Which object comes first on a line that holds two is decided by
address: the symbol holding the line's first byte (System.map gives no
sizes, so a symbol runs to the next one), and the offset is the line's
first byte from its start, as perf prints symbol+offset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.symbols import UNKNOWN_BRK, UNKNOWN_HEAP, UNKNOWN_NO_MAP, MemoryMap, read_system_map, symbolise
from analysis.hotlines.table import object_of
from analysis.traffic.locks import load_static_locks
from analysis.traffic.protocol_trace import TracedLock
from lockstudy.guest_output import MemoryRange

LINE = 64
BASE = int(load_static_locks()["kernel_image_base"])
SYSTEM_MAP = """\
0000000000000000 D __per_cpu_start
0000000000001000 D qnodes_like_percpu_var
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81001000 D sym_a
ffffffff81001040 D sym_b
ffffffff81001090 D sym_c
ffffffff810010c4 D sym_d
ffffffff81002000 B _end
"""


@pytest.fixture
def table(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "System.map"
    path.write_text(SYSTEM_MAP)
    return read_system_map(path, BASE)


def test_the_last_byte_of_a_symbol_and_the_first_of_the_next(table) -> None:  # type: ignore[no-untyped-def]
    # sym_a is [0x1001000, 0x1001040): its last byte is the last of line 0x1001000; sym_b starts the next line
    assert symbolise(0x1001000, LINE, table, ()) == ("sym_a", 0)
    assert symbolise(0x1001040, LINE, table, ()) == ("sym_b", 0)


def test_a_line_straddling_two_symbols_names_both_the_first_byte_s_first(table) -> None:  # type: ignore[no-untyped-def]
    # line 0x1001080: its first byte is in sym_b (0x40 into it), sym_c starts 0x10 into the line
    assert symbolise(0x1001080, LINE, table, ()) == ("sym_b | sym_c", 0x40)
    # line 0x10010c0 starts inside sym_c, and sym_d starts 4 bytes in
    assert symbolise(0x10010C0, LINE, table, ()) == ("sym_c | sym_d", 0x30)


def test_aliases_at_one_address_are_all_named(table) -> None:  # type: ignore[no-untyped-def]
    assert symbolise(0x1000000, LINE, table, ()) == ("_text | startup_64", 0)


def test_per_cpu_offsets_name_no_line(table) -> None:  # type: ignore[no-untyped-def]
    # System.map's per-CPU symbols are offsets into each CPU's area, not addresses: line 0x1000 is heap
    assert symbolise(0x1000, LINE, table, ()) == (UNKNOWN_HEAP, None)


def test_lines_outside_the_image_are_heap_and_registered_locks_name_them(table) -> None:  # type: ignore[no-untyped-def]
    assert symbolise(0x1002000, LINE, table, ()) == (UNKNOWN_HEAP, None)
    lock = TracedLock("mm:57 mmap_lock", 0x40000028, 40)
    assert symbolise(0x40000000, LINE, table, (lock,)) == ("mm:57 mmap_lock", -0x28)
    # the lock's 40 bytes run into the next line, which it names too, from its start
    assert symbolise(0x40000040, LINE, table, (lock,)) == ("mm:57 mmap_lock", 0x18)


def test_a_registered_lock_is_named_beside_the_symbol_and_a_static_one_once(table) -> None:  # type: ignore[no-untyped-def]
    locks = (TracedLock("bench:lock", 0x1001084, 4), TracedLock("static:sym_b", 0x1001040, 4))
    assert symbolise(0x1001080, LINE, table, locks) == ("sym_b | bench:lock | sym_c", 0x40)
    assert symbolise(0x1001040, LINE, table, locks) == ("sym_b", 0)


def test_without_a_system_map_only_registered_locks_are_named() -> None:
    assert symbolise(0x1001000, LINE, None, ()) == (UNKNOWN_NO_MAP, None)
    assert symbolise(0x1001000, LINE, None, (TracedLock("bench:lock", 0x1001000, 4),)) == ("bench:lock", 0)


def test_a_damaged_system_map_is_one_line_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "System.map"
    path.write_text(SYSTEM_MAP.replace("ffffffff81001040 D sym_b", "ffffffff8100104g D sym_b"))
    with pytest.raises(HotlinesError, match=rf"^{path}:6: address 'ffffffff8100104g' is not hex$"):
        read_system_map(path, BASE)
    path.write_text(SYSTEM_MAP.replace("ffffffff81002000 B _end\n", ""))
    with pytest.raises(HotlinesError, match=rf"^{path}: no symbol _end"):
        read_system_map(path, BASE)


# -- run-time memory: the guest's memory map, and image parts freed after boot --------------------------------------

RUN_TIME_MAP = """\
0000000000000000 D __per_cpu_start
0000000000000000 D fixed_percpu_data
0000000000001000 D qnodes
0000000000001100 D runqueues
0000000000002000 D __per_cpu_end
ffffffff81000000 T _text
ffffffff81000800 T _etext
ffffffff81002000 R __start_rodata
ffffffff81002100 R __end_rodata
ffffffff81004000 D _sdata
ffffffff81004000 D sym_data
ffffffff81005000 T __init_begin
ffffffff81005000 T init_fn
ffffffff81006000 T __init_end
ffffffff81006000 B __brk_base
ffffffff81006000 B __bss_stop
ffffffff81008000 B __brk_limit
ffffffff81008000 B _end
"""


@pytest.fixture
def run_time_table(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "System.map"
    path.write_text(RUN_TIME_MAP)
    return read_system_map(path, BASE)


def test_image_parts_freed_after_boot_are_named_by_no_symbol(run_time_table) -> None:  # type: ignore[no-untyped-def]
    # the text/rodata gap starts at _etext rounded up to a page; the line before it is still text
    assert symbolise(0x1000800, LINE, run_time_table, ()) == ("_etext", 0)
    assert symbolise(0x1001000, LINE, run_time_table, ()) == (UNKNOWN_HEAP, None)
    assert symbolise(0x1002000, LINE, run_time_table, ()) == ("__start_rodata", 0)
    assert symbolise(0x1003000, LINE, run_time_table, ()) == (UNKNOWN_HEAP, None)  # rodata/data gap
    assert symbolise(0x1004040, LINE, run_time_table, ()) == ("_sdata | sym_data", 0x40)
    assert symbolise(0x1005040, LINE, run_time_table, ()) == (UNKNOWN_HEAP, None)  # init, freed
    assert symbolise(0x1007000, LINE, run_time_table, ()) == (UNKNOWN_BRK, None)


def test_the_memory_map_names_slab_objects_per_cpu_symbols_and_page_tables(run_time_table) -> None:  # type: ignore[no-untyped-def]
    memory = MemoryMap.of(
        [
            MemoryRange("slab", 0x2000000, 3 * 4096, 4096, 192, "dentry"),  # three slabs, 21 objects each, 64 bytes left
            MemoryRange("percpu", 0x3000000, 0x2000, name="1"),
            MemoryRange("pagetable", 0x4000000, 8192),
        ]
    )
    # the second slab's third object starts at 0x2001000 + 2 * 192 = 0x2001180: line 0x20011c0 is 0x40 into it
    assert symbolise(0x20011C0, LINE, run_time_table, (), memory) == ("slab:dentry", 0x40)
    # objects straddle lines: line 0x2001180 is object 2's first; 4032 bytes into a slab is its 64-byte tail
    assert symbolise(0x2001180, LINE, run_time_table, (), memory) == ("slab:dentry", 0)
    assert symbolise(0x2001FC0, LINE, run_time_table, (), memory) == ("slab:dentry (slab tail)", 0)
    # a lock registered in an object is named after it, the offset still from the object's start
    lock = TracedLock("dentry:/x d_lockref", 0x20011C8, 8)
    assert symbolise(0x20011C0, LINE, run_time_table, (lock,), memory) == ("slab:dentry | dentry:/x d_lockref", 0x40)
    assert symbolise(0x3001140, LINE, run_time_table, (), memory) == ("percpu:runqueues [cpu 1]", 0x40)
    assert symbolise(0x4001040, LINE, run_time_table, (), memory) == ("page table", 0x40)
    assert symbolise(0x4002000, LINE, run_time_table, (), memory) == (UNKNOWN_HEAP, None)  # past the map's ranges


def test_the_memory_map_names_hash_tables_stacks_and_user_pages(run_time_table) -> None:  # type: ignore[no-untyped-def]
    memory = MemoryMap.of(
        [
            # a vmalloc'ed table in two physically separate runs: the second holds its bytes from 0x2000 on
            MemoryRange("table", 0x5000000, 0x2000, name="Dentry cache"),
            MemoryRange("table", 0x6000000, 0x1000, name="Dentry cache", table_offset=0x2000),
            MemoryRange("stack", 0x7000000, 0x4000, name="fsmix/57"),
            MemoryRange("anon", 0x8000000, 0x2000),
            MemoryRange("file", 0x8002000, 0x1000),
            MemoryRange("reserved", 0x9000000, 0x1000),
        ]
    )
    assert symbolise(0x5001FC0, LINE, run_time_table, (), memory) == ("table:Dentry cache", 0x1FC0)
    assert symbolise(0x6000040, LINE, run_time_table, (), memory) == ("table:Dentry cache", 0x2040)
    assert symbolise(0x7003F80, LINE, run_time_table, (), memory) == ("stack:fsmix/57", 0x3F80)
    assert symbolise(0x8001040, LINE, run_time_table, (), memory) == ("user page (anon)", 0x40)
    assert symbolise(0x8002080, LINE, run_time_table, (), memory) == ("page cache", 0x80)
    assert symbolise(0x9000000, LINE, run_time_table, (), memory) == ("reserved page", 0)
    # the kernel image's own pages are reserved too: there the symbol names the line, not the page kind
    image = MemoryMap.of([MemoryRange("reserved", 0x1004000, 0x1000)])
    assert symbolise(0x1004040, LINE, run_time_table, (), image) == ("_sdata | sym_data", 0x40)


def test_the_node_data_and_the_struct_pages_are_named_before_their_reserved_pages(run_time_table) -> None:  # type: ignore[no-untyped-def]
    memory = MemoryMap.of(
        [
            MemoryRange("file", 0x8000000, 0x1000),
            MemoryRange("slab", 0x8001000, 0x1000, 0x1000, 192, "dentry"),
            # boot-time memory: reserved pages, with the node data and the struct pages inside
            MemoryRange("reserved", 0x3E000000, 0x2000000),
            MemoryRange("memmap", 0x3E600000, 0x200000, object_bytes=64, table_offset=0x8000),  # frames 0x8000.. (0x8000000..)
            MemoryRange("node", 0x3FFFB000, 0x4580, name="0"),
            MemoryRange("field", 0x3FFFB400, 0x3C8, name="zone.Normal.free_area"),
            MemoryRange("field", 0x3FFFB7D0, 4, name="zone.Normal.lock"),
            MemoryRange("field", 0x3FFFC000, 0x80, name="__lruvec.lru_lock"),
        ]
    )
    # a line holding the end of the free lists and the zone lock names both, after the node
    assert symbolise(0x3FFFB7C0, LINE, run_time_table, (), memory) == ("pgdat:node0 | zone.Normal.free_area | zone.Normal.lock", 0x7C0)
    assert symbolise(0x3FFFC000, LINE, run_time_table, (), memory) == ("pgdat:node0 | __lruvec.lru_lock", 0x1000)
    assert symbolise(0x3FFFD000, LINE, run_time_table, (), memory) == ("pgdat:node0", 0x2000)  # no listed field there
    # frame 0x8000's struct page is a page-cache page's; frame 0x8001's a dentry slab's; 0x8002 the map does not name
    assert symbolise(0x3E600000, LINE, run_time_table, (), memory) == ("struct page of page cache", 0)
    assert symbolise(0x3E600060, LINE, run_time_table, (), memory) == ("struct page of slab:dentry", 0x20)
    assert symbolise(0x3E600080, LINE, run_time_table, (), memory) == ("struct page of unknown (heap)", 0)
    # the rest of the boot-time memory is what it was
    assert symbolise(0x3F000000, LINE, run_time_table, (), memory) == ("reserved page", 0)


def test_a_per_cpu_unit_past_its_static_section_is_its_dynamic_area(run_time_table) -> None:  # type: ignore[no-untyped-def]
    # as altix-numa printed it: CPU 7's static section, then the reserved pages of its whole unit
    memory = MemoryMap.of(
        [
            MemoryRange("percpu", 0x7F500000, 127512, name="7"),
            MemoryRange("reserved", 0x7F500000, 159744),
            MemoryRange("percpu", 0x7F400000, 127512, name="6"),  # no reserved pages listed: nothing derived
        ]
    )
    assert symbolise(0x7F5212C0, LINE, run_time_table, (), memory) == ("percpu (dynamic) [cpu 7]", 0x212C0 - 127512)
    assert symbolise(0x7F527000, LINE, run_time_table, (), memory) == (UNKNOWN_HEAP, None)  # past the unit
    assert symbolise(0x7F4212C0, LINE, run_time_table, (), memory) == (UNKNOWN_HEAP, None)
    assert object_of("percpu (dynamic) [cpu 7]") == "percpu (dynamic)"


def test_the_memory_map_names_freed_image_memory_the_slab_reused(run_time_table) -> None:  # type: ignore[no-untyped-def]
    memory = MemoryMap.of([MemoryRange("slab", 0x1005000, 4096, 4096, 64, "kmalloc-64")])
    assert symbolise(0x1005040, LINE, run_time_table, (), memory) == ("slab:kmalloc-64", 0)


@pytest.mark.parametrize(
    "name, kind",
    [
        ("percpu:qnodes [cpu 3]", "percpu:qnodes"),
        ("stack:kworker/0:1/29", "stack:kworker/0:1"),
        ("slab:dentry (slab tail)", "slab:dentry"),
        ("slab:mm_struct | mm:171 mmap_lock", "slab:mm_struct | mm:<pid> mmap_lock"),
        ("table:Dentry cache", "table:Dentry cache"),
        ("pgdat:node0 | zone.Normal.lock", "pgdat:node0 | zone.Normal.lock"),
        ("struct page of slab:dentry", "struct page of slab:dentry"),
        ("rename_lock", "rename_lock"),
    ],
)
def test_an_object_counts_every_instance_as_one(name: str, kind: str) -> None:
    assert object_of(name) == kind
