"""A launch runs on the inputs it started with.

A launch checks every run's kernel build, disk image and machine file when
it starts, but each worker reads them again when its own run starts. So
anything that rebuilds an input under a running launch (a test run, `run.sh
build image`, a machine file edited) would put the campaign's later runs on
other inputs than its earlier ones: each result.json would say so, and the
launch would still mix them in one results folder.

So the launcher records the identities it started with in the campaign
folder (launch.json), and a worker whose run's inputs are no longer those
does not run it. The run ends "stopped", like a run the disk guard stops:
the next launch redoes it, on the inputs of its day, and the run's reason
names each input that changed, as it was and as it is.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from lockstudy.campaign.spec import RunSpec
from lockstudy.campaign.staleness import current_identities, input_keys, input_names
from lockstudy.campaign.store import read_json, write_json_atomically

LAUNCH_FILE = "launch.json"
SHORT_HASH = 12  # hex digits of an identity in a reason


def _inputs(spec: RunSpec) -> dict[str, str]:
    """The run's inputs: the key each identity is recorded under, and how a reason names it."""
    names = input_names(spec)
    return {key: names[field] for field, key in input_keys(spec).items()}


def identities(specs: list[RunSpec]) -> dict[str, str | None]:
    """Today's identity of every input of these runs (None: missing)."""
    cache: dict[str, str | None] = {}
    out: dict[str, str | None] = {}
    for spec in specs:
        current_identities(spec, cache)
        out.update({key: cache[key] for key in input_keys(spec).values()})
    return out


def record_launch(campaign_dir: Path, specs: list[RunSpec]) -> None:
    """What this launch starts with, for its workers (written before any of them starts)."""
    write_json_atomically(
        campaign_dir / LAUNCH_FILE, {"launcher_pid": os.getpid(), "started": time.time(), "inputs": identities(specs)}
    )


def _short(identity: str | None) -> str:
    return "missing" if identity is None else f"{identity[:SHORT_HASH]}…"


def changed_inputs(campaign_dir: Path, spec: RunSpec) -> list[str]:
    """The inputs of this run that are not what its launch started with (empty: none, or no launch record)."""
    path = campaign_dir / LAUNCH_FILE
    if not path.is_file():
        return []
    try:
        at_launch = read_json(path).get("inputs", {})
    except (OSError, ValueError):
        return []
    now = identities([spec])
    return [
        f"{name} ({_short(at_launch[key])} at the launch, {_short(now[key])} now)"
        for key, name in _inputs(spec).items()
        if key in at_launch and at_launch[key] != now[key]
    ]


def stopped_reason(changed: list[str]) -> str:
    return (
        f"not run: its inputs changed since the launch started: {'; '.join(changed)}. "
        "The next launch runs it on today's inputs."
    )

