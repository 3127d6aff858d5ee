"""Running a simulator process and measuring what it cost the host: wall time and peak memory.

Peak memory is the kernel's own high-water mark of the child's resident
set (ru_maxrss), read with wait4() on that one child. Why not the others:
getrusage(RUSAGE_CHILDREN) merges every child the worker ever waited for
(a worker that builds a boot checkpoint and then runs would report the
larger of the two under both), and polling /proc samples, so it can miss a
short peak and costs a thread per run. wait4() also reports a child that
was killed (out of memory, a time limit), whose memory is the one that
matters most for sizing the next request.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

KIB_PER_MIB = 1024  # Linux reports ru_maxrss in KiB


@dataclass(frozen=True)
class MeasuredProcess:
    """How a process ended and what it cost: its exit status, host seconds and peak resident memory."""

    returncode: int
    host_seconds: float
    peak_rss_mib: float

    def as_record(self) -> dict[str, float]:
        return {"host_seconds": round(self.host_seconds, 3), "peak_rss_mib": round(self.peak_rss_mib, 1)}


def run_measured(argv: Sequence[str], log: Path) -> MeasuredProcess:
    """Run `argv` with its output in `log`; its exit status, wall time and peak resident memory."""
    started = time.monotonic()
    with open(log, "wb") as sink:
        process = subprocess.Popen(list(argv), stdout=sink, stderr=subprocess.STDOUT)
        try:
            _pid, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            # An ending signal arrived while we waited: do not leave the child behind.
            process.kill()
            process.wait()
            raise
    process.returncode = os.waitstatus_to_exitcode(status)
    return MeasuredProcess(process.returncode, time.monotonic() - started, usage.ru_maxrss / KIB_PER_MIB)
