"""Lock hand-offs, found in the CPUs' requests on the lock's bytes, and the one to draw.

A hand-off runs from the holder's releasing store to the next holder's
successful acquire. The trace has no data values, so both are recognised
by the kind of request (cpu_requests.py) and by who makes it:

- Every variant of the study releases with a plain store on the lock's
  bytes (qspinlock/CNA: the locked byte; ticket: the head; TAS and HBO:
  the word) and takes the lock with a locked RMW (xchg, cmpxchg, xadd)
  or, for a queued lock's head, a plain store (qspinlock's set_locked and
  clear_pending_set_locked). Waiters' own writes (queueing with xchg,
  setting the pending bit) are RMWs, never plain stores.
- So the plain stores on the lock's bytes, in order, fall into runs of
  one CPU each: one holder's tenure (its acquiring store if any, and its
  release; a CPU that takes the lock again before anyone else adds its
  next release to its run). Where the run of CPU A is followed by the run
  of CPU B, A's last store is the releasing store and the lock passed
  from A to B.
- B's successful acquire is B's last write (RMW or store) on the lock's
  bytes after A's release and before B's own release: its last RMW for
  TAS and HBO (earlier ones failed), its set_locked for a queue head. A
  ticket-lock waiter took its ticket before the release and only reads
  afterwards: then the acquire is B's first read of the lock's bytes
  issued after A's store completed (it misses, and returns the head that
  says B's turn).

The hand-off's messages are those that arrive from the release's Begin to
the acquire's Done. Hand-offs are numbered from 0 in trace order; without
a choice the median one by message count is drawn (the lower middle one
when their number is even; the earliest of equal counts).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from analysis.handoff_chart.cpu_requests import KIND_LOAD, KIND_RMW, KIND_STORE, CpuRequest
from analysis.handoff_chart.errors import HandoffInputError
from analysis.traffic.protocol_trace import TracedLock

WRITE_KINDS = (KIND_STORE, KIND_RMW)


@dataclass(frozen=True)
class Handoff:
    index: int
    release: CpuRequest
    acquire: CpuRequest

    @property
    def start(self) -> int:
        return self.release.begin

    @property
    def end(self) -> int:
        return self.acquire.end

    @property
    def releaser(self) -> int:
        return self.release.cpu

    @property
    def acquirer(self) -> int:
        return self.acquire.cpu


def _store_runs(stores: list[CpuRequest]) -> list[list[CpuRequest]]:
    runs: list[list[CpuRequest]] = []
    for store in stores:
        if runs and runs[-1][-1].cpu == store.cpu:
            runs[-1].append(store)
        else:
            runs.append([store])
    return runs


@dataclass(frozen=True)
class _CpuRequests:
    """One CPU's requests on the lock in order of Begin, with their Begin ticks for bisection."""

    requests: list[CpuRequest]
    begins: list[int]

    def between(self, after: int, before: int) -> list[CpuRequest]:
        """The requests that begin strictly after `after` and strictly before `before`."""
        return self.requests[bisect_right(self.begins, after) : bisect_left(self.begins, before)]


def _by_cpu(requests: list[CpuRequest]) -> dict[int, _CpuRequests]:
    out: dict[int, list[CpuRequest]] = {}
    for request in requests:
        out.setdefault(request.cpu, []).append(request)
    return {cpu: _CpuRequests(sorted(mine, key=lambda r: r.begin), sorted(r.begin for r in mine)) for cpu, mine in out.items()}


def _acquire(requests: _CpuRequests, release: CpuRequest, own_release: CpuRequest) -> CpuRequest | None:
    mine = requests.between(release.begin, own_release.begin)
    writes = [r for r in mine if r.kind in WRITE_KINDS]
    if writes:
        return writes[-1]
    reads = [r for r in mine if r.kind == KIND_LOAD and r.begin >= release.end]
    return reads[0] if reads else None


def find_handoffs(requests: list[CpuRequest], lock: TracedLock) -> list[Handoff]:
    """Every hand-off of `lock` in the requests (in order of Begin), numbered from 0."""
    on_lock = [r for r in requests if r.on(lock.physical, lock.size) and not r.failed]
    runs = _store_runs([r for r in on_lock if r.kind == KIND_STORE])
    by_cpu = _by_cpu(on_lock)
    handoffs: list[Handoff] = []
    for before, after in zip(runs, runs[1:]):
        release = before[-1]
        acquire = _acquire(by_cpu[after[0].cpu], release, after[-1])
        if acquire is not None:
            handoffs.append(Handoff(len(handoffs), release, acquire))
    return handoffs


def median_handoff(handoffs: list[Handoff], message_counts: list[int]) -> Handoff:
    """The median hand-off by message count: the lower middle one, the earliest of equal counts."""
    order = sorted(range(len(handoffs)), key=lambda i: (message_counts[i], i))
    return handoffs[order[(len(order) - 1) // 2]]


def pick_handoff(handoffs: list[Handoff], message_counts: list[int], index: int | None, tick: int | None, what: str = "this lock") -> Handoff:
    """The hand-off asked for (by index, or the one under `tick`), else the median one; `what` names the lock for errors."""
    if not handoffs:
        raise HandoffInputError(f"no hand-off of {what} in the trace (no release by one CPU followed by another CPU's acquire)")
    if index is not None:
        if not 0 <= index < len(handoffs):
            raise HandoffInputError(f"--index {index}: the trace has hand-offs 0 to {len(handoffs) - 1}")
        return handoffs[index]
    if tick is not None:
        covering = [h for h in handoffs if h.start <= tick <= h.end]
        if covering:
            return covering[0]
        following = [h for h in handoffs if h.start >= tick]
        if following:
            return following[0]
        raise HandoffInputError(
            f"--tick {tick}: no hand-off at or after it (the trace's hand-offs run from tick {handoffs[0].start} to {handoffs[-1].end})"
        )
    return median_handoff(handoffs, message_counts)
