"""Checks shared by the analysis tests on generated runs and on real gem5 fixtures.

Real fixtures (issue #5) live in tests/fixtures/gem5/<run>/ with stats.txt,
config.json, result.json and console.log, as gem5-configs/run.py writes
them; the same checks run on each.
"""

from __future__ import annotations

import json
from pathlib import Path

from analysis.gem5_output.config_reader import read_config
from analysis.gem5_output.runs import RunInfo, read_run
from analysis.gem5_output.stat_rules import load_rules
from analysis.gem5_output.stats_reader import Dump, StatsReader, Vocabulary

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gem5"
FIXTURE_FILES = ("stats.txt", "config.json", "result.json")
NO_FIXTURES_REASON = "no real gem5 fixtures committed yet (issue #5)"
# Printed in every dump whatever the machine (src/sim/root.cc:61-77, no nozero flag).
ALWAYS_PRINTED = ("simSeconds", "simTicks", "simFreq")
KIND_TO_HIERARCHY = {"classic-smp": "classic", "ruby-numa": "ruby"}


def fixture_runs() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(d for d in FIXTURES.iterdir() if d.is_dir() and all((d / f).is_file() for f in FIXTURE_FILES))


def run_info(folder: Path) -> RunInfo:
    result = json.loads((folder / "result.json").read_text())
    return RunInfo(folder.name, folder, str(result.get("status")), str(result.get("reason", "")), result)


def entries(dump: Dump) -> list[tuple[str, str, float, str]]:
    return sorted((s, sub, v, u) for s, sub, v, u, _ in dump.entries() if v == v)


def exact_entries(path: Path, dump: Dump) -> list[tuple[str, str, float, str]]:
    """The same dump read line by line (the reader's slow, exact path)."""
    reader = StatsReader(path, Vocabulary(load_rules()[0]))
    lines = path.read_text().split("\n")[dump.begin_line : dump.end_line - 1]
    again = Dump(path, dump.index, dump.begin_line, dump.end_line, reader.vocabulary)
    reader._exact(lines, dump.begin_line + 1, again)
    return entries(again)


def check_run_folder(folder: Path) -> None:
    """What must hold for any run folder gem5-configs/run.py wrote and says is ok."""
    info = run_info(folder)
    assert info.ok, f"{folder}: result.json says {info.status}: {info.reason}"
    run = read_run(info)
    rois = info.result.get("roi_ticks") or []
    assert len(run.dumps) == len(rois) > 0
    for dump in run.dumps:
        assert len(dump) > 0
        for stat in ALWAYS_PRINTED:
            assert dump.lookup(stat) is not None, f"{folder}: dump {dump.index}: {stat} missing"
        assert entries(dump) == exact_entries(run.stats_path, dump), "fast and exact paths disagree"
        assert run.value(dump.index, "simTicks") > 0
    machine = read_config(folder / "config.json")
    summary = info.result.get("provenance", {}).get("machine", {})
    if "cpus" in summary:
        assert machine.num_cpus == summary["cpus"]
    if "line_bytes" in summary:
        assert machine.line_bytes == summary["line_bytes"]
    if summary.get("kind") in KIND_TO_HIERARCHY:
        assert machine.hierarchy == KIND_TO_HIERARCHY[summary["kind"]]
    if machine.hierarchy == "ruby":
        assert machine.ruby_protocol == "MESI_Two_Level"
