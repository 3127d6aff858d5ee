"""Where a campaign's runs live on disk, and what state each is in.

    <results>/<campaign>/
        campaign.toml           copy of the campaign file, for provenance
        index.json              one entry per run: spec, status, result path
        runs/<run-id>/
            spec.json
            lock                held (flock) by the worker while the run is live
            claim.json          who runs it: host, pid, attempt, Slurm ids
            out/                the backend's outputs of the current attempt
            result.json         written atomically when an attempt ends
            attempts.json       history of every attempt

A run is complete only when result.json says status "ok". A worker that
dies, even by SIGKILL, releases its lock, so a claim without a held lock
is a dead run: it is redone, never counted.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from lockstudy.campaign.spec import RunSpec
from lockstudy.files import flock_held, write_json_atomically
from lockstudy.paths import ROOT
from lockstudy.validation import runs as run_rules
from lockstudy.validation.run_limits import AFTER_ROI_OPTION, STUCK_LIMIT_FIELD, after_roi_limit_ms


class State(str, Enum):
    DONE = "done"
    RUNNING = "running"
    FAILED = "failed"  # failed, will be retried
    GAVE_UP = "gave-up"  # failed max_attempts times
    DEAD = "dead"  # its worker died without a result
    # the disk guard stopped it (disk_guard.py), or its inputs changed under its launch (frozen_inputs.py):
    # redone by the next launch, not this one
    STOPPED = "stopped"
    QUEUED = "queued"  # waiting in a Slurm queue
    PENDING = "pending"


RETRYABLE = (State.FAILED, State.DEAD, State.PENDING, State.STOPPED)
# What a launch redoes after its first round: not a run the disk guard stopped, which would fill the disk again.
RETRYABLE_IN_LAUNCH = (State.FAILED, State.DEAD, State.PENDING)


def results_root() -> Path:
    return Path(os.environ.get("LOCKSTUDY_RESULTS", ROOT / "results" / "raw"))


def read_json(path: Path) -> Any:
    with open(path) as source:
        return json.load(source)


@dataclass(frozen=True)
class RunStatus:
    run_id: str
    state: State
    attempts: int
    reason: str = ""


WORKER_DIED = "worker died without a result"


def format_seconds(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def claimed_by(claim: dict[str, Any]) -> str:
    """The worker a claim names: host and pid, and its Slurm job when it has one."""
    where = f"{claim.get('host')} pid {claim.get('pid')}"
    if claim.get("slurm_job_id"):
        where += f", Slurm job {claim['slurm_job_id']}"
    return where


class RunDir:
    def __init__(self, campaign_dir: Path, run_id: str) -> None:
        self.path = campaign_dir / "runs" / run_id
        self.run_id = run_id

    @property
    def spec_file(self) -> Path:
        return self.path / "spec.json"

    @property
    def result_file(self) -> Path:
        return self.path / "result.json"

    @property
    def claim_file(self) -> Path:
        return self.path / "claim.json"

    @property
    def attempts_file(self) -> Path:
        return self.path / "attempts.json"

    @property
    def lock_file(self) -> Path:
        return self.path / "lock"

    @property
    def out(self) -> Path:
        return self.path / "out"

    def spec(self) -> RunSpec:
        return RunSpec.from_json(read_json(self.spec_file))

    def attempts(self) -> list[dict[str, Any]]:
        return read_json(self.attempts_file) if self.attempts_file.exists() else []

    def is_locked(self) -> bool:
        """True while a live worker holds this run."""
        return flock_held(self.lock_file)

    def _running_since(self) -> str:
        """Who runs it and for how long, from its claim (written as the worker starts)."""
        claim = read_json(self.claim_file) if self.claim_file.exists() else None
        if not isinstance(claim, dict):
            return ""
        where = f"attempt {claim.get('attempt', '?')}, {claimed_by(claim)}"
        started = claim.get("started")
        if isinstance(started, (int, float)):
            where += f", for {format_seconds(time.time() - started)}"
        return where

    def status(self, max_attempts: int, queued: bool = False, after_roi_ms: float | None = None) -> RunStatus:
        """The run's state. Only real failures count towards giving up:
        killed and dead attempts are the infrastructure's, and are redone.
        `after_roi_ms`: what its study now allows after an ROI (None: run.toml's)."""
        attempts = self.attempts()
        failures = sum(1 for a in attempts if a.get("status") == "failed")
        if self.is_locked():
            return RunStatus(self.run_id, State.RUNNING, len(attempts), self._running_since())
        result = read_json(self.result_file) if self.result_file.exists() else None
        if self.claim_file.exists():
            claim = read_json(self.claim_file)
            if result is None or result.get("attempt", 0) < claim.get("attempt", 0):
                return RunStatus(self.run_id, State.DEAD, len(attempts), f"{WORKER_DIED} ({claimed_by(claim)})")
        if queued and (result is None or result.get("status") != "ok"):
            return RunStatus(self.run_id, State.QUEUED, len(attempts))
        if result is None:
            return RunStatus(self.run_id, State.PENDING, len(attempts))
        if result.get("status") == "ok":
            return RunStatus(self.run_id, State.DONE, len(attempts))
        reason = str(result.get("reason", ""))
        if result.get("status") == "killed":
            return RunStatus(self.run_id, State.DEAD, len(attempts), f"killed: {reason}")
        if result.get("status") == "stopped":
            return RunStatus(self.run_id, State.STOPPED, len(attempts), reason)
        if reason.startswith(run_rules.STUCK_AFTER_ROI):
            # gem5 is deterministic: under the same limit it would be stuck again at the same tick.
            allowed = after_roi_ms if after_roi_ms is not None else after_roi_limit_ms()
            stopped_under = stuck_limit_ms(result)
            if allowed <= stopped_under:
                return RunStatus(self.run_id, State.GAVE_UP, len(attempts), reason)
            retry = f"{reason}; its study now allows {allowed:g} ms after the ROI, not {stopped_under:g}: retried"
            return RunStatus(self.run_id, State.FAILED, len(attempts), retry)
        state = State.GAVE_UP if failures >= max_attempts else State.FAILED
        return RunStatus(self.run_id, state, len(attempts), reason)


def stuck_limit_ms(result: dict[str, Any]) -> float:
    """The after-ROI limit a run was stopped as stuck under: its result's
    (run.py records it, the gem5 backend copies it), else the
    --after-roi-limit-ms of its command, else run.toml's (results from
    before run.py recorded it)."""
    recorded = result.get(STUCK_LIMIT_FIELD)
    if isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
        return float(recorded)
    command = result.get("command")
    if isinstance(command, list) and AFTER_ROI_OPTION in command[:-1]:
        try:
            return float(command[command.index(AFTER_ROI_OPTION) + 1])
        except ValueError:
            pass
    return after_roi_limit_ms()


class CampaignStore:
    def __init__(self, name: str, root: Path | None = None) -> None:
        self.path = (root or results_root()) / name

    def run_dir(self, run_id: str) -> RunDir:
        return RunDir(self.path, run_id)

    def prepare(self, campaign_file: Path, specs: list[RunSpec]) -> None:
        """Create the run directories and copy the campaign file in."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "campaign.toml").write_bytes(campaign_file.read_bytes())
        for spec in specs:
            run = self.run_dir(spec.run_id)
            if not run.spec_file.exists():
                write_json_atomically(run.spec_file, spec.to_json())

    def statuses(self, specs: list[RunSpec], max_attempts: int, queued: frozenset[str] = frozenset()) -> list[RunStatus]:
        return [self.run_dir(s.run_id).status(max_attempts, s.run_id in queued, s.resources.after_roi_ms) for s in specs]

    def write_index(self, specs: list[RunSpec], max_attempts: int, queued: frozenset[str] = frozenset()) -> Path:
        entries = []
        for spec, status in zip(specs, self.statuses(specs, max_attempts, queued)):
            run = self.run_dir(spec.run_id)
            entries.append(
                {
                    "run_id": spec.run_id,
                    "study": spec.study,
                    "spec": spec.to_json(),
                    "state": status.state.value,
                    "attempts": status.attempts,
                    "reason": status.reason,
                    "result": str(run.result_file.relative_to(self.path)) if status.state == State.DONE else None,
                }
            )
        index = self.path / "index.json"
        write_json_atomically(index, {"runs": entries})
        return index
