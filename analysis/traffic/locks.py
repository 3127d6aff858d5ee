"""Coherence traffic per lock: the kernel's lock registry joined with a run's ROI trace.

A run made with `--trace protocol` (Ruby) has `roi.trace.gz`, the
ProtocolTrace lines of its ROIs only, and its result.json holds the lock
registry the guest printed after each testcase (static locks such as the
bench lock, with the physical address the kernel computed, and the
dynamic ones the testcase asked for). analysis/traffic/protocol_trace.py streams
the trace and counts, per registered cache line, every controller event
and every CPU request; this module turns that into two tables:

- `lock_events`: run_id, line, locks (every lock with a byte on that
  line), controller, event, count;
- `lock_summary`: one row per run and lock: the lock's line, its
  invalidations, forwards and home requests (which events of which
  controllers count as these, per Ruby protocol:
  analysis/data/lock_events.toml), the CPU requests on
  the lock's own bytes, and the requests on the same line for other data
  (false sharing), each also per hand-off when the run is a kbench run.

Static kernel locks the guest did not register (rename_lock, mount_lock,
...; analysis/data/static_locks.toml) are added from the kernel build's
System.map when it is next to the run's vmlinux, named `static:<symbol>`;
their placement is checked against the guest's registry entry of the
bench lock, a static symbol too.

The trace covers all ROIs of a run; runs with several testcases are
attributed with the union of their registries.

A bus-machine run (classic caches, `--trace classic`) has no
ProtocolTrace: its lock rows come from the hot-line profile of its trace
(analysis/hotlines/classic.py, read once and cached), summed over its
ROIs. There `home_requests` is the requests the front-side bus accepted
for the lock's line (the bus is where a line's requests are ordered, as
the home is on a Ruby machine) and `invalidations` the CPUs' copies the
bus's snoops invalidated; forwards, controller events and the split of
requests between the lock's bytes and the rest of its line are not in
that trace, so they are empty (NaN), not 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.gem5_output.config_reader import MachineFacts
from analysis.gem5_output.runs import Results, RunStats
from analysis.hotlines.profile import RoiProfile
from analysis.traffic import trace_cache
from analysis.traffic.protocol_trace import Attribution, TracedLock
from analysis.traffic.trace_attribution import TraceJob, attribute_all
from lockstudy.campaign.artifacts import MissingArtifact, read_build_info
from lockstudy.files import read_toml, typed_field

TRACE_FILE = "roi.trace.gz"
SYSTEM_MAP = "System.map"  # next to the kernel build's vmlinux (lockstudy/kernel/build.py)
STATIC_LOCKS_FILE = Path(__file__).resolve().parents[1] / "data" / "static_locks.toml"
LOCK_EVENTS_FILE = Path(__file__).resolve().parents[1] / "data" / "lock_events.toml"
EVENT_KINDS = ("invalidations", "forwards", "home_requests")
CLASSIC = "classic"  # MachineFacts.hierarchy of a bus-machine run


class StaticLocksError(ValueError):
    """System.map and the guest's registry disagree, or the static-locks file is malformed."""


class LockEventsError(ValueError):
    """lock_events.toml is malformed or has no entry for a run's protocol: one line naming file, field, value."""


@dataclass(frozen=True)
class EventKind:
    """The events of one machine (and role, when given) that count as one kind (invalidations, ...)."""

    machine: str
    role: str | None
    events: frozenset[str]


@lru_cache(maxsize=None)
def load_lock_events(path: Path = LOCK_EVENTS_FILE) -> dict[str, dict[str, EventKind]]:
    """protocol -> kind -> its events."""
    data = read_toml(path, LockEventsError)
    out: dict[str, dict[str, EventKind]] = {}
    for protocol, table in typed_field(data, "protocol", dict, str(path), error=LockEventsError).items():
        kinds = {}
        for kind in EVENT_KINDS:
            where = f"{path}: [protocol.{protocol}.{kind}]"
            entry = typed_field(table, kind, dict, f"{path}: [protocol.{protocol}]", error=LockEventsError)
            typed_field(entry, "why", str, where, error=LockEventsError)
            events = typed_field(entry, "events", list, where, error=LockEventsError)
            role = typed_field(entry, "role", str, where, error=LockEventsError) if "role" in entry else None
            kinds[kind] = EventKind(typed_field(entry, "machine", str, where, error=LockEventsError), role, frozenset(map(str, events)))
        out[protocol] = kinds
    return out


