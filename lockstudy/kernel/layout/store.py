"""struct-layouts.json: a kernel build's slab object and variable layouts, beside its outputs (build/kernel/<build>/).

It belongs to one build id: the hot-line profile uses it only for runs
that booted that build (a rebuild with other patches moves fields). It
records the data file's hash and the recipe, so that a changed data file
or a new way of reading layouts makes it again (make.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from lockstudy.files import write_json_atomically
from lockstudy.kernel.layout.members import Member, fields_in_variable, fields_on_line
from lockstudy.kernel.layout.requests import LayoutError

LAYOUT_FILE = "struct-layouts.json"
LAYOUT_RECIPE = 3  # bump when the probe or the DWARF reading changes what a layout says


@dataclass(frozen=True)
class CacheLayout:
    cache: str
    type_name: str
    layout: Member


@dataclass(frozen=True)
class VariableLayout:
    symbol: str
    defined_in: str
    layout: Member


@dataclass(frozen=True)
class StructLayouts:
    """One build's layouts by slab cache and by kernel variable (those its config compiles)."""

    build_id: str
    requests_sha256: str
    recipe: int
    caches: dict[str, CacheLayout]
    variables: dict[str, VariableLayout] = field(default_factory=dict)

    def fields_on_line(self, cache: str, offset: int, line_bytes: int, stride: int) -> str | None:
        """The fields of a line `offset` bytes into an object of the cache (objects every `stride` bytes); None for a cache without a layout."""
        found = self.caches.get(cache)
        return fields_on_line(found.layout, offset, line_bytes, stride) if found is not None else None

    def variable_fields(self, symbol: str, offset: int, line_bytes: int) -> str | None:
        """The fields of a line `offset` bytes into a variable (its per-CPU copy, for a per-CPU one); None for a variable without a layout."""
        found = self.variables.get(symbol)
        return fields_in_variable(found.layout, offset, offset + line_bytes) if found is not None else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "build_id": self.build_id,
            "requests_sha256": self.requests_sha256,
            "recipe": self.recipe,
            "caches": {name: {"type": entry.type_name, "layout": entry.layout.as_dict()} for name, entry in sorted(self.caches.items())},
            "variables": {
                name: {"defined_in": entry.defined_in, "layout": entry.layout.as_dict()} for name, entry in sorted(self.variables.items())
            },
        }


def write_layouts(directory: Path, layouts: StructLayouts) -> Path:
    path = directory / LAYOUT_FILE
    write_json_atomically(path, layouts.as_dict())
    return path


@lru_cache(maxsize=None)
def read_layouts(path: Path) -> StructLayouts:
    """A layout file (read once per path); LayoutError naming the file and what is wrong."""
    try:
        data = json.loads(path.read_text())
        caches = {
            str(name): CacheLayout(str(name), str(entry["type"]), Member.from_dict(entry["layout"]))
            for name, entry in data["caches"].items()
        }
        variables = {
            str(name): VariableLayout(str(name), str(entry["defined_in"]), Member.from_dict(entry["layout"]))
            for name, entry in data["variables"].items()
        }
        return StructLayouts(str(data["build_id"]), str(data["requests_sha256"]), int(data["recipe"]), caches, variables)
    except OSError as exc:
        raise LayoutError(f"{path}: cannot read: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LayoutError(f"{path}: not a struct layout file ({type(exc).__name__}: {exc})") from None
