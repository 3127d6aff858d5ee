"""`run.sh handoff` on the committed real trace, tried as a new user would, and its one-line errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from analysis.handoff_chart.draw import chart_for
from analysis.handoff_chart.layout import layout_chart
from lockstudy.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "gem5" / "altix-numa-2-kbench"
LOCK = "bench:lock"
SVG = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
USAGE_ERROR = 2
LANES = ["CPU0 L1", "CPU1 L1", "L2 bank 0", "dir+mem 0", "CPU2 L1", "CPU3 L1", "L2 bank 1", "dir+mem 1"]


def handoff(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as run.sh runs it: `python -m lockstudy` in the project's environment."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "lockstudy", "handoff", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("charts")
    return handoff(str(FIXTURE), "--lock", LOCK, "--out", str(out)), out


def test_the_command_draws_the_median_handoff_and_says_which(drawn: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    result, out = drawn
    assert result.returncode == 0, result.stderr
    assert "drew hand-off 2 of 9 (median by message count): CPU1 to CPU3, 17 messages, 8 between nodes" in result.stdout
    assert sorted(path.name for path in out.iterdir()) == ["bench_lock-handoff-2.png", "bench_lock-handoff-2.svg", "bench_lock-handoff-2.txt", "provenance.json"]


def test_the_svg_parses_and_labels_every_lane_and_node(drawn: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _result, out = drawn
    root = ElementTree.parse(out / "bench_lock-handoff-2.svg").getroot()
    assert root.tag == f"{SVG}svg"
    texts = [element.text for element in root.iter(f"{SVG}text")]
    assert all(lane in texts for lane in LANES)
    assert {"node 0", "node 1"} <= set(texts)
    assert len(list(root.iter(f"{SVG}line"))) >= len(LANES) + 17  # the lifelines and one arrow per message


def test_the_text_chart_has_the_lanes_and_every_message(drawn: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    result, out = drawn
    text = (out / "bench_lock-handoff-2.txt").read_text()
    assert text and text in result.stdout
    assert all(lane in text for lane in LANES)
    assert text.count(" x-node") == 8
    assert "GETX: CPU1 L1 I>IM at +1.0 ns -> L2 bank 0 SS>SS_MB" in text


def test_the_png_is_an_image_of_the_layouts_size(drawn: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _result, out = drawn
    data = (out / "bench_lock-handoff-2.png").read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    chart, _handoff, _count, _how = chart_for(FIXTURE, LOCK)
    layout = layout_chart(chart)
    assert (width, height) == (layout.width, layout.height)


def test_no_two_texts_of_the_fixtures_chart_overlap() -> None:
    chart, _handoff, _count, _how = chart_for(FIXTURE, LOCK)
    boxes = [text.box() for text in layout_chart(chart).texts]
    clashes = [
        (layout_chart(chart).texts[i].text, layout_chart(chart).texts[j].text)
        for i in range(len(boxes)) for j in range(i + 1, len(boxes))
        if boxes[i][0] < boxes[j][2] and boxes[j][0] < boxes[i][2] and boxes[i][1] < boxes[j][3] and boxes[j][1] < boxes[i][3]
    ]  # fmt: skip
    assert not clashes


def test_a_wrong_lock_name_gets_one_line_listing_the_traced_locks(tmp_path: Path) -> None:
    result = handoff(str(FIXTURE), "--lock", "bench:lokc", "--out", str(tmp_path))
    assert result.returncode == USAGE_ERROR
    assert result.stderr.splitlines() == [
        f"error: {FIXTURE}: no lock 'bench:lokc' in this run's registry; traced locks: bench:guarded_data, bench:lock, bench:padded_noise"
    ]
    assert not list(tmp_path.iterdir())


def test_a_run_without_a_trace_gets_one_line_saying_how_to_trace(tmp_path: Path) -> None:
    run = tmp_path / "untraced"
    run.mkdir()
    for name in ("config.json", "result.json", "stats.txt"):
        shutil.copy(FIXTURE / name, run / name)
    result = handoff(str(run), "--lock", LOCK)
    assert result.returncode == USAGE_ERROR
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "no roi.trace.gz: this run was not traced" in lines[0]
    assert "gem5-configs/run.py --trace protocol" in lines[0] and 'trace = "protocol"' in lines[0]


def test_index_and_tick_exclude_each_other() -> None:
    result = handoff(str(FIXTURE), "--lock", LOCK, "--index", "1", "--tick", "5")
    assert result.returncode == USAGE_ERROR
    assert "not allowed with argument" in result.stderr


def test_a_second_drawing_says_it_was_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    first = handoff(str(FIXTURE), "--lock", LOCK, "--out", str(tmp_path / "first"))
    second = handoff(str(FIXTURE), "--lock", LOCK, "--out", str(tmp_path / "second"))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "kept from an earlier drawing" not in first.stdout
    assert "17 messages, 8 between nodes (kept from an earlier drawing of this trace)" in second.stdout
    assert first.stdout.split("\ndrew")[0] == second.stdout.split("\ndrew")[0]  # the same text chart