def _kind_counts(events: Counter[tuple[str, int, str]], machine: MachineFacts | None) -> dict[str, int | float]:
    """(controller, version, event) counts of one line -> count per kind; NaN when the run's protocol has no entry."""
    kinds = load_lock_events().get(machine.ruby_protocol if machine else "")
    if kinds is None:
        return {kind: float("nan") for kind in EVENT_KINDS}
    role_of = {(c.machine, c.version): c.role for c in machine.controllers} if machine else {}
    return {
        kind: sum(
            n for (controller, version, event), n in events.items()
            if controller == rule.machine and event in rule.events and (rule.role is None or role_of.get((controller, version)) == rule.role)
        )
        for kind, rule in kinds.items()
    }  # fmt: skip


@lru_cache(maxsize=None)
def load_static_locks(path: Path = STATIC_LOCKS_FILE) -> dict[str, Any]:
    data = read_toml(path, StaticLocksError)
    for key, kind in (("kernel_image_base", int), ("check_registry_lock", str), ("check_symbol", str)):
        typed_field(data, key, kind, str(path), error=StaticLocksError)
    for index, entry in enumerate(typed_field(data, "lock", list, str(path), error=StaticLocksError)):
        typed_field(entry, "symbol", str, f"{path}: lock[{index}]", error=StaticLocksError)
        typed_field(entry, "size", int, f"{path}: lock[{index}]", error=StaticLocksError)
    return data


@lru_cache(maxsize=None)
def system_map(path: Path) -> dict[str, int]:
    """Symbol -> address of a System.map, read once per file (every run of a kernel build shares it)."""
    symbols: dict[str, int] = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) == 3:
            symbols[words[2]] = int(words[0], 16)
    return symbols


def system_map_file(result: dict[str, Any]) -> Path | None:
    """The run's kernel build's System.map (kernel_build_file)."""
    return kernel_build_file(result, SYSTEM_MAP)


def kernel_build_file(result: dict[str, Any], name: str) -> Path | None:
    """A file of the run's kernel build (System.map, struct-layouts.json): next to the vmlinux it booted
    (provenance.kernel.path), if still there.

    A rebuild replaces that folder's files, so a file there belongs to the
    run only while the build-info.json beside it has the build id the run
    recorded (provenance.kernel.build_info.build_id); another build's map
    would name the run's lines with symbols of another layout, so then
    there is none."""
    kernel_record = result.get("provenance", {}).get("kernel", {})
    kernel = Path(str(kernel_record.get("path", "")))
    found = kernel.parent / name
    if not kernel.name or not found.is_file():
        return None
    ran = (kernel_record.get("build_info") or {}).get("build_id")
    if ran is not None and _build_id_in(kernel.parent) not in (None, ran):
        return None
    return found


@lru_cache(maxsize=None)
def _build_id_in(directory: Path) -> str | None:
    """The build id of a kernel build folder's build-info.json, read once per folder (None: no readable one)."""
    try:
        build_id = read_build_info(directory, "kernel build").get("build_id")
    except (MissingArtifact, OSError, ValueError):
        return None
    return None if build_id is None else str(build_id)


def check_symbol_physical(symbols: dict[str, int], config: dict[str, Any]) -> int | None:
    """Where System.map puts the registry lock that checks the placement (static_locks.toml check_symbol); None if absent."""
    symbol = config["check_symbol"]
    return symbols[symbol] - int(config["kernel_image_base"]) if symbol in symbols else None


