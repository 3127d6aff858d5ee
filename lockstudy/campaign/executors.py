"""Executors: where runs execute. They drive workers; the backend decides what a worker runs."""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from lockstudy.campaign import drain
from lockstudy.campaign.spec import Resources, RunSpec, digest
from lockstudy.campaign.store import CampaignStore, write_json_atomically
from lockstudy.paths import ROOT

PR_SET_PDEATHSIG = 1
SLURM_POLL_SECONDS = 5
# Slurm sends SIGUSR1 this long before a time limit; the worker passes it to
# gem5, which dumps its statistics.
SLURM_WARNING_SECONDS = 120


class Executor(Protocol):
    name: str
    wait: bool  # False: execute() only hands the runs over (Slurm --no-wait)

    def execute(self, store: CampaignStore, specs: list[RunSpec], backend: str, report: Callable[[], None]) -> None: ...

    def queued(self, store: CampaignStore) -> frozenset[str]:
        """Runs handed over earlier and still waiting or running elsewhere."""
        ...


def worker_argv(store: CampaignStore, run_id: str, backend: str) -> list[str]:
    return [sys.executable, "-m", "lockstudy", "campaign", "--backend", backend, "run-one", str(store.path), run_id]


def worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def die_with_parent() -> None:
    """In a worker before exec: SIGTERM it when the thread that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class RunGate(Protocol):
    """Asked before a local worker starts a run, and told when it ends (campaign/deadline.py)."""

    def admits(self, spec: RunSpec) -> bool: ...

    def finished(self, spec: RunSpec) -> None: ...


@dataclass
class LocalExecutor:
    """A pool of workers on this machine. A worker gets SIGTERM if the launcher dies."""

    slots: int
    name: str = "local"
    wait: bool = True
    gate: RunGate | None = None  # a run it does not admit is left pending

    def queued(self, store: CampaignStore) -> frozenset[str]:
        return frozenset()

    def execute(self, store: CampaignStore, specs: list[RunSpec], backend: str, report: Callable[[], None]) -> None:
        said_drain = threading.Event()

        def one(spec: RunSpec) -> bool:
            request = drain.asked(store)
            if request is not None:
                if not said_drain.is_set():
                    said_drain.set()
                    print(f"drain {request}: no more runs start; the runs under way finish", flush=True)
                return False
            if self.gate and not self.gate.admits(spec):
                return False
            try:
                run_worker(spec)
            finally:
                if self.gate:
                    self.gate.finished(spec)
            return True

        def run_worker(spec: RunSpec) -> None:
            run = store.run_dir(spec.run_id)
            with open(run.path / "worker.log", "ab") as log:
                subprocess.run(
                    worker_argv(store, spec.run_id, backend),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=worker_env(),
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )

        with ThreadPoolExecutor(max_workers=self.slots) as pool:
            futures = [pool.submit(one, spec) for spec in specs]
            for future in as_completed(futures):
                if future.result():
                    report()


class SlurmError(RuntimeError):
    pass


def campaign_resources(spec: RunSpec) -> Resources:
    """A run's resources as its campaign file gives them."""
    return spec.resources


