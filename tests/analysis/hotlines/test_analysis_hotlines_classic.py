"""The hot-line profile of a classic-memory trace (piii-smp, `--trace classic`).

The real excerpt (tests/fixtures/classic-trace/README.md) was counted by
hand with grep first: on the bench lock's line the bus accepted 88
coherence requests (32 ReadExReq, 48 ReadSharedReq, 8 UpgradeReq; no
RETRY), and 80 L2 snoops took a copy from a valid state to I. On the
whole trace of that run the profile's requests (7,850) equal the bus's
transDist in stats.txt (7,850): check_against_stats is that comparison.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from analysis.gem5_output.trace_chunks import TraceFormatError
from analysis.hotlines.classic import bus_requests_in_stats, check_against_stats, profile_classic
from analysis.traffic.locks import classic_lock_rows
from analysis.traffic.protocol_trace import TracedLock
from lockstudy.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "classic-trace" / "roi.trace.gz"
LINE_BYTES = 32
LOCK_LINE = 0x1D0C100


def write_trace(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def test_the_real_excerpt_gives_the_hand_counted_lock_line_on_top() -> None:
    [profile] = profile_classic(FIXTURE, LINE_BYTES, ())
    top = profile.ranked()[0]
    assert (top.line, top.requests, top.invalidations, top.crossings) == (LOCK_LINE, 88, 80, 0)
    assert profile.total_crossings == 0


def test_a_locks_row_on_the_bus_machine_is_its_lines_profile() -> None:
    """The per-lock table of a classic run: the bus's requests and the snoops' invalidations on the lock's
    line (the hand-counted 88 and 80), every ROI summed; what the trace cannot tell is empty, not 0."""
    profiles = profile_classic(FIXTURE, LINE_BYTES, ())
    locks = [TracedLock("bench:lock", LOCK_LINE + 4, 4), TracedLock("bench:shared_noise", LOCK_LINE + 8, 4), TracedLock("far", 0x10, 4)]
    lock, noise, far = classic_lock_rows("run", locks, LINE_BYTES, profiles + profiles, {})
    assert (lock["home_requests"], lock["invalidations"]) == (2 * 88, 2 * 80)
    assert lock["shares_line_with"] == "bench:shared_noise" and noise["home_requests"] == lock["home_requests"]
    assert (far["home_requests"], far["invalidations"]) == (0, 0)
    for column in ("forwards", "requests_own", "requests_other_on_line", "controller_events", "invalidations_per_handoff"):
        assert lock[column] != lock[column], column  # NaN: not in a classic trace, or no hand-offs


BUS = "board.cache_hierarchy.membus"
PORT = f"src {BUS}.cpu_side_port[2]"


def test_what_counts_as_a_request_and_an_invalidation(tmp_path: Path) -> None:
    block = "state: {code} ({state}) writable: 0 readable: 1 dirty: 0 prefetched: 0 | tag: 0xe8 secure: 0 valid: 1 | set: 0x8 way: 0"
    lines = [
        f"100: {BUS}: recvTimingReq: {PORT} packet ReadExReq [1d0c100:1d0c11f] BUSY",  # refused: comes again
        f"200: {BUS}: recvTimingReq: {PORT} packet ReadExReq [1d0c100:1d0c11f]",  # accepted ...
        f"200: {BUS}: recvTimingReq: {PORT} packet ReadExReq [1d0c100:1d0c11f] SF size: 1 lat: 0",  # ... its lookup: no new request
        f"300: {BUS}: recvTimingReq: {PORT} packet UpgradeReq [1d0c100:1d0c11f]",
        f"300: {BUS}: recvTimingReq: {PORT} packet UpgradeReq [1d0c100:1d0c11f] RETRY",  # taken back
        f"400: {BUS}: recvTimingReq: {PORT} packet WritebackDirty [1d0c100:1d0c11f]",  # no coherence request
        "400: board.cache_hierarchy.l1d-cache-1: handleSnoop: snoop hit for ReadExReq [1d0c100:1d0c11f], old state is " + block.format(code=4, state="S"),
        "400: board.cache_hierarchy.l1d-cache-1: new state is " + block.format(code=0, state="I"),  # inside the CPU: not counted
        "400: board.cache_hierarchy.l2-cache-1: handleSnoop: snoop hit for ReadExReq [1d0c100:1d0c11f], old state is " + block.format(code=4, state="S"),
        "        Targets:",  # the rest of a multi-line message
        "400: board.cache_hierarchy.l2-cache-1: new state is " + block.format(code=0, state="I"),  # counted once for CPU1
        "500: board.cache_hierarchy.l2-cache-2: handleSnoop: snoop hit for ReadSharedReq [1d0c120:1d0c13f], old state is " + block.format(code=5, state="E"),
        "500: board.cache_hierarchy.l2-cache-2: new state is " + block.format(code=4, state="S"),  # downgraded, not invalidated
        f"600: {BUS}: recvTimingReq: {PORT} packet ReadSharedReq [1d0c120:1d0c13f]",
    ]
    [profile] = profile_classic(write_trace(tmp_path / "roi.trace.gz", lines), LINE_BYTES, ())
    lock, other = profile.lines[LOCK_LINE], profile.lines[0x1D0C120]
    assert (lock.requests, lock.invalidations) == (1, 1)
    assert (other.requests, other.invalidations) == (1, 0)


def test_lines_go_to_the_roi_their_tick_is_in(tmp_path: Path) -> None:
    lines = [f"{tick}: {BUS}: recvTimingReq: {PORT} packet ReadExReq [1d0c100:1d0c11f]" for tick in (100, 200, 900)]
    first, second = profile_classic(write_trace(tmp_path / "roi.trace.gz", lines), LINE_BYTES, (100, 500))
    assert (first.total_requests, second.total_requests) == (2, 1)


def test_a_junk_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    lines = [f"100: {BUS}: recvTimingReq: {PORT} packet ReadExReq [1d0c100:1d0c11f]", "garbage from a crashed simulator"]
    with pytest.raises(TraceFormatError, match=r"roi\.trace\.gz:2: not a gem5 debug line"):
        profile_classic(write_trace(tmp_path / "roi.trace.gz", lines), LINE_BYTES, ())


STATS = f"""
{BUS}.transDist::ReadResp         2850                       # Transaction distribution (Count)
{BUS}.transDist::WritebackDirty          303                       # Transaction distribution (Count)
{BUS}.transDist::UpgradeReq         1037                       # Transaction distribution (Count)
{BUS}.transDist::ReadExReq         3778                       # Transaction distribution (Count)
{BUS}.transDist::ReadSharedReq         2914                       # Transaction distribution (Count)
board.cache_hierarchy.l2buses0.transDist::ReadExReq         999                       # Transaction distribution (Count)
"""


def test_the_requests_are_checked_against_the_bus_stats(tmp_path: Path) -> None:
    """The lines of the real run's stats.txt: its requests are 1037 + 3778 + 2914 (responses, writebacks and other buses left out)."""
    assert bus_requests_in_stats(STATS) == 7729
    lines = [f"{tick}: {BUS}: recvTimingReq: {PORT} packet ReadExReq [1d0c100:1d0c11f]" for tick in (100, 200)]
    profiles = profile_classic(write_trace(tmp_path / "roi.trace.gz", lines), LINE_BYTES, ())
    assert check_against_stats(profiles, STATS) == "the trace's bus requests (2) differ from stats.txt's transDist (7729)"
    assert check_against_stats(profiles, STATS.replace("3778", "1").replace("1037", "0").replace("2914", "1")) is None
