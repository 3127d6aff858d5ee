"""Progress lines while a campaign runs: counts by state and an ETA.

The ETA is the rate of this launch so far: runs finished since it started
over the time elapsed, applied to the runs left. It includes everything a
run costs here (boot checkpoints, restores, waiting for a free worker),
and it appears once the launch has finished a run.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Callable

from lockstudy.campaign.store import RunStatus, State, format_seconds

REMAINING_STATES = (State.PENDING, State.QUEUED, State.RUNNING, State.FAILED, State.DEAD, State.STOPPED)
# The states a progress or status line counts after "done", in this order (absent ones are left out).
COUNTED_STATES = (State.RUNNING, State.QUEUED, State.PENDING, State.FAILED, State.DEAD, State.STOPPED, State.GAVE_UP)


class Progress:
    def __init__(self, total: int, parallel: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.parallel = max(1, parallel)
        self.clock = clock
        self.started = clock()
        self.done_at_start: int | None = None

    def eta_seconds(self, done: int, remaining: int) -> float | None:
        if self.done_at_start is None:
            self.done_at_start = done
        finished_here = done - self.done_at_start
        if finished_here <= 0 or not remaining:
            return None
        return (self.clock() - self.started) / finished_here * remaining

    def line(self, statuses: list[RunStatus]) -> str:
        counts = Counter(s.state for s in statuses)
        remaining = sum(counts[s] for s in REMAINING_STATES)
        eta = self.eta_seconds(counts[State.DONE], remaining)
        parts = [f"{counts[State.DONE]}/{self.total} done"]
        parts += [f"{counts[state]} {state.value}" for state in COUNTED_STATES if counts[state]]
        text = f"[{', '.join(parts)}] elapsed {format_seconds(self.clock() - self.started)}"
        if eta is not None:
            text += f", ETA {format_seconds(eta)}"
        return text


def study_lines(studies: list[str], statuses: list[RunStatus]) -> list[str]:
    """`campaign status`'s summary: per study, in the campaign's order, its runs by state (a chunk is done
    when its line says so); `studies` is each status's study."""
    counts: dict[str, Counter[State]] = {}
    for study, status in zip(studies, statuses):
        counts.setdefault(study, Counter())[status.state] += 1
    lines = []
    for study, states in counts.items():
        parts = [f"{states[State.DONE]}/{sum(states.values())} done"]
        parts += [f"{states[state]} {state.value}" for state in COUNTED_STATES if states[state]]
        lines.append(f"  {study}: {', '.join(parts)}")
    return lines
