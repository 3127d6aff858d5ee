"""`campaign drain`: a running local launch starts no more runs; the runs under way finish and count."""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path

import pytest

from lockstudy.campaign import drain, executors
from lockstudy.campaign.backends import BACKENDS, Outcome
from lockstudy.campaign.executors import LocalExecutor
from lockstudy.campaign.launcher import HELD_BY_DEADLINE, run_campaign
from lockstudy.campaign.loader import Campaign, load_campaign
from lockstudy.campaign.spec import RunSpec
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.paths import ROOT

SMOKE = ROOT / "campaigns" / "smoke.toml"


class NullBackend:
    def preflight(self, specs: list[RunSpec]) -> None:
        pass

    def run(self, spec: RunSpec, outdir: Path, campaign_dir: Path) -> Outcome:
        return Outcome("ok", "", {})


def a_worker_that_asks_for_a_drain(store: CampaignStore, run_id: str, backend: str) -> list[str]:
    """A worker that does its run (an ok result) and, while it runs, someone asks for a drain."""
    result = store.run_dir(run_id).result_file
    program = (
        "import json, pathlib, sys\n"
        f"pathlib.Path({str(drain.request_path(store))!r}).write_text('asked by the test\\n')\n"
        f"pathlib.Path({str(result)!r}).write_text(json.dumps({{'attempt': 1, 'status': 'ok'}}))\n"
    )
    return [sys.executable, "-c", program]


@pytest.fixture
def three_runs() -> Campaign:
    campaign = load_campaign(SMOKE)
    return Campaign(**{**campaign.__dict__, "runs": campaign.runs[:3]})


def test_a_drain_lets_the_run_under_way_finish_and_starts_no_other(
    tmp_path: Path, three_runs: Campaign, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(BACKENDS, "null", NullBackend)
    monkeypatch.setattr(executors, "worker_argv", a_worker_that_asks_for_a_drain)
    store = CampaignStore(three_runs.name, tmp_path)
    status = run_campaign(three_runs, store, LocalExecutor(slots=1), "null", 1)
    out = capsys.readouterr().out
    states = [s.state for s in store.statuses(three_runs.runs, three_runs.max_attempts)]
    assert states == [State.DONE, State.PENDING, State.PENDING], out
    assert status == HELD_BY_DEADLINE
    assert "drain asked by the test: no more runs start; the runs under way finish" in out
    assert "drained (asked by the test): 2 run(s) not started, pending for the next launch" in out
    assert drain.asked(store) is None, "the launch clears the request when it ends"
    assert len(list(store.path.glob("runs/*/worker.log"))) == 1, "only the first run's worker was started"


def test_a_request_left_from_before_is_cleared_by_the_next_launch(
    tmp_path: Path, three_runs: Campaign, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(BACKENDS, "null", NullBackend)
    store = CampaignStore(three_runs.name, tmp_path)
    store.path.mkdir(parents=True)
    drain.request_path(store).write_text("asked yesterday\n")

    def ok_worker(store: CampaignStore, run_id: str, backend: str) -> list[str]:
        result = store.run_dir(run_id).result_file
        return [sys.executable, "-c", f"import pathlib, json; pathlib.Path({str(result)!r}).write_text(json.dumps({{'attempt': 1, 'status': 'ok'}}))"]

    monkeypatch.setattr(executors, "worker_argv", ok_worker)
    assert run_campaign(three_runs, store, LocalExecutor(slots=1), "null", 1) == 0
    out = capsys.readouterr().out
    assert "a drain request left from before (asked yesterday) is cleared: this launch runs" in out
    assert {s.state for s in store.statuses(three_runs.runs, three_runs.max_attempts)} == {State.DONE}


def test_drain_needs_a_running_launcher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lockstudy.cli import main

    results = tmp_path / "results"
    assert main(["campaign", "drain", str(SMOKE), "--results", str(results)]) == 1
    assert "no launcher is running this campaign under" in capsys.readouterr().err
    store = CampaignStore("smoke", results)
    assert drain.asked(store) is None
    store.path.mkdir(parents=True)
    with open(store.path / drain.LAUNCHER_LOCK, "a+") as held:  # a launcher holds the lock as launcher.py does
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242\n")
        held.flush()
        assert main(["campaign", "drain", str(SMOKE), "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "the launcher (pid 4242) starts no more runs; those under way finish, then it ends" in out
    assert drain.asked(store) is not None and "by pid" in drain.asked(store)  # type: ignore[operator]