def static_locks(result: dict[str, Any], registered: list[TracedLock], config: dict[str, Any] | None = None) -> list[TracedLock]:
    """The static locks of static_locks.toml, placed with the run's System.map (empty without one).

    The kernel build's System.map is next to the vmlinux the run booted
    (provenance.kernel.path), when that file is still there. The placement
    is checked against the guest's registry entry of a static symbol.
    """
    config = config or load_static_locks()
    map_file = system_map_file(result)
    if map_file is None:
        return []
    symbols = system_map(map_file)
    base = int(config["kernel_image_base"])
    check = next((lock for lock in registered if lock.name == config["check_registry_lock"]), None)
    expected = check_symbol_physical(symbols, config)
    if check is not None and expected is not None:
        if check.physical != expected:
            raise StaticLocksError(
                f"{map_file}: {config['check_symbol']} gives physical 0x{expected:x}, the guest registered "
                f"{check.name} at 0x{check.physical:x}: not the kernel that ran, or its image moved (KASLR?)"
            )
    return [
        TracedLock(f"static:{entry['symbol']}", symbols[entry["symbol"]] - base, int(entry["size"]))
        for entry in config["lock"]
        if entry["symbol"] in symbols
    ]


def registered_locks(result: dict[str, Any]) -> list[TracedLock]:
    seen: dict[tuple[str, int], TracedLock] = {}
    for entry in result.get("guest", {}).get("results", []):
        for lock in entry.get("locks", []):
            traced = TracedLock(str(lock["name"]), int(lock["physical"], 16), int(lock["size"]))
            seen[(traced.name, traced.physical)] = traced
    return list(seen.values())


def _handoffs(result: dict[str, Any]) -> float:
    total = 0.0
    for entry in result.get("guest", {}).get("results", []):
        data = entry.get("result", {})
        if data.get("testcase") == "kbench":
            total += float(data["counters"]["handoffs"])
    return total


def run_locks(run: RunStats) -> list[TracedLock]:
    """The run's registered locks and the static ones its System.map places (empty: no registry)."""
    locks = registered_locks(run.info.result)
    return locks + static_locks(run.info.result, locks) if locks else []


def trace_job(run: RunStats) -> TraceJob | None:
    """What attributing the run's ProtocolTrace needs; None when it has no trace, no registry, or is a classic-caches run."""
    trace = run.info.gem5_dir / TRACE_FILE if run.info.gem5_dir else None
    locks = run_locks(run)
    if trace is None or not trace_cache.available(trace) or not locks or run.machine.hierarchy == CLASSIC:
        return None
    line_bytes = int(run.info.result["provenance"]["machine"]["line_bytes"])
    return TraceJob(run.info.run_id, trace, tuple(locks), line_bytes)


