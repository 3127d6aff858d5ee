"""The gem5 stats.txt reader on generated dumps and on broken files made from them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis import synthetic
from analysis.gem5_output.stat_rules import load_rules
from analysis.gem5_output.stats_reader import UNINDEXED_LOOKUPS, StatsFileError, _bucket_names, read_dumps
from analysis_checks import check_run_folder, entries, exact_entries

MACHINES = (("piii-smp", 2), ("altix-numa", 2))
ROIS = 2


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[synthetic.StatsWriter]]]:
    root = tmp_path_factory.mktemp("generated")
    return {name: (root / name, synthetic.write_run(root / name, name, count, ROIS, seed=7)) for name, count in MACHINES}


def stats_lines(generated: dict, machine: str = "piii-smp") -> list[str]:
    return (generated[machine][0] / "stats.txt").read_text().split("\n")


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "stats.txt"
    path.write_text("\n".join(lines))
    return path


def line_of(lines: list[str], prefix: str, occurrence: int = 0) -> int:
    """0-based index of the occurrence-th line starting with prefix."""
    found = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    return found[occurrence]


@pytest.mark.parametrize("machine", [m for m, _ in MACHINES])
def test_every_generated_value_reads_back(generated: dict, machine: str) -> None:
    folder, written = generated[machine]
    dumps = read_dumps(folder / "stats.txt", expected=ROIS)
    assert [d.index for d in dumps] == list(range(ROIS))
    for dump, writer in zip(dumps, written):
        seen = {(s, sub): v for s, sub, v, _, _ in dump.entries()}
        assert set(seen) == set(writer.expected)
        for key, value in writer.expected.items():
            assert seen[key] == value or (math.isnan(value) and math.isnan(seen[key])), key


@pytest.mark.parametrize("machine", [m for m, _ in MACHINES])
def test_generated_run_passes_the_real_fixture_checks(generated: dict, machine: str) -> None:
    check_run_folder(generated[machine][0])


def test_units_descriptions_and_forms(generated: dict) -> None:
    dump = read_dumps(generated["piii-smp"][0] / "stats.txt")[0]
    found = {(s, sub): (v, u, d) for s, sub, v, u, d in dump.entries()}
    assert found[("simFreq", "")][1:] == ("Tick/Second", "The number of ticks per simulated second")
    assert found[("hostSeconds", "")][1] == "Second"
    # Distribution fields and buckets (text.cc:486-583).
    fanout = "board.cache_hierarchy.membus.snoopFanout"
    for sub in ("samples", "mean", "stdev", "underflows", "overflows", "min_value", "max_value", "total", "0", "3"):
        assert (fanout, sub) in found, sub
    # 2-D: name_<x>::<y> and name::total.
    assert any(s.startswith("board.cache_hierarchy.membus.pktCount_") for s, _ in found)
    assert ("board.cache_hierarchy.membus.pktCount", "total") in found


def test_ruby_oneline_vectors_and_histograms(generated: dict) -> None:
    folder, written = generated["altix-numa"]
    dump = read_dumps(folder / "stats.txt")[0]
    found = {(s, sub) for s, sub, _, _, _ in dump.entries()}
    event = "board.cache_hierarchy.ruby_system.L1Cache_Controller.Inv"
    assert {(event, "0"), (event, "1"), (event, "3"), (event, "total")} <= found
    histogram = "board.cache_hierarchy.ruby_system.delayHistogram"
    size = dump.lookup(histogram, "bucket_size")
    assert size is not None
    first = "0" if size == 1 else f"0-{size - 1:g}"
    assert (histogram, first) in found


def test_bucket_names_follow_gem5() -> None:
    # DistPrint (text.cc:540-546): low-high, or low alone for one-wide buckets; %g bounds.
    assert _bucket_names(1, 0, 3, 4) == ["0", "1", "2", "3"]
    assert _bucket_names(10, 0, 29, 3) == ["0-9", "10-19", "20-29"]
    assert _bucket_names(1e6, 0, 3e6 - 1, 3)[1] == "1e+06-2e+06"


@pytest.mark.parametrize("machine", [m for m, _ in MACHINES])
def test_fast_path_agrees_with_line_by_line(generated: dict, machine: str) -> None:
    path = generated[machine][0] / "stats.txt"
    for dump in read_dumps(path):
        assert entries(dump) == exact_entries(path, dump)


def test_truncated_file_names_the_unfinished_dump(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    begin = line_of(lines, "---------- Begin", 1)
    path = write(tmp_path, lines[: begin + 500])
    with pytest.raises(StatsFileError) as caught:
        read_dumps(path)
    message = str(caught.value)
    assert f"{path}:{begin + 1}:" in message and "dump 1" in message and "truncated" in message


def test_missing_end_between_dumps_names_the_second_begin(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    end = line_of(lines, "---------- End", 0)
    second_begin = line_of(lines, "---------- Begin", 1)
    path = write(tmp_path, lines[:end] + lines[end + 1 :])
    with pytest.raises(StatsFileError, match=rf"{path}:{second_begin}: a Begin marker inside dump 0"):
        read_dumps(path)


def test_garbage_line_is_named_with_its_number(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    at = line_of(lines, "board.cache_hierarchy.membus.snoops")
    lines.insert(at, "this line is not a stat")
    path = write(tmp_path, lines)
    with pytest.raises(StatsFileError, match=rf"{path}:{at + 1}: value 'line' is not a number"):
        read_dumps(path)


def test_garbage_after_a_value_is_named(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    at = line_of(lines, "board.cache_hierarchy.membus.snoops")
    lines[at] = "board.cache_hierarchy.membus.brandNewStat 12 oops"
    path = write(tmp_path, lines)
    with pytest.raises(StatsFileError, match=rf"{path}:{at + 1}: unexpected 'oops'"):
        read_dumps(path)


def test_text_outside_a_dump_is_an_error(generated: dict, tmp_path: Path) -> None:
    lines = ["gem5 said something", *stats_lines(generated)]
    path = write(tmp_path, lines)
    with pytest.raises(StatsFileError, match=rf"{path}:1: text outside a Begin/End block"):
        read_dumps(path)


def test_empty_missing_and_dumpless_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(StatsFileError, match="is empty"):
        read_dumps(empty)
    with pytest.raises(StatsFileError, match="no such file"):
        read_dumps(tmp_path / "absent.txt")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n")
    assert read_dumps(blank) == []
    with pytest.raises(StatsFileError, match=r"has no dumps, but 2 ROI\(s\) were expected"):
        read_dumps(blank, expected=2)


def test_missing_dump_is_an_error(generated: dict) -> None:
    with pytest.raises(StatsFileError, match=r"has 2 dump\(s\), but 3 ROI\(s\) were expected"):
        read_dumps(generated["piii-smp"][0] / "stats.txt", expected=3)


def test_unknown_stats_are_data(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    at = line_of(lines, "simTicks")
    lines.insert(at, "board.future.someNewStat                        42                       # a stat from a newer gem5 (Count)")
    dump = read_dumps(write(tmp_path, lines))[0]
    assert dump.lookup("board.future.someNewStat") == 42


def test_nan_and_inf_values(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    at = line_of(lines, "hostSeconds")
    lines[at] = lines[at].replace(lines[at].split()[1], "nan", 1)
    at = line_of(lines, "hostTickRate")
    lines[at] = lines[at].replace(lines[at].split()[1], "inf", 1)
    dump = read_dumps(write(tmp_path, lines))[0]
    assert math.isnan(dump.lookup("hostSeconds") or 0.0)
    assert dump.lookup("hostTickRate") == math.inf


OLD_NAMES = {
    # gem5 v24 name in the generated file -> the name an older gem5 printed.
    "simSeconds ": "sim_seconds ",
    "hostMemory ": "host_mem_usage ",
    ".transDist::": ".trans_dist::",
    ".ReadExReq.misses::": ".ReadExReq_misses::",
    ".snoopFanout::": ".snoop_fanout::",
    ".overallMisses::": ".overall_misses::",
}


def test_renamed_stat_version_reads_as_v24_names(generated: dict, tmp_path: Path) -> None:
    text = (generated["piii-smp"][0] / "stats.txt").read_text()
    for new, old in OLD_NAMES.items():
        assert new in text
        text = text.replace(new, old)
    path = tmp_path / "stats.txt"
    path.write_text(text)
    original = read_dumps(generated["piii-smp"][0] / "stats.txt")[0]
    renamed = read_dumps(path)[0]
    assert entries(renamed) == entries(original)
    mapping = renamed.renamed()
    assert mapping["sim_seconds"] == "simSeconds"
    assert mapping["host_mem_usage"] == "hostMemory"
    assert mapping["board.cache_hierarchy.membus.trans_dist"] == "board.cache_hierarchy.membus.transDist"
    assert mapping["board.cache_hierarchy.l2-cache-0.ReadExReq_misses"] == "board.cache_hierarchy.l2-cache-0.ReadExReq.misses"
    assert not original.renamed(), "a gem5 v24 name must never be renamed"


@pytest.mark.parametrize("machine", [m for m, _ in MACHINES])
def test_no_v24_name_matches_a_rename(generated: dict, machine: str) -> None:
    renamer, _ = load_rules()
    for stat, sub in generated[machine][1][0].expected:
        assert renamer.normalise(stat) == (stat, ""), stat


def test_not_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "stats.txt"
    path.write_bytes(b"\n---------- Begin Simulation Statistics ----------\nsim\xff 1\n")
    with pytest.raises(StatsFileError, match="not UTF-8"):
        read_dumps(path)


def test_a_stat_printed_twice_is_an_error_with_and_without_the_index(generated: dict, tmp_path: Path) -> None:
    lines = stats_lines(generated)
    at = line_of(lines, "simTicks")
    lines.insert(at, lines[at])
    path = write(tmp_path, lines)
    unindexed = read_dumps(path)[0]
    with pytest.raises(StatsFileError, match=r"dump 0: simTicks is printed more than once"):
        unindexed.lookup("simTicks")
    indexed = read_dumps(path)[0]
    for _ in range(UNINDEXED_LOOKUPS + 1):
        indexed.lookup("simSeconds")
    assert indexed._index is not None, "the index is built after the unindexed lookups"
    with pytest.raises(StatsFileError, match=r"dump 0: simTicks is printed more than once"):
        indexed.lookup("simTicks")


@pytest.mark.parametrize("machine", [m for m, _ in MACHINES])
def test_lookups_agree_before_and_after_the_index(generated: dict, machine: str) -> None:
    path = generated[machine][0] / "stats.txt"
    keys = [(s, sub) for s, sub, _, _, _ in read_dumps(path)[0].entries()][:: 97]
    searched = read_dumps(path)[0]
    by_search = []
    for stat, sub in keys:
        searched._lookups = 0  # every lookup by search
        by_search.append(searched.lookup(stat, sub))
    indexed = read_dumps(path)[0]
    indexed._build_index()
    by_index = [indexed.lookup(stat, sub) for stat, sub in keys]
    assert by_search == by_index and None not in by_index
    assert searched.lookup("no.such.stat") is None and indexed.lookup("no.such.stat") is None


def test_files_of_one_layout_keep_their_own_names_and_values(generated: dict, tmp_path: Path) -> None:
    """Blocks of the same names reuse their codes; same length, other names must not."""
    lines = stats_lines(generated)
    at = line_of(lines, "simTicks")
    first = tmp_path / "a"
    first.mkdir()
    lines[at] = lines[at].replace(lines[at].split()[1], "111", 1)
    write(first, lines)
    second = tmp_path / "b"
    second.mkdir()
    lines[at] = lines[at].replace("111", "222", 1)
    write(second, lines)
    renamed = tmp_path / "c"
    renamed.mkdir()
    lines[at] = lines[at].replace("simTicks", "board.future.otherStat", 1)
    write(renamed, lines)
    values = [read_dumps(folder / "stats.txt")[0] for folder in (first, second, renamed)]
    assert [values[0].lookup("simTicks"), values[1].lookup("simTicks"), values[2].lookup("simTicks")] == [111, 222, None]
    assert values[2].lookup("board.future.otherStat") == 222
    assert len(values[0]) == len(values[2])
