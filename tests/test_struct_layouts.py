"""Struct layouts (lockstudy/kernel/layout/): read from DWARF exactly as the compiler lays types out, and the fields of a range.

The reader is checked against the compiler itself: tests/fixtures/layout/types.c
is compiled with -g for the reader and run as a program printing
offsetof() and sizeof(). The kernel test reads every kernel build's
struct-layouts.json (made by `./run.sh setup`) and checks it against
offsetof() compiled in that build's own object tree.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lockstudy.kernel import source, specs
from lockstudy.kernel.build import BUILD_INFO, BuildMissing, build_environment, plan_build, require_build
from lockstudy.kernel.layout.dwarf import read_variables
from lockstudy.kernel.layout.make import is_current
from lockstudy.kernel.layout.members import ARRAY, SCALAR, STRUCT, Member, fields_between, fields_in_variable, fields_on_line
from lockstudy.kernel.layout.requests import REQUESTS_FILE, LayoutError, load_requests, load_variable_requests
from lockstudy.kernel.layout.store import LAYOUT_FILE, CacheLayout, StructLayouts, VariableLayout, read_layouts, write_layouts
from lockstudy.kernel.target import availability

TYPES = Path(__file__).parent / "fixtures" / "layout" / "types.c"


@pytest.fixture(scope="module")
def outer(tmp_path_factory: pytest.TempPathFactory) -> Member:
    if shutil.which("gcc") is None:
        pytest.fail("gcc not found: ./run.sh setup installs build-essential")
    scratch = tmp_path_factory.mktemp("layout")
    subprocess.run(["gcc", "-g", "-c", str(TYPES), "-o", str(scratch / "types.o")], check=True)
    return read_variables(scratch / "types.o", ["probe_outer"])["probe_outer"]


@pytest.fixture(scope="module")
def offsets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    scratch = tmp_path_factory.mktemp("offsets")
    subprocess.run(["gcc", "-DPRINT_OFFSETS", str(TYPES), "-o", str(scratch / "offsets")], check=True)
    printed = subprocess.run([str(scratch / "offsets")], capture_output=True, text=True, check=True).stdout
    return {name: int(value) for name, value in (line.split() for line in printed.splitlines())}


def member_at(layout: Member, path: str) -> tuple[int, Member]:
    """(offset from the outermost type, member) of a C member path such as `sem.waiters.prev`, `slots[1].prev` or `lo`."""
    offset, here = 0, layout
    for part in path.split("."):
        name, _, index = part.partition("[")
        found = _find(here.members, name)
        assert found is not None, f"{path}: no member {name}"
        at, here = found
        offset += at
        if index:
            assert here.element is not None
            offset += int(index.rstrip("]")) * here.element.size
            here = here.element
    return offset, here


def _find(members: tuple[Member, ...], name: str) -> tuple[int, Member] | None:
    for member in members:
        if member.name == name:
            return member.offset, member
        if member.name is None:
            inside = _find(member.members, name)
            if inside is not None:
                return member.offset + inside[0], inside[1]
    return None


def test_the_reading_matches_the_compilers_offsetof_and_sizeof(outer: Member, offsets: dict[str, int]) -> None:
    assert outer.size == offsets.pop("sizeof") and outer.kind == STRUCT
    for path, expected in offsets.items():
        assert member_at(outer, path)[0] == expected, path
    assert member_at(outer, "tail")[1].size == 0  # a flexible array names no byte
    a, b = (member_at(outer, name)[1] for name in ("a", "b"))  # bitfields: bits 32-34 and 35-41
    assert (a.offset, a.size, b.offset, b.size, a.kind) == (4, 1, 4, 2, SCALAR)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (8, 40, "sem"),  # all of a member: named whole, not opened
        (16, 48, "sem.{lock, waiters}; word, lo, hi"),  # a cut member opened; anonymous union and struct are transparent
        (56, 120, "slots[0].prev; slots[1..3], name[0..7]"),  # whole elements as a range, a cut one opened
        (20, 22, "sem.lock.tail (part)"),  # a cut scalar
        (132, 136, ""),  # padding only
    ],
)
def test_a_range_names_its_fields_as_coarsely_as_is_exact(outer: Member, start: int, end: int, expected: str) -> None:
    assert fields_between(outer, start, end) == expected


def test_a_line_past_the_struct_reaches_into_the_next_object(outer: Member) -> None:
    # objects every 160 bytes (slab metadata after the 144-byte struct): a line 128 bytes in ends 32 bytes into the next
    assert fields_on_line(outer, 128, 64, 160) == "name[16..19], after; (past the struct); next object: flags, a, b; sem.{count, lock}; sem.waiters.next"


def test_a_variable_names_its_fields_and_nothing_past_its_end(outer: Member) -> None:
    # a variable holds nothing past its 144 bytes, and a line may begin before it
    assert fields_in_variable(outer, 128, 192) == "name[16..19], after"
    assert fields_in_variable(outer, -48, 16) == "flags, a, b; sem.count"
    # an array variable: its elements by index, a cut one opened
    slots = Member(None, 0, 3 * outer.size, ARRAY, element=outer, count=3)
    assert fields_in_variable(slots, outer.size - 8, outer.size + 8) == "[0].after; [1].{flags, a, b}"
    assert fields_in_variable(slots, 0, 3 * outer.size) == "[0..2]"


def test_a_layout_file_round_trips_and_a_damaged_one_is_named(outer: Member, tmp_path: Path) -> None:
    variables = {"outer_var": VariableLayout("outer_var", "kernel/outer.c", outer)}
    layouts = StructLayouts("build-1", "sha", 3, {"outer_cache": CacheLayout("outer_cache", "struct outer", outer)}, variables)
    path = write_layouts(tmp_path, layouts)
    again = read_layouts(path)
    assert again == layouts
    assert again.fields_on_line("outer_cache", 8, 32, 160) == "sem" and again.fields_on_line("kmalloc-64", 0, 64, 64) is None
    assert again.variable_fields("outer_var", 128, 64) == "name[16..19], after" and again.variable_fields("jiffies", 0, 64) is None
    damaged = tmp_path / "damaged" / LAYOUT_FILE
    damaged.parent.mkdir()
    damaged.write_text(json.dumps({"build_id": "x", "requests_sha256": "y", "recipe": 2, "caches": {"c": {"type": "struct c", "layout": {"name": None, "offset": 0, "size": 8, "kind": "blob"}}}}))
    with pytest.raises(LayoutError, match=r"damaged/struct-layouts.json: not a struct layout file .*kind 'blob'"):
        read_layouts(damaged)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[cache.dentry]\ntype = 'struct dentry'\n", r"\[cache.dentry\]: needs exactly the fields type and header, has \['type'\]"),
        ("[cache.dentry]\ntype = 'dentry'\nheader = '<linux/dcache.h>'\n", r"\[cache.dentry\]: type = 'dentry' is not `struct <name>`"),
        ("[cache.x]\ntype = 'struct x'\nheader = '../../etc/x.h'\n", r"\[cache.x\]: header = '../../etc/x.h' is neither"),
        ("[caches.x]\n", r"unknown table\(s\) \['caches'\]"),
        ("[variable.runqueues]\nfile = 'kernel/sched/core.c'\n", r"\[variable.runqueues\]: needs exactly the field defined_in, has \['file'\]"),
        ("[variable.runqueues]\ndefined_in = 'kernel/sched/sched.h'\n", r"\[variable.runqueues\]: defined_in = 'kernel/sched/sched.h' is not a .c file"),
        ("[variable.x]\ndefined_in = '../x.c'\n", r"\[variable.x\]: defined_in = '../x.c' is not"),
        ("[variable.'run-queues']\ndefined_in = 'kernel/sched/core.c'\n", r"\[variable.run-queues\]: a variable is a C identifier"),
        ("[cache.x\n", r"not valid TOML"),
    ],
)
def test_a_bad_data_file_is_named_by_file_cache_and_field(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "struct_layouts.toml"
    bad.write_text(text)
    read = load_variable_requests if text.startswith("[variable") else load_requests
    with pytest.raises(LayoutError, match=re.escape(str(bad)) + ".*" + message):
        read(bad)


def test_the_shipped_data_file_loads() -> None:
    requests = load_requests()
    assert {"dentry", "ext2_inode_cache", "mm_struct", "files_cache", "task_struct"} <= {request.cache for request in requests}
    variables = {request.symbol: request for request in load_variable_requests()}
    assert variables["runqueues"].object_file == "kernel/sched/core.o" and "qnodes" in variables


# -- every kernel build: its layouts, checked against offsetof() in its own object tree ------------------------------

BUILDS = specs.load_builds()
SERIES = source.read_series()
AVAILABLE = [name for name, reason in availability(BUILDS, SERIES.defined_kconfig_symbols()).items() if reason is None]
# (cache, C type, member): the fields our readings cite, and their neighbours
CHECKED = [
    ("dentry", "struct dentry", "d_lockref"),
    ("dentry", "struct dentry", "d_parent"),
    ("ext2_inode_cache", "struct ext2_inode_info", "vfs_inode"),
    ("ext2_inode_cache", "struct ext2_inode_info", "vfs_inode.i_rwsem"),
    ("ext2_inode_cache", "struct ext2_inode_info", "vfs_inode.i_rwsem.wait_lock"),
    ("mm_struct", "struct mm_struct", "mmap_lock"),
    ("mm_struct", "struct mm_struct", "page_table_lock"),
    ("files_cache", "struct files_struct", "file_lock"),
    ("task_struct", "struct task_struct", "pi_lock"),
]
SYMBOL = re.compile(r"->(\w+) \$?(\d+)")


def kernel_offsets(build: str, tmp_path: Path) -> dict[str, int]:
    """offsetof() and sizeof() of CHECKED, compiled as assembly (kbuild's asm-offsets way) in the build's object tree."""
    plan = plan_build(BUILDS[build])
    tree = source.tree_dir(plan.source, plan.series)
    lines = ["#include <linux/kbuild.h>", f'#include "{tree / "src" / "fs/ext2/ext2.h"}"', "#include <linux/fdtable.h>", "#include <linux/sched.h>", "void probe(void)", "{"]
    for index, (_cache, type_name, member) in enumerate(CHECKED):
        lines.append(f"\tDEFINE(OFF_{index}, offsetof({type_name}, {member}));")
    for cache, type_name, _member in dict.fromkeys((c, t, "") for c, t, _ in CHECKED):
        lines.append(f"\tDEFINE(SIZE_{cache}, sizeof({type_name}));")
    (tmp_path / "offsets.c").write_text("\n".join(lines) + "\n}\n")
    (tmp_path / "Kbuild").write_text("obj-m := offsets.o\n")
    subprocess.run(
        ["make", "-C", str(tree / "src"), f"O={tree / 'obj' / build}", f"M={tmp_path}", "offsets.s"],
        env=build_environment(plan), check=True, capture_output=True,
    )  # fmt: skip
    return {name: int(value) for name, value in SYMBOL.findall((tmp_path / "offsets.s").read_text())}


def built_layouts(build: str) -> StructLayouts:
    """The build's struct-layouts.json, which set-up made for its build id from today's data file."""
    try:
        out = require_build(BUILDS[build])
    except BuildMissing as exc:
        pytest.fail(str(exc))
    build_id = json.loads((out / BUILD_INFO).read_text())["build_id"]
    assert is_current(out, build_id, REQUESTS_FILE), f"{out / LAYOUT_FILE}: missing or stale: run ./run.sh setup"
    layouts = read_layouts(out / LAYOUT_FILE)
    assert layouts.build_id == build_id
    return layouts


@pytest.mark.kernel
@pytest.mark.parametrize("build", AVAILABLE)
def test_each_kernel_build_has_layouts_that_match_its_own_offsetof(build: str, tmp_path: Path) -> None:
    layouts = built_layouts(build)
    expected = kernel_offsets(build, tmp_path)
    for index, (cache, _type_name, member) in enumerate(CHECKED):
        assert member_at(layouts.caches[cache].layout, member)[0] == expected[f"OFF_{index}"], f"{build}: {cache} {member}"
    for cache in dict.fromkeys(cache for cache, _, _ in CHECKED):
        assert layouts.caches[cache].layout.size == expected[f"SIZE_{cache}"], f"{build}: sizeof {cache}"
    # the line holding d_lockref names it
    offset, lockref = member_at(layouts.caches["dentry"].layout, "d_lockref")
    line_start = offset - offset % 64
    assert "d_lockref" in (layouts.fields_on_line("dentry", line_start, 64, layouts.caches["dentry"].layout.size) or "")


# (variable, its defining file, a member of its type or None): read by typeof() from the whole file, checked
# against sizeof() and offsetof() of the same variable compiled in the same file
CHECKED_VARIABLES = [
    ("runqueues", "kernel/sched/core.c", "nr_running"),
    ("lockstudy_cna_nodes", "kernel/locking/lockstudy_spinlock.c", None),
    ("tk_core", "kernel/time/timekeeping.c", "timekeeper"),
]


def variable_offsets(build: str, tmp_path: Path) -> dict[str, int]:
    """sizeof() of each CHECKED_VARIABLES entry and offsetof() of its member, compiled inside its own file (asm-offsets' way)."""
    plan = plan_build(BUILDS[build])
    tree = source.tree_dir(plan.source, plan.series)
    object_dir = tree / "obj" / build
    units = []
    for index, (symbol, defined_in, member) in enumerate(CHECKED_VARIABLES):
        if not (object_dir / defined_in.replace(".c", ".o")).is_file():
            continue
        lines = ["#undef MODULE", f'#include "{tree / "src" / defined_in}"', "#include <linux/kbuild.h>", f"void lockstudy_offsets_{index}(void)", "{"]
        lines.append(f"\tDEFINE(SIZE_{symbol}, sizeof({symbol}));")
        if member is not None:
            lines.append(f"\tDEFINE(OFF_{symbol}, offsetof(typeof({symbol}), {member}));")
        (tmp_path / f"variable_{index}.c").write_text("\n".join(lines) + "\n}\n")
        units.append(f"variable_{index}")
    if not units:
        return {}
    (tmp_path / "Kbuild").write_text("obj-m := " + " ".join(f"{unit}.o" for unit in units) + "\n")
    subprocess.run(
        ["make", "-C", str(tree / "src"), f"O={object_dir}", f"M={tmp_path}", *(f"{unit}.s" for unit in units)],
        env=build_environment(plan), check=True, capture_output=True,
    )  # fmt: skip
    return {name: int(value) for unit in units for name, value in SYMBOL.findall((tmp_path / f"{unit}.s").read_text())}


@pytest.mark.kernel
@pytest.mark.parametrize("build", AVAILABLE)
def test_each_kernel_builds_variables_match_their_own_sizeof(build: str, tmp_path: Path) -> None:
    layouts = built_layouts(build)
    expected = variable_offsets(build, tmp_path)
    for symbol, _defined_in, member in CHECKED_VARIABLES:
        if f"SIZE_{symbol}" not in expected:
            assert symbol not in layouts.variables, f"{build}: {symbol} has a layout, but its file is not in the build"
            continue
        layout = layouts.variables[symbol].layout
        assert layout.size == expected[f"SIZE_{symbol}"], f"{build}: sizeof {symbol}"
        if member is not None:
            assert member_at(layout, member)[0] == expected[f"OFF_{symbol}"], f"{build}: {symbol}.{member}"
    # rq's first line holds its lock (empty in a UP build) and nr_running, as the scheduler lays it out
    if "runqueues" in layouts.variables:
        assert "nr_running" in (layouts.variable_fields("runqueues", 0, 64) or "")


@pytest.mark.kernel
def test_a_probe_that_does_not_compile_is_named_with_makes_last_lines() -> None:
    from lockstudy.kernel.layout.probe import compile_probe, probe_units
    from lockstudy.kernel.layout.requests import LayoutRequest, VariableRequest

    plan = plan_build(BUILDS["smp"])
    tree = source.tree_dir(plan.source, plan.series)
    moved = probe_units([LayoutRequest("thing", "struct thing", "<linux/no_such_header.h>")], [], tree / "src")
    with pytest.raises(LayoutError, match=r"(?s)did not compile.*no_such_header\.h"):
        compile_probe(moved, tree / "src", tree / "obj" / "smp", plan.make_variables, build_environment(plan), lambda unit, probe: probe)
    with pytest.raises(LayoutError, match="no configured object tree"):
        compile_probe(moved, tree / "src", tree / "obj" / "no-such-build", plan.make_variables, build_environment(plan), lambda unit, probe: probe)
    renamed = probe_units([], [VariableRequest("no_such_variable", "kernel/smp.c")], tree / "src")
    with pytest.raises(LayoutError, match=r"(?s)did not compile.*no_such_variable"):
        compile_probe(renamed, tree / "src", tree / "obj" / "smp", plan.make_variables, build_environment(plan), lambda unit, probe: probe)
