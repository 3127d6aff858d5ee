"""Per-lock attribution of many ROI traces: in parallel, and each trace read once.

Reading a trace is the costly part of a report (a traced run's
roi.trace.gz holds tens of millions of lines), and a finished run's trace
never changes. So each attribution is kept in the machine's lockstudy
cache (lockstudy.paths.cache_dir(), outside every clone and results
folder: `trace-attribution/<digest of the trace's path>.json`) with what
it was computed from: the trace's path, size and modification time, the
locks and line size it was attributed with, and a digest of the code
that attributed it (analysis/protocol_trace.py). A later report reuses it
only when all of those are the same, and reads the trace again
otherwise. A cache that cannot be read or written is no error: the trace
is read.

Traces not yet attributed are read by a pool of processes, one per CPU
by default.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis import protocol_trace
from analysis.protocol_trace import Attribution, TracedLock, attribute_trace, lock_lines
from lockstudy.paths import cache_dir

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
    name = hashlib.sha256(str(trace.resolve()).encode()).hexdigest()[:32]
    return cache_dir() / CACHE_FOLDER / f"{name}.json"


@lru_cache(maxsize=None)
def code_digest() -> str:
    """The digest of protocol_trace.py: read once per process, not once per trace."""
    return hashlib.sha256(Path(protocol_trace.__file__).read_bytes()).hexdigest()


def made_from(job: TraceJob) -> dict[str, Any]:
    """What an attribution depends on: a cached one counts only if all of this is the same."""
    status = job.trace.stat()
    return {
        "format": CACHE_FORMAT,
        "code_sha256": code_digest(),
        "trace": str(job.trace.resolve()),
        "trace_bytes": status.st_size,
        "trace_mtime_ns": status.st_mtime_ns,
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
    }


def from_json(data: dict[str, Any], job: TraceJob) -> Attribution:
    result = Attribution(line_bytes=job.line_bytes, lock_lines=lock_lines(job.locks, job.line_bytes))
    result.lines_read = int(data["lines_read"])
    result.lines_on_locks = int(data["lines_on_locks"])
    result.events = Counter({(int(line), str(machine), int(version), str(event)): int(count) for line, machine, version, event, count in data["events"]})
    result.requests = Counter({(str(holder), int(line), str(kind)): int(count) for holder, line, kind, count in data["requests"]})
    return result


def cached(job: TraceJob) -> Attribution | None:
    """The kept attribution of the trace, if it was made from exactly this trace, these locks and this code."""
    try:
        data = json.loads(cache_path(job.trace).read_text())
        if data.get("made_from") != made_from(job):
            return None
        return from_json(data, job)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, unreadable or of another layout: read the trace


def attribute(job: TraceJob) -> Attribution:
    """Read the trace and keep the attribution in the cache (when it can be written)."""
    source = made_from(job)
    attribution = attribute_trace(job.trace, job.locks, job.line_bytes)
    target = cache_path(job.trace)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(to_json(attribution, source)))
        partial.replace(target)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    return attribution


def attribute_all(jobs: list[TraceJob], processes: int | None = None) -> dict[str, Attribution]:
    """job.key -> its attribution: cached ones as they are, the others read by a process pool."""
    out: dict[str, Attribution] = {}
    to_read = []
    for job in jobs:
        found = cached(job)
        if found is None:
            to_read.append(job)
        else:
            out[job.key] = found
    to_read.sort(key=lambda job: job.trace.stat().st_size, reverse=True)  # the longest first: the pool ends together
    if to_read:
        size = sum(job.trace.stat().st_size for job in to_read) / 1e9
        print(f"reading {len(to_read)} ROI trace(s) not attributed before ({size:.1f} GB compressed); "
              f"{len(out)} kept from an earlier report", file=sys.stderr, flush=True)  # fmt: skip
    workers = min(len(to_read), processes or os.cpu_count() or 1)
    if workers <= 1:
        out.update((job.key, attribute(job)) for job in to_read)
    elif to_read:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            out.update(zip((job.key for job in to_read), pool.map(attribute, to_read)))
    return out
