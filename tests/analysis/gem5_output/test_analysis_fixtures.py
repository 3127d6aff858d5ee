"""The analysis checks on real gem5 outputs: tests/fixtures/gem5/<run>/ (issue #5).

Each committed fixture run (stats.txt, config.json, result.json,
console.log as gem5-configs/run.py writes them) goes through the same
checks the generated runs pass in test_analysis_reader.py. Until the
fixtures land, this skips with the reason shown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis_checks import FIXTURES, NO_FIXTURES_REASON, check_run_folder, entries, fixture_runs, run_info

RUNS = fixture_runs()


@pytest.mark.parametrize("folder", RUNS or [None], ids=[p.name for p in RUNS] or ["none"])
def test_real_gem5_fixture(folder: Path | None) -> None:
    if folder is None:
        pytest.skip(NO_FIXTURES_REASON)
    check_run_folder(folder)


# --- broken copies of a real gem5 output: every failure is named, never read as zeros

REAL = FIXTURES / "piii-smp-2-kbench"


def copy_of_real_run(tmp_path: Path) -> Path:
    import shutil

    if not REAL.is_dir():
        pytest.skip(NO_FIXTURES_REASON)
    run = tmp_path / "run"
    shutil.copytree(REAL, run)
    return run


def test_a_truncated_real_stats_file_names_file_line_and_dump(tmp_path: Path) -> None:
    from analysis.gem5_output.stats_reader import StatsFileError, read_dumps

    run = copy_of_real_run(tmp_path)
    lines = (run / "stats.txt").read_text().split("\n")
    (run / "stats.txt").write_text("\n".join(lines[: len(lines) // 2]))
    with pytest.raises(StatsFileError) as caught:
        read_dumps(run / "stats.txt")
    assert f"{run / 'stats.txt'}:" in str(caught.value) and "dump 0" in str(caught.value) and "truncated" in str(caught.value)


def test_a_missing_real_dump_is_an_error(tmp_path: Path) -> None:
    import json

    from analysis.gem5_output.runs import load_results

    run = copy_of_real_run(tmp_path)
    result = json.loads((run / "result.json").read_text())
    result["roi_ticks"].append(result["roi_ticks"][0])  # the run says it had two ROIs
    (run / "result.json").write_text(json.dumps(result))
    _, errors = load_results(run, 1)
    assert len(errors) == 1 and "has 1 dump(s), but result.json records 2 ROI(s)" in errors[0][1]


def test_an_unknown_stat_of_a_real_run_is_named_not_zero(tmp_path: Path) -> None:
    from analysis.gem5_output.runs import MissingStatError, read_run

    run = read_run(run_info(copy_of_real_run(tmp_path)))
    with pytest.raises(MissingStatError, match=r"stats\.txt: dump 0 \(lines \d+-\d+\): board\.cache_hierarchy\.membus\.snoopz is absent"):
        run.value(0, "board.cache_hierarchy.membus.snoopz")


def test_a_real_run_written_with_older_gem5_names_reads_the_same(tmp_path: Path) -> None:
    from analysis.gem5_output.stats_reader import read_dumps

    run = copy_of_real_run(tmp_path)
    text = (run / "stats.txt").read_text()
    old_names = {"simSeconds": "sim_seconds", "board.cache_hierarchy.membus.transDist": "board.cache_hierarchy.membus.trans_dist"}
    for new, old in old_names.items():
        assert new in text
        text = text.replace(new, old)
    (run / "old.txt").write_text(text)
    original, renamed = read_dumps(REAL / "stats.txt")[0], read_dumps(run / "old.txt")[0]
    assert entries(renamed) == entries(original)  # NaN values (0/0 rates) left out: NaN != NaN
    assert renamed.renamed()["sim_seconds"] == "simSeconds"


def test_generated_stats_print_the_units_real_gem5_prints() -> None:
    """The generated files (tests, bench) must not teach the reader's vocabulary other units."""
    import random
    import re

    from analysis import synthetic

    def units(text: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for line in text.splitlines():
            found = re.match(r"^(\S+)\s.*# .* \((.+)\)\s*$", line)
            if found:
                out.setdefault(re.sub(r"\d+", "N", found.group(1).split("::")[0]), set()).add(found.group(2))
        return out

    generated = {"piii-smp": synthetic.piii_smp(2, random.Random(0), 10**9), "altix-numa": synthetic.altix_numa(2, random.Random(0), 10**9)}
    for folder in fixture_runs() or pytest.skip(NO_FIXTURES_REASON):
        machine = run_info(folder).result["provenance"]["machine"]["name"]
        real, ours = units((folder / "stats.txt").read_text()), units(synthetic.stats_text([generated[machine]]))
        assert {n: (ours[n], real[n]) for n in ours if n in real and ours[n] != real[n]} == {}
