"""dbench loadfiles: where a trimmed copy may end without leaking file handles.

dbench replays its loadfile in a loop. Each `NTCreateX ... <fnum> NT_STATUS_OK`
takes a slot of the client's fixed file table until the `Close <fnum>
NT_STATUS_OK` that gives it back. A copy cut where handles are still open
leaks them on every pass, and the client dies ("file table full") once the
table is full, after a number of passes that depends on the host's speed.
So a trimmed loadfile must end at a balanced line: one after which no handle
is open.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

OK = b"NT_STATUS_OK"


class LoadfileError(ValueError):
    """A loadfile that cannot be trimmed or replayed without leaking handles."""


@dataclass(frozen=True)
class Cut:
    """Where a trimmed copy ends: `lines` lines, the last one balanced."""

    lines: int
    open_at_requested: int  # handles still open at the line count asked for


def handle_change(line: bytes) -> tuple[int, bytes] | None:
    """(+1, fnum) for a successful open, (-1, fnum) for a successful close, else None."""
    fields = line.split()
    if len(fields) < 3 or fields[-1] != OK:
        return None
    if fields[0] == b"NTCreateX":
        return (1, fields[-2])
    if fields[0] == b"Close":
        return (-1, fields[1])
    return None


def open_handles(lines: Iterable[bytes]) -> Counter[bytes]:
    """The handles still open after replaying `lines` once."""
    held: Counter[bytes] = Counter()
    for line in lines:
        change = handle_change(line)
        if change is None:
            continue
        step, fnum = change
        held[fnum] += step
        if held[fnum] <= 0:
            del held[fnum]
    return held


def balanced_cut(source: Path, at_least: int) -> Cut:
    """The first line at or after line `at_least` of `source` where no handle is open."""
    held: Counter[bytes] = Counter()
    open_at_requested = 0
    with open(source, "rb") as lines:
        for number, line in enumerate(lines, start=1):
            change = handle_change(line)
            if change is not None:
                step, fnum = change
                held[fnum] += step
                if held[fnum] <= 0:
                    del held[fnum]
            if number == at_least:
                open_at_requested = len(held)
            if number >= at_least and not held:
                return Cut(lines=number, open_at_requested=open_at_requested)
    raise LoadfileError(
        f"{source}: no line at or after line {at_least} closes every file handle "
        f"({len(held)} still open at its end); a copy cut there would leak handles on every pass"
    )


def check_balanced(path: Path) -> None:
    """Refuse a loadfile whose one pass leaves handles open."""
    with open(path, "rb") as lines:
        held = open_handles(lines)
    if held:
        sample = ", ".join(sorted(f.decode(errors="replace") for f in held)[:5])
        raise LoadfileError(
            f"{path}: {len(held)} file handle(s) left open at its end (fnum {sample}); "
            "dbench would leak them on every pass until its file table is full"
        )


def write_trimmed(source: Path, at_least: int, output: Path) -> Cut:
    """Copy `source` up to its first balanced line at or after `at_least` into `output`."""
    cut = balanced_cut(source, at_least)
    with open(source, "rb") as src, open(output, "wb") as dst:
        for number, line in enumerate(src, start=1):
            if number > cut.lines:
                break
            dst.write(line)
    check_balanced(output)
    return cut