@dataclass
class SlurmExecutor:
    """Job arrays, one per group of runs with the same resources.

    `resources_of` gives a run's resources: the campaign file's by default,
    the cost model's (lockstudy/costmodel/) when the launcher has one."""

    wait: bool = True
    partition: str | None = None
    name: str = "slurm"
    resources_of: Callable[[RunSpec], Resources] = campaign_resources

    def execute(self, store: CampaignStore, specs: list[RunSpec], backend: str, report: Callable[[], None]) -> None:
        groups: dict[Resources, list[RunSpec]] = {}
        for spec in specs:
            groups.setdefault(self.resources_of(spec), []).append(spec)
        job_ids = [self.submit(store, resources, group, backend) for resources, group in groups.items()]
        if not self.wait:
            print(f"submitted Slurm job(s) {', '.join(job_ids)}; `./run.sh campaign status FILE` follows them")
            return
        self.wait_for(job_ids, report)

    def submit(self, store: CampaignStore, resources: Resources, specs: list[RunSpec], backend: str) -> str:
        directory = store.path / "slurm"
        directory.mkdir(parents=True, exist_ok=True)
        batch = digest([s.run_id for s in specs] + [time.time()])
        tasks = directory / f"{batch}.tasks"
        tasks.write_text("".join(f"{s.run_id}\n" for s in specs))
        script = directory / f"{batch}.sbatch"
        script.write_text(self.script(store, resources, specs, backend, tasks))
        argv = ["sbatch", "--parsable", str(script)]
        result = subprocess.run(argv, capture_output=True, text=True)
        if result.returncode != 0:
            raise SlurmError(f"sbatch {script} failed: {result.stderr.strip()}")
        job_id = result.stdout.strip().split(";")[0]
        jobs_file = directory / "jobs.json"
        jobs = json.loads(jobs_file.read_text()) if jobs_file.exists() else []
        jobs.append({"job_id": job_id, "script": script.name, "runs": [s.run_id for s in specs], "submitted": time.time()})
        write_json_atomically(jobs_file, jobs)
        print(f"submitted Slurm array job {job_id}: {len(specs)} run(s) ({script})", flush=True)
        return job_id

    def script(self, store: CampaignStore, resources: Resources, specs: list[RunSpec], backend: str, tasks: Path) -> str:
        """The job script. Every value in it is quoted; run ids are hex digests."""
        quote = shlex.quote
        lines = [
            "#!/bin/bash",
            f"#SBATCH --job-name={quote('lockstudy-' + store.path.name)}",
            f"#SBATCH --array=0-{len(specs) - 1}",
            f"#SBATCH --time={resources.time_minutes}",
            f"#SBATCH --mem={resources.memory_gb}G",
            f"#SBATCH --cpus-per-task={resources.host_cpus}",
            f"#SBATCH --signal=B:USR1@{SLURM_WARNING_SECONDS}",
            f"#SBATCH --output={quote(str(store.path / 'slurm' / 'task-%A_%a.out'))}",
        ]
        if self.partition:
            lines.append(f"#SBATCH --partition={quote(self.partition)}")
        worker = " ".join(quote(a) for a in worker_argv(store, "RUN_ID", backend)[:-1])
        lines += [
            "set -euo pipefail",
            f"export PYTHONPATH={quote(worker_env()['PYTHONPATH'])}",
            f'run_id=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {quote(str(tasks))})',
            f'exec {worker} "$run_id"',
            "",
        ]
        return "\n".join(lines)

    def queued(self, store: CampaignStore) -> frozenset[str]:
        return slurm_queued(store)

    def wait_for(self, job_ids: list[str], report: Callable[[], None]) -> None:
        last = ""
        while True:
            result = subprocess.run(
                ["squeue", "-h", "-o", "%i %T", "-j", ",".join(job_ids)], capture_output=True, text=True
            )
            if result.returncode != 0 and "Invalid job id" not in result.stderr:
                raise SlurmError(f"squeue failed: {result.stderr.strip()}")
            queued = result.stdout.strip()
            if queued != last:
                report()
                last = queued
            if not queued:
                return
            time.sleep(SLURM_POLL_SECONDS)


def slurm_queued(store: CampaignStore) -> frozenset[str]:
    """Runs of this campaign whose Slurm array task is still pending or running."""
    jobs_file = store.path / "slurm" / "jobs.json"
    if not jobs_file.exists() or not shutil.which("squeue"):
        return frozenset()
    jobs = json.loads(jobs_file.read_text())
    result = subprocess.run(
        ["squeue", "-h", "-r", "-o", "%i", "-j", ",".join(j["job_id"] for j in jobs)], capture_output=True, text=True
    )
    live = set(result.stdout.split())
    queued = set()
    for job in jobs:
        for task, run_id in enumerate(job["runs"]):
            if f"{job['job_id']}_{task}" in live:
                queued.add(run_id)
    return frozenset(queued)


def make_executor(
    name: str, slots: int, wait: bool, partition: str | None, resources_of: Callable[[RunSpec], Resources] | None = None,
    gate: RunGate | None = None,
) -> Executor:  # fmt: skip
    if name == "slurm":
        return SlurmExecutor(wait=wait, partition=partition, resources_of=resources_of or campaign_resources)
    return LocalExecutor(slots=slots, gate=gate)


def parallel_slots(specs: list[RunSpec], jobs: int | None) -> int:
    if jobs:
        return jobs
    widest = max((s.resources.host_cpus for s in specs), default=1)
    return max(1, (os.cpu_count() or 1) // widest)
