"""The cost model where a user meets it: the dry-run, the Slurm arrays, `run.sh costs collect` and `check`."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from costmodel_rows import BOOT, MEMORY, law, power_law_rows, predicted_run_seconds
from lockstudy.campaign.executors import SlurmExecutor
from lockstudy.campaign.loader import load_campaign
from lockstudy.campaign.spec import Resources
from lockstudy.campaign.store import CampaignStore
from lockstudy.costmodel.collect import collect_rows
from lockstudy.costmodel.fitted import fitted_model, slurm_resources
from lockstudy.costmodel.settings import TABLE_VARIABLE
from lockstudy.costmodel.table import CostRow, read_cost_table, write_cost_table
from lockstudy.paths import ROOT

RUN_SH = str(ROOT / "run.sh")
SPEC = "write1b:threads=1,iterations=100"
CAMPAIGN = f"""\
[campaign]
name = "costly"

[defaults.resources]
time_minutes = 30
memory_gb = 2
host_cpus = 1

[[study]]
name = "sweep"
machine = "piii-smp"
cpus = [2, 4]
boot = ["lockstudy.spinlock=tas", "lockstudy.spinlock=ticket"]
run = "{SPEC}"

[[study]]
name = "numa"
machine = "altix-numa"
nodes = 2
run = "{SPEC}"
"""


def setup_files(tmp_path: Path) -> tuple[Path, Path]:
    campaign = tmp_path / "costly.toml"
    campaign.write_text(CAMPAIGN)
    table = tmp_path / "runs.csv"
    write_cost_table(table, power_law_rows(SPEC))
    return campaign, table


def dry_run(campaign: Path, table: Path, results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, TABLE_VARIABLE: str(table)}
    argv = [RUN_SH, "campaign", str(campaign), "--dry-run", "--results", str(results), *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def mark_done(results: Path, run_id: str) -> None:
    run = results / "costly" / "runs" / run_id
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps({"status": "ok", "attempt": 1}))


def test_dry_run_prints_each_runs_prediction_and_the_totals(tmp_path: Path) -> None:
    campaign, table = setup_files(tmp_path)
    runs = load_campaign(campaign).runs
    done = next(spec for spec in runs if spec.size == 2 and spec.boot == ("lockstudy.spinlock=tas",))
    mark_done(tmp_path / "results", done.run_id)
    result = dry_run(campaign, table, tmp_path / "results")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for spec in runs:
        line = next(text for text in lines if text.startswith(spec.run_id) and "ROI" not in text and "/" not in text)
        if spec == done:
            assert "done" in line and "(not counted)" in line
        elif spec.machine == "piii-smp":
            hours = predicted_run_seconds(spec.size) / 3600
            assert f" {hours:.2f} " in line and f" {law(MEMORY, spec.size) / 1024:.2f} " in line
        else:
            assert line.split()[2:5] == ["-", "-", "-"]  # altix-numa: no measured ROI of this spec, no host-time rows
    # Left: three piii-smp runs and one altix-numa run; boots: the three piii-smp ones not paid (each once).
    expected = sum(predicted_run_seconds(cpus) for cpus in (2, 4, 4)) + law(BOOT, 2) + 2 * law(BOOT, 4)
    assert f"predicted host hours {expected / 3600:.2f}, core-hours {expected / 3600:.2f} (of the runs and boots predicted)" in result.stdout
    assert "Total of what is left (4 of 5 run(s) not done, 4 of 5 boot(s) not paid)" in result.stdout
    assert "no prediction for 1 run(s) and 1 boot(s), not in the totals" in result.stdout
    assert "boot paid (one of its runs is done)" in result.stdout
    # by study: sweep has three runs and their three boots left; numa's one run and boot have no prediction
    sweep_runs = sum(predicted_run_seconds(cpus) for cpus in (2, 4, 4)) / 3600
    sweep_boots = (law(BOOT, 2) + 2 * law(BOOT, 4)) / 3600
    assert f"  sweep: 3 of 4 run(s) left, {sweep_runs:.2f} core-h of runs + {sweep_boots:.2f} of boots" in lines
    assert "  numa: 1 of 1 run(s) left, 0.00 core-h of runs + 0.00 of boots; no prediction for 1 run(s) and 1 boot(s)" in lines
    assert "host s per simulated ms altix-numa/timing/untraced/any testcase: 0 point(s) (a fit needs 3 at two or more sizes), and no neighbour group with a fit: no prediction" in result.stdout


def test_dry_run_for_slurm_prints_the_sbatch_resources_from_the_model(tmp_path: Path) -> None:
    campaign, table = setup_files(tmp_path)
    result = dry_run(campaign, table, tmp_path / "results", "--executor", "slurm")
    assert result.returncode == 0, result.stderr
    runs = load_campaign(campaign).runs
    for spec in runs:
        line = next(text for text in result.stdout.splitlines() if text.startswith(spec.run_id) and "--time=" in text)
        if spec.machine == "piii-smp":
            seconds = predicted_run_seconds(spec.size) + law(BOOT, spec.size)
            minutes = math.ceil(seconds / 60 * 1.5 + 10)
            memory = max(1, math.ceil(law(MEMORY, spec.size) * 1.25 / 1024))
            assert f"--time={minutes} --mem={memory}G " in line
        else:
            assert "--time=30 --mem=2G*" in line  # the campaign's own limits, marked
    assert "time = predicted x 1.5 + 10 min, memory = predicted peak x 1.25 (at least 1 GiB)" in result.stdout
    assert "1 task(s) use the campaign file's explicit limits (time_minutes, memory_gb)" in result.stdout


def test_slurm_arrays_are_grouped_by_the_models_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    campaign_file, table = setup_files(tmp_path)
    monkeypatch.setenv(TABLE_VARIABLE, str(table))
    campaign = load_campaign(campaign_file)
    cost = fitted_model().cost(campaign.runs, lambda spec: False)
    submitted: dict[Resources, list[str]] = {}

    def submit(_store, resources, specs, _backend):  # type: ignore[no-untyped-def]
        submitted[resources] = [s.run_id for s in specs]
        return str(len(submitted))

    executor = SlurmExecutor(wait=False, resources_of=slurm_resources(cost))
    monkeypatch.setattr(executor, "submit", submit)
    executor.execute(CampaignStore("costly", tmp_path / "results"), campaign.runs, "gem5", lambda: None)
    expected = {run.spec.run_id: run.slurm.resources() for run in cost.runs}
    assert {run_id: resources for resources, ids in submitted.items() for run_id in ids} == expected
    numa = next(spec for spec in campaign.runs if spec.machine == "altix-numa")
    assert expected[numa.run_id] == numa.resources


def test_a_malformed_table_stops_the_dry_run_in_one_line(tmp_path: Path) -> None:
    campaign, table = setup_files(tmp_path)
    lines = table.read_text().splitlines()
    lines[4] = lines[4].replace(",piii-smp,", ",piii-smp,-3,", 1).replace(",1,512", ",512", 1)
    table.write_text("\n".join(lines) + "\n")
    result = dry_run(campaign, table, tmp_path / "results")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: {table}:5:cpus: -3: is not a positive integer"]


def fake_campaign_results(root: Path) -> Path:
    """A campaign folder as the launcher leaves it: one restored run and its boot."""
    campaign = root / "demo"
    out = campaign / "runs" / "abc123" / "out"
    out.mkdir(parents=True)
    checkpoint = campaign / "checkpoints" / "key1"
    checkpoint.mkdir(parents=True)
    machine = {"name": "piii-smp", "cpus": 4, "nodes": 1, "sha256": "f00d", "node_memory_ranges": [["0x0", "0x20000000"]]}
    provenance = {
        "gem5_version": "24.0.0.1", "machine": machine, "kernel": {"build_info": {"build_id": "k1"}},
        "run_spec": SPEC, "roi_cpu": "timing", "trace": "off", "fast_forward": None,
        "checkpoint_in": str(checkpoint / "checkpoint"),
        "command": [str(ROOT / "gem5-configs" / "run.py"), "--kernel", "/somewhere/else/vmlinux", "--outdir", str(out)],
    }  # fmt: skip
    (out / "result.json").write_text(json.dumps({
        "status": "ok", "host_seconds": 118.0, "simulated_seconds": 1.02, "roi_host_seconds": [[40.0, 100.0]],
        "roi_simulated_seconds": [0.012], "provenance": provenance,
    }))  # fmt: skip
    (out.parent / "result.json").write_text(json.dumps({
        "status": "ok", "costs": {"run": {"host_seconds": 120.5, "peak_rss_mib": 900.0, "host_cpu_model": "CPU X", "host_cpu_count": 2}},
    }))  # fmt: skip
    boot = {**provenance, "roi_cpu": "timing", "fast_forward": "atomic", "checkpoint_in": None, "run_spec": "",
            "command": [str(ROOT / "gem5-configs" / "run.py"), "--outdir", str(checkpoint) + ".building"]}  # fmt: skip
    (checkpoint / "result.json").write_text(json.dumps({"status": "ok", "host_seconds": 200.0, "simulated_seconds": 0.9, "provenance": boot}))
    (campaign / "checkpoints" / "key1.json").write_text(json.dumps({"identity": {}, "costs": {"host_seconds": 201.0, "peak_rss_mib": 700.0}}))
    return campaign


def test_collect_makes_one_row_per_boot_and_restored_run_without_this_machines_paths(tmp_path: Path) -> None:
    campaign = fake_campaign_results(tmp_path / "results")
    rows = {row.phase: row for row in collect_rows(tmp_path / "results")}
    run, boot = rows["restore"], rows["boot"]
    assert (run.source, run.run_id, run.machine, run.cpus, run.cpu_model, run.trace, run.run_spec) == ("measured", "abc123", "piii-smp", 4, "timing", "off", SPEC)
    assert (run.host_seconds, run.roi_host_seconds, run.roi_simulated_ms, run.peak_rss_mib) == (120.5, 60.0, 12.0, 900.0)
    assert (run.gem5_version, run.machine_sha256, run.kernel_build_id, run.guest_memory_mib) == ("24.0.0.1", "f00d", "k1", 512.0)
    assert (boot.run_id, boot.cpu_model, boot.host_seconds, boot.peak_rss_mib) == ("key1", "atomic", 201.0, 700.0)
    for row in (run, boot):
        assert str(ROOT) not in row.command and str(tmp_path) not in row.command and "/somewhere" not in row.command
    assert run.command == "<repo>/gem5-configs/run.py --kernel <elsewhere>/vmlinux --outdir <run>"
    assert boot.command == "<repo>/gem5-configs/run.py --outdir <run>"
    assert campaign.name == "demo" and run.source_ref == "demo/runs/abc123"


def test_collect_records_a_traced_runs_trace_size_and_none_for_an_untraced_one(tmp_path: Path) -> None:
    campaign = fake_campaign_results(tmp_path / "results")
    out = campaign / "runs" / "abc123" / "out"
    (out / "roi.trace.gz").write_bytes(b"\0" * (3 * 1024 * 1024))
    (run,) = [row for row in collect_rows(tmp_path / "results") if row.phase == "restore"]
    assert run.trace == "off" and run.trace_mib is None  # a file left in an untraced run's folder is not its trace
    result = json.loads((out / "result.json").read_text())
    result["provenance"]["trace"] = "protocol"
    (out / "result.json").write_text(json.dumps(result))
    (run,) = [row for row in collect_rows(tmp_path / "results") if row.phase == "restore"]
    assert run.trace == "protocol" and run.trace_mib == 3.0
    assert run.trace_mib_per_simulated_ms == 3.0 / 12.0


def test_collecting_a_run_again_without_its_trace_keeps_the_trace_size_measured_before(tmp_path: Path) -> None:
    campaign = fake_campaign_results(tmp_path / "results")
    out = campaign / "runs" / "abc123" / "out"
    result = json.loads((out / "result.json").read_text())
    result["provenance"]["trace"] = "protocol"
    (out / "result.json").write_text(json.dumps(result))
    (out / "roi.trace.gz").write_bytes(b"\0" * (2 * 1024 * 1024))
    table = tmp_path / "runs.csv"
    command = [RUN_SH, "costs", "collect", str(tmp_path / "results"), "--table", str(table)]

    def traced_row() -> CostRow:
        (row,) = [row for row in read_cost_table(table) if row.phase == "restore"]
        return row

    assert subprocess.run(command, capture_output=True, text=True).returncode == 0
    assert traced_row().trace_mib == 2.0
    (out / "roi.trace.gz").unlink()  # as a run restored from the archive, which keeps no trace
    assert subprocess.run(command, capture_output=True, text=True).returncode == 0
    row = traced_row()
    assert (row.trace, row.trace_mib, row.host_seconds) == ("protocol", 2.0, 120.5)
    # A figure the new collection does know replaces the old one.
    (out.parent / "result.json").write_text(json.dumps({"status": "ok", "costs": {"run": {"host_seconds": 130.0, "peak_rss_mib": 910.0}}}))
    assert subprocess.run(command, capture_output=True, text=True).returncode == 0
    assert (traced_row().host_seconds, traced_row().peak_rss_mib, traced_row().trace_mib) == (130.0, 910.0, 2.0)


def test_costs_collect_then_check(tmp_path: Path) -> None:
    fake_campaign_results(tmp_path / "results")
    table = tmp_path / "runs.csv"
    # Rows from a progress report, without run ids, are kept as they are.
    notes = [dataclasses.replace(row, source="issue-report", source_ref="a note", run_id="") for row in power_law_rows(SPEC)]
    write_cost_table(table, notes)
    for _ in range(2):  # collecting again replaces the same rows
        done = subprocess.run([RUN_SH, "costs", "collect", str(tmp_path / "results"), "--table", str(table)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert "2 measured row(s)" in done.stdout and f"{len(notes) + 2} row(s) now" in done.stdout
    assert len(read_cost_table(table)) == len(notes) + 2
    checked = subprocess.run([RUN_SH, "costs", "check", "--table", str(table)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # Two measured rows, each predicted (left out) from the progress reports' rows: too few to judge the goal.
    assert "median absolute percentage error, measured rows: " in checked.stdout
    assert "goal (<= 25 % over >= 10 measured runs): not judged: 2 measured run(s) predicted" in checked.stdout


def test_costs_check_prints_the_median_error_of_a_table(tmp_path: Path) -> None:
    table = tmp_path / "runs.csv"
    write_cost_table(table, power_law_rows(SPEC))
    checked = subprocess.run([RUN_SH, "costs", "check", "--table", str(table)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # Exact power laws: every left-out row is predicted exactly.
    assert "median absolute percentage error, measured rows: 0.0 %" in checked.stdout
    assert "goal (<= 25 % over >= 10 measured runs): not judged: 8 measured run(s) predicted, 0.0 % so far" in checked.stdout


def test_dry_run_predicts_a_traced_runs_trace_and_sets_it_against_the_free_disk(tmp_path: Path) -> None:
    campaign = tmp_path / "traced.toml"
    campaign.write_text(CAMPAIGN.replace('name = "costly"', 'name = "traced"').split("[[study]]")[0]
                        + f'[[study]]\nname = "traced"\nmachine = "piii-smp"\ncpus = 4\ntrace = "classic"\nrun = "{SPEC}"\n')  # fmt: skip
    table = tmp_path / "runs.csv"
    traced = [dataclasses.replace(row, trace="classic", trace_mib=6.0 * row.cpus * (row.roi_simulated_ms or 0.0))
              for row in power_law_rows(SPEC) if row.phase == "restore"]  # fmt: skip
    write_cost_table(table, power_law_rows(SPEC) + traced)
    result = dry_run(campaign, table, tmp_path / "results")
    assert result.returncode == 0, result.stderr
    (spec,) = load_campaign(campaign).runs
    line = next(text for text in result.stdout.splitlines() if text.startswith(spec.run_id) and "ROI" not in text and "/" not in text)
    roi_ms = float(line.split()[2])
    assert f" {6.0 * 4 * roi_ms / 1024:.2f} " in line  # trace GiB: 6 MiB per simulated ms per CPU at 4 CPUs
    assert "trace MiB per simulated ms piii-smp/classic/write1b" in result.stdout
    assert "traced: up to" in result.stdout
    assert "Traced runs left: 1; the largest predicted trace takes" in result.stdout and "above the floor of" in result.stdout
    env = {**os.environ, TABLE_VARIABLE: str(table), "LOCKSTUDY_MIN_FREE_GIB": "lots"}
    bad = subprocess.run([RUN_SH, "campaign", str(campaign), "--dry-run", "--results", str(tmp_path / "results")],
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert bad.returncode == 0 and "error: the disk guard's floor: $LOCKSTUDY_MIN_FREE_GIB='lots'" in bad.stdout


def test_a_cost_table_that_does_not_read_costs_a_launch_its_disk_note_not_the_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lockstudy.commands import campaign as campaign_command

    campaign_file = tmp_path / "traced.toml"
    campaign_file.write_text(CAMPAIGN.split("[[study]]")[0] + f'[[study]]\nname = "t"\nmachine = "piii-smp"\ncpus = 2\ntrace = "classic"\nrun = "{SPEC}"\n')
    bad = tmp_path / "runs.csv"
    bad.write_text("not,a,cost,table\n")
    monkeypatch.setenv(TABLE_VARIABLE, str(bad))
    campaign = load_campaign(campaign_file)
    lines = campaign_command.launch_disk_lines(campaign, CampaignStore(campaign.name, tmp_path / "results"), 2)
    assert len(lines) == 1 and lines[0].startswith("note: no trace sizes predicted (") and "disk guard still stops" in lines[0]
    untraced = dataclasses.replace(campaign, runs=[dataclasses.replace(spec, trace="off") for spec in campaign.runs])
    assert campaign_command.launch_disk_lines(untraced, CampaignStore(campaign.name, tmp_path / "results"), 2) == []
