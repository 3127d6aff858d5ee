"""A launch with a deadline starts only the runs predicted to end by it; the rest stay pending for the next launch."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import pytest

from lockstudy.campaign.backends import BACKENDS, Outcome
from lockstudy.campaign.deadline import Deadline, DeadlineError, parse_deadline
from lockstudy.campaign.launcher import HELD_BY_DEADLINE, run_campaign
from lockstudy.campaign.loader import Campaign, load_campaign
from lockstudy.campaign.spec import RunSpec, digest
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.commands.campaign import done_in_now
from lockstudy.costmodel.model import Estimate, NoPrediction, Prediction
from lockstudy.costmodel.plan import CampaignCost, CheckpointCost, RunCost, SlurmRequest
from lockstudy.costmodel.settings import SlurmMargin
from lockstudy.paths import ROOT

sys.path.insert(0, str(Path(__file__).parent))
from fake_gem5 import install_fake_gem5  # noqa: E402

SMOKE = ROOT / "campaigns" / "smoke.toml"
NOW = datetime(2026, 11, 26, 16, 0, tzinfo=timezone.utc)
MARGIN = SlurmMargin(time_factor=1.5, time_add_minutes=10, memory_factor=1.25, min_memory_gb=1)
# A run predicted at 10 min and its boot at 5: with the margin, 10 x 1.5 + 10 = 25 min
# once its checkpoint is built, (10 + 5) x 1.5 + 10 = 33 min (rounded up) before.
RUN_S, BOOT_S = 600.0, 300.0
ALONE_MIN, WITH_BOOT_MIN = 25, 33


@pytest.fixture
def campaign() -> Campaign:
    return load_campaign(SMOKE)


def test_a_duration_a_clock_time_and_a_date_are_understood() -> None:
    assert parse_deadline("2h30m", NOW) == NOW + timedelta(minutes=150)
    assert parse_deadline("95m", NOW) == NOW + timedelta(minutes=95)
    assert parse_deadline("3h", NOW) == NOW + timedelta(hours=3)
    assert parse_deadline("17:50", NOW) == NOW.replace(hour=17, minute=50)
    assert parse_deadline("15:00", NOW) == NOW.replace(hour=15) + timedelta(days=1), "a time already past today is tomorrow's"
    assert parse_deadline("2026-11-27T08:15", NOW) == datetime(2026, 11, 27, 8, 15, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("soon", r"--deadline 'soon': give a duration from now"),
        ("", r"--deadline '': give a duration"),
        ("25:10", r"--deadline '25:10': no such time of day"),
        ("0m", r"--deadline '0m': 2026-11-26 16:00 has passed"),
        ("2026-11-25T12:00", r"has passed"),
    ],
)
def test_a_bad_deadline_is_refused_by_its_value(text: str, message: str) -> None:
    with pytest.raises(DeadlineError, match=message):
        parse_deadline(text, NOW)


def cost_of(specs: list[RunSpec], run_s: Prediction, boot_s: Prediction, paid: bool = False) -> CampaignCost:
    """Every run predicted at `run_s`, its checkpoint's boot at `boot_s` (the checkpoints as the campaign shares them)."""
    checkpoints: dict[str, CheckpointCost] = {}
    runs = []
    for spec in specs:
        key = digest(spec.boot_identity())
        checkpoint = checkpoints.setdefault(key, CheckpointCost(key, spec.machine, spec.size, spec.size_unit, spec.size, spec.kernel_build,
                                                                spec.boot, [], boot_s, Estimate(500.0, "test"), paid))  # fmt: skip
        checkpoint.run_ids.append(spec.run_id)
        request = SlurmRequest(60, 1, 1, True, True)
        runs.append(RunCost(spec, spec.size, False, Estimate(1.0, "test"), run_s, Estimate(500.0, "test"), checkpoint, request))
    return CampaignCost(runs, list(checkpoints.values()))


@dataclass
class Clock:
    now: float = NOW.timestamp()

    def __call__(self) -> float:
        return self.now


