"""What is computed from an ROI trace, kept in the machine's lockstudy cache.

Reading a trace is the costly part of a report, and a finished run's
trace never changes. A reader of traces (analysis/traffic/trace_attribution.py,
analysis/hotlines/) keeps each result in `lockstudy.paths.cache_dir()`
(outside every clone and results folder), in a folder of its own, as
`<folder>/<digest of the trace's path>.json` with what it was made from:
the trace's path, size and modification time, the code that made it
(a digest of its source files) and the reader's own inputs. A later
report reuses it only when all of those are the same. A cache that
cannot be read or written is no error: the trace is read again.
Traces not yet read are read by a pool of processes (read_all()).

A run restored from the run archive (lockstudy/archive/) has no trace:
traces are never archived. In its place is `<trace>.derived.json`, what
the readers had made from the trace on the machine that ran it, each with
its `made_from` less the trace's path, size and time. A reader takes it
(`load_kept`) when everything else it was made from is the same; when the
code has changed since, the trace cannot be read again here, and the
run's entry is left out with a warning that says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from lockstudy.paths import cache_dir

Job = TypeVar("Job")
Result = TypeVar("Result")

PATH_DIGEST_CHARS = 32
DERIVED_SUFFIX = ".derived.json"  # beside where a restored run's trace was: what the readers made from it
DERIVED_FORMAT = 1
# A trace as the cache knows it on the machine that has it; an archived derivation is made without them.
IDENTITY_KEYS = ("trace", "trace_bytes", "trace_mtime_ns")


def cache_file(folder: str, trace: Path) -> Path:
    """Where the result of `folder`'s reader for this trace is kept."""
    name = hashlib.sha256(str(trace.resolve()).encode()).hexdigest()[:PATH_DIGEST_CHARS]
    return cache_dir() / folder / f"{name}.json"


@lru_cache(maxsize=None)
def code_digest(*sources: str) -> str:
    """The digest of the source files a result depends on: read once per process, not once per trace."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()


def trace_identity(trace: Path) -> dict[str, Any]:
    """The trace as the cache knows it: its path, size and modification time (None for a trace not on this machine)."""
    if not trace.is_file():
        return {"trace": str(trace.resolve()), "trace_bytes": None, "trace_mtime_ns": None}
    status = trace.stat()
    return {"trace": str(trace.resolve()), "trace_bytes": status.st_size, "trace_mtime_ns": status.st_mtime_ns}


def derived_file(trace: Path) -> Path:
    """Where a restored run keeps what was made from its trace (lockstudy/archive/)."""
    return trace.with_name(trace.name + DERIVED_SUFFIX)


def available(trace: Path) -> bool:
    """The trace is here, or what the readers made from it is (a run restored from the archive)."""
    return trace.is_file() or derived_file(trace).is_file()


def without_identity(made_from: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in made_from.items() if key not in IDENTITY_KEYS}


def load_kept(folder: str, trace: Path, made_from: dict[str, Any]) -> dict[str, Any] | None:
    """What `folder`'s reader made from exactly `made_from`: from the cache when the trace is here, else from its derived file."""
    if trace.is_file():
        return load(cache_file(folder, trace), made_from)
    try:
        entry = json.loads(derived_file(trace).read_text())["readers"][folder]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(entry, dict) or entry.get("made_from") != without_identity(made_from):
        return None
    return entry


def load(path: Path, made_from: dict[str, Any]) -> dict[str, Any] | None:
    """The kept result if it was made from exactly `made_from`; None when absent, unreadable or stale."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("made_from") != made_from:
        return None
    return data


def store(path: Path, data: dict[str, Any]) -> None:
    """Keep `data` (with its `made_from`) atomically; a cache that cannot be written is skipped."""
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(data))
        partial.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


BYTES_PER_GB = 1e9


def read_all(read: Callable[[Job], Result], jobs: list[Job], trace_of: Callable[[Job], Path], what: str, kept: int, processes: int | None = None) -> list[Result]:
    """`read(job)` for every job, in a pool of processes (one per CPU by default), in the jobs' order.

    The largest traces start first, so the pool's workers end together;
    `what` and `kept` (results taken from the cache) go into the one line
    that says how much is to be read.
    """
    if not jobs:
        return []
    order = sorted(range(len(jobs)), key=lambda index: trace_of(jobs[index]).stat().st_size, reverse=True)
    size = sum(trace_of(job).stat().st_size for job in jobs) / BYTES_PER_GB
    print(f"reading {len(jobs)} ROI trace(s) not {what} before ({size:.1f} GB compressed); "
          f"{kept} kept from an earlier report", file=sys.stderr, flush=True)  # fmt: skip
    workers = min(len(jobs), processes or os.cpu_count() or 1)
    ordered = [jobs[index] for index in order]
    if workers <= 1:
        results = [read(job) for job in ordered]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(read, ordered))
    out: list[Result | None] = [None] * len(jobs)
    for index, result in zip(order, results):
        out[index] = result
    return [result for result in out if result is not None]


def left_out_note(key: str, what: str) -> str:
    """Why a run restored without its trace is missing from a table: its kept result is stale (cached_or_read)."""
    return (f"run {key}: its trace is not on this machine (restored from the run archive), and what was {what} from it "
            f"there was made by other code than today's: left out; rerun the run to read it again")  # fmt: skip


def cached_or_read(
    jobs: list[Job],
    key_of: Callable[[Job], str],
    cached: Callable[[Job], Result | None],
    read: Callable[[Job], Result],
    trace_of: Callable[[Job], Path],
    what: str,
    processes: int | None = None,
) -> dict[str, Result]:
    """key -> result for every job: the cache's where it holds one, the others read by `read_all`."""
    out: dict[str, Result] = {}
    to_read: list[Job] = []
    for job in jobs:
        found = cached(job)
        if found is not None:
            out[key_of(job)] = found
        elif trace_of(job).is_file():
            to_read.append(job)
        else:
            print(f"warning: {left_out_note(key_of(job), what)} ({derived_file(trace_of(job)).name})", file=sys.stderr, flush=True)
    out.update(zip((key_of(job) for job in to_read), read_all(read, to_read, trace_of, what, len(out), processes)))
    return out
