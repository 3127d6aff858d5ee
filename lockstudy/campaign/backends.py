"""What actually executes a run: gem5 (the measurement) or QEMU (functional).

A backend turns a RunSpec into outputs in a directory and an Outcome. The
executors (local pool, Slurm) do not know which backend they drive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from lockstudy.campaign.spec import RunSpec


@dataclass(frozen=True)
class Outcome:
    status: str  # "ok", "failed" or "killed"
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