@dataclass
class Gate:
    """A Deadline on a hand-set clock, with what it said."""

    specs: list[RunSpec]
    minutes_left: float
    run_s: Prediction = field(default_factory=lambda: Estimate(RUN_S, "test"))
    boot_s: Prediction = field(default_factory=lambda: Estimate(BOOT_S, "test"))
    paid: bool = False
    done: set[str] = field(default_factory=set)
    said: list[str] = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)

    def make(self, is_done: Callable[[RunSpec], bool] | None = None) -> Deadline:
        at = NOW + timedelta(minutes=self.minutes_left)
        cost = cost_of(self.specs, self.run_s, self.boot_s, self.paid)
        return Deadline(at, cost, MARGIN, is_done or (lambda spec: spec.run_id in self.done), self.clock, self.said.append)


def two_runs_of_one_checkpoint(campaign: Campaign) -> list[RunSpec]:
    groups: dict[str, list[RunSpec]] = {}
    for spec in campaign.runs:
        groups.setdefault(digest(spec.boot_identity()), []).append(spec)
    shared = next(group for group in groups.values() if len(group) >= 2)
    return shared[:2]


def test_a_run_starts_only_if_it_ends_by_the_deadline_with_its_boot(campaign: Campaign) -> None:
    first, second = two_runs_of_one_checkpoint(campaign)
    gate = Gate([first, second], minutes_left=WITH_BOOT_MIN - 1)
    deadline = gate.make()
    assert not deadline.admits(first)
    assert deadline.held == {first.run_id: f"needs {WITH_BOOT_MIN} min with its boot checkpoint (predicted x 1.5 + 10 min, the Slurm margin); "
                                           f"{WITH_BOOT_MIN - 1} min left before the deadline"}  # fmt: skip
    assert gate.said == [f"held back by the deadline: {first.run_id} ({first.study}, {first.size} {first.size_unit}): {deadline.held[first.run_id]}; "
                         "from now on a run that does not fit is held back without a line of its own (the launch ends with their count)"]  # fmt: skip
    assert not deadline.admits(first) and not deadline.admits(second) and len(gate.said) == 1, "only the first run held back is said"
    assert deadline.summary() == [f"2 run(s) held back by the deadline (16:32; {first.study} 2): they are pending, and the next launch starts them"]
    assert Gate([first], minutes_left=WITH_BOOT_MIN).make().admits(first)


def test_once_a_run_has_built_the_checkpoint_the_runs_sharing_it_need_no_boot(campaign: Campaign) -> None:
    first, second = two_runs_of_one_checkpoint(campaign)
    gate = Gate([first, second], minutes_left=WITH_BOOT_MIN)
    deadline = gate.make()
    assert deadline.admits(first) and deadline.started == 1
    gate.clock.now += 60 * (WITH_BOOT_MIN - ALONE_MIN)  # the first run ends with 25 min left
    deadline.finished(first)  # ... but not done: its checkpoint is not known to be built
    assert not deadline.admits(second) and second.run_id in deadline.held
    gate.done.add(first.run_id)
    deadline.finished(first)
    assert deadline.admits(second) and second.run_id not in deadline.held and deadline.started == 2


def test_a_checkpoint_built_before_the_launch_costs_no_boot(campaign: Campaign) -> None:
    first, _ = two_runs_of_one_checkpoint(campaign)
    assert Gate([first], minutes_left=ALONE_MIN, paid=True).make().admits(first)
    assert not Gate([first], minutes_left=ALONE_MIN - 1, paid=True).make().admits(first)


def test_a_run_the_model_cannot_predict_needs_its_campaign_time_limit(campaign: Campaign) -> None:
    first, _ = two_runs_of_one_checkpoint(campaign)
    limit = first.resources.time_minutes
    unknown = Gate([first], minutes_left=limit - 1, run_s=NoPrediction("no rows"))
    deadline = unknown.make()
    assert not deadline.admits(first)
    assert deadline.held[first.run_id].startswith(f"needs {limit} min with its boot checkpoint (no prediction: the campaign's time_minutes)")
    assert Gate([first], minutes_left=limit, run_s=NoPrediction("no rows")).make().admits(first)


