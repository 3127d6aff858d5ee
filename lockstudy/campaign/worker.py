"""Run one attempt of one run: `run.sh campaign run-one` (used by the executors).

The worker holds the run's lock for the whole attempt, writes a claim,
runs the backend into out/, then writes result.json atomically and only
then removes the claim. A signal (Slurm's scancel or time limit, the
launcher dying) is forwarded to the backend's processes and recorded as
status "killed": such a run is redone on resume and never counted. A run
whose inputs changed since its launch started is not run at all: it ends
"stopped" (frozen_inputs.py).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any

from lockstudy.campaign import frozen_inputs
from lockstudy.campaign.all_backends import BACKENDS
from lockstudy.campaign.backends import Outcome
from lockstudy.campaign.store import RunDir, read_json, write_json_atomically

# Signals that end an attempt. SIGUSR1 is Slurm's early warning before a time
# limit: it is passed on (gem5 dumps its statistics on SIGUSR1) and the
# attempt goes on until the limit kills it.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
FORWARDED_SIGNALS = (signal.SIGUSR1,)


class Killed(BaseException):
    """Raised inside the backend when the attempt is ended by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def slurm_identity() -> dict[str, str]:
    keys = {"SLURM_JOB_ID": "slurm_job_id", "SLURM_ARRAY_JOB_ID": "slurm_array_job_id", "SLURM_ARRAY_TASK_ID": "slurm_array_task_id"}
    return {name: os.environ[key] for key, name in keys.items() if key in os.environ}


def record_dead_claim(run: RunDir) -> None:
    """A claim left by a worker that died becomes a 'dead' attempt in the history."""
    if not run.claim_file.exists():
        return
    claim = read_json(run.claim_file)
    if run.result_file.exists() and read_json(run.result_file).get("attempt", 0) >= claim.get("attempt", 0):
        run.claim_file.unlink()
        return
    history = run.attempts()
    history.append({**claim, "status": "dead", "reason": "worker died without a result"})
    write_json_atomically(run.attempts_file, history)
    run.claim_file.unlink()


def install_signal_handlers() -> None:
    def end_attempt(signum: int, _frame: FrameType | None) -> None:
        for ending in ENDING_SIGNALS:
            signal.signal(ending, signal.SIG_IGN)
        # The backend's processes share our process group.
        os.killpg(os.getpgrp(), signal.SIGTERM)
        raise Killed(signum)

    def forward(signum: int, _frame: FrameType | None) -> None:
        signal.signal(signum, signal.SIG_IGN)
        os.killpg(os.getpgrp(), signum)
        signal.signal(signum, forward)

    for signum in ENDING_SIGNALS:
        signal.signal(signum, end_attempt)
    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)


def run_one(campaign_dir: Path, run_id: str, backend_name: str) -> int:
    run = RunDir(campaign_dir, run_id)
    if not run.spec_file.exists():
        print(f"run-one: {run.spec_file} does not exist", file=sys.stderr)
        return 2
    backend = BACKENDS[backend_name]()
    if os.getpgrp() != os.getpid():
        # Lead our own process group: signals are passed on to the group,
        # which must hold the backend's processes and not our launcher.
        os.setpgid(0, 0)
    run.path.mkdir(parents=True, exist_ok=True)
    with open(run.lock_file, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"run-one: {run_id} is being run by another worker; leaving it", file=sys.stderr)
            return 0
        if run.result_file.exists() and read_json(run.result_file).get("status") == "ok" and not run.claim_file.exists():
            print(f"run-one: {run_id} is already done")
            return 0
        record_dead_claim(run)
        attempt = len(run.attempts()) + 1
        claim: dict[str, Any] = {
            "attempt": attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "backend": backend_name,
            "started": time.time(),
            **slurm_identity(),
        }
        write_json_atomically(run.claim_file, claim)
        shutil.rmtree(run.out, ignore_errors=True)
        run.out.mkdir(parents=True)
        install_signal_handlers()
        started = time.monotonic()
        try:
            changed = frozen_inputs.changed_inputs(campaign_dir, run.spec())
            if changed:
                outcome = Outcome("stopped", frozen_inputs.stopped_reason(changed), {})
            else:
                outcome = backend.run(run.spec(), run.out, campaign_dir)
        except Killed as killed:
            outcome = Outcome("killed", f"ended by {killed}", {})
        except Exception as exc:  # noqa: BLE001 - any launcher error ends the attempt as failed
            outcome = Outcome("failed", f"launcher error: {exc}", {"traceback": traceback.format_exc()})
        for signum in (*ENDING_SIGNALS, *FORWARDED_SIGNALS):
            signal.signal(signum, signal.SIG_IGN)
        result = {
            **claim,
            "run_id": run_id,
            "status": outcome.status,
            "reason": outcome.reason,
            "ended": time.time(),
            "host_seconds": round(time.monotonic() - started, 3),
            **outcome.details,
        }
        history = run.attempts()
        history.append({k: result[k] for k in ("attempt", "status", "reason", "host", "pid", "started", "ended", "host_seconds")})
        write_json_atomically(run.attempts_file, history)
        write_json_atomically(run.result_file, result)
        run.claim_file.unlink(missing_ok=True)
    print(f"run-one: {run_id} attempt {attempt}: {outcome.status} {outcome.reason}".rstrip())
    return 0 if outcome.status == "ok" else 1
