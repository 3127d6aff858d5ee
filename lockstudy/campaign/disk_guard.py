"""Stop a run before its outputs fill the disk.

A traced ROI writes its coherence trace as it runs: tens of MiB per
simulated ms on altix-numa, so a long traced window is tens of GiB, and
two of them side by side can fill the file system that holds the
campaign. A full disk ends every run on it (and anything else writing
there) with a truncated file instead of a clear reason.

So a worker checks the file system of the run's outputs before gem5
starts and then every `poll_seconds` while it runs. Below the floor
(lockstudy/data/campaign.toml [disk] min_free_gib, or the environment's
LOCKSTUDY_MIN_FREE_GIB for a cluster's scratch) it stops gem5 and the run
ends "stopped", with the reason: nothing is counted, the partial trace is
deleted to give the space back, and the next launch redoes the run (the
launch that stopped it does not, so one run cannot loop on a full disk).
"""

from __future__ import annotations

import math
import os
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lockstudy.paths import DATA

GIB = 1 << 30
MIB_TO_GIB = 1 / 1024
SETTINGS_FILE = DATA / "campaign.toml"
FLOOR_ENV = "LOCKSTUDY_MIN_FREE_GIB"
STOPPED_FOR_DISK = "the disk is nearly full"


class DiskSettingsError(ValueError):
    pass


@dataclass(frozen=True)
class DiskFloor:
    min_free_gib: float
    poll_seconds: float
    source: str  # where min_free_gib came from, for the reason a stopped run gives


def positive_number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise DiskSettingsError(f"{where}: must be a number above 0, got {value!r}")
    return float(value)


def load_floor(settings_file: Path = SETTINGS_FILE, environ: dict[str, str] | None = None) -> DiskFloor:
    environ = dict(os.environ) if environ is None else environ
    with open(settings_file, "rb") as handle:
        table = tomllib.load(handle).get("disk")
    if not isinstance(table, dict):
        raise DiskSettingsError(f"{settings_file}: has no [disk] table")
    poll = positive_number(table.get("poll_seconds"), f"{settings_file} [disk] poll_seconds")
    if FLOOR_ENV in environ:
        text = environ[FLOOR_ENV]
        try:
            value = float(text)
        except ValueError:
            raise DiskSettingsError(f"${FLOOR_ENV}={text!r}: must be a number of GiB above 0") from None
        return DiskFloor(positive_number(value, f"${FLOOR_ENV}={text!r}"), poll, f"${FLOOR_ENV}")
    floor_file = positive_number(table.get("min_free_gib"), f"{settings_file} [disk] min_free_gib")
    return DiskFloor(floor_file, poll, f"{settings_file.name} [disk] min_free_gib")


def free_gib(path: Path) -> float:
    return shutil.disk_usage(path).free / GIB


def size_gib(path: Path) -> float:
    """What a run's outputs take so far (files under `path`)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # a file gem5 just removed
    return total / GIB


@dataclass(frozen=True)
class DiskGuard:
    """The floor of free space under one run's outputs."""

    outputs: Path
    floor: DiskFloor
    free: Callable[[Path], float] | None = None  # how free space is read (default: free_gib)

    def shortfall(self) -> str | None:
        """Why the run must stop now (free space under the floor), or None."""
        free = (self.free or free_gib)(self.outputs)
        if free >= self.floor.min_free_gib:
            return None
        return (
            f"{STOPPED_FOR_DISK}: {free:.1f} GiB free under {self.outputs}, below the floor of "
            f"{self.floor.min_free_gib:g} GiB ({self.floor.source}); its outputs had reached {size_gib(self.outputs):.1f} GiB. "
            "Free space (or lower the floor, if what is left is enough), then launch again: the run is redone"
        )


def existing_parent(path: Path) -> Path:
    """`path`, or its nearest parent that exists (a campaign's folder before its first launch)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def trace_room_lines(traced_left: int, at_once_mib: float, parallel: int, where: Path, floor: DiskFloor,
                     free: Callable[[Path], float] | None = None) -> list[str]:  # fmt: skip
    """What the traced runs left need of the disk against what it has above the floor: a line to print,
    and a warning when the largest `parallel` predicted traces do not fit (the guard would stop them)."""
    if not traced_left:
        return []
    free_now = (free or free_gib)(existing_parent(where))
    room = free_now - floor.min_free_gib
    need = at_once_mib * MIB_TO_GIB
    lines = [
        f"Traced runs left: {traced_left}; {'the largest ' + str(parallel) + ' predicted traces take' if parallel > 1 else 'the largest predicted trace takes'} {need:.1f} GiB at once; "
        f"{free_now:.1f} GiB free under {existing_parent(where)}, {room:.1f} above the floor of {floor.min_free_gib:g} GiB ({floor.source})"
    ]
    if need > room:
        lines.append(
            "warning: they may not fit: the disk guard would stop a run at the floor (it is redone by the next launch). "
            "Free space, or run the traced studies apart with fewer jobs (--only-study ... -j 1)"
        )
    return lines