def test_a_dry_run_names_the_runs_no_launch_before_the_deadline_can_start(campaign: Campaign) -> None:
    first, second = two_runs_of_one_checkpoint(campaign)
    deadline = Gate([first, second], minutes_left=ALONE_MIN - 1, paid=True).make()
    lines = deadline.plan_lines(cost_of([first, second], Estimate(RUN_S, "test"), Estimate(BOOT_S, "test"), paid=True), workers=2)
    assert lines[1] == (f"  2 of the 2 run(s) left need more than that even with their checkpoint built, so no launch before "
                        f"the deadline starts them (studies: {first.study})")  # fmt: skip
    fits = Gate([first, second], minutes_left=60, paid=True).make()
    lines = fits.plan_lines(cost_of([first, second], Estimate(RUN_S, "test"), Estimate(BOOT_S, "test"), paid=True), workers=2)
    assert lines[1:] == ["  the runs left are predicted at 0.33 host hours (boots and margin aside), against 2 worker(s) x 1.00 h before the deadline"]


class NullBackend:
    name = "null"

    def preflight(self, specs: list[RunSpec]) -> None:
        pass

    def run(self, spec: RunSpec, outdir: Path, campaign_dir: Path) -> Outcome:
        raise AssertionError("the test's executor runs nothing")


@dataclass
class InstantExecutor:
    """A pool of one that asks the gate, then 'runs' a run by advancing the clock and writing an ok result."""

    gate: Deadline
    clock: Clock
    seconds_of: Callable[[RunSpec, bool], float]
    built: set[str] = field(default_factory=set)
    name: str = "test"
    wait: bool = True
    started: list[str] = field(default_factory=list)

    def queued(self, store: CampaignStore) -> frozenset[str]:
        return frozenset()

    def execute(self, store: CampaignStore, specs: list[RunSpec], backend: str, report: Callable[[], None]) -> None:
        for spec in specs:
            if not self.gate.admits(spec):
                continue
            key = digest(spec.boot_identity())
            self.clock.now += self.seconds_of(spec, key in self.built)
            self.built.add(key)
            run = store.run_dir(spec.run_id)
            run.result_file.write_text(json.dumps({"attempt": 1, "status": "ok"}))
            self.started.append(spec.run_id)
            self.gate.finished(spec)


