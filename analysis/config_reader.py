"""The simulated machine's facts, read from gem5's config.json.

The metrics need what was really simulated, not what a campaign asked
for: CPU count, classic or Ruby caches (and which protocol), cache sizes
and line size, the CPU clock, memory ranges. The recognition rules are
data: analysis/data/gem5_config.toml (with their gem5 sources).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

DATA_FILE = Path(__file__).resolve().parent / "data" / "gem5_config.toml"


class ConfigError(ValueError):
    """A config.json that does not describe a machine we can read."""


@dataclass(frozen=True)
class CacheFacts:
    path: str
    size_bytes: int
    assoc: int
    kind: str  # "classic" or "ruby"


@dataclass(frozen=True)
class MachineFacts:
    source: str
    num_cpus: int
    cpu_types: tuple[str, ...]
    cpu_clock_hz: float | None
    hierarchy: str  # "classic" or "ruby"
    ruby_protocol: str | None
    line_bytes: int | None
    caches: tuple[CacheFacts, ...]
    memory_ranges: tuple[tuple[int, int], ...]
    ticks_per_second: int
    objects_by_type: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "num_cpus": self.num_cpus,
            "cpu_types": list(self.cpu_types),
            "cpu_clock_hz": self.cpu_clock_hz,
            "hierarchy": self.hierarchy,
            "ruby_protocol": self.ruby_protocol,
            "line_bytes": self.line_bytes,
            "caches": [c.__dict__ for c in self.caches],
            "memory_ranges": [[hex(a), hex(b)] for a, b in self.memory_ranges],
        }


@lru_cache(maxsize=None)
def _rules(path: Path = DATA_FILE) -> dict[str, Any]:
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def sim_objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every SimObject dict in the tree (children may be dicts or lists of dicts)."""
    if isinstance(node, list):
        for item in node:
            yield from sim_objects(item)
    elif isinstance(node, dict):
        if "type" in node and "path" in node:
            yield node
        for value in node.values():
            if isinstance(value, (dict, list)):
                yield from sim_objects(value)


def _as_int(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a number, found {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    raise ConfigError(f"{where}: expected a number, found {value!r}")


def _parse_range(text: Any, where: str) -> tuple[int, int]:
    parts = str(text).split(":")
    if len(parts) < 2:
        raise ConfigError(f"{where}: address range {text!r} is not start:end")
    return _as_int(parts[0], where), _as_int(parts[1], where)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def read_config(path: Path, ticks_per_second: int | None = None) -> MachineFacts:
    path = Path(path)
    try:
        tree = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (gem5 writes config.json next to stats.txt)") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    return machine_facts(tree, str(path), ticks_per_second)


def machine_facts(tree: Any, source: str, ticks_per_second: int | None = None) -> MachineFacts:
    rules = _rules()
    tps = ticks_per_second or int(rules["default_ticks_per_second"])
    objects = list(sim_objects(tree))
    if not objects:
        raise ConfigError(f"{source}: no SimObjects (expected gem5's config.json: dicts with type and path)")
    by_path = {o["path"]: o for o in objects}
    counts: dict[str, int] = {}
    for obj in objects:
        counts[obj["type"]] = counts.get(obj["type"], 0) + 1

    required = rules["cpu"]["required_params"]
    cpus = [o for o in objects if all(p in o for p in required)]
    active = [o for o in cpus if not _truthy(o.get("switched_out"))]
    if not active:
        raise ConfigError(f"{source}: no active CPU (objects with {required} and switched_out false)")

    clock_hz = None
    domain = active[0].get("clk_domain")
    domain_obj = by_path.get(domain) if isinstance(domain, str) else None
    if domain_obj and isinstance(domain_obj.get("clock"), list) and domain_obj["clock"]:
        period = _as_int(domain_obj["clock"][0], f"{source}: {domain}.clock")
        if period > 0:
            clock_hz = tps / period

    ruby_rules = rules["ruby"]
    ruby_systems = [o for o in objects if o["type"] == ruby_rules["system_type"]]
    caches: list[CacheFacts] = []
    protocol = None
    if ruby_systems:
        hierarchy = "ruby"
        line = _as_int(ruby_systems[0].get("block_size_bytes"), f"{source}: {ruby_systems[0]['path']}.block_size_bytes")
        for obj in objects:
            if obj["type"] == ruby_rules["cache_type"]:
                caches.append(CacheFacts(obj["path"], _as_int(obj["size"], obj["path"]), _as_int(obj["assoc"], obj["path"]), "ruby"))
        for name, signature in ruby_rules["protocols"].items():
            types_present = all(counts.get(t) for t in signature["controller_types"])
            l1s = [o for o in objects if o["type"] == signature["l1_controller_type"]]
            if types_present and l1s and all(p in l1s[0] for p in signature["l1_signature_params"]):
                protocol = name
        if protocol is None:
            controllers = sorted(t for t in counts if t.endswith("_Controller"))
            raise ConfigError(f"{source}: a Ruby system whose protocol is not recognised (controllers {controllers}); add it to {DATA_FILE}")
    else:
        hierarchy = "classic"
        line = None
        for obj in objects:
            if obj["type"] in rules["classic_cache"]["types"]:
                caches.append(CacheFacts(obj["path"], _as_int(obj["size"], obj["path"]), _as_int(obj["assoc"], obj["path"]), "classic"))
    systems = [o for o in objects if "cache_line_size" in o and "mem_ranges" in o]
    ranges: list[tuple[int, int]] = []
    if systems:
        board = systems[0]
        board_line = _as_int(board["cache_line_size"], f"{source}: {board['path']}.cache_line_size")
        if line is not None and board_line != line:
            raise ConfigError(f"{source}: the board's cache_line_size {board_line} differs from Ruby's block_size_bytes {line}")
        line = board_line
        ranges = [_parse_range(r, f"{source}: {board['path']}.mem_ranges") for r in board["mem_ranges"]]
    return MachineFacts(
        source=source,
        num_cpus=len(active),
        cpu_types=tuple(sorted({o["type"] for o in active})),
        cpu_clock_hz=clock_hz,
        hierarchy=hierarchy,
        ruby_protocol=protocol,
        line_bytes=line,
        caches=tuple(caches),
        memory_ranges=tuple(ranges),
        ticks_per_second=tps,
        objects_by_type=counts,
    )
