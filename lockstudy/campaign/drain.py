"""`campaign drain FILE`: a running local launch starts no more runs; the runs under way finish.

A machine that is about to be taken back, or wanted for something else,
should not lose the hours of the runs it is in the middle of: killing the
launcher kills them (its workers die with it), and the next launch redoes
them from their checkpoints. `drain` leaves a request in the campaign's
results folder; a local launch's workers read it before they start each
run, start none once it is there, and the launch ends when the runs
under way are over, with the runs it did not start pending for the next
launch (exit status 3, as for a deadline). The launch clears the request
when it ends, and a new launch clears one left from before (it says so).
A Slurm launch has its own queue: cancel its jobs with scancel instead.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from lockstudy.campaign.store import CampaignStore
from lockstudy.files import flock_held

REQUEST_FILE = "drain"
LAUNCHER_LOCK = "launcher.lock"  # lockstudy/campaign/launcher.py holds it while a launch runs


class DrainError(RuntimeError):
    pass


def request_path(store: CampaignStore) -> Path:
    return store.path / REQUEST_FILE


def asked(store: CampaignStore) -> str | None:
    """What the drain request says (when and by which process), or None when there is none."""
    try:
        return request_path(store).read_text().strip() or "asked"
    except FileNotFoundError:
        return None


def clear(store: CampaignStore) -> str | None:
    """Remove the request; what it said, or None when there was none."""
    said = asked(store)
    if said is not None:
        request_path(store).unlink(missing_ok=True)
    return said


def launcher_pid(store: CampaignStore) -> str | None:
    """The running launcher's `pid N` line, or None when no launcher holds the campaign's lock."""
    lock = store.path / LAUNCHER_LOCK
    if not flock_held(lock):
        return None
    return lock.read_text().strip() or "pid unknown"


def request(store: CampaignStore) -> str:
    """Ask the running launcher to start no more runs; what was asked (DrainError when no launcher runs)."""
    launcher = launcher_pid(store)
    if launcher is None:
        raise DrainError(f"no launcher is running this campaign under {store.path}: nothing to drain")
    said = f"asked {datetime.now().astimezone():%Y-%m-%d %H:%M:%S %Z} by pid {os.getpid()}"
    request_path(store).write_text(said + "\n")
    return f"{said}: the launcher ({launcher}) starts no more runs; those under way finish, then it ends"
