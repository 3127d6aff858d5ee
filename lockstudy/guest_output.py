"""Read what the image's /init printed on the console into typed results.

The protocol (written by disk-image/overlay/init):

    LOCKSTUDY-BOOT kernel=<release> cpus=<n> m5ops=<form> checkpoint=<0|1>
    LOCKSTUDY-NUMA <fact>                        the topology (workloads/numa_probe.c)
    LOCKSTUDY-SPEC <run spec>                    from lockstudy.run=
    LOCKSTUDY-SPEC <run spec> source=readfile    after a gem5 checkpoint: replaces it
    LOCKSTUDY-SETTING <name>=<value>      | LOCKSTUDY-SETTINGS absent
    LOCKSTUDY-RUN <testcase> index=<i> uptime=<s>
    LOCKSTUDY-RESULT-BEGIN <testcase>
    <one JSON line>
    LOCKSTUDY-RESULT-END
    LOCKSTUDY-LOCKS-BEGIN <testcase>             the kernel's lock registry after
    <address> <physical> <size> <name>           that testcase (lockstudy kernel only)
    LOCKSTUDY-LOCKS-END
    LOCKSTUDY-MEMORY-BEGIN <testcase>            what the kernel's run-time memory held
    slab <physical> <bytes> <slab bytes> <object bytes> <cache>
    percpu <physical> <bytes> <cpu>              after that testcase (lockstudy kernel
    table <physical> <bytes> <offset> <name>     only; kernel/patches/README.md)
    stack <physical> <bytes> <pid> <comm>
    pagetable|anon|file|reserved|free <physical> <bytes>
    LOCKSTUDY-MEMORY-END
    LOCKSTUDY-LOCKEVENTS <testcase> <event>=<count> ...
                                                 the kernel's lock event counters over
                                                 that testcase (CONFIG_LOCK_EVENT_COUNTS)
    LOCKSTUDY-ERROR <message>
    LOCKSTUDY-DONE status=ok|error reason=<word> results=<n> uptime=<s>

A run counts only when it reached LOCKSTUDY-DONE status=ok and every
result block is whole: a console that stops early (crash, timeout, kill)
gives an incomplete run whose results are never handed out
(`GuestRun.results()` raises), so nothing is half-counted.

Kernel messages may interleave with /init's lines on a serial console;
lines that are not part of the protocol are ignored, a kernel message
printed in the middle of one of /init's lines is taken out of it (the
line goes on after the message), and a result block takes the one line
between its markers that parses as a JSON object.

A run restored from a boot checkpoint learns its run spec from gem5's
readfile: the last LOCKSTUDY-SPEC line is the spec that ran, and
`GuestRun.spec_source` says where it came from (cmdline or readfile).
"""

from __future__ import annotations

import json
from collections.abc import Callable
import re
from dataclasses import dataclass, field
from typing import Any

