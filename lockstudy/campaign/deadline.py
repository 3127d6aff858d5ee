"""A local launch that ends by a deadline: no run is started that would not finish by it.

A machine that is lent for a fixed time (a reservation, a workstation
before its reboot, a session) kills whatever still runs when the time is
up, and a killed run's simulated hours are lost: the next launch redoes
it from its checkpoint. With `--deadline`, a worker starts a run only when
the run's predicted host time, with the margin a Slurm request gets
(lockstudy/data/costmodel.toml [slurm]), ends before the deadline. A run
whose boot checkpoint is not built yet needs the boot's time as well; one
whose checkpoint a run of this launch has built does not. A run the model
cannot predict needs its campaign's time limit (time_minutes), as it would
on Slurm.

A run held back stays pending, so the next launch starts it; the pool goes
on with the runs after it, which may be short enough to fit, and the
launch offers it again once its round is over (a run of this launch may
have built its checkpoint meanwhile), until a round starts nothing. Runs already
under way when the deadline comes are not stopped: each was predicted to
end before it.

The launch learns from its own runs: when a run of a study ends done and
took longer than its prediction, every later run of that study is asked
for its prediction times that overrun (the largest seen in the launch),
so a study the model under-predicts does not start runs that end hours
past the deadline. An overrun is said once per study and whenever it grows.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from lockstudy.campaign.spec import RunSpec
from lockstudy.costmodel.model import Estimate
from lockstudy.costmodel.plan import CampaignCost, RunCost, requested_minutes
from lockstudy.costmodel.settings import SlurmMargin

SECONDS_PER_MINUTE = 60
# `2h30m`, `95m`, `3h`: a duration from now.
DURATION = re.compile(r"^(?:(?P<hours>\d+)h)?(?:(?P<minutes>\d+)m)?$")
# `17:50`: the next time the clock shows it.
CLOCK = re.compile(r"^(?P<hour>\d{1,2}):(?P<minute>\d{2})$")
FORMS = "a duration from now (2h30m, 95m, 3h), a clock time (17:50: the next time the clock shows it) or a date and time (2026-11-26T17:50)"


class DeadlineError(ValueError):
    pass


def parse_deadline(text: str, now: datetime) -> datetime:
    """The moment `--deadline text` names, in `now`'s time zone (DeadlineError naming the value)."""
    value = text.strip()
    duration = DURATION.match(value)
    if value and duration:
        at = now + timedelta(hours=int(duration["hours"] or 0), minutes=int(duration["minutes"] or 0))
    elif clock := CLOCK.match(value):
        hour, minute = int(clock["hour"]), int(clock["minute"])
        if hour > 23 or minute > 59:
            raise DeadlineError(f"--deadline {text!r}: no such time of day")
        at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if at <= now:
            at += timedelta(days=1)
    else:
        try:
            at = datetime.fromisoformat(value)
        except ValueError:
            raise DeadlineError(f"--deadline {text!r}: give {FORMS}") from None
        if at.tzinfo is None:
            at = at.replace(tzinfo=now.tzinfo)
    if at <= now:
        raise DeadlineError(f"--deadline {text!r}: {at:%Y-%m-%d %H:%M} has passed")
    return at


def minutes_text(seconds: float) -> str:
    return f"{seconds / SECONDS_PER_MINUTE:.0f} min"


@dataclass(frozen=True)
class Need:
    """What starting a run asks of the time left: with its boot, and once the boot is built."""

    with_boot_s: float
    without_boot_s: float
    how: str  # where the figure comes from, for the message
    # the model's own predictions (no margin), when it has them: what a finished run's time is set against
    predicted_with_boot_s: float | None = None
    predicted_without_boot_s: float | None = None


def need_of(run: RunCost, margin: SlurmMargin) -> Need:
    limit = run.spec.resources.time_minutes
    boot, known = requested_minutes(run.host_seconds, run.checkpoint.host_seconds, limit, margin)
    alone, _ = requested_minutes(run.host_seconds, Estimate(0.0, "checkpoint built"), limit, margin)
    if not known:
        return Need(boot * SECONDS_PER_MINUTE, alone * SECONDS_PER_MINUTE, "no prediction: the campaign's time_minutes")
    run_s, boot_s = run.host_seconds.value, run.checkpoint.host_seconds.value  # type: ignore[union-attr]
    how = f"predicted x {margin.time_factor:g} + {margin.time_add_minutes:g} min, the Slurm margin"
    return Need(boot * SECONDS_PER_MINUTE, alone * SECONDS_PER_MINUTE, how, run_s + boot_s, run_s)


def with_overrun(need: Need, overrun: float, margin: SlurmMargin) -> Need:
    """The need of a run whose study's runs took `overrun` times their prediction in this launch."""
    if need.predicted_with_boot_s is None or need.predicted_without_boot_s is None or overrun <= 1.0:
        return need

    def asked(predicted_s: float) -> float:
        return (predicted_s * overrun * margin.time_factor) + margin.time_add_minutes * SECONDS_PER_MINUTE

    how = f"predicted x {overrun:.2f}, what this launch's runs of its study took against theirs, then the Slurm margin"
    return Need(asked(need.predicted_with_boot_s), asked(need.predicted_without_boot_s), how,
                need.predicted_with_boot_s, need.predicted_without_boot_s)  # fmt: skip


