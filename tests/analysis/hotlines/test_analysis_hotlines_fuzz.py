"""Fuzzing the hot-line profile's front door: a broken ROI trace ends in one line naming it, or in a table.

The input starts as the first lines of the real NUMA fixture's trace and
is broken on purpose (cut gzip stream, gzip junk, a cut line, a junk
line, a word replaced by any bytes, lines swapped). Whatever it becomes,
hotline_tables() must return rows or raise TraceFormatError /
HotlinesError with one line that names the trace; any other exception
fails the test.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.gem5_output.runs import load_results
from analysis.gem5_output.trace_chunks import TraceFormatError
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.table import COLUMNS, hotline_tables
from analysis_checks import FIXTURES
from fuzzing import budget

pytestmark = pytest.mark.fuzz

NUMA_RUN = FIXTURES / "altix-numa-2-kbench"
BASE_LINES = 2000  # of the fixture's trace: enough for every kind of transition, quick to scan


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def base_lines() -> list[bytes]:
    if not NUMA_RUN.is_dir():
        pytest.skip("no real gem5 fixture of the NUMA machine")
    with gzip.open(NUMA_RUN / "roi.trace.gz", "rb") as handle:
        return handle.read().split(b"\n")[:BASE_LINES]


@budget()
@given(data=st.data())
def test_a_broken_trace_ends_in_one_line_naming_it_or_a_table(tmp_path: Path, base_lines: list[bytes], data: st.DataObject) -> None:
    lines = list(base_lines)
    kind = data.draw(st.sampled_from(["cut gzip", "gzip junk", "cut line", "junk line", "word", "swap"]))
    at = data.draw(st.integers(0, len(lines) - 1))
    if kind == "cut line":
        lines = lines[:at] + [lines[at][: data.draw(st.integers(0, len(lines[at])))]]
    elif kind == "junk line":
        lines.insert(at, data.draw(st.binary(max_size=80)))
    elif kind == "word":
        words = lines[at].split()
        words[data.draw(st.integers(0, len(words) - 1))] = data.draw(st.binary(max_size=12))
        lines[at] = b" ".join(words)
    elif kind == "swap":
        other = data.draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
    packed = gzip.compress(b"\n".join(lines) + b"\n", compresslevel=1)
    if kind == "cut gzip":
        packed = packed[: data.draw(st.integers(0, len(packed)))]
    elif kind == "gzip junk":
        where = data.draw(st.integers(0, len(packed)))
        packed = packed[:where] + data.draw(st.binary(min_size=1, max_size=40)) + packed[where:]
    root = tmp_path / "results"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(NUMA_RUN, root / NUMA_RUN.name, ignore=shutil.ignore_patterns("roi.trace.gz"))
    trace = root / NUMA_RUN.name / "roi.trace.gz"
    trace.write_bytes(packed)
    results, _ = load_results(root, None)
    try:
        rows = hotline_tables(results, processes=1).rows
    except (TraceFormatError, HotlinesError) as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(str(trace)), message
        return
    assert list(rows.columns) == COLUMNS
