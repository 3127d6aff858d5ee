"""Progress lines while a campaign runs: counts by state and an ETA."""

from __future__ import annotations

import time
from collections import Counter

from lockstudy.campaign.store import RunStatus, State


class Progress:
    def __init__(self, total: int, parallel: int) -> None:
        self.total = total
        self.parallel = max(1, parallel)
        self.started = time.monotonic()
        self.finished_durations: list[float] = []

    def finished(self, seconds: float) -> None:
        self.finished_durations.append(seconds)

    def eta_seconds(self, remaining: int) -> float | None:
        if not self.finished_durations:
            return None
        mean = sum(self.finished_durations) / len(self.finished_durations)
        return mean * remaining / self.parallel

    def line(self, statuses: list[RunStatus]) -> str:
        counts = Counter(s.state for s in statuses)
        remaining = sum(counts[s] for s in (State.PENDING, State.QUEUED, State.RUNNING, State.FAILED, State.DEAD))
        eta = self.eta_seconds(remaining)
        parts = [f"{counts[State.DONE]}/{self.total} done"]
        for state in (State.RUNNING, State.QUEUED, State.PENDING, State.FAILED, State.DEAD, State.GAVE_UP):
            if counts[state]:
                parts.append(f"{counts[state]} {state.value}")
        elapsed = time.monotonic() - self.started
        text = f"[{', '.join(parts)}] elapsed {format_seconds(elapsed)}"
        if eta is not None and remaining:
            text += f", ETA {format_seconds(eta)}"
        return text


def format_seconds(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
