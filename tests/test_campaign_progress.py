"""Campaign progress lines: counts by state, and an ETA from this launch's rate."""

from __future__ import annotations

from lockstudy.campaign.progress import Progress
from lockstudy.campaign.store import RunStatus, State


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
