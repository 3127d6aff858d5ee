"""`run.sh handoff`'s front door, fuzzed: a damaged trace ends in a chart or in its one-line reason, never a traceback.

The traces are the synthetic ones of test_handoff_chart.py (Ruby) and
test_handoff_chart_classic.py (classic), broken the ways a real trace
breaks: a cut or corrupted gzip stream, a cut line, lines out of order, a
junk line, a field replaced.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import test_handoff_chart as ruby
import test_handoff_chart_classic as classic
from analysis.handoff_chart.draw import chart_for
from analysis.handoff_chart.errors import HandoffInputError
from analysis.handoff_chart.text_chart import render_text
from fuzzing import budget

pytestmark = pytest.mark.fuzz  # `./run.sh test --fuzz` runs it with the long budget

TRACE = "roi.trace.gz"
BREAKINGS = ["cut gzip", "gzip junk", "truncate", "reorder", "junk line", "field"]


def broken(packed: bytes, data: st.DataObject) -> bytes:
    kind = data.draw(st.sampled_from(BREAKINGS))
    if kind == "cut gzip":
        return packed[: data.draw(st.integers(0, len(packed)))]
    if kind == "gzip junk":
        at = data.draw(st.integers(0, len(packed)))
        return packed[:at] + data.draw(st.binary(min_size=1, max_size=40)) + packed[at:]
    lines = gzip.decompress(packed).split(b"\n")
    at = data.draw(st.integers(0, len(lines) - 1))
    if kind == "truncate":
        lines[at] = lines[at][: data.draw(st.integers(0, len(lines[at])))]
    elif kind == "reorder":
        other = data.draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
    elif kind == "junk line":
        lines.insert(at, data.draw(st.binary(max_size=80)))
    else:
        words = lines[at].split(b" ")
        words[data.draw(st.integers(0, len(words) - 1))] = data.draw(st.binary(max_size=12))
        lines[at] = b" ".join(words)
    return gzip.compress(b"\n".join(lines), compresslevel=1)


def draws_or_says_why(run: Path, lock: str) -> None:
    try:
        chart, _handoff, _count, _how = chart_for(run, lock)
    except HandoffInputError as exc:
        assert str(exc).strip() and "Traceback" not in str(exc)
        return
    assert render_text(chart)


@budget()
@given(data=st.data())
def test_a_broken_ruby_trace_draws_or_says_why(tmp_path_factory, data: st.DataObject) -> None:
    run = ruby.write_run(tmp_path_factory.mktemp("ruby"), ruby.three_tas_handoffs())
    (run / TRACE).write_bytes(broken((run / TRACE).read_bytes(), data))
    draws_or_says_why(run, ruby.LOCK_NAME)


@budget()
@given(data=st.data())
def test_a_broken_classic_trace_draws_or_says_why(tmp_path_factory, data: st.DataObject) -> None:
    run = classic.write_run(tmp_path_factory.mktemp("classic") / "run", classic.one_tas_handoff())
    (run / TRACE).write_bytes(broken((run / TRACE).read_bytes(), data))
    draws_or_says_why(run, classic.LOCK_NAME)
