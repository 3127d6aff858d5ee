"""Small helpers for what the commands print and run."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence


def step(message: str) -> None:
    """Announce one step of a long command."""
    print(f"==> {message}", flush=True)


@contextmanager
def timed_step(message: str) -> Iterator[None]:
    """Announce one step of a long command, and how long it took when it ends."""
    step(message)
    started = time.monotonic()
    yield
    info(f"{message}: {time.monotonic() - started:.1f} s")


def info(message: str) -> None:
    print(f"    {message}", flush=True)


def error(message: str) -> None:
    """The message on stderr, each of its lines marked as an error (a file's problems are one line each)."""
    for line in message.splitlines() or [""]:
        print(f"error: {line}", file=sys.stderr, flush=True)


class CommandFailed(RuntimeError):
    """A command the project ran exited non-zero."""

    def __init__(self, argv: Sequence[str], returncode: int, log: Path | None) -> None:
        where = f" (log: {log})" if log else ""
        super().__init__(f"`{shlex.join(argv)}` exited with status {returncode}{where}")
        self.returncode = returncode


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    echo: bool = True,
) -> None:
    """Run a command, echoing it; with `log`, its output goes to that file."""
    if echo:
        info(f"$ {shlex.join(argv)}")
    started = time.monotonic()
    if log is None:
        result = subprocess.run(list(argv), cwd=cwd, env=env)
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as sink:
            result = subprocess.run(list(argv), cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise CommandFailed(argv, result.returncode, log)
    if echo and time.monotonic() - started > 5:
        info(f"done in {time.monotonic() - started:.0f} s")
