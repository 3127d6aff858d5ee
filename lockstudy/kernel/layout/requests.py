"""lockstudy/data/struct_layouts.toml: what the hot-line profile names field by field.

- `[cache.<name>]`: a slab cache, with the C type of its objects and the
  header defining it;
- `[variable.<symbol>]`: a static or per-CPU kernel variable, with the
  source file that defines it (its type is often private to that file).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstudy.files import file_sha256, read_toml
from lockstudy.paths import DATA

REQUESTS_FILE = DATA / "struct_layouts.toml"
TYPE_NAME = re.compile(r"^(struct|union) [A-Za-z_][A-Za-z0-9_]*$")
SYSTEM_HEADER = re.compile(r"^<[A-Za-z0-9_./-]+\.h>$")
SOURCE_HEADER = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_.-]+)*\.h$")
CACHE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
SYMBOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SOURCE_FILE = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_.-]+)*\.c$")
TABLES = ("cache", "variable")


class LayoutError(RuntimeError):
    """The data file, the probe's compile or its debug information cannot give a layout: one line saying which."""


@dataclass(frozen=True)
class LayoutRequest:
    """One slab cache: its name, the C type of its objects, the header defining it."""

    cache: str
    type_name: str
    header: str

    def include_line(self, source_tree: Path) -> str:
        """The probe's #include: a system-style header as it is, a private one by its path in the source tree."""
        if self.header.startswith("<"):
            return f"#include {self.header}"
        return f'#include "{source_tree / self.header}"'


@dataclass(frozen=True)
class VariableRequest:
    """One kernel variable (static or per-CPU): its symbol and the source file (in the kernel tree) defining it."""

    symbol: str
    defined_in: str

    @property
    def object_file(self) -> str:
        """The object the build compiles the file to: a build without it (another config) has no such variable."""
        return self.defined_in.removesuffix(".c") + ".o"


def _read(path: Path) -> dict[str, Any]:
    data = read_toml(path, LayoutError)
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        raise LayoutError(f"{path}: unknown table(s) {unknown}; the file has only [cache.<name>] and [variable.<symbol>] tables")
    return data


def _entries(path: Path, table: str, name: re.Pattern[str], name_rule: str, fields: set[str]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(name, entry, where) of each [table.<name>] in file order, its name and its exact set of fields checked."""
    entries = _read(path).get(table, {})
    if not isinstance(entries, dict):
        raise LayoutError(f"{path}: {table} is not a table of [{table}.<name>] tables")
    for key, entry in entries.items():
        where = f"{path}: [{table}.{key}]"
        if not name.match(key):
            raise LayoutError(f"{where}: {name_rule}")
        if not isinstance(entry, dict) or set(entry) != fields:
            wanted = "the field" if len(fields) == 1 else "the fields"
            raise LayoutError(f"{where}: needs exactly {wanted} {' and '.join(sorted(fields, reverse=True))}, has {sorted(entry) if isinstance(entry, dict) else entry!r}")
        yield key, entry, where


def load_requests(path: Path = REQUESTS_FILE) -> list[LayoutRequest]:
    """The data file's caches in file order; LayoutError naming the file, cache and field for anything malformed."""
    requests = []
    for cache, entry, where in _entries(path, "cache", CACHE_NAME, "a cache name is letters, digits, '_' and '-'", {"type", "header"}):
        type_name, header = entry["type"], entry["header"]
        if not isinstance(type_name, str) or not TYPE_NAME.match(type_name):
            raise LayoutError(f"{where}: type = {type_name!r} is not `struct <name>` or `union <name>`")
        if not isinstance(header, str) or not (SYSTEM_HEADER.match(header) or (SOURCE_HEADER.match(header) and ".." not in header)):
            raise LayoutError(f"{where}: header = {header!r} is neither <dir/file.h> nor a path in the kernel source (fs/ext2/ext2.h)")
        requests.append(LayoutRequest(cache, type_name, header))
    if not requests:
        raise LayoutError(f"{path}: no [cache.<name>] table")
    return requests


def load_variable_requests(path: Path = REQUESTS_FILE) -> list[VariableRequest]:
    """The data file's variables in file order; LayoutError naming the file, variable and field for anything malformed."""
    requests = []
    for symbol, entry, where in _entries(path, "variable", SYMBOL_NAME, "a variable is a C identifier (its System.map symbol)", {"defined_in"}):
        defined_in = entry["defined_in"]
        if not isinstance(defined_in, str) or not SOURCE_FILE.match(defined_in) or ".." in defined_in:
            raise LayoutError(f"{where}: defined_in = {defined_in!r} is not a .c file's path in the kernel source (kernel/sched/core.c)")
        requests.append(VariableRequest(symbol, defined_in))
    return requests


def requests_digest(path: Path = REQUESTS_FILE) -> str:
    """The data file's hash: a layout file made from another version of it is made again."""
    return file_sha256(path)
