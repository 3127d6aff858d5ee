"""Campaign progress lines: counts by state, an ETA from this launch's rate, and what a running run says."""

from __future__ import annotations

import fcntl
import json
import sys
import time
from pathlib import Path

import pytest

from lockstudy.campaign.progress import Progress
from lockstudy.campaign.store import RunDir, RunStatus, State, claimed_by

sys.path.insert(0, str(Path(__file__).parent))
from fake_gem5 import PROGRAM_START, install_fake_gem5  # noqa: E402


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def statuses(done: int, running: int, pending: int) -> list[RunStatus]:
    states = [State.DONE] * done + [State.RUNNING] * running + [State.PENDING] * pending
    return [RunStatus(f"r{i}", state, 0) for i, state in enumerate(states)]


def test_eta_follows_the_rate_of_this_launch() -> None:
    clock = Clock()
    progress = Progress(total=10, parallel=2, clock=clock)
    # 2 runs were done by an earlier launch: they do not make this one look fast
    assert progress.line(statuses(2, 2, 6)) == "[2/10 done, 2 running, 6 pending] elapsed 0m00s"
    clock.now += 600
    # 2 more done in 10 minutes, 6 left: 30 minutes
    assert progress.line(statuses(4, 2, 4)) == "[4/10 done, 2 running, 4 pending] elapsed 10m00s, ETA 30m00s"
    clock.now += 600
    assert progress.line(statuses(10, 0, 0)) == "[10/10 done] elapsed 20m00s"


def test_a_running_run_says_who_runs_it_and_for_how_long(tmp_path: Path) -> None:
    run = RunDir(tmp_path, "abc")
    run.path.mkdir(parents=True)
    run.claim_file.write_text(json.dumps({"attempt": 2, "host": "node7", "pid": 99, "started": time.time() - 3720}))
    run.lock_file.touch()
    with open(run.lock_file, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        status = run.status(max_attempts=2)
    assert status.state == State.RUNNING
    assert status.reason.startswith("attempt 2, node7 pid 99, for 1h02m"), status.reason
    assert run.status(max_attempts=2).state == State.DEAD  # the lock died with its holder: a claim without a result


def test_a_claim_names_its_slurm_job_whether_running_or_dead() -> None:
    assert claimed_by({"host": "node7", "pid": 99}) == "node7 pid 99"
    assert claimed_by({"host": "node7", "pid": 99, "slurm_job_id": "41"}) == "node7 pid 99, Slurm job 41"


def test_a_run_stuck_after_its_roi_is_given_up_at_once_and_any_other_failure_retried(tmp_path: Path) -> None:
    """gem5 is deterministic: a run gem5-configs/run.py stopped as stuck after its ROI would stick again."""
    from lockstudy.validation.runs import STUCK_AFTER_ROI

    for reason, state in ((f"{STUCK_AFTER_ROI} (no exit within ...): stopped at simulated 1.713 s", State.GAVE_UP),
                          ("the run ended with kernel panic: ...", State.FAILED)):  # fmt: skip
        run = RunDir(tmp_path, reason[:5].replace(" ", "_"))
        run.path.mkdir(parents=True)
        run.attempts_file.write_text(json.dumps([{"attempt": 1, "status": "failed", "reason": reason}]))
        run.result_file.write_text(json.dumps({"attempt": 1, "status": "failed", "reason": reason}))
        assert run.status(max_attempts=2).state == state


def stuck_run(tmp_path: Path, run_id: str, **result: object) -> RunDir:
    from lockstudy.validation.runs import STUCK_AFTER_ROI

    reason = f"{STUCK_AFTER_ROI} (no exit within ...): stopped at simulated 2.594 s"
    run = RunDir(tmp_path, run_id)
    run.path.mkdir(parents=True)
    run.attempts_file.write_text(json.dumps([{"attempt": 1, "status": "failed", "reason": reason}]))
    run.result_file.write_text(json.dumps({"attempt": 1, "status": "failed", "reason": reason, **result}))
    return run


def test_a_stuck_run_is_retried_once_its_study_allows_more_time_after_the_roi(tmp_path: Path) -> None:
    """A 32-thread stream run stopped as stuck under run.toml's limit, before its study set after_roi_ms = 600."""
    from lockstudy.validation.run_limits import after_roi_limit_ms

    default = after_roi_limit_ms()
    recorded = stuck_run(tmp_path, "recorded", after_roi_limit_ms=default)
    from_command = stuck_run(tmp_path, "command", command=["gem5", "run.py", "--after-roi-limit-ms", str(default)])
    from_before = stuck_run(tmp_path, "before")  # run.py did not record its limit yet: run.toml's
    for run in (recorded, from_command, from_before):
        assert run.status(max_attempts=2).state == State.GAVE_UP
        assert run.status(max_attempts=2, after_roi_ms=default).state == State.GAVE_UP
        retried = run.status(max_attempts=2, after_roi_ms=default + 350)
        assert retried.state == State.FAILED
        assert f"now allows {default + 350:g} ms after the ROI, not {default:g}: retried" in retried.reason
    stuck_again = stuck_run(tmp_path, "again", after_roi_limit_ms=default + 350)
    assert stuck_again.status(max_attempts=2, after_roi_ms=default + 350).state == State.GAVE_UP


def test_status_sums_each_study_in_the_campaigns_order() -> None:
    from lockstudy.campaign.progress import study_lines

    states = [State.DONE, State.DONE, State.PENDING, State.RUNNING, State.DEAD, State.DONE]
    studies = ["kbench-bus", "kbench-bus", "kbench-bus", "fdlock", "fdlock", "padding"]
    lines = study_lines(studies, [RunStatus(f"r{i}", state, 1) for i, state in enumerate(states)])
    assert lines == ["  kbench-bus: 2/3 done, 1 pending", "  fdlock: 0/2 done, 1 running, 1 dead", "  padding: 1/1 done"]


# A gem5 whose run.py stopped the run as stuck after its ROI under 250 ms.
STUCK_GEM5 = PROGRAM_START + """\
reason = "stuck after the ROI (no exit within 250 simulated ms of it): stopped at simulated 2.594 s"
(out / "result.json").write_text(json.dumps({"status": "failed", "reason": reason, "after_roi_limit_ms": 250.0}))
"""


def test_the_gem5_backend_keeps_the_limit_a_stuck_run_was_stopped_under(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.py writes it in its own result.json; the store reads the run's, so the backend carries it over."""
    from lockstudy.campaign.gem5_backend import Gem5Backend
    from lockstudy.campaign.loader import load_campaign
    from lockstudy.paths import ROOT
    from lockstudy.validation.run_limits import STUCK_LIMIT_FIELD

    install_fake_gem5(tmp_path, monkeypatch, STUCK_GEM5)
    spec = load_campaign(ROOT / "campaigns" / "smoke.toml").runs[0]
    out = tmp_path / "campaign" / "runs" / spec.run_id / "out"
    out.mkdir(parents=True)
    outcome = Gem5Backend().run(spec, out, tmp_path / "campaign")
    assert outcome.status == "failed" and outcome.reason.startswith("stuck after the ROI")
    assert outcome.details[STUCK_LIMIT_FIELD] == 250.0