MARK = "LOCKSTUDY-"
BEGIN = "LOCKSTUDY-RESULT-BEGIN"
END = "LOCKSTUDY-RESULT-END"
DONE = "LOCKSTUDY-DONE"
LOCKS_BEGIN = "LOCKSTUDY-LOCKS-BEGIN"
LOCKS_END = "LOCKSTUDY-LOCKS-END"
MEMORY_BEGIN = "LOCKSTUDY-MEMORY-BEGIN"
MEMORY_END = "LOCKSTUDY-MEMORY-END"
NUMA = "LOCKSTUDY-NUMA"
LOCK_EVENTS = "LOCKSTUDY-LOCKEVENTS"
# One counter of kernel/locking/lock_events_list.h and its count.
LOCK_EVENT_WORD = re.compile(r"^([a-z0-9_]+)=(\d+)$")
# A line of /sys/kernel/lockstudy/locks (kernel/patches/README.md).
REGISTRY_LINE = re.compile(r"^0x([0-9a-f]+) 0x([0-9a-f]+) (\d+) (\S.*)$")
# A line of /sys/kernel/lockstudy/memory (kernel/patches/README.md): its kind, then its fields.
HEX_FIELD, NUMBER, REST = r"0x([0-9a-f]+)", r"(\d+)", r"(\S.*)"
MEMORY_LINES = {
    "slab": re.compile(rf"^slab {HEX_FIELD} {NUMBER} {NUMBER} {NUMBER} {REST}$"),  # bytes, slab bytes, object bytes, cache
    "percpu": re.compile(rf"^percpu {HEX_FIELD} {NUMBER} {NUMBER}$"),  # bytes, cpu
    "table": re.compile(rf"^table {HEX_FIELD} {NUMBER} {NUMBER} {REST}$"),  # bytes, offset in the table, its name
    "stack": re.compile(rf"^stack {HEX_FIELD} {NUMBER} {NUMBER} {REST}$"),  # bytes, pid, comm
    **{kind: re.compile(rf"^{kind} {HEX_FIELD} {NUMBER}$") for kind in ("pagetable", "anon", "file", "reserved", "free")},
    "node": re.compile(rf"^node {HEX_FIELD} {NUMBER} {NUMBER}$"),  # bytes, node
    "field": re.compile(rf"^field {HEX_FIELD} {NUMBER} {NUMBER} (\S+)$"),  # bytes, node, field of its pg_data_t
    "memmap": re.compile(rf"^memmap {HEX_FIELD} {NUMBER} {NUMBER} {NUMBER}$"),  # bytes, first frame, struct page bytes
}
# A kernel message (printk with its time stamp) that the console printed in
# the middle of one of /init's lines: that line goes on after the message's
# newline, so the message and its newline are taken out. Several messages may
# come in a row (the TSC's refined calibration, then its clocksource line)
# before the line goes on; they are taken out together.
KERNEL_MESSAGE_INSIDE_A_LINE = re.compile(r"(?<=[^\n])(?:\[ *\d+\.\d+\] [^\n]*\n)+")
# A protocol line may follow other text on the same console line (a kernel
# message without its newline); it always runs to the end of the line.
PROTOCOL_LINE = re.compile(r"(LOCKSTUDY-[A-Z-]+)(?:[ \t]+(.*))?$")
# A run spec has no spaces; a SPEC line may end with the spec's source.
SPEC_SOURCE = re.compile(r"^(\S*)(?:\s+source=(\w+))?$")
SPEC_FROM_CMDLINE = "cmdline"


class IncompleteRun(RuntimeError):
    """The console does not hold a whole, successful run."""


@dataclass(frozen=True)
class TestcaseResult:
    testcase: str
    data: dict[str, Any]

    @property
    def seed(self) -> str:
        return str(self.data.get("seed", ""))

    @property
    def wall_s(self) -> float:
        return float(self.data["wall_s"])

    @property
    def ops_per_s(self) -> float:
        return float(self.data.get("ops_per_s", 0.0))

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.data.get("metrics", {}))


@dataclass(frozen=True)
class RegisteredLock:
    """One line of the kernel's lock registry: where a lock of the study lives."""

    address: int  # kernel virtual
    physical: int  # what gem5's traces show
    size: int
    name: str

    def as_dict(self) -> dict[str, Any]:
        return {"address": f"0x{self.address:x}", "physical": f"0x{self.physical:x}", "size": self.size, "name": self.name}


@dataclass(frozen=True)
class MemoryRange:
    """One line of the kernel's memory map: a physical range whose owner the kernel knows.

    kind "slab": adjacent slabs of one cache (`name`), each `slab_bytes`
    long, objects every `object_bytes` from each slab's start; "percpu":
    one CPU's copy of the static per-CPU section (`name` is the CPU);
    "table": part of a large system hash table (`name`), `table_offset`
    bytes into it; "stack": a task's kernel stack (`name` is comm/pid);
    "pagetable", "anon", "file", "reserved", "free": pages of that kind (no name);
    "node": a node's pg_data_t (`name` is the node); "field": a field of
    one (`name`, e.g. zone.Normal.lock; its node is the node range holding
    it); "memmap": the struct pages of adjacent frames, `object_bytes`
    each, the first of them for frame `table_offset`."""

    kind: str
    physical: int
    size: int
    slab_bytes: int = 0
    object_bytes: int = 0
    name: str = ""
    table_offset: int = 0

    def as_list(self) -> list[Any]:
        """Compact for result.json (a map holds thousands of ranges): [kind, physical, size, slab bytes, object bytes, name, table offset]."""
        return [self.kind, f"0x{self.physical:x}", self.size, self.slab_bytes, self.object_bytes, self.name, self.table_offset]

    @classmethod
    def from_list(cls, entry: list[Any]) -> "MemoryRange":
        """The inverse of as_list; also the first layout, without the table offset. ValueError for anything else."""
        if not isinstance(entry, list) or len(entry) not in (6, 7):
            raise ValueError(f"a memory range is [kind, physical, size, slab bytes, object bytes, name, table offset], not {entry!r}")
        kind, physical, size, slab_bytes, object_bytes, name, *rest = entry
        return cls(str(kind), int(str(physical), 16), int(size), int(slab_bytes), int(object_bytes), str(name), int(rest[0]) if rest else 0)


