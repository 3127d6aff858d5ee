"""Runs of a results folder, the value() rule for omitted zeros, config.json facts and `run.sh analyze`."""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis import analyze, command, synthetic
from analysis.gem5_output.config_reader import ConfigError, machine_facts, read_config
from analysis.gem5_output.runs import NOT_DECLARED, MissingStatError, discover_runs, load_results
from analysis.gem5_output.stat_rules import load_rules
from lockstudy import venv
from lockstudy.paths import ROOT

MEMBUS = "board.cache_hierarchy.membus"


def make_results(root: Path) -> Path:
    synthetic.write_run(root / "smp-a", "piii-smp", 2, rois=2, seed=1)
    synthetic.write_run(root / "numa-b", "altix-numa", 2, rois=1, seed=2)
    synthetic.write_run(root / "smp-failed", "piii-smp", 2, rois=1, seed=3, status="failed")
    return root


def drop_line(path: Path, prefix: str) -> None:
    lines = path.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    path.write_text("\n".join(lines[:at] + lines[at + 1 :]))


def test_value_explicit_zero_rule(tmp_path: Path) -> None:
    root = make_results(tmp_path)
    stats = root / "smp-a" / "stats.txt"
    drop_line(stats, f"{MEMBUS}.transDist::UpgradeReq ")
    drop_line(stats, f"{MEMBUS}.snoops ")
    results, errors = load_results(root, jobs=1)
    assert not errors
    assert sorted(results.runs) == ["numa-b", "smp-a"]
    assert [r.run_id for r in results.excluded] == ["smp-failed"]
    # Printed: the value. An omitted nozero element: an explicit 0.
    assert results.value("smp-a", 0, f"{MEMBUS}.transDist", "ReadReq") > 0
    assert results.value("smp-a", 0, f"{MEMBUS}.transDist", "UpgradeReq") == 0.0
    assert results.value("smp-a", 0, f"{MEMBUS}.transDist", "HTMAbort") == 0.0
    # Absent but printed even when zero: an error naming file, dump and stat.
    with pytest.raises(MissingStatError, match=rf"{stats}: dump 0 .*{MEMBUS}.snoops is absent"):
        results.value("smp-a", 0, f"{MEMBUS}.snoops")
    assert results.value("smp-a", 1, f"{MEMBUS}.snoops") >= 0
    # A misspelt object or sub never reads as zero.
    with pytest.raises(MissingStatError, match="no such object"):
        results.value("smp-a", 0, "board.cache_hierarchy.membuss.transDist", "ReadReq")
    with pytest.raises(MissingStatError, match="is absent"):
        results.value("smp-a", 0, f"{MEMBUS}.transDist", "ReadRequest")
    with pytest.raises(MissingStatError, match="no dump 2"):
        results.value("smp-a", 2, "simSeconds")
    with pytest.raises(MissingStatError, match="no run 'smp-failed'"):
        results.value("smp-failed", 0, "simSeconds")
    # Ruby controller vectors are nozero too; old names are accepted and normalised.
    assert results.value("numa-b", 0, "board.cache_hierarchy.ruby_system.L2Cache_Controller.MEM_Inv", "1") == 0.0
    with pytest.raises(MissingStatError, match="element 2 of a vector over the 2 L2Cache_Controller"):
        results.value("numa-b", 0, "board.cache_hierarchy.ruby_system.L2Cache_Controller.MEM_Inv", "2")
    assert results.value("numa-b", 0, "sim_seconds") == results.value("numa-b", 0, "simSeconds")


def test_one_element_vector_prints_bare(tmp_path: Path) -> None:
    # One node: one L2 controller, so its event vectors print as `name value` (text.cc:358-367).
    synthetic.write_run(tmp_path / "one-node", "altix-numa", 1, seed=9)
    results, _ = load_results(tmp_path, jobs=1)
    stat = "board.cache_hierarchy.ruby_system.L2Cache_Controller.L1_GETS"
    bare = results.runs["one-node"].dumps[0].lookup(stat)
    assert bare is not None and bare > 0
    assert results.value("one-node", 0, stat, "total") == bare == results.value("one-node", 0, stat, "0")