def run_lock_tables(
    job: TraceJob, attribution: Attribution, result: dict[str, Any], machine: MachineFacts | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(event rows, summary rows) of one traced run: its job, its trace's attribution, its result.json, its config.json's facts."""
    locks, line_bytes = job.locks, job.line_bytes
    events: list[dict[str, Any]] = []
    per_line: dict[int, Counter[tuple[str, str]]] = {}
    # served: each transition once, not also when it was set aside or stalled (protocol_trace: unserved)
    served: dict[int, Counter[tuple[str, int, str]]] = {}
    for (line, controller, version, event), count in attribution.events.items():
        per_line.setdefault(line, Counter())[(controller, event)] += count
        served.setdefault(line, Counter())[(controller, version, event)] += count - attribution.unserved[(line, controller, version, event)]
    for line, counts in sorted(per_line.items()):
        names = ", ".join(lock.name for lock in attribution.lock_lines[line])
        for (controller, event), count in sorted(counts.items()):
            events.append({"run_id": job.key, "line": f"0x{line:x}", "locks": names, "controller": controller, "event": event, "count": count})
    handoffs = _handoffs(result)
    summary = []
    for lock in locks:
        line = lock.physical - lock.physical % line_bytes
        counts = per_line.get(line, Counter())
        kinds = _kind_counts(served.get(line, Counter()), machine)
        own = sum(n for (holder, on_line, _kind), n in attribution.requests.items() if on_line == line and holder == lock.name)
        other = sum(n for (holder, on_line, _kind), n in attribution.requests.items() if on_line == line and holder != lock.name)
        row = {
            "run_id": job.key,
            "lock": lock.name,
            "line": f"0x{line:x}",
            "shares_line_with": ", ".join(o.name for o in attribution.lock_lines.get(line, ()) if o.name != lock.name),
            **kinds,
            "controller_events": sum(counts.values()),
            "unserved_transitions": sum(n for (on_line, *_key), n in attribution.unserved.items() if on_line == line),
            "requests_own": own,
            "requests_other_on_line": other,
            "handoffs": handoffs,
        }
        for key in ("invalidations", "forwards", "home_requests", "controller_events"):
            row[f"{key}_per_handoff"] = row[key] / handoffs if handoffs else float("nan")
        summary.append(row)
    return events, summary


def classic_lock_rows(run_id: str, locks: list[TracedLock], line_bytes: int, profiles: list[RoiProfile], result: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary rows of a classic-caches run: each lock's line in its hot-line profiles, summed over the ROIs."""
    handoffs = _handoffs(result)
    nan = float("nan")
    rows = []
    for lock in locks:
        line = lock.physical - lock.physical % line_bytes
        traffic = [roi.lines[line] for roi in profiles if line in roi.lines]
        requests = sum(t.requests for t in traffic)
        invalidations = sum(t.invalidations for t in traffic)
        row: dict[str, Any] = {
            "run_id": run_id,
            "lock": lock.name,
            "line": f"0x{line:x}",
            "shares_line_with": ", ".join(o.name for o in locks if o.name != lock.name and o.physical - o.physical % line_bytes == line),
            "invalidations": invalidations,
            "forwards": nan,
            "home_requests": requests,
            "controller_events": nan,
            "unserved_transitions": nan,
            "requests_own": nan,
            "requests_other_on_line": nan,
            "handoffs": handoffs,
        }
        for key in ("invalidations", "forwards", "home_requests", "controller_events"):
            row[f"{key}_per_handoff"] = row[key] / handoffs if handoffs else nan
        rows.append(row)
    return rows


def classic_summary(results: Results, processes: int | None = None, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The lock rows of every traced classic-caches run with a registry, from its (cached) hot-line profile."""
    from analysis.hotlines.table import hotline_job  # the hot-line tables name lines with this module's locks
    from analysis.hotlines.traces import HotlineJob, profile_all

    jobs: list[HotlineJob] = []
    for run_id in sorted(results.runs):
        run = results.runs[run_id]
        if run.machine.hierarchy != CLASSIC or not run_locks(run):
            continue
        job = hotline_job(run)
        if isinstance(job, HotlineJob):
            jobs.append(job)
    profiles = profile_all(jobs, processes)
    rows: list[dict[str, Any]] = []
    for job in jobs:
        run = results.runs[job.key]
        if job.key not in profiles:
            if notes is not None:
                notes.append(trace_cache.left_out_note(job.key, "profiled"))
            continue
        rows += classic_lock_rows(job.key, run_locks(run), job.line_bytes, profiles[job.key], run.info.result)
    return rows


def lock_tables(results: Results, processes: int | None = None, notes: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The event and summary tables of every traced run (traces read by `processes` at once).

    A run restored from the run archive whose kept attribution or profile is stale is
    left out, with a line in `notes` (when given) that says so."""
    jobs = [job for job in (trace_job(results.runs[run_id]) for run_id in sorted(results.runs)) if job is not None]
    attributions = attribute_all(jobs, processes)
    events: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for job in jobs:
        run = results.runs[job.key]
        if job.key not in attributions:
            if notes is not None:
                notes.append(trace_cache.left_out_note(job.key, "attributed"))
            continue
        more_events, more_summary = run_lock_tables(job, attributions[job.key], run.info.result, run.machine)
        events += more_events
        summary += more_summary
    summary += classic_summary(results, processes, notes)
    return pd.DataFrame(events), pd.DataFrame(summary)


def traced_runs(results: Results) -> list[Path]:
    return [run.info.gem5_dir / TRACE_FILE for run in results.runs.values() if run.info.gem5_dir and (run.info.gem5_dir / TRACE_FILE).is_file()]
