"""Campaigns end to end with real QEMU runs: local pool, Slurm, and faults.

Each run boots the project's kernel and image under QEMU (TCG) and runs a
small workload, so these tests prove the executors, the store and resume
on real work, not on stand-ins.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lockstudy.campaign.loader import load_campaign
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.paths import ROOT

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import slurm_cluster  # noqa: E402

pytestmark = [pytest.mark.qemu]

SMOKE = ROOT / "campaigns" / "smoke.toml"
WAIT_TIMEOUT_S = 600


def launch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "run.sh"), "campaign", *args], capture_output=True, text=True, env=env, timeout=WAIT_TIMEOUT_S
    )


def results_of(results: Path) -> dict[str, dict[str, Any]]:
    campaign = load_campaign(SMOKE)
    store = CampaignStore(campaign.name, results)
    return {
        spec.run_id: json.loads(store.run_dir(spec.run_id).result_file.read_text())
        for spec in campaign.runs
        if store.run_dir(spec.run_id).result_file.exists()
    }


def attempts_of(results: Path) -> dict[str, list[dict[str, Any]]]:
    campaign = load_campaign(SMOKE)
    store = CampaignStore(campaign.name, results)
    return {spec.run_id: store.run_dir(spec.run_id).attempts() for spec in campaign.runs}


def states(results: Path) -> dict[str, State]:
    campaign = load_campaign(SMOKE)
    store = CampaignStore(campaign.name, results)
    return {s.run_id: s.state for s in store.statuses(campaign.runs, campaign.max_attempts)}


def wait_until(predicate, what: str, timeout: float = WAIT_TIMEOUT_S) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def attempt_under_way(results: Path, run_id: str) -> bool:
    """The run's worker holds it and has begun an attempt (its claim is written). A worker killed
    between taking the lock and writing the claim began nothing: its run is still pending."""
    store = CampaignStore(load_campaign(SMOKE).name, results)
    return states(results).get(run_id) == State.RUNNING and store.run_dir(run_id).out.is_dir()


def long_run() -> str:
    """The smoke campaign's long run, which the fault tests kill mid-way."""
    (spec,) = [s for s in load_campaign(SMOKE).runs if s.study == "long"]
    return spec.run_id


def deterministic(result: dict[str, Any]) -> list[tuple[str, object]]:
    """What a run measured that does not depend on timing: testcases and their op counts."""
    return [(r["testcase"], r["ops"]) for r in result["guest"]["results"]]


@pytest.fixture(scope="module")
def local_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("local")
    finished = launch(str(SMOKE), "--executor", "qemu", "--results", str(results))
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return results


def test_local_campaign_completes_every_run(local_results: Path) -> None:
    campaign = load_campaign(SMOKE)
    assert set(states(local_results).values()) == {State.DONE}
    results = results_of(local_results)
    assert len(results) == len(campaign.runs)
    for result in results.values():
        assert result["status"] == "ok"
        assert result["guest"]["done"] == "ok"
        assert result["guest"]["results"], "a run with no guest result cannot be ok"
        assert {"kernel", "image"} <= set(result["provenance"])
    index = json.loads((CampaignStore(campaign.name, local_results).path / "index.json").read_text())
    assert {e["state"] for e in index["runs"]} == {"done"}


def test_second_launch_skips_finished_runs(local_results: Path) -> None:
    before = attempts_of(local_results)
    again = launch(str(SMOKE), "--executor", "qemu", "--results", str(local_results))
    assert again.returncode == 0, again.stdout + again.stderr
    assert attempts_of(local_results) == before


def test_kill_9_of_the_launcher_then_resume(tmp_path: Path, local_results: Path) -> None:
    results = tmp_path / "results"
    launcher = subprocess.Popen(
        [str(ROOT / "run.sh"), "campaign", str(SMOKE), "--executor", "qemu", "--jobs", "1", "--results", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Kill it while the long run (the last one, with one pool slot) is under way.
    victim = long_run()
    wait_until(lambda: attempt_under_way(results, victim), "the long run to start")
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    wait_until(lambda: State.RUNNING not in states(results).values(), "the orphaned worker to end")
    after_kill = states(results)
    done_before = {r for r, s in after_kill.items() if s == State.DONE}
    dead = {r for r, s in after_kill.items() if s == State.DEAD}
    assert dead == {victim}, after_kill
    assert done_before == set(after_kill) - {victim}, after_kill

    resumed = launch(str(SMOKE), "--executor", "qemu", "--results", str(results))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    attempts = attempts_of(results)
    for run_id, history in attempts.items():
        ok = [a for a in history if a["status"] == "ok"]
        assert len(ok) == 1, (run_id, history)  # never counted twice, none lost
        if run_id in done_before:
            assert len(history) == 1, (run_id, history)  # not redone
        if run_id in dead:
            assert [a["status"] for a in history] == ["killed", "ok"], history
    assert {r: deterministic(x) for r, x in results_of(results).items()} == {
        r: deterministic(x) for r, x in results_of(local_results).items()
    }


@pytest.mark.slurm
def test_slurm_executor_matches_local_and_survives_scancel(tmp_path: Path, local_results: Path) -> None:
    results = tmp_path / "results"
    with slurm_cluster(tmp_path) as env:
        submitted = launch(str(SMOKE), "--executor", "slurm", "--backend", "qemu", "--no-wait", "--results", str(results), env=env)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        jobs = json.loads((CampaignStore(load_campaign(SMOKE).name, results).path / "slurm" / "jobs.json").read_text())
        job_id = jobs[0]["job_id"]
        # Cancel the long run's array task while it runs; the others go on.
        victim = long_run()
        task = jobs[0]["runs"].index(victim)
        wait_until(lambda: attempt_under_way(results, victim), "the long run's task to start")
        subprocess.run(["scancel", f"{job_id}_{task}"], env=env, check=True)
        wait_until(
            lambda: subprocess.run(["squeue", "-h", "-j", job_id], env=env, capture_output=True, text=True).stdout.strip() == "",
            "the array to drain",
        )
        cancelled = states(results)
        assert cancelled[victim] == State.DEAD, cancelled
        assert all(s == State.DONE for r, s in cancelled.items() if r != victim), cancelled

        resumed = launch(str(SMOKE), "--executor", "slurm", "--backend", "qemu", "--results", str(results), env=env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr

    attempts = attempts_of(results)
    for run_id, history in attempts.items():
        assert [a["status"] for a in history] == (["killed", "ok"] if run_id == victim else ["ok"]), (run_id, history)
    slurm = results_of(results)
    local = results_of(local_results)
    assert slurm.keys() == local.keys()
    assert {r: deterministic(x) for r, x in slurm.items()} == {r: deterministic(x) for r, x in local.items()}
    assert all(x.get("slurm_job_id") for x in slurm.values())