def test_zero_rules_compile_and_name_their_sources() -> None:
    _, rules = load_rules()
    assert rules.rules and all("src/" in rule.source for rule in rules.rules)
    assert not any("\\{" in r.stat_regex.pattern or "\\{" in r.sub_regex.pattern for r in rules.rules)
    assert rules.match(f"{MEMBUS}.transDist", "UpgradeReq") is not None
    assert rules.match(f"{MEMBUS}.snoops", "") is None
    match = rules.match("board.cache_hierarchy.l1d-cache-0.UpgradeReq.misses", "total")
    assert match is not None and match.owner == "board.cache_hierarchy.l1d-cache-0"


def test_config_facts(tmp_path: Path) -> None:
    make_results(tmp_path)
    smp = read_config(tmp_path / "smp-a" / "config.json")
    assert (smp.num_cpus, smp.hierarchy, smp.ruby_protocol, smp.line_bytes) == (2, "classic", None, 32)
    assert len(smp.caches) == 6 and smp.memory_ranges == ((0, 1 << 30),)
    assert smp.cpu_clock_hz == pytest.approx(700e6, rel=1e-3)
    numa = read_config(tmp_path / "numa-b" / "config.json")
    assert (numa.num_cpus, numa.hierarchy, numa.ruby_protocol) == (4, "ruby", "MESI_Two_Level")
    tree = synthetic.config_tree("altix-numa", 1)
    del tree["board"]["cache_hierarchy"]["ruby_system"]["l1_controllers"][0]["l2_select_num_bits"]
    with pytest.raises(ConfigError, match="protocol is not recognised"):
        machine_facts(tree, "test")
    with pytest.raises(ConfigError, match="no such file"):
        read_config(tmp_path / "absent.json")