class Deadline:
    """The gate a local pool's workers pass before they start a run."""

    def __init__(
        self,
        at: datetime,
        cost: CampaignCost,
        margin: SlurmMargin,
        is_done: Callable[[RunSpec], bool],
        clock: Callable[[], float] = time.time,
        say: Callable[[str], None] = lambda line: print(line, flush=True),
    ) -> None:
        self.at = at
        self.margin = margin
        self.needs = {run.spec.run_id: need_of(run, margin) for run in cost.runs}
        self.checkpoint_of = {run.spec.run_id: run.checkpoint.key for run in cost.runs}
        self.study_of = {run.spec.run_id: run.spec.study for run in cost.runs}
        self.built = {c.key for c in cost.checkpoints if c.paid}
        self.is_done = is_done
        self.clock = clock
        self.say = say
        self.held: dict[str, str] = {}
        self.started = 0  # runs admitted so far: a launch's rounds stop when one admits none
        self.announced = False  # the first run held back is said; the others are counted
        # when each admitted run started, and the prediction its time is set against
        self.under_way: dict[str, tuple[float, float | None]] = {}
        self.overrun: dict[str, float] = {}  # study -> the largest measured / predicted host time in this launch
        self._lock = threading.Lock()

    def describe(self) -> str:
        left = self.at.timestamp() - self.clock()
        return f"deadline {self.at:%Y-%m-%d %H:%M %Z}".rstrip() + f" ({minutes_text(left)} from now): a run starts only if it is predicted to end by then"

    def admits(self, spec: RunSpec) -> bool:
        """Whether `spec` may start now; when not, it is held back with the reason said."""
        with self._lock:
            need = with_overrun(self.needs[spec.run_id], self.overrun.get(spec.study, 1.0), self.margin)
            booted = self.checkpoint_of[spec.run_id] in self.built
            needed = need.without_boot_s if booted else need.with_boot_s
            left = self.at.timestamp() - self.clock()
            if needed <= left:
                self.held.pop(spec.run_id, None)
                self.started += 1
                predicted = need.predicted_without_boot_s if booted else need.predicted_with_boot_s
                self.under_way[spec.run_id] = (self.clock(), predicted)
                return True
            boot = "" if booted else " with its boot checkpoint"
            reason = f"needs {minutes_text(needed)}{boot} ({need.how}); {minutes_text(max(0.0, left))} left before the deadline"
            first = not self.announced
            self.announced = True
            self.held[spec.run_id] = reason
        if first:
            self.say(f"held back by the deadline: {spec.run_id} ({spec.study}, {spec.size} {spec.size_unit}): {reason}; "
                     f"from now on a run that does not fit is held back without a line of its own (the launch ends with their count)")  # fmt: skip
        return False

    def finished(self, spec: RunSpec) -> None:
        """A worker's run ended: if it is done, its checkpoint is built and the runs sharing it need no boot,
        and its host time against its prediction is what the study's later runs are asked for."""
        done = self.is_done(spec)
        with self._lock:
            started, predicted = self.under_way.pop(spec.run_id, (self.clock(), None))
            if not done:
                return
            self.built.add(self.checkpoint_of[spec.run_id])
            took = self.clock() - started
            if not predicted or took <= predicted * self.overrun.get(spec.study, 1.0):
                return
            self.overrun[spec.study] = took / predicted
        self.say(f"deadline: {spec.run_id} ({spec.study}) took {minutes_text(took)} against {minutes_text(predicted)} "
                 f"predicted (x{took / predicted:.2f}): the study's later runs are asked for their prediction x "
                 f"{took / predicted:.2f}, then the margin")  # fmt: skip

    def summary(self) -> list[str]:
        """The runs held back at the end of a launch, by study."""
        if not self.held:
            return []
        studies = Counter(self.study_of[run_id] for run_id in self.held)
        by_study = ", ".join(f"{study} {count}" for study, count in studies.items())
        return [f"{len(self.held)} run(s) held back by the deadline ({self.at:%H:%M}; {by_study}): "
                f"they are pending, and the next launch starts them"]  # fmt: skip

    def plan_lines(self, cost: CampaignCost, workers: int) -> list[str]:
        """For a dry run: the runs left that cannot start before the deadline, and what the others ask of the time."""
        left = self.at.timestamp() - self.clock()
        todo = cost.to_do()
        never = [run for run in todo if self.needs[run.spec.run_id].without_boot_s > left]
        rest_s = sum(run.host_seconds.value for run in todo if run not in never and isinstance(run.host_seconds, Estimate))
        lines = [self.describe()]
        if never:
            studies = sorted({run.spec.study for run in never})
            lines.append(f"  {len(never)} of the {len(todo)} run(s) left need more than that even with their checkpoint built, "
                         f"so no launch before the deadline starts them (studies: {', '.join(studies)})")  # fmt: skip
        which = "the other runs" if never else "the runs left"
        lines.append(f"  {which} are predicted at {rest_s / 3600:.2f} host hours (boots and margin aside), against "
                     f"{workers} worker(s) x {left / 3600:.2f} h before the deadline")  # fmt: skip
        return lines

