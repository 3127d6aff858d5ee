"""Per-lock attribution of many ROI traces: in parallel, and each trace read once.

Reading a trace is the costly part of a report (a traced run's
roi.trace.gz holds tens of millions of lines), and a finished run's trace
never changes. So each attribution is kept in the machine's lockstudy
cache (analysis/traffic/trace_cache.py: `trace-attribution/<digest of the
trace's path>.json`) with what it was computed from: the trace's path, size and modification time, the
locks and line size it was attributed with, and a digest of the code
that attributed it (analysis/traffic/protocol_trace.py). A later report reuses it
only when all of those are the same, and reads the trace again
otherwise. A cache that cannot be read or written is no error: the trace
is read.

Traces not yet attributed are read by a pool of processes, one per CPU
by default (trace_cache.read_all()).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.gem5_output import trace_chunks
from analysis.hotlines.rules import RULES_FILE as HOTLINE_RULES_FILE
from analysis.traffic import protocol_trace, trace_cache
from analysis.traffic.protocol_trace import Attribution, TracedLock, attribute_trace, lock_lines

CACHE_FOLDER = "trace-attribution"
CACHE_FORMAT = 1  # the layout of the cache file below


@dataclass(frozen=True)
class TraceJob:
    """One trace to attribute, with the locks of its run."""

    key: str  # the caller's name for it (a run id)
    trace: Path
    locks: tuple[TracedLock, ...]
    line_bytes: int


def cache_path(trace: Path) -> Path:
    return trace_cache.cache_file(CACHE_FOLDER, trace)


def code_digest() -> str:
    """The digest of what attributes: protocol_trace.py, its chunked reader, and the parked states it reads (hotlines.toml)."""
    return trace_cache.code_digest(protocol_trace.__file__, trace_chunks.__file__, str(HOTLINE_RULES_FILE))


def made_from(job: TraceJob) -> dict[str, Any]:
    """What an attribution depends on: a cached one counts only if all of this is the same."""
    return {
        "format": CACHE_FORMAT,
        "code_sha256": code_digest(),
        **trace_cache.trace_identity(job.trace),
        "line_bytes": job.line_bytes,
        "locks": sorted([lock.name, lock.physical, lock.size] for lock in job.locks),
    }


def to_json(attribution: Attribution, source: dict[str, Any]) -> dict[str, Any]:
    return {
        "made_from": source,
        "lines_read": attribution.lines_read,
        "lines_on_locks": attribution.lines_on_locks,
        "events": [[*key, count] for key, count in sorted(attribution.events.items())],
        "requests": [[*key, count] for key, count in sorted(attribution.requests.items())],
        "unserved": [[*key, count] for key, count in sorted(attribution.unserved.items())],
    }


def from_json(data: dict[str, Any], job: TraceJob) -> Attribution:
    result = Attribution(line_bytes=job.line_bytes, lock_lines=lock_lines(job.locks, job.line_bytes))
    result.lines_read = int(data["lines_read"])
    result.lines_on_locks = int(data["lines_on_locks"])
    result.events = Counter({(int(line), str(machine), int(version), str(event)): int(count) for line, machine, version, event, count in data["events"]})
    result.requests = Counter({(str(holder), int(line), str(kind)): int(count) for holder, line, kind, count in data["requests"]})
    result.unserved = Counter({(int(line), str(machine), int(version), str(event)): int(count) for line, machine, version, event, count in data["unserved"]})
    return result


def cached(job: TraceJob) -> Attribution | None:
    """The kept attribution of the trace, if it was made from exactly this trace, these locks and this code."""
    data = trace_cache.load_kept(CACHE_FOLDER, job.trace, made_from(job))
    if data is None:
        return None
    try:
        return from_json(data, job)
    except (ValueError, KeyError, TypeError):
        return None  # of another layout: read the trace


def attribute(job: TraceJob) -> Attribution:
    """Read the trace and keep the attribution in the cache (when it can be written)."""
    source = made_from(job)
    attribution = attribute_trace(job.trace, job.locks, job.line_bytes)
    trace_cache.store(cache_path(job.trace), to_json(attribution, source))
    return attribution


def attribute_all(jobs: list[TraceJob], processes: int | None = None) -> dict[str, Attribution]:
    """job.key -> its attribution: cached ones as they are, the others read by a process pool."""
    return trace_cache.cached_or_read(jobs, lambda job: job.key, cached, attribute, lambda job: job.trace, "attributed", processes)