def test_campaign_layout_uses_the_worker_run_id(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "abc123"
    synthetic.write_run(run / "out", "piii-smp", 1, seed=4)
    (run / "result.json").write_text(json.dumps({"run_id": "abc123", "status": "ok", "reason": ""}))
    gone = tmp_path / "runs" / "def456"
    gone.mkdir()
    (gone / "result.json").write_text(json.dumps({"run_id": "def456", "status": "killed", "reason": "ended by SIGTERM"}))
    runs = {r.run_id: r for r in discover_runs(tmp_path)}
    assert runs["abc123"].ok and runs["abc123"].gem5_dir == run / "out"
    assert not runs["def456"].ok and runs["def456"].status == "killed"


def test_a_campaign_run_the_campaign_no_longer_declares_is_left_out(tmp_path: Path) -> None:
    """A run of an earlier version of the campaign (another perturbation: another id) is another
    configuration: given the campaign's ids, load_results leaves it out, saying why."""
    for run_id in ("kept", "orphan"):
        synthetic.write_run(tmp_path / "runs" / run_id / "out", "piii-smp", 1, seed=4)
        (tmp_path / "runs" / run_id / "spec.json").write_text("{}")
        (tmp_path / "runs" / run_id / "result.json").write_text(json.dumps({"run_id": run_id, "status": "ok", "reason": ""}))
    synthetic.write_run(tmp_path / "loose", "piii-smp", 1, seed=4)  # run.py's own folder, in no campaign: read as it is
    results, errors = load_results(tmp_path, 1, declared={"kept"})
    assert not errors and set(results.runs) == {"kept", "loose"}
    (left_out,) = results.excluded
    assert (left_out.run_id, left_out.status) == ("orphan", NOT_DECLARED)
    everything, _ = load_results(tmp_path, 1)
    assert set(everything.runs) == {"kept", "orphan", "loose"}


def test_campaign_runs_still_running_or_dead_say_so(tmp_path: Path) -> None:
    """run.py's result.json says "failed" until it finishes; the worker's lock and claim tell running from dead."""
    runs_dir = tmp_path / "runs"
    for run_id, attempt in (("live", 1), ("rerun", 2), ("died", 1), ("killed", 1)):
        synthetic.write_run(runs_dir / run_id / "out", "piii-smp", 1, seed=5, status="failed")
        (runs_dir / run_id / "spec.json").write_text("{}")
        (runs_dir / run_id / "lock").touch()
        (runs_dir / run_id / "claim.json").write_text(json.dumps({"attempt": attempt, "host": "h", "pid": 42}))
    for run_id in ("rerun", "killed"):  # an earlier attempt's end, as the worker recorded it
        (runs_dir / run_id / "result.json").write_text(json.dumps({"run_id": run_id, "attempt": 1, "status": "killed", "reason": "ended by SIGTERM"}))
    with open(runs_dir / "live" / "lock", "a") as live, open(runs_dir / "rerun" / "lock", "a") as rerun:
        fcntl.flock(live, fcntl.LOCK_EX)
        fcntl.flock(rerun, fcntl.LOCK_EX)
        held = {r.run_id: r for r in discover_runs(tmp_path)}
    assert (held["live"].status, held["live"].reason) == ("running", "attempt 1, h pid 42")
    assert (held["rerun"].status, held["rerun"].reason) == ("running", "attempt 2, h pid 42")
    assert (held["died"].status, held["died"].reason) == ("dead", "worker died without a result (h pid 42)")
    assert held["killed"].status == "killed"
    assert held["killed"].reason.startswith("ended by SIGTERM; run.py: ")
    released = {r.run_id: r for r in discover_runs(tmp_path)}
    assert released["live"].status == released["rerun"].status == "dead"  # attempt 2 left no result of its own


def test_analyze_writes_tables_and_excludes_failed_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_results(tmp_path)
    assert analyze.main([str(root), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "excluded (status failed): smp-failed" in out and "runs: 2 read, 1 excluded" in out
    table = pd.read_parquet(root / "analysis" / "stats.parquet")
    csv = pd.read_csv(root / "analysis" / "stats.csv", keep_default_na=False)
    assert len(table) == len(csv)
    assert set(table["run_id"]) == {"smp-a", "numa-b"}
    assert sorted(table.groupby("run_id", observed=True)["roi"].nunique().to_dict().items()) == [("numa-b", 1), ("smp-a", 2)]
    assert {"run_id", "roi", "stat", "sub", "value", "unit", "renamed_from", "machine", "kernel_sha256", "run_spec"} <= set(table.columns)
    row = table[(table["run_id"] == "smp-a") & (table["roi"] == 1) & (table["stat"] == "simTicks")]
    assert len(row) == 1 and row["roi_start_tick"].iloc[0] == 2000
    runs = pd.read_csv(root / "analysis" / "runs.csv", keep_default_na=False)
    assert dict(zip(runs["run_id"], runs["state"])) == {"smp-a": "read", "numa-b": "read", "smp-failed": "excluded"}
    assert json.loads((root / "analysis" / "provenance.json").read_text())["excluded"]["smp-failed"].startswith("failed")


def test_analyze_stops_on_an_unreadable_ok_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_results(tmp_path)
    stats = root / "smp-a" / "stats.txt"
    lines = stats.read_text().split("\n")
    stats.write_text("\n".join(lines[:300]))
    assert analyze.main([str(root), "--jobs", "1"]) == analyze.EXIT_UNREADABLE
    err = capsys.readouterr().err
    assert f"unreadable: smp-a: {stats}:" in err and "truncated" in err
    assert not (root / "analysis").exists()
    assert analyze.main([str(root), "--jobs", "1", "--exclude-unreadable"]) == 0
    runs = pd.read_csv(root / "analysis" / "runs.csv", keep_default_na=False)
    assert dict(zip(runs["run_id"], runs["state"]))["smp-a"] == "unreadable"


def test_roi_count_must_match_result_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_results(tmp_path)
    result = json.loads((root / "numa-b" / "result.json").read_text())
    result["roi_ticks"].append([9000, 9500])
    (root / "numa-b" / "result.json").write_text(json.dumps(result))
    assert analyze.main([str(root), "--jobs", "1"]) == analyze.EXIT_UNREADABLE
    assert "has 1 dump(s), but result.json records 2 ROI(s)" in capsys.readouterr().err


def test_run_sh_analyze_in_the_venv(tmp_path: Path) -> None:
    root = make_results(tmp_path)
    done = subprocess.run([str(ROOT / "run.sh"), "analyze", str(root), "--jobs", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (root / "analysis" / "stats.parquet").is_file() and (root / "analysis" / "stats.csv").is_file()


def test_without_venv_says_run_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(venv, "venv_python", lambda: tmp_path / "no-venv" / "python")
    assert command.run_in_venv("analysis.analyze", [str(tmp_path)]) == 1
    assert "run ./run.sh setup" in capsys.readouterr().err
