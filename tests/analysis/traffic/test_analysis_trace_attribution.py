"""Attributing many traces (analysis/traffic/trace_attribution.py): in a pool, each trace read once.

The cache is reused only when it was made from the same trace, locks and
code; the tests prove reuse by making a second read impossible, and prove
re-reading by changing what the cache was made from.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from analysis.traffic import trace_attribution
from analysis.traffic.protocol_trace import attribute_trace
from analysis.traffic.trace_attribution import TraceJob, attribute_all, cache_path
from test_analysis_protocol_trace import FAR, LINE_BYTES, LOCK, NOISE, TRACE

LOCKS = (LOCK, NOISE, FAR)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(cache))
    return cache


def write_trace(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    return (a.events, a.requests, a.lines_read, a.lines_on_locks) == (b.events, b.requests, b.lines_read, b.lines_on_locks)


def test_a_second_report_reuses_the_attribution_without_reading_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", TRACE)
    job = TraceJob("run1", trace, LOCKS, LINE_BYTES)
    first = attribute_all([job])["run1"]
    assert same(first, attribute_trace(trace, LOCKS, LINE_BYTES))
    assert cache_path(trace).is_file()

    def no_reading(*_args: object) -> None:
        raise AssertionError("the trace was read again")

    monkeypatch.setattr(trace_attribution, "attribute_trace", no_reading)
    assert same(attribute_all([job])["run1"], first)


@pytest.mark.parametrize("change", ["trace", "locks"])
def test_a_changed_trace_or_registry_is_read_again(tmp_path: Path, change: str) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", TRACE)
    attribute_all([TraceJob("run1", trace, LOCKS, LINE_BYTES)])
    locks = LOCKS
    if change == "trace":
        write_trace(trace, TRACE[:4])
        os.utime(trace, ns=(1, 1))  # a rewrite within the clock's resolution is still seen: the size differs too
    else:
        locks = (LOCK,)
    again = attribute_all([TraceJob("run1", trace, locks, LINE_BYTES)])["run1"]
    assert same(again, attribute_trace(trace, locks, LINE_BYTES))


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(blocked))
    trace = write_trace(tmp_path / "roi.trace.gz", TRACE)
    result = attribute_all([TraceJob("run1", trace, LOCKS, LINE_BYTES)])["run1"]
    assert same(result, attribute_trace(trace, LOCKS, LINE_BYTES))


def test_a_damaged_cache_file_is_read_past(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", TRACE)
    job = TraceJob("run1", trace, LOCKS, LINE_BYTES)
    attribute_all([job])
    cache_path(trace).write_text('{"made_from": ')
    assert same(attribute_all([job])["run1"], attribute_trace(trace, LOCKS, LINE_BYTES))


def test_the_pool_attributes_each_trace_as_one_process_does(tmp_path: Path) -> None:
    jobs = []
    for number in range(3):
        lines = TRACE[number:]
        jobs.append(TraceJob(f"run{number}", write_trace(tmp_path / f"t{number}.trace.gz", lines), LOCKS, LINE_BYTES))
    pooled = attribute_all(jobs, processes=2)
    for job in jobs:
        assert same(pooled[job.key], attribute_trace(job.trace, LOCKS, LINE_BYTES))
    assert pooled["run0"].lines_on_locks > pooled["run2"].lines_on_locks  # three different traces, not one
