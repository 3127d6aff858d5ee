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
lines that are not part of the protocol are ignored, and a result block
takes the one line between its markers that parses as a JSON object.

A run restored from a boot checkpoint learns its run spec from gem5's
readfile: the last LOCKSTUDY-SPEC line is the spec that ran, and
`GuestRun.spec_source` says where it came from (cmdline or readfile).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MARK = "LOCKSTUDY-"
BEGIN = "LOCKSTUDY-RESULT-BEGIN"
END = "LOCKSTUDY-RESULT-END"
DONE = "LOCKSTUDY-DONE"
LOCKS_BEGIN = "LOCKSTUDY-LOCKS-BEGIN"
LOCKS_END = "LOCKSTUDY-LOCKS-END"
NUMA = "LOCKSTUDY-NUMA"
LOCK_EVENTS = "LOCKSTUDY-LOCKEVENTS"
# One counter of kernel/locking/lock_events_list.h and its count.
LOCK_EVENT_WORD = re.compile(r"^([a-z0-9_]+)=(\d+)$")
# A line of /sys/kernel/lockstudy/locks (kernel/patches/README.md).
REGISTRY_LINE = re.compile(r"^0x([0-9a-f]+) 0x([0-9a-f]+) (\d+) (\S.*)$")
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


def parse_console(text: str) -> GuestRun:
    """Parse a whole console log (bytes decoded with errors='replace' are fine)."""
    run = GuestRun()
    block: str | None = None  # testcase of the open result block
    block_json: dict[str, Any] | None = None
    registry: list[RegisteredLock] | None = None  # the open lock block
    lines = text.replace("\r", "").split("\n")
    for number, raw in enumerate(lines):
        match = PROTOCOL_LINE.search(raw)
        if registry is not None and match is None:
            # The console's last line has no newline when the guest stopped while printing it: it may be cut short.
            entry = REGISTRY_LINE.match(raw.strip()) if number < len(lines) - 1 else None
            if entry:
                registry.append(RegisteredLock(int(entry.group(1), 16), int(entry.group(2), 16), int(entry.group(3)), entry.group(4)))
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
        if tag == LOCKS_BEGIN:
            if not run.parsed or run.parsed[-1].testcase != rest:
                run.problems.append(f"lock registry of {rest!r} does not follow its result")
            registry = []
            continue
        if tag == LOCKS_END:
            if registry is None:
                run.problems.append("LOCKSTUDY-LOCKS-END without a BEGIN")
            elif run.parsed:
                run.locks[len(run.parsed) - 1] = registry
            registry = None
            continue
        if registry is not None:
            run.problems.append(f"lock registry interrupted by {tag}")
            registry = None
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
    if registry is not None:
        run.problems.append("lock registry has no LOCKSTUDY-LOCKS-END")
        if registry and run.parsed:
            # The guest stopped while printing it (a run stuck after its ROI): its whole lines still name those locks.
            run.locks[len(run.parsed) - 1] = registry
            run.problems.append(f"lock registry of {run.parsed[-1].testcase!r} cut short: its {len(registry)} whole line(s) kept")
    return run
