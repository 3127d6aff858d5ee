"""lockstudy/data/struct_layouts.toml: the slab caches named field by field, each with its C type and header."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lockstudy.files import file_sha256, read_toml
from lockstudy.paths import DATA

REQUESTS_FILE = DATA / "struct_layouts.toml"
TYPE_NAME = re.compile(r"^(struct|union) [A-Za-z_][A-Za-z0-9_]*$")
SYSTEM_HEADER = re.compile(r"^<[A-Za-z0-9_./-]+\.h>$")
SOURCE_HEADER = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_.-]+)*\.h$")
CACHE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


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


def load_requests(path: Path = REQUESTS_FILE) -> list[LayoutRequest]:
    """The data file's caches in file order; LayoutError naming the file, cache and field for anything malformed."""
    data = read_toml(path, LayoutError)
    unknown = sorted(set(data) - {"cache"})
    if unknown:
        raise LayoutError(f"{path}: unknown table(s) {unknown}; the file has only [cache.<name>] tables")
    caches = data.get("cache", {})
    if not isinstance(caches, dict) or not caches:
        raise LayoutError(f"{path}: no [cache.<name>] table")
    requests = []
    for cache, entry in caches.items():
        where = f"{path}: [cache.{cache}]"
        if not CACHE_NAME.match(cache):
            raise LayoutError(f"{where}: a cache name is letters, digits, '_' and '-'")
        if not isinstance(entry, dict) or set(entry) != {"type", "header"}:
            raise LayoutError(f"{where}: needs exactly the fields type and header, has {sorted(entry) if isinstance(entry, dict) else entry!r}")
        type_name, header = entry["type"], entry["header"]
        if not isinstance(type_name, str) or not TYPE_NAME.match(type_name):
            raise LayoutError(f"{where}: type = {type_name!r} is not `struct <name>` or `union <name>`")
        if not isinstance(header, str) or not (SYSTEM_HEADER.match(header) or (SOURCE_HEADER.match(header) and ".." not in header)):
            raise LayoutError(f"{where}: header = {header!r} is neither <dir/file.h> nor a path in the kernel source (fs/ext2/ext2.h)")
        requests.append(LayoutRequest(cache, type_name, header))
    return requests


def requests_digest(path: Path = REQUESTS_FILE) -> str:
    """The data file's hash: a layout file made from another version of it is made again."""
    return file_sha256(path)
