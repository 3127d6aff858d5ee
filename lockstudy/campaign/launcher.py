"""Running a campaign to completion, resumably.

Each round executes every run that is pending, failed (under the attempt
limit) or dead; finished runs are skipped. The index for the analysis is
rewritten at the end of every round.
"""

from __future__ import annotations

import fcntl
import os
from collections import Counter
from collections.abc import Callable

from lockstudy.campaign import drain, frozen_inputs
from lockstudy.campaign.all_backends import BACKENDS
from lockstudy.campaign.deadline import Deadline
from lockstudy.campaign.executors import Executor
from lockstudy.campaign.loader import Campaign
from lockstudy.campaign.progress import Progress
from lockstudy.campaign.spec import RunSpec, digest
from lockstudy.campaign.staleness import stale_lines, stale_runs
from lockstudy.campaign.store import RETRYABLE, RETRYABLE_IN_LAUNCH, CampaignStore, RunStatus, State


class CampaignBusy(RuntimeError):
    pass


def hold_launcher_lock(store: CampaignStore):  # type: ignore[no-untyped-def]
    """One launcher per campaign at a time; the lock dies with its holder."""
    store.path.mkdir(parents=True, exist_ok=True)
    handle = open(store.path / "launcher.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.seek(0)
        raise CampaignBusy(f"another launcher is running this campaign ({handle.read().strip() or 'unknown pid'})") from exc
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    return handle


def spread_checkpoints(specs: list[RunSpec], width: int) -> list[RunSpec]:
    """The runs in file order, interleaved so `width` workers boot different checkpoints.

    Runs that share a boot checkpoint wait for the one that builds it; in
    file order, a pool's workers would queue behind the same boot. The
    checkpoints are taken `width` at a time, in the order the file first
    needs them, and their runs are dealt round-robin: with two workers the
    first two runs build two different checkpoints at once.
    """
    groups: dict[str, list[RunSpec]] = {}
    for spec in specs:
        groups.setdefault(digest(spec.boot_identity()), []).append(spec)
    ordered = list(groups.values())
    out: list[RunSpec] = []
    for start in range(0, len(ordered), max(1, width)):
        batch = ordered[start : start + max(1, width)]
        for rank in range(max(len(group) for group in batch)):
            out.extend(group[rank] for group in batch if rank < len(group))
    return out


def runs_to_do(specs: list[RunSpec], statuses: list[RunStatus], round_number: int) -> list[RunSpec]:
    """The runs a launch's round (0: its first) starts: a run the disk guard stopped only in the first."""
    redo = RETRYABLE if round_number == 0 else RETRYABLE_IN_LAUNCH
    return [spec for spec, status in zip(specs, statuses) if status.state in redo]


# A launch that ran every run it could before its deadline or a drain, and failed none
# (campaign/deadline.py, campaign/drain.py).
HELD_BY_DEADLINE = 3


def run_campaign(
    campaign: Campaign, store: CampaignStore, executor: Executor, backend: str, parallel: int, deadline: Deadline | None = None,
    after_each: Callable[[], None] | None = None,
) -> int:
    """Run the campaign's runs not done; 0 when all are done, HELD_BY_DEADLINE when only the runs the deadline
    or a drain held back are left, else 1. `after_each` is called at the start and whenever a run has ended
    (the launch's run archive: archive/command.py)."""
    BACKENDS[backend]().preflight(campaign.runs)
    lock = hold_launcher_lock(store)
    drained: str | None = None
    try:
        earlier = drain.clear(store)
        if earlier is not None:
            print(f"a drain request left from before ({earlier}) is cleared: this launch runs", flush=True)
        store.prepare(campaign.path, campaign.runs)
        # the inputs this launch runs on: a worker refuses a run whose inputs change under it
        frozen_inputs.record_launch(store.path, campaign.runs)
        progress = Progress(len(campaign.runs), parallel)

        def current() -> list[RunStatus]:
            return store.statuses(campaign.runs, campaign.max_attempts, executor.queued(store))

        def report() -> None:
            print(progress.line(current()), flush=True)
            if after_each is not None:
                after_each()

        for line in stale_lines(stale_runs(campaign.runs, current(), store), store.path):
            print(line, flush=True)
        report()
        # Dead or killed runs are redone without counting as failures; the
        # rounds bound how often one launcher retries them. A run the disk
        # guard stopped is redone by the next launch, not by this one.
        for round_number in range(campaign.max_attempts + 1):
            todo = spread_checkpoints(runs_to_do(campaign.runs, current(), round_number), parallel)
            if not todo:
                break
            started = deadline.started if deadline else 0
            executor.execute(store, todo, backend, report)
            if drain.asked(store) is not None:
                break  # campaign drain: the runs under way are over, and no more start
            if deadline and deadline.started == started:
                break  # nothing left fits before the deadline
            if not executor.wait:
                # Handed over (Slurm --no-wait): `campaign status` follows the runs.
                store.write_index(campaign.runs, campaign.max_attempts, executor.queued(store))
                return 0
            store.write_index(campaign.runs, campaign.max_attempts)
        statuses = current()
        index = store.write_index(campaign.runs, campaign.max_attempts)
    finally:
        drained = drain.clear(store)
        lock.close()
    counts = Counter(s.state for s in statuses)
    print(progress.line(statuses))
    print(f"results index: {index}")
    held = set(deadline.held) if deadline else set()
    if drained is not None:
        # every run left pending: the drain stopped the launch before it started them
        not_started = [s for s in statuses if s.state == State.PENDING and s.run_id not in held]
        print(f"drained ({drained}): {len(not_started)} run(s) not started, pending for the next launch")
        held |= {s.run_id for s in not_started}
    for status in statuses:
        # a run the deadline or a drain held back is counted in its summary, not listed
        if status.state != State.DONE and not (status.state == State.PENDING and status.run_id in held):
            print(f"  {status.run_id} {status.state.value}: {status.reason}")
    for line in deadline.summary() if deadline else []:
        print(line)
    if counts[State.DONE] == len(statuses):
        return 0
    only_held = all(s.state == State.DONE or (s.state == State.PENDING and s.run_id in held) for s in statuses)
    return HELD_BY_DEADLINE if only_held else 1