def memory_range(text: str) -> MemoryRange | None:
    """A memory map line, or None when it is not one."""
    kind = text.partition(" ")[0]
    pattern = MEMORY_LINES.get(kind)
    m = pattern.match(text) if pattern is not None else None
    if m is None:
        return None
    physical, size = int(m.group(1), 16), int(m.group(2))
    match kind:
        case "slab":
            return MemoryRange(kind, physical, size, int(m.group(3)), int(m.group(4)), m.group(5))
        case "percpu":
            return MemoryRange(kind, physical, size, name=m.group(3))
        case "table":
            return MemoryRange(kind, physical, size, name=m.group(4), table_offset=int(m.group(3)))
        case "stack":
            return MemoryRange(kind, physical, size, name=f"{m.group(4)}/{m.group(3)}")
        case "node":
            return MemoryRange(kind, physical, size, name=m.group(3))
        case "field":
            return MemoryRange(kind, physical, size, name=m.group(4))
        case "memmap":
            return MemoryRange(kind, physical, size, object_bytes=int(m.group(4)), table_offset=int(m.group(3)))
    return MemoryRange(kind, physical, size)


@dataclass
class NumaReport:
    """The topology the guest's kernel reported (workloads/numa_probe.c)."""

    cpu_node: dict[int, int] = field(default_factory=dict)  # getcpu() on each CPU
    cpulist: dict[int, str] = field(default_factory=dict)
    memtotal_kb: dict[int, int] = field(default_factory=dict)
    distance: dict[int, tuple[int, ...]] = field(default_factory=dict)
    done: bool = False
    failed: bool = False

    def add(self, words: list[str]) -> bool:
        """Take one LOCKSTUDY-NUMA line's words; False if it is malformed."""
        try:
            match words:
                case ["cpu", cpu, "node", node]:
                    self.cpu_node[int(cpu)] = int(node)
                case ["node", node, "cpulist", cpus]:
                    self.cpulist[int(node)] = cpus
                case ["node", node, "memtotal_kb", kb]:
                    self.memtotal_kb[int(node)] = int(kb)
                case ["node", node, "distance", *row]:
                    self.distance[int(node)] = tuple(int(d) for d in row)
                case ["done"]:
                    self.done = True
                case ["failed"]:
                    self.failed = True
                case _:
                    return False
        except ValueError:
            return False
        return True

    def nodes(self) -> int:
        return len(self.cpulist)

    def as_dict(self) -> dict[str, Any]:
        return {
            "done": self.done,
            "cpu_node": [self.cpu_node[cpu] for cpu in sorted(self.cpu_node)],
            "cpulist": [self.cpulist[node] for node in sorted(self.cpulist)],
            "memtotal_kb": [self.memtotal_kb.get(node) for node in sorted(self.cpulist)],
            "distance": [list(self.distance.get(node, ())) for node in sorted(self.cpulist)],
        }