def test_a_launch_runs_what_fits_and_leaves_the_rest_pending_with_its_own_exit_status(
    tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(BACKENDS, "null", NullBackend)
    first, second = two_runs_of_one_checkpoint(campaign)
    small = Campaign(**{**campaign.__dict__, "runs": [first, second]})
    store = CampaignStore(small.name, tmp_path)
    # 40 min: the first run needs 33 with its boot and takes 15; the second then needs 25 of the 25 left.
    gate = Gate([first, second], minutes_left=40)
    deadline = gate.make(done_in_now(small, store))
    executor = InstantExecutor(deadline, gate.clock, lambda spec, built: RUN_S if built else RUN_S + BOOT_S)
    assert run_campaign(small, store, executor, "null", 1, deadline) == 0  # type: ignore[arg-type]
    assert executor.started == [first.run_id, second.run_id]

    later = CampaignStore(small.name, tmp_path / "second")
    gate = Gate([first, second], minutes_left=WITH_BOOT_MIN + 5)
    deadline = gate.make(done_in_now(small, later))
    executor = InstantExecutor(deadline, gate.clock, lambda spec, built: RUN_S + BOOT_S + 600)  # slower than predicted
    capsys.readouterr()
    assert run_campaign(small, later, executor, "null", 1, deadline) == HELD_BY_DEADLINE  # type: ignore[arg-type]
    assert executor.started == [first.run_id]
    states = {s.run_id: s.state for s in later.statuses(small.runs, small.max_attempts)}
    assert states == {first.run_id: State.DONE, second.run_id: State.PENDING}
    out = capsys.readouterr().out
    # the first took 25 min against 15 predicted (run and boot): the second is asked 10 x 25/15 x 1.5 + 10 = 35 min
    assert len(gate.said) == 2 and gate.said[0].startswith(f"deadline: {first.run_id} ({first.study}) took 25 min against 15 min")
    assert gate.said[1].startswith(f"held back by the deadline: {second.run_id}")
    assert "needs 35 min (predicted x 1.67, what this launch's runs of its study took" in gate.said[1]
    assert f"{second.run_id} pending" not in out, "a run held back is counted, not listed again"
    assert f"1 run(s) held back by the deadline (16:38; {second.study} 1): they are pending, and the next launch starts them" in out


REFUSING_GEM5 = "import sys\nsys.exit('gem5 was started, but the deadline held every run back')\n"


def test_a_deadline_too_near_for_any_run_starts_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from lockstudy.cli import main

    install_fake_gem5(tmp_path, monkeypatch, REFUSING_GEM5)
    results = tmp_path / "results"
    status = main(["campaign", str(SMOKE), "--only-study", "smoke", "--results", str(results), "--no-restore", "-j", "1", "--deadline", "1m"])
    out = capsys.readouterr().out
    assert status == HELD_BY_DEADLINE, out
    assert "a run starts only if it is predicted to end by then" in out and "held back by the deadline:" in out
    store = CampaignStore("smoke", results)
    smoke = [spec for spec in load_campaign(SMOKE).runs if spec.study == "smoke"]
    assert {s.state for s in store.statuses(smoke, 2)} == {State.PENDING}
    assert not list(store.path.glob("runs/*/worker.log")), "no worker was started"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--deadline", "soon"], "--deadline 'soon': give a duration from now"),
        (["--deadline", "2h", "--executor", "qemu"], "--deadline: only for a local gem5 launch"),
        (["--deadline", "2h", "--executor", "slurm"], "--deadline: only for a local gem5 launch"),
    ],
)
def test_a_deadline_the_launch_cannot_keep_is_refused_before_anything_starts(
    tmp_path: Path, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from lockstudy.cli import main

    assert main(["campaign", str(SMOKE), "--results", str(tmp_path / "results"), *arguments]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results").exists()



def test_a_study_that_overruns_its_prediction_asks_for_that_much_more_in_the_same_launch(campaign: Campaign) -> None:
    first, second = two_runs_of_one_checkpoint(campaign)
    gate = Gate([first, second], minutes_left=100, paid=True)
    deadline = gate.make()
    assert deadline.admits(first)
    gate.clock.now += 4 * RUN_S  # 40 min against 10 predicted
    deadline.finished(first)  # not done: says nothing of the study's runs
    assert gate.said == [] and deadline.overrun == {}
    assert deadline.admits(first)
    gate.clock.now += 4 * RUN_S
    gate.done.add(first.run_id)
    deadline.finished(first)
    assert deadline.overrun == {first.study: pytest.approx(4.0)}
    assert gate.said == [f"deadline: {first.run_id} ({first.study}) took 40 min against 10 min predicted (x4.00): the study's later "
                         "runs are asked for their prediction x 4.00, then the margin"]  # fmt: skip
    # 20 min left: the prediction alone (25 min with the margin) no longer fits either, but 10 x 4 x 1.5 + 10 = 70 is what is asked
    assert not deadline.admits(second)
    assert deadline.held[second.run_id] == ("needs 70 min (predicted x 4.00, what this launch's runs of its study took against theirs, "
                                            "then the Slurm margin); 20 min left before the deadline")  # fmt: skip


def test_an_overrun_only_grows_and_a_run_within_its_prediction_changes_nothing(campaign: Campaign) -> None:
    first, second = two_runs_of_one_checkpoint(campaign)
    gate = Gate([first, second], minutes_left=300, paid=True, done={first.run_id, second.run_id})
    deadline = gate.make()
    assert deadline.admits(first)
    gate.clock.now += RUN_S / 2
    deadline.finished(first)
    assert deadline.overrun == {} and gate.said == []
    assert deadline.admits(second)
    gate.clock.now += 3 * RUN_S
    deadline.finished(second)
    assert deadline.overrun == {first.study: pytest.approx(3.0)} and len(gate.said) == 1
    assert deadline.admits(first)
    gate.clock.now += 2 * RUN_S
    deadline.finished(first)
    assert deadline.overrun == {first.study: pytest.approx(3.0)} and len(gate.said) == 1, "a smaller overrun keeps the largest"
    # 3 x 10 x 1.5 + 10 = 55 min asked, 300 - 55 = 245 left
    assert deadline.admits(second)


def test_a_run_the_model_cannot_predict_keeps_the_campaigns_time_limit(campaign: Campaign) -> None:
    first, second = two_runs_of_one_checkpoint(campaign)
    gate = Gate([first, second], minutes_left=10_000, run_s=NoPrediction("none"), paid=True, done={first.run_id})
    deadline = gate.make()
    assert deadline.admits(first)
    gate.clock.now += 10 * RUN_S
    deadline.finished(first)
    assert deadline.overrun == {} and gate.said == []
