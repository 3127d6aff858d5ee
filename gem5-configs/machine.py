"""Machines as data: load, validate and derive a lockstudy machine file.

Standard library only (no `m5`): gem5's Python imports this module from
gem5-configs/run.py, and the project's tests import it without gem5.

A machine file (TOML, in gem5-configs/machines/) describes one family of
machines; a run picks one size of it (`--cpus N` for an SMP family,
`--nodes N` for a NUMA family). `load_machine()` checks every field
(unknown, missing, wrong type, out of range) and reports each problem as
`<file>: <field>: <reason>`; `Machine.instance(count)` derives what the
gem5 components and the kernel need: memory ranges per node, the CPU->node
map, router hops and distances, and the `lockstudy.numa=` boot parameter.

A machine's identity is its content hash (`content_sha256`): the sha256 of
the file's parsed data, so an edit of its comments or layout (a source
cited, a value explained) leaves the runs made on it current, and an edit
of any value does not. Provenance records the file's sha256 as well.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

MACHINES_DIR = Path(__file__).resolve().parent / "machines"

KIND_CLASSIC_SMP = "classic-smp"
KIND_RUBY_NUMA = "ruby-numa"
KIND_CHI_NUMA = "chi-numa"
KINDS = (KIND_CLASSIC_SMP, KIND_RUBY_NUMA, KIND_CHI_NUMA)
NUMA_KINDS = (KIND_RUBY_NUMA, KIND_CHI_NUMA)
# The Ruby protocol a gem5 binary must be built with for each kind (gem5
# v24 builds one protocol per binary); classic caches work in any build.
RUBY_PROTOCOL_OF_KIND = {KIND_CLASSIC_SMP: None, KIND_RUBY_NUMA: "MESI_Two_Level", KIND_CHI_NUMA: "CHI"}

# gem5 v24.0 X86Board: memory is [0, size) below the I/O hole at 3 GiB.
X86_BOARD_MAX_MEMORY = 3 << 30
# APIC ids are 8 bits and the I/O APIC takes id == number of CPUs.
MAX_CPUS = 254
# ACPI SLIT normalises a node's distance to itself to 10.
SLIT_LOCAL_DISTANCE = 10


class MachineError(ValueError):
    """A machine file is invalid; the message names file, field and reason."""


# --------------------------------------------------------------------------
# Units


_SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_FREQ_UNITS = {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9}
_TIME_UNITS = {"ps": 1, "ns": 10**3, "us": 10**6}


def _parse_unit(text: str, units: dict[str, int], what: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2) not in units:
        raise ValueError(f"{text!r} is not a {what} (a number followed by one of {', '.join(units)})")
    value = float(match.group(1)) * units[match.group(2)]
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of {min(units, key=units.get)}")
    return int(value)


def parse_size(text: str) -> int:
    """'16KiB' -> bytes."""
    return _parse_unit(text, _SIZE_UNITS, "size")


def parse_frequency(text: str) -> int:
    """'700MHz' -> Hz."""
    return _parse_unit(text, _FREQ_UNITS, "frequency")


def parse_time_ps(text: str) -> int:
    """'50ns' -> picoseconds."""
    return _parse_unit(text, _TIME_UNITS, "time")


def cycles_at(time_ps: int, frequency_hz: int) -> int:
    """Whole clock cycles (at least 1) covering `time_ps` at `frequency_hz`."""
    period_ps = 10**12 / frequency_hz
    return max(1, math.ceil(time_ps / period_ps - 1e-9))


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


# --------------------------------------------------------------------------
# Schema: every table lists its fields; a field is (checker, required).
# A checker takes the raw TOML value and returns the converted value or
# raises ValueError with the reason.


def _typed(kind: type, what: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if kind is int and isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"must be {what}, got {value!r}")
        return value

    return check


_string = _typed(str, "a string")
_boolean = _typed(bool, "true or false")
_integer = _typed(int, "an integer")


def _positive_int(value: Any) -> int:
    if _integer(value) <= 0:
        raise ValueError(f"must be a positive integer, got {value!r}")
    return value


def _non_negative_int(value: Any) -> int:
    if _integer(value) < 0:
        raise ValueError(f"must be zero or a positive integer, got {value!r}")
    return value


def _power_of_two(value: Any) -> int:
    if not is_power_of_two(_integer(value)):
        raise ValueError(f"must be a power of two, got {value!r}")
    return value


def _size(value: Any) -> int:
    return parse_size(_string(value))


def _frequency(value: Any) -> int:
    return parse_frequency(_string(value))


def _time(value: Any) -> int:
    return parse_time_ps(_string(value))


def _bandwidth(value: Any) -> str:
    if not re.fullmatch(r"\d+(\.\d+)?[kMG]i?B/s", _string(value)):
        raise ValueError(f"must be a bandwidth like '800MB/s' or '6.4GiB/s', got {value!r}")
    return value


def _one_of(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if _string(value) not in choices:
            raise ValueError(f"must be one of {', '.join(map(repr, choices))}, got {value!r}")
        return value

    return check


KERNEL_ARG = re.compile(r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/-]+)?")
RUN_PY_ARG_PREFIX = "lockstudy."  # run.py writes the lockstudy.* switches itself


def _kernel_args(value: Any) -> list:
    if not isinstance(value, list):
        raise ValueError(f"must be a list of kernel arguments, got {value!r}")
    for index, arg in enumerate(value):
        if not isinstance(arg, str) or not KERNEL_ARG.fullmatch(arg):
            raise ValueError(f"item {index}: {arg!r} is not one kernel argument (name or name=value, no spaces or quotes)")
        if arg.startswith(RUN_PY_ARG_PREFIX):
            raise ValueError(f"item {index}: {arg!r}: lockstudy.* switches come from run.py and the campaign, not the machine")
    return value


def _list_of(item: Callable[[Any], Any], *, unique_sorted: bool = False) -> Callable[[Any], list]:
    def check(value: Any) -> list:
        if not isinstance(value, list) or not value:
            raise ValueError(f"must be a non-empty list, got {value!r}")
        items = []
        for index, element in enumerate(value):
            try:
                items.append(item(element))
            except ValueError as exc:
                raise ValueError(f"item {index}: {exc}") from None
        if unique_sorted and items != sorted(set(items)):
            raise ValueError(f"must be in increasing order without repeats, got {value!r}")
        return items

    return check


Schema = dict[str, Any]  # field -> (checker, required) | nested Schema (a table)

_CLASSIC_CACHE: Schema = {
    "size": (_size, True),
    "assoc": (_positive_int, True),
    "tag_latency": (_positive_int, True),
    "data_latency": (_positive_int, True),
    "response_latency": (_positive_int, True),
    "mshrs": (_positive_int, True),
    "tgts_per_mshr": (_positive_int, True),
}

_RUBY_CACHE: Schema = {
    "size": (_size, True),
    "assoc": (_positive_int, True),
}

_XBAR_LATENCIES: Schema = {
    "frontend_latency": (_non_negative_int, True),
    "forward_latency": (_non_negative_int, True),
    "response_latency": (_non_negative_int, True),
    "snoop_response_latency": (_non_negative_int, True),
}

_NUMALINK: Schema = {
    "router_latency": (_time, True),
    "node_router_latency": (_time, True),
    "link_latency": (_time, True),
    "ext_link_latency": (_time, True),
    "bandwidth_factor": (_positive_int, True),
    "tree_fanout": (_list_of(_positive_int), True),
}

_NUMA_LAYOUT: Schema = {
    "nodes": {
        "counts": (_list_of(_power_of_two, unique_sorted=True), True),
        "cpus_per_node": (_positive_int, True),
    },
    "memory": {
        "size": (_size, True),
        "latency": (_time, True),
        "bandwidth": (_bandwidth, True),
    },
    "numa": {
        "local_distance": (_positive_int, True),
        "distance_per_router_hop": (_positive_int, True),
    },
}

_COMMON: Schema = {
    "machine": {
        "name": (_string, True),
        "description": (_string, True),
        "kind": (_one_of(*KINDS), True),
        "clock": (_frequency, True),
    },
    "board": {
        "acpi_madt": (_boolean, True),
        "root_device": (_string, True),
        "kernel_args": (_kernel_args, True),
    },
    "cache_line": {
        "bytes": (_power_of_two, True),
        "allowed": (_list_of(_power_of_two, unique_sorted=True), True),
    },
}

SCHEMAS: dict[str, Schema] = {
    KIND_CLASSIC_SMP: {
        **_COMMON,
        "cpus": {"counts": (_list_of(_positive_int, unique_sorted=True), True)},
        "l1i": _CLASSIC_CACHE,
        "l1d": _CLASSIC_CACHE,
        "l2": _CLASSIC_CACHE,
        "iocache": _CLASSIC_CACHE,
        "fsb": {
            "clock": (_frequency, True),
            "width_bytes": (_positive_int, True),
            "snoop_filter": (_boolean, True),
            **_XBAR_LATENCIES,
        },
        "backside_bus": {
            "width_bytes": (_positive_int, True),
            **_XBAR_LATENCIES,
        },
        "memory": {
            "size": (_size, True),
            "latency": (_time, True),
            "bandwidth": (_bandwidth, True),
        },
    },
    KIND_RUBY_NUMA: {
        **_COMMON,
        **_NUMA_LAYOUT,
        "l1i": _RUBY_CACHE,
        "l1d": _RUBY_CACHE,
        "l2_bank": {
            **_RUBY_CACHE,
            "interleave": (_one_of("line"), True),
        },
        "protocol": {
            "l1_request_latency": (_positive_int, True),
            "l1_response_latency": (_positive_int, True),
            "to_l2_latency": (_positive_int, True),
            "l2_request_latency": (_positive_int, True),
            "l2_response_latency": (_positive_int, True),
            "to_l1_latency": (_positive_int, True),
            "directory_latency": (_positive_int, True),
            "to_mem_ctrl_latency": (_positive_int, True),
            "deadlock_threshold": (_positive_int, True),
        },
        "network": _NUMALINK,
    },
    KIND_CHI_NUMA: {
        **_COMMON,
        **_NUMA_LAYOUT,
        "l1i": _RUBY_CACHE,
        "l1d": _RUBY_CACHE,
        "l2": _RUBY_CACHE,
        "protocol": {
            "l1_tag_latency": (_positive_int, True),
            "l1_data_latency": (_positive_int, True),
            "l2_tag_latency": (_positive_int, True),
            "l2_data_latency": (_positive_int, True),
            "home_tag_latency": (_positive_int, True),
            "message_latency": (_positive_int, True),
            "memory_controller_latency": (_positive_int, True),
            "deadlock_threshold": (_positive_int, True),
        },
        "network": {**_NUMALINK, "cpu_port_latency": (_time, True)},
    },
}


def _check_table(schema: Schema, data: Any, prefix: str, errors: list[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        errors.append(f"{prefix.rstrip('.') or '<top>'}: must be a table, got {data!r}")
        return {}
    checked: dict[str, Any] = {}
    for key in data:
        if key not in schema:
            known = ", ".join(sorted(schema))
            errors.append(f"{prefix}{key}: unknown field (known here: {known})")
    for key, spec in schema.items():
        where = f"{prefix}{key}"
        if isinstance(spec, dict):
            if key not in data:
                errors.append(f"{where}: missing table [{where}]")
                continue
            checked[key] = _check_table(spec, data[key], f"{where}.", errors)
            continue
        checker, required = spec
        if key not in data:
            if required:
                errors.append(f"{where}: missing field")
            continue
        try:
            checked[key] = checker(data[key])
        except ValueError as exc:
            errors.append(f"{where}: {exc}")
    return checked


# --------------------------------------------------------------------------
# Machines


@dataclass(frozen=True)
class Machine:
    """A validated machine file (a family of machine sizes)."""

    path: Path
    data: dict[str, Any]
    sha256: str  # of the file's bytes
    content_sha256: str  # of its parsed data (content_sha256()): the machine's identity

    @property
    def name(self) -> str:
        return self.data["machine"]["name"]

    @property
    def kind(self) -> str:
        return self.data["machine"]["kind"]

    @property
    def is_numa(self) -> bool:
        return self.kind in NUMA_KINDS

    @property
    def ruby_protocol(self) -> str | None:
        """The Ruby protocol the gem5 binary needs (None: classic caches, any build)."""
        return RUBY_PROTOCOL_OF_KIND[self.kind]

    @property
    def memory_response_clock_hz(self) -> int:
        """The clock a memory's response is retimed to before anything sees it.

        On the bus machine the memory answers onto the front-side bus, which
        forwards the response at its next clock edge; on the Ruby machines
        the directory or home node takes it at the next edge of the board
        clock. A perturbation of memory latency (run.py --perturb-ns) moves
        nothing unless it can cross such an edge."""
        return self.data["fsb"]["clock"] if self.kind == KIND_CLASSIC_SMP else self.data["machine"]["clock"]

    @property
    def size_option(self) -> str:
        """The run option that picks a size: 'cpus' or 'nodes'."""
        return "nodes" if self.is_numa else "cpus"

    @property
    def counts(self) -> list[int]:
        return self.data[self.size_option]["counts"]

    def instance(self, count: int, line_bytes: int | None = None) -> "MachineInstance":
        """One machine of this family: `count` CPUs (SMP) or nodes (NUMA)."""
        if count not in self.counts:
            raise MachineError(
                f"{self.path}: {self.size_option}.counts: {self.name} is defined for "
                f"--{self.size_option} {', '.join(map(str, self.counts))}, not {count}"
            )
        line = self.data["cache_line"]["bytes"] if line_bytes is None else line_bytes
        if line not in self.data["cache_line"]["allowed"]:
            raise MachineError(
                f"{self.path}: cache_line.allowed: {self.name} allows line sizes "
                f"{self.data['cache_line']['allowed']}, not {line}"
            )
        if self.is_numa:
            nodes, cpus_per_node = count, self.data["nodes"]["cpus_per_node"]
        else:
            nodes, cpus_per_node = 1, count
        return MachineInstance(self, nodes * cpus_per_node, nodes, cpus_per_node, line)


@dataclass(frozen=True)
class MachineInstance:
    """One size of a machine, with everything derived from the file."""

    machine: Machine
    num_cpus: int
    num_nodes: int
    cpus_per_node: int
    line_bytes: int

    @property
    def data(self) -> dict[str, Any]:
        return self.machine.data

    @property
    def size(self) -> int:
        """The count this size was made with: CPUs (SMP) or nodes (NUMA), per machine.size_option."""
        return self.num_nodes if self.machine.is_numa else self.num_cpus

    @property
    def clock_hz(self) -> int:
        return self.data["machine"]["clock"]

    @property
    def memory_bytes(self) -> int:
        return self.data["memory"]["size"]

    @property
    def node_bytes(self) -> int:
        return self.memory_bytes // self.num_nodes

    def node_memory_ranges(self) -> list[tuple[int, int]]:
        """[start, end) of each node's memory: equal, contiguous, in node order."""
        return [(node * self.node_bytes, (node + 1) * self.node_bytes) for node in range(self.num_nodes)]

    def cpu_to_node(self) -> list[int]:
        """Node of each CPU (CPU number = APIC id): consecutive CPUs fill a node."""
        return [cpu // self.cpus_per_node for cpu in range(self.num_cpus)]

    def node_cpus(self, node: int) -> list[int]:
        return [cpu for cpu, home in enumerate(self.cpu_to_node()) if home == node]

    # -- NUMAlink tree (Ruby NUMA) ------------------------------------------

    def tree_levels(self) -> list[int]:
        """Fan-out of each router level actually needed for this many nodes."""
        levels: list[int] = []
        covered = 1
        for fanout in self.data["network"]["tree_fanout"]:
            if covered >= self.num_nodes:
                break
            levels.append(fanout)
            covered *= fanout
        return levels

    def router_level_of_lca(self, node_a: int, node_b: int) -> int:
        """Tree level of the lowest router joining two nodes (0 = same node)."""
        level, group = 0, 1
        for fanout in self.tree_levels():
            if node_a // group == node_b // group:
                return level
            level += 1
            group *= fanout
        if node_a // group == node_b // group:
            return level
        raise AssertionError("nodes not joined by the tree; validation should have caught this")

    def router_hops(self, node_a: int, node_b: int) -> int:
        """NUMAlink routers a message crosses between two nodes' hubs."""
        level = self.router_level_of_lca(node_a, node_b)
        return 0 if level == 0 else 2 * level - 1

    def distances(self) -> list[list[int]]:
        """SLIT-style distances: local_distance plus a fixed amount per router hop."""
        if not self.machine.is_numa:
            return [[SLIT_LOCAL_DISTANCE]]
        numa = self.data["numa"]
        return [
            [numa["local_distance"] + numa["distance_per_router_hop"] * self.router_hops(a, b) for b in range(self.num_nodes)]
            for a in range(self.num_nodes)
        ]

    def numa_boot_parameter(self) -> str:
        """`lockstudy.numa=<N>:*<CPUs per node>:tree<distance per router>,<fan-outs>`.

        The compact form of kernel/patches/numa-cmdline-cpus-per-node.patch
        and numa-cmdline-router-tree.patch: the kernel derives the CPU lists
        and the distances (local + per router crossed, 2L-1 routers below a
        common router of level L) exactly as distances() does, in under 30
        bytes at any size (the explicit form is 871 bytes at 16 nodes)."""
        if not self.machine.is_numa:
            return f"lockstudy.numa=1:*{self.num_cpus}"  # one node: no distances to give
        numa = self.data["numa"]
        tree = ",".join(str(value) for value in [numa["distance_per_router_hop"], *self.tree_levels()])
        return f"lockstudy.numa={self.num_nodes}:*{self.cpus_per_node}:tree{tree}"

    def explicit_numa_value(self) -> str:
        """The same layout in the explicit form, `<N>:<cpus node0>/...:<N*N distances>`."""
        cpu_lists = "/".join(format_cpu_list(self.node_cpus(node)) for node in range(self.num_nodes))
        distances = ",".join(str(d) for row in self.distances() for d in row)
        return f"{self.num_nodes}:{cpu_lists}:{distances}"

    def cycles(self, time_ps: int, clock_hz: int | None = None) -> int:
        return cycles_at(time_ps, clock_hz or self.clock_hz)

    def summary(self) -> dict[str, Any]:
        """What a result's provenance records about the machine."""
        summary: dict[str, Any] = {
            "name": self.machine.name,
            "file": self.machine.path.name,
            "sha256": self.machine.sha256,
            "content_sha256": self.machine.content_sha256,
            "kind": self.machine.kind,
            "cpus": self.num_cpus,
            "nodes": self.num_nodes,
            "line_bytes": self.line_bytes,
            "cpu_to_node": self.cpu_to_node(),
            "node_memory_ranges": [[hex(start), hex(end)] for start, end in self.node_memory_ranges()],
        }
        if self.machine.is_numa:
            summary["distances"] = self.distances()
        return summary


def format_cpu_list(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's cpulist format)."""
    parts: list[str] = []
    index = 0
    while index < len(cpus):
        end = index
        while end + 1 < len(cpus) and cpus[end + 1] == cpus[end] + 1:
            end += 1
        parts.append(str(cpus[index]) if end == index else f"{cpus[index]}-{cpus[end]}")
        index = end + 1
    return ",".join(parts)


def _cross_checks(data: dict[str, Any]) -> list[str]:
    """Rules that involve several fields; only run on a schema-valid file."""
    errors: list[str] = []
    kind = data["machine"]["kind"]
    line = data["cache_line"]
    if line["bytes"] not in line["allowed"]:
        errors.append(f"cache_line.bytes: {line['bytes']} is not in cache_line.allowed {line['allowed']}")
    memory = data["memory"]["size"]
    if memory > X86_BOARD_MAX_MEMORY:
        errors.append(f"memory.size: {memory} bytes is above the X86Board limit of 3 GiB (I/O hole at 0xC0000000)")
    for level in ("l1i", "l1d", "l2", "l2_bank"):
        if level not in data:
            continue
        cache = data[level]
        for line_bytes in line["allowed"]:
            sets, rest = divmod(cache["size"], cache["assoc"] * line_bytes)
            if rest or not is_power_of_two(sets):
                errors.append(
                    f"{level}.size: {cache['size']} bytes, {cache['assoc']}-way with {line_bytes}-byte lines "
                    "does not give a power-of-two number of sets"
                )
    if kind == KIND_CLASSIC_SMP:
        largest = max(data["cpus"]["counts"])
        if largest > MAX_CPUS:
            errors.append(f"cpus.counts: {largest} CPUs is above the x86 APIC id limit of {MAX_CPUS}")
    else:
        nodes = data["nodes"]
        largest = max(nodes["counts"]) * nodes["cpus_per_node"]
        if largest > MAX_CPUS:
            errors.append(f"nodes.counts: {largest} CPUs is above the x86 APIC id limit of {MAX_CPUS}")
        reach = math.prod(data["network"]["tree_fanout"])
        if max(nodes["counts"]) > reach:
            errors.append(
                f"network.tree_fanout: the routers join at most {reach} nodes, "
                f"fewer than nodes.counts' {max(nodes['counts'])}"
            )
        for count in nodes["counts"]:
            if memory % count or not is_power_of_two(memory // count):
                errors.append(f"memory.size: {memory} bytes do not split into {count} equal power-of-two node ranges")
        if data["numa"]["local_distance"] != SLIT_LOCAL_DISTANCE:
            # The kernel's router-tree form adds distances to LOCAL_DISTANCE (10).
            errors.append("numa.local_distance: must be 10 (ACPI SLIT normalises the local distance to 10)")
    return errors


def content_sha256(data: dict[str, Any]) -> str:
    """The sha256 of a machine file's parsed data, keys sorted: what its comments, layout and key order do not change."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_content_sha256(path: Path) -> str:
    """content_sha256() of a machine file, without checking its fields (MachineError: not readable TOML)."""
    try:
        return content_sha256(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MachineError(f"{path}: cannot read as TOML: {exc}") from None


def load_machine(path: Path | str) -> Machine:
    """Read and validate a machine file; raise MachineError naming every problem."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MachineError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise MachineError(f"{path}: not valid TOML: {exc}") from None
    kind = data.get("machine", {}).get("kind") if isinstance(data.get("machine"), dict) else None
    if not isinstance(kind, str) or kind not in SCHEMAS:
        raise MachineError(f"{path}: machine.kind: must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    errors: list[str] = []
    checked = _check_table(SCHEMAS[kind], data, "", errors)
    if not errors:
        errors = _cross_checks(checked)
    if not errors and checked["machine"]["name"] != path.stem:
        errors.append(f"machine.name: {checked['machine']['name']!r} must match the file name {path.stem!r}")
    if errors:
        raise MachineError("\n".join(f"{path}: {error}" for error in errors))
    return Machine(path.resolve(), checked, hashlib.sha256(raw).hexdigest(), content_sha256(data))


def find_machine(name_or_path: str) -> Machine:
    """A machine by name (a file in gem5-configs/machines/) or by path."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        return load_machine(candidate)
    path = MACHINES_DIR / f"{name_or_path}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in MACHINES_DIR.glob("*.toml")))
        raise MachineError(f"{path}: no such machine {name_or_path!r} (known: {known})")
    return load_machine(path)


def machine_files() -> list[Path]:
    return sorted(MACHINES_DIR.glob("*.toml"))
