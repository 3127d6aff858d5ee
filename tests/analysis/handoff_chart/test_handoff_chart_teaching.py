"""The report's teaching page (analysis/handoff_chart/teaching.py) on the real traced fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis.gem5_output.runs import load_results
from analysis.handoff_chart import teaching
from analysis.traffic.metrics import metrics_table
from lockstudy.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "gem5" / "altix-numa-2-kbench"


@pytest.fixture(scope="module")
def fixture_results(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("results")
    shutil.copytree(FIXTURE, folder / FIXTURE.name)
    results, errors = load_results(folder)
    assert not errors, errors
    return results, metrics_table(results)


def test_the_data_file_has_two_lines_for_every_variant_of_the_bounds() -> None:
    from analysis.traffic.handoffs import load_bounds

    page = teaching.load_teaching()
    assert set(page.captions) == set(load_bounds().variants)
    assert page.lock == "bench:lock" and page.sizes["altix-numa"] == 2 and page.sizes["piii-smp"] == 4


def test_the_fixture_run_gets_its_chart_with_caption_count_and_order(fixture_results, tmp_path: Path) -> None:
    results, table = fixture_results
    section = teaching.teaching_section(results, table, tmp_path)
    assert section is not None
    (figure,) = section.figures
    assert figure.png.is_file() and figure.svg.is_file()
    assert figure.png.parent == tmp_path / teaching.FOLDER / "altix-numa-qspinlock"
    assert "altix-numa, qspinlock: An MCS queue" in figure.title
    assert "17 messages in this hand-off (hand-off 2 of 9, median by message count)" in figure.title
    assert "the analytical order: O(1)" in figure.title


def test_no_traced_kbench_run_at_a_page_size_gives_no_page(fixture_results, tmp_path: Path) -> None:
    results, table = fixture_results
    assert teaching.teaching_section(results, table.assign(nodes=4), tmp_path) is None
    assert teaching.teaching_section(results, table.assign(trace="off"), tmp_path) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('lock = "bench:lock"\n[size]\npiii-smp = 4\n[caption]\ntas = ["only one line"]\n', r"caption\.tas: must be 2 non-empty lines"),
        ('lock = "bench:lock"\n[size]\npiii-smp = 0\n[caption]\n', r"\[size\]: .* positive sizes"),
        ('lock = "bench:lock"\n[size\n', r"teaching\.toml: .*line 2"),
    ],
)
def test_a_bad_data_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "teaching.toml"
    bad.write_text(text)
    with pytest.raises(teaching.TeachingDataError, match=message):
        teaching.load_teaching(bad)
