"""What actually executes a run: gem5 (the measurement) or QEMU (functional).

A backend turns a RunSpec into outputs in a directory and an Outcome. The
executors (local pool, Slurm) do not know which backend they drive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from lockstudy import run_spec, workloads
from lockstudy.campaign.spec import RunSpec


@dataclass(frozen=True)
class Outcome:
    # "ok", "failed", "killed" (a signal ended it) or "stopped" (the disk guard: disk_guard.py;
    # or inputs changed under the launch: frozen_inputs.py)
    status: str
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    name: str

    def preflight(self, specs: list[RunSpec]) -> None:
        """Raise RuntimeError naming what is missing, before any run starts."""

    def run(self, spec: RunSpec, outdir: Path, campaign_dir: Path) -> Outcome: ...


BACKENDS: dict[str, Callable[[], Backend]] = {}


def register(name: str) -> Callable[[Callable[[], Backend]], Callable[[], Backend]]:
    def add(factory: Callable[[], Backend]) -> Callable[[], Backend]:
        BACKENDS[name] = factory
        return factory

    return add


def check_run_specs(specs: list[RunSpec]) -> None:
    """Every distinct run spec through the guest's own validation, on the host (RuntimeError naming the run)."""
    seen: dict[str, RunSpec] = {}
    for spec in specs:
        seen.setdefault(spec.run, spec)
    for text, spec in seen.items():
        try:
            run_spec.check_with_guest_code(text, workloads.bin_dir())
        except run_spec.RunSpecError as exc:
            raise RuntimeError(f"run {spec.run_id} (study {spec.study}): run = {text!r}: the guest would refuse it: {exc}") from exc
