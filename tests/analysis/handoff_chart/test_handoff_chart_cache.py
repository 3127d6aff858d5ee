"""A drawn chart is kept in the trace cache, taken again only when nothing it was made from changed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from analysis.handoff_chart import chart_cache, draw
from analysis.traffic import trace_cache
from lockstudy.paths import CACHE_VARIABLE, ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "gem5" / "altix-numa-2-kbench"
LOCK = "bench:lock"
CHART_FILES = ("bench_lock-handoff-2.txt", "bench_lock-handoff-2.svg", "bench_lock-handoff-2.png")


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the traced fixture and a private cache."""
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    return folder


def count_drawings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts how often a chart is really drawn (its messages rebuilt), not taken from the cache."""
    calls: list[int] = []
    real = draw.chart_of

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(draw, "chart_of", counted)
    return calls


def test_a_second_drawing_is_taken_from_the_cache_byte_for_byte(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawings = count_drawings(monkeypatch)
    first = draw.draw(run, LOCK, out=tmp_path / "first")
    second = draw.draw(run, LOCK, out=tmp_path / "second")
    assert len(drawings) == 1
    assert (first.from_cache, second.from_cache) == (False, True)
    assert first.facts == second.facts and first.text == second.text
    assert second.facts.messages == 17 and second.facts.handoff == 2 and second.facts.handoffs == 9
    for name in CHART_FILES:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()
    # Provenance is written from the run as it is now, cache or not.
    provenance = json.loads((tmp_path / "second" / "provenance.json").read_text())
    assert provenance["charts"]["bench_lock-handoff-2"]["messages"] == 17
    assert provenance["run"]["roi.trace.gz sha256"]
    assert sorted(path.name for path in (tmp_path / "second").iterdir()) == sorted([*CHART_FILES, "provenance.json"])


def test_a_changed_trace_result_or_choice_is_drawn_again(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawings = count_drawings(monkeypatch)
    draw.draw(run, LOCK, out=tmp_path / "charts")
    trace = run / "roi.trace.gz"
    stamp = trace.stat()
    os.utime(trace, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert not draw.draw(run, LOCK, out=tmp_path / "charts").from_cache
    result = json.loads((run / "result.json").read_text())
    result["status"], result["reason"] = "timeout", "the campaign's wall limit"
    (run / "result.json").write_text(json.dumps(result))
    redrawn = draw.draw(run, LOCK, out=tmp_path / "charts")
    assert not redrawn.from_cache and "This run ended timeout" in redrawn.text
    assert not draw.draw(run, LOCK, index=3, out=tmp_path / "charts").from_cache
    assert len(drawings) == 4
    assert draw.draw(run, LOCK, index=3, out=tmp_path / "charts").from_cache


def test_changed_drawing_code_is_drawn_again(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawings = count_drawings(monkeypatch)
    draw.draw(run, LOCK, out=tmp_path / "charts")
    sources = chart_cache.code_sources()
    assert str(Path(chart_cache.__file__).parent / "messages.py") in sources
    assert str(ROOT / "analysis" / "handoff_chart" / "data" / "CHI.toml") in sources
    changed = tmp_path / "messages_changed.py"
    changed.write_text("# a changed module\n")
    monkeypatch.setattr(chart_cache, "code_sources", lambda: (*sources, str(changed)))
    assert not draw.draw(run, LOCK, out=tmp_path / "charts").from_cache
    assert len(drawings) == 2


def test_an_unreadable_cache_entry_is_drawn_again_without_error(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draw.draw(run, LOCK, out=tmp_path / "charts")
    entry = trace_cache.cache_file(chart_cache.folder(LOCK, None, None), run / "roi.trace.gz")
    data = json.loads(entry.read_text())
    data["png"] = "not base64 at all!"
    entry.write_text(json.dumps(data))
    drawings = count_drawings(monkeypatch)
    again = draw.draw(run, LOCK, out=tmp_path / "charts")
    assert not again.from_cache and len(drawings) == 1
    assert (tmp_path / "charts" / CHART_FILES[2]).read_bytes().startswith(b"\x89PNG")


def test_a_run_restored_from_the_archive_draws_the_chart_it_kept(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The archive keeps the teaching page's chart (the median hand-off of its lock) in the run's derived file;
    with no trace, the chart comes from there, with the trace's sha256 in its provenance."""
    from analysis.handoff_chart.teaching import load_teaching
    from lockstudy.archive.pack import derived_record, trace_readers

    assert LOCK == load_teaching().lock and chart_cache.folder(LOCK, None, None) in trace_readers()
    drawn = draw.draw(run, LOCK, out=tmp_path / "there")
    trace = run / "roi.trace.gz"
    record = derived_record(trace, {})
    assert chart_cache.folder(LOCK, None, None) in record["readers"]
    trace_cache.derived_file(trace).write_text(json.dumps(record))
    trace.unlink()
    drawings = count_drawings(monkeypatch)
    restored = draw.draw(run, LOCK, out=tmp_path / "here")
    assert restored.from_cache and not drawings and restored.facts == drawn.facts
    for name in CHART_FILES:
        assert (tmp_path / "here" / name).read_bytes() == (tmp_path / "there" / name).read_bytes()
    provenance = json.loads((tmp_path / "here" / "provenance.json").read_text())
    assert provenance["run"]["roi.trace.gz sha256"] == json.loads((tmp_path / "there" / "provenance.json").read_text())["run"]["roi.trace.gz sha256"]
    # Another hand-off, or the same by other code, cannot be drawn without the trace: one line says why.
    with pytest.raises(draw.HandoffInputError, match="restored from the run archive, which keeps no trace"):
        draw.draw(run, LOCK, index=3, out=tmp_path / "here")
    sources = chart_cache.code_sources()
    changed = tmp_path / "changed.py"
    changed.write_text("# changed\n")
    monkeypatch.setattr(chart_cache, "code_sources", lambda: (*sources, str(changed)))
    with pytest.raises(draw.HandoffInputError, match="drawn by other code than today's"):
        draw.draw(run, LOCK, out=tmp_path / "here")


def test_a_handoff_outside_the_trace_writes_nothing(run: Path, tmp_path: Path) -> None:
    with pytest.raises(draw.HandoffInputError):
        draw.draw(run, LOCK, index=999, out=tmp_path / "charts")
    assert not (tmp_path / "charts").exists()
