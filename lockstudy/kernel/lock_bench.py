"""The kernel's lock bench and lock registry, driven from a busybox /init.

The interface is /sys/kernel/lockstudy/bench/ and /sys/kernel/lockstudy/locks
(kernel/patches/README.md). `guest_script()` writes the shell lines that run
a list of bench settings and dump the registry between markers;
`parse_bench_results()` and `parse_registry()` read them back from the
console.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lockstudy.guest_output import REGISTRY_LINE, RegisteredLock

BENCH_DIR = "/sys/kernel/lockstudy/bench"
LOCKS_FILE = "/sys/kernel/lockstudy/locks"
REQUEST_FILE = "/sys/kernel/lockstudy/locks_request"
BENCH_BEGIN = "LOCKBENCH-BEGIN"
BENCH_END = "LOCKBENCH-END"
LOCKS_BEGIN = "LOCKREGISTRY-BEGIN"
LOCKS_END = "LOCKREGISTRY-END"
THREADS_BEGIN = "LOCKBENCH-THREADS-BEGIN"
THREADS_END = "LOCKBENCH-THREADS-END"
THREAD_NAME_PREFIX = "lockstudy_bench/"  # the kthreads' comm: lockstudy_bench/<cpu>


@dataclass(frozen=True)
class BenchSettings:
    label: str
    variant: str
    cpus: str
    duration_ms: int
    hold_loops: int
    think_loops: int
    placement: str = "padded"

    def shell(self) -> list[str]:
        writes = {
            "variant": self.variant, "cpus": self.cpus, "duration_ms": self.duration_ms,
            "hold_loops": self.hold_loops, "think_loops": self.think_loops, "placement": self.placement,
        }  # fmt: skip
        lines = [f"echo {value} > {BENCH_DIR}/{name}" for name, value in writes.items()]
        return [*lines, f"echo 1 > {BENCH_DIR}/run", f"echo {BENCH_BEGIN} {self.label}", f"cat {BENCH_DIR}/result", f"echo {BENCH_END}"]


def variant_sweep(variants: list[str], cpus: int, duration_ms: int, hold_loops: int, think_loops: int) -> list[str]:
    """Shell lines running the bench once per variant on CPUs 0..cpus-1, each labelled by its variant."""
    lines: list[str] = []
    for variant in variants:
        lines += BenchSettings(variant, variant, f"0-{cpus - 1}", duration_ms, hold_loops, think_loops).shell()
    return lines


def registry_dump(label: str) -> list[str]:
    return [f"echo {LOCKS_BEGIN} {label}", f"cat {LOCKS_FILE}", f"echo {LOCKS_END}"]


def registry_request(request: str) -> str:
    return f"echo {request} > {REQUEST_FILE}"


def thread_listing(label: str) -> list[str]:
    """Shell lines printing `<pid> <comm>` of every bench kthread between markers (busybox sh, no ps needed)."""
    loop = (f"for d in /proc/[0-9]*; do c=$(cat $d/comm 2>/dev/null); "
            f'case "$c" in {THREAD_NAME_PREFIX}*) echo "${{d#/proc/}} $c";; esac; done')  # fmt: skip
    return [f"echo {THREADS_BEGIN} {label}", loop, f"echo {THREADS_END}"]


def parse_thread_listings(console: str) -> dict[str, dict[int, int]]:
    """label -> {pid: cpu} of the bench kthreads that thread_listing() printed."""
    listings: dict[str, dict[int, int]] = {}
    for label, lines in sections(console, THREADS_BEGIN, THREADS_END).items():
        threads: dict[int, int] = {}
        for line in lines:
            pid, comm = line.split()
            threads[int(pid)] = int(comm.removeprefix(THREAD_NAME_PREFIX))
        listings[label] = threads
    return listings


@dataclass
class BenchResult:
    values: dict[str, str] = field(default_factory=dict)
    threads: list[dict[str, int]] = field(default_factory=list)

    def number(self, key: str) -> int:
        return int(self.values[key])

    def local_share(self) -> float:
        handoffs = self.number("handoffs")
        return self.number("handoffs_local") / handoffs if handoffs else float("nan")


def sections(console: str, begin: str, end: str) -> dict[str, list[str]]:
    """label -> the lines between `begin label` and `end`."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in console.splitlines():
        line = raw.strip()
        if line.startswith(begin + " "):
            current = found.setdefault(line.split()[1], [])
        elif line == end:
            current = None
        elif current is not None:
            current.append(line)
    return found


def parse_bench(lines: list[str]) -> BenchResult:
    result = BenchResult()
    for line in lines:
        words = line.split()
        if words[:1] == ["thread"]:
            pairs = dict(zip(words[1::2], words[2::2]))
            result.threads.append({key: int(value) for key, value in pairs.items()})
        elif len(words) == 2:
            result.values[words[0]] = words[1]
    return result


def parse_bench_results(console: str) -> dict[str, BenchResult]:
    return {label: parse_bench(lines) for label, lines in sections(console, BENCH_BEGIN, BENCH_END).items()}


def parse_registry(lines: list[str]) -> dict[str, RegisteredLock]:
    """name -> lock, from the registry's `<address> <physical> <size> <name>` lines."""
    locks = {}
    for line in lines:
        match = REGISTRY_LINE.match(line)
        if not match:
            raise ValueError(f"lock registry line not understood: {line!r}")
        locks[match.group(4)] = RegisteredLock(int(match.group(1), 16), int(match.group(2), 16), int(match.group(3)), match.group(4))
    return locks


def parse_registries(console: str) -> dict[str, dict[str, RegisteredLock]]:
    return {label: parse_registry(lines) for label, lines in sections(console, LOCKS_BEGIN, LOCKS_END).items()}
