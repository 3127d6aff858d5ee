"""Running a simulator process and measuring what it cost the host: wall time, CPU time and peak memory.

CPU time (user + system, from the same wait4()) is what the process had of
a core. gem5 simulates on one thread, so on a core of its own its CPU time
is its wall time; on a host whose cores other processes share, the wall
time grows and the CPU time does not. The cost model fits a run's time on
a core of its own (a Slurm task's) from the two (costmodel/table.py).

Peak memory is the kernel's own high-water mark of the child's resident
set (ru_maxrss), read with wait4() on that one child. Why not the others:
getrusage(RUSAGE_CHILDREN) merges every child the worker ever waited for
(a worker that builds a boot checkpoint and then runs would report the
larger of the two under both), and polling /proc samples, so it can miss a
short peak and costs a thread per run. wait4() also reports a child that
was killed (out of memory, a time limit), whose memory is the one that
matters most for sizing the next request.

The high-water mark has a floor: when the child execs, Linux folds the
high-water mark of the memory it was started with (the spawning process's
own, under vfork) into the child's (fs/exec.c exec_mmap(),
setmax_mm_hiwater_rss()). A peak at or below the spawning process's own
high-water mark (`rss_floor_mib`, read once the child has exec'd, since
starting it grows the launcher's own mark) is therefore no measurement of
the child: it is recorded as unknown, never as a number. A gem5 run peaks at
hundreds of MiB to GiB, far above a campaign worker's own.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

KIB_PER_MIB = 1024  # Linux reports ru_maxrss and VmHWM in KiB
OWN_STATUS = Path("/proc/self/status")
HIGH_WATER_FIELD = "VmHWM:"
STOP_GRACE_S = 30  # gem5 exits on SIGTERM at once; a child that does not is killed after this


@dataclass(frozen=True)
class MeasuredProcess:
    """How a process ended and what it cost: its exit status, host seconds and peak resident memory."""

    returncode: int
    host_seconds: float
    cpu_seconds: float  # user + system CPU time of the child
    peak_rss_mib: float | None  # None: not above rss_floor_mib, so not the child's own (module docstring)
    rss_floor_mib: float
    stopped: str = ""  # why stop_when stopped the child ("" when it ran to its end)

    def as_record(self) -> dict[str, float | None]:
        peak = None if self.peak_rss_mib is None else round(self.peak_rss_mib, 1)
        return {"host_seconds": round(self.host_seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3), "peak_rss_mib": peak, "rss_floor_mib": round(self.rss_floor_mib, 1)}

    def describe_peak(self) -> str:
        if self.peak_rss_mib is None:
            return f"peak at most {self.rss_floor_mib:.0f} MiB resident (the launcher's own high-water mark)"
        return f"peak {self.peak_rss_mib:.0f} MiB resident"


def own_high_water_mib() -> float:
    """This process's resident high-water mark: what a child it starts inherits as the floor of its own."""
    for line in OWN_STATUS.read_text().splitlines():
        if line.startswith(HIGH_WATER_FIELD):
            return int(line.split()[1]) / KIB_PER_MIB
    raise RuntimeError(f"{OWN_STATUS} has no {HIGH_WATER_FIELD} line")


def stop_watcher(process: subprocess.Popen[bytes], stop_when: Callable[[], str | None], poll_seconds: float,
                 ended: threading.Event, stopped: list[str]) -> threading.Thread:
    """A thread that asks `stop_when` every `poll_seconds` until the process ends, and stops it on a reason."""

    def watch() -> None:
        while not ended.wait(poll_seconds):
            reason = stop_when()
            if reason and not ended.is_set():  # not a child already reaped: its pid may be another's
                stopped.append(reason)
                process.terminate()
                if not ended.wait(STOP_GRACE_S):
                    process.kill()
                return

    thread = threading.Thread(target=watch, name="stop-watcher", daemon=True)
    thread.start()
    return thread


def run_measured(argv: Sequence[str], log: Path, stop_when: Callable[[], str | None] | None = None,
                 poll_seconds: float = 10.0) -> MeasuredProcess:
    """Run `argv` with its output in `log`; its exit status, wall time and peak resident memory.
    With `stop_when`, the child is stopped when it returns a reason (module docstring)."""
    started = time.monotonic()
    ended = threading.Event()
    stopped: list[str] = []
    with open(log, "wb") as sink:
        process = subprocess.Popen(list(argv), stdout=sink, stderr=subprocess.STDOUT)
        # Read once Popen has returned, so after the child's exec: starting
        # it grew this process's own high-water mark a little, and the
        # floor the child inherited is the mark at its exec, not before.
        floor = own_high_water_mib()
        watcher = stop_watcher(process, stop_when, poll_seconds, ended, stopped) if stop_when else None
        try:
            _pid, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            # An ending signal arrived while we waited: do not leave the child behind.
            process.kill()
            process.wait()
            raise
        finally:
            ended.set()
    if watcher is not None:
        watcher.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss / KIB_PER_MIB
    cpu = usage.ru_utime + usage.ru_stime
    return MeasuredProcess(process.returncode, time.monotonic() - started, cpu, peak if peak > floor else None, floor,
                           stopped[0] if stopped else "")