@dataclass(frozen=True)
class Done:
    status: str
    reason: str
    fields: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class GuestRun:
    boot: dict[str, str] = field(default_factory=dict)
    numa: NumaReport | None = None  # None: the probe printed nothing
    spec: str | None = None
    spec_source: str | None = None  # "cmdline", or "readfile" after a checkpoint
    settings: dict[str, str] | None = None  # None: /sys/kernel/lockstudy absent or not printed
    settings_absent: bool = False
    started: list[tuple[str, float | None]] = field(default_factory=list)  # (testcase, guest uptime)
    parsed: list[TestcaseResult] = field(default_factory=list)
    # The lock registry printed after each result, by testcase index.
    locks: dict[int, list[RegisteredLock]] = field(default_factory=dict)
    # The kernel's memory map printed after each result, by testcase index.
    memory: dict[int, list[MemoryRange]] = field(default_factory=dict)
    # The kernel's lock event counters over each testcase, by testcase index
    # (only kernels built with CONFIG_LOCK_EVENT_COUNTS print them).
    lock_event_counts: dict[int, dict[str, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # protocol violations found by the parser
    done: Done | None = None

    @property
    def complete(self) -> bool:
        """Reached DONE status=ok, no broken block, the result count agrees."""
        return not self.incompleteness()

    def incompleteness(self) -> list[str]:
        reasons = list(self.problems)
        if self.done is None:
            reasons.append("no LOCKSTUDY-DONE line: the guest crashed, hung or was killed")
        elif not self.done.ok:
            reasons.append(f"LOCKSTUDY-DONE status={self.done.status} reason={self.done.reason}")
            reasons.extend(self.errors)
        else:
            announced = self.done.fields.get("results")
            if announced is not None and announced.isdigit() and int(announced) != len(self.parsed):
                reasons.append(f"LOCKSTUDY-DONE announces {announced} results, the console holds {len(self.parsed)}")
        return reasons

    def results(self) -> list[TestcaseResult]:
        """The results of a complete run; raises IncompleteRun otherwise."""
        reasons = self.incompleteness()
        if reasons:
            raise IncompleteRun("; ".join(reasons))
        return list(self.parsed)

    def guest_seconds(self) -> dict[int, float]:
        """Guest uptime spent per testcase (index -> seconds), from the RUN and DONE stamps."""
        stamps = [uptime for _, uptime in self.started]
        end = _float(self.done.fields.get("uptime")) if self.done else None
        spans: dict[int, float] = {}
        for index, begin in enumerate(stamps):
            following = stamps[index + 1] if index + 1 < len(stamps) else end
            if begin is not None and following is not None:
                spans[index] = following - begin
        return spans


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out


def _add_lock_events(run: GuestRun, rest: str) -> None:
    """A LOCKEVENTS line belongs to the result just printed, with the same testcase name."""
    testcase, *words = rest.split()
    if not run.parsed or run.parsed[-1].testcase != testcase:
        run.problems.append(f"lock event counts of {testcase!r} do not follow its result")
        return
    counts: dict[str, int] = {}
    for word in words:
        match = LOCK_EVENT_WORD.match(word)
        if match is None:
            run.problems.append(f"lock event count {word!r} of {testcase} is not <event>=<count>")
            return
        counts[match.group(1)] = int(match.group(2))
    run.lock_event_counts[len(run.parsed) - 1] = counts


def registered_lock(text: str) -> RegisteredLock | None:
    """A lock registry line, or None when it is not one."""
    entry = REGISTRY_LINE.match(text)
    if entry is None:
        return None
    return RegisteredLock(int(entry.group(1), 16), int(entry.group(2), 16), int(entry.group(3)), entry.group(4))


@dataclass
class _Listing:
    """A listing /init prints after a testcase's result (the lock registry, the memory map), one entry per line."""

    what: str  # "lock registry"
    begin: str
    end: str
    parse: Callable[[str], Any]  # an entry, or None for a line that is not one (a kernel message)
    store: dict[int, list[Any]]  # by testcase index, in the GuestRun
    entries: list[Any] | None = None  # the open block's

    def take_line(self, raw: str, last: bool) -> bool:
        """Whether the line belongs to an open block; the console's last line may be cut short, so it is dropped."""
        if self.entries is None:
            return False
        entry = self.parse(raw.strip()) if not last else None
        if entry is not None:
            self.entries.append(entry)
        return True

    def take_tag(self, run: "GuestRun", tag: str, rest: str) -> bool:
        """Whether the protocol tag was this listing's begin or end; any other tag interrupts an open block."""
        if tag == self.begin:
            if not run.parsed or run.parsed[-1].testcase != rest:
                run.problems.append(f"{self.what} of {rest!r} does not follow its result")
            self.entries = []
            return True
        if tag == self.end:
            if self.entries is None:
                run.problems.append(f"{self.end} without a BEGIN")
            elif run.parsed:
                self.store[len(run.parsed) - 1] = self.entries
            self.entries = None
            return True
        if self.entries is not None:
            run.problems.append(f"{self.what} interrupted by {tag}")
            self.entries = None
        return False

    def finish(self, run: "GuestRun") -> None:
        """A block still open when the console ends: the run is incomplete, its whole lines still name what they name."""
        if self.entries is None:
            return
        run.problems.append(f"{self.what} has no {self.end}")
        if self.entries and run.parsed:
            self.store[len(run.parsed) - 1] = self.entries
            run.problems.append(f"{self.what} of {run.parsed[-1].testcase!r} cut short: its {len(self.entries)} whole line(s) kept")


def parse_console(text: str) -> GuestRun:
    """Parse a whole console log (bytes decoded with errors='replace' are fine)."""
    run = GuestRun()
    block: str | None = None  # testcase of the open result block
    block_json: dict[str, Any] | None = None
    listings = (
        _Listing("lock registry", LOCKS_BEGIN, LOCKS_END, registered_lock, run.locks),
        _Listing("memory map", MEMORY_BEGIN, MEMORY_END, memory_range, run.memory),
    )
    lines = KERNEL_MESSAGE_INSIDE_A_LINE.sub("", text.replace("\r", "")).split("\n")
    for number, raw in enumerate(lines):
        match = PROTOCOL_LINE.search(raw)
        if match is None and any(listing.take_line(raw, number == len(lines) - 1) for listing in listings):
            continue
        if block is not None and match is None:
            if block_json is None:
                candidate = raw.strip()
                if candidate.startswith("{"):
                    try:
                        value = json.loads(candidate)
                    except json.JSONDecodeError:
                        value = None
                    if isinstance(value, dict):
                        block_json = value
            continue
        if match is None:
            continue
        tag, rest = match.group(1), (match.group(2) or "").strip()
        if tag == BEGIN:
            if block is not None:
                run.problems.append(f"result block of {block} has no LOCKSTUDY-RESULT-END")
            block, block_json = rest or "?", None
        elif tag == END:
            if block is None:
                run.problems.append("LOCKSTUDY-RESULT-END without a BEGIN")
            elif block_json is None:
                run.problems.append(f"result block of {block} holds no JSON object")
            elif block_json.get("testcase") != block:
                run.problems.append(f"result block of {block} holds the JSON of {block_json.get('testcase')!r}")
            else:
                run.parsed.append(TestcaseResult(block, block_json))
            block, block_json = None, None
        elif block is not None:
            run.problems.append(f"result block of {block} interrupted by {tag}")
            block, block_json = None, None
        if any([listing.take_tag(run, tag, rest) for listing in listings]):  # a list: every open block hears the tag
            continue
        if tag == "LOCKSTUDY-BOOT":
            run.boot = _fields(rest)
        elif tag == NUMA:
            if run.numa is None:
                run.numa = NumaReport()
            if not run.numa.add(rest.split()):
                run.problems.append(f"LOCKSTUDY-NUMA line {rest!r} is not one of numa_probe's facts")
        elif tag == "LOCKSTUDY-SPEC":
            spec = SPEC_SOURCE.match(rest)
            if spec is None:
                run.problems.append(f"LOCKSTUDY-SPEC line {rest!r} is not '<spec> [source=<word>]'")
            else:
                run.spec, run.spec_source = spec.group(1), spec.group(2) or SPEC_FROM_CMDLINE
        elif tag == "LOCKSTUDY-SETTINGS" and rest == "absent":
            run.settings_absent = True
        elif tag == "LOCKSTUDY-SETTING":
            name, _, value = rest.partition("=")
            if run.settings is None:
                run.settings = {}
            run.settings[name] = value
        elif tag == "LOCKSTUDY-RUN":
            words = rest.split()
            run.started.append((words[0] if words else "?", _float(_fields(rest).get("uptime"))))
        elif tag == LOCK_EVENTS:
            _add_lock_events(run, rest)
        elif tag == "LOCKSTUDY-ERROR":
            run.errors.append(rest)
        elif tag == DONE:
            fields = _fields(rest)
            run.done = Done(fields.get("status", "?"), fields.get("reason", "?"), fields)
    if block is not None:
        run.problems.append(f"result block of {block} has no LOCKSTUDY-RESULT-END")
    for listing in listings:
        listing.finish(run)
    return run
