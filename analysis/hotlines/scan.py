"""One streaming pass over an ROI trace: transitions counted per ROI, line, controller, event and state change.

Every ProtocolTrace line (StateMachine.py:1653, Sequencer.cc:408/:1107)
is `tick version machine event state>next [0x<addr>, line 0x<line>]
comment`, the machine and event run together when the event has 20
characters or more (`%10s%20s`). One regular expression, anchored at each
line's start, takes the version, the two name words, the state change,
the line and a stall comment, and leaves out the tick and the exact
address; the chunk's matches are counted in C (Counter over findall), so
Python never loops over lines, and each chunk's counts are handed on
(chunk_counts()): the profile folds them into one entry per line with
traffic (profile.ProfileBuilder), so memory is one chunk plus the
distinct lines, whatever the trace's length.

A line that does not match is an error naming the file and line number
(the chunk's matches are fewer than its lines, and the chunk is searched
line by line only then); so is a gzip stream that ends early.

The trace holds all ROIs of a run back to back (tracing is on inside
ROIs only, gem5-configs/run.py); a line belongs to the last ROI that
began at or before its tick (result.json `roi_ticks`). Only a chunk that
holds an ROI's start is split line by line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.gem5_output.trace_chunks import CHUNK_BYTES, NEWLINE, TraceFormatError, lines_in, read_chunks

# version, first name word, second name word (absent when run together),
# state>next, line address (hex), stall comment (absent when none): gem5
# prints "Resource Stall" or "Protocol Stall" for a transition that could
# not run and is retried (StateMachine.py:1679-1692); the retry prints again.
TRANSITION = re.compile(
    rb"^ *\d+ +(\d+) +(\S+)(?: +([^\s>\[]+))? +([^\s>\[]*>[^\s>\[]*) +\[0x[0-9a-f]+, line 0x([0-9a-f]+)\] ?((?:Resource|Protocol) Stall)?",
    re.MULTILINE,
)
TICK = re.compile(rb" *(\d+) ")
SHOWN_BYTES = 80  # of a bad line, in its error

# (version, first name word, second name word, state>next, line hex, stall comment), as bytes
TransitionKey = tuple[bytes, bytes, bytes, bytes, bytes, bytes]


@dataclass
class TraceCounts:
    """Transitions of each ROI of a trace, counted."""

    source: str
    rois: list[Counter[TransitionKey]] = field(default_factory=list)


def _roi_of(tick: int, starts: Sequence[int]) -> int:
    return max(0, bisect_right(starts, tick) - 1)


def _tick(text: bytes, where: str) -> int:
    """The tick of the line `text` starts with (the same error as a line that does not match, when it has none)."""
    found = TICK.match(text)
    if found is None:
        raise TraceFormatError(f"{where}: not a ProtocolTrace line: {text.partition(NEWLINE)[0][:SHOWN_BYTES]!r}")
    return int(found.group(1))


def _lines(chunk: bytes) -> list[bytes]:
    """The chunk's lines without their newlines (only "\\n" ends a line, as for lines_in())."""
    pieces = chunk.split(NEWLINE)
    return pieces[:-1] if chunk.endswith(NEWLINE) else pieces


def _bad_line(chunk: bytes, path: Path, first_number: int) -> TraceFormatError:
    for number, text in enumerate(_lines(chunk), first_number):
        if TRANSITION.match(text) is None:
            return TraceFormatError(f"{path}:{number}: not a ProtocolTrace line: {text[:SHOWN_BYTES]!r}")
    raise AssertionError("a chunk whose every line matches counted fewer matches than lines")


def _count(chunk: bytes, path: Path, first_number: int) -> list[tuple[bytes, ...]]:
    found = TRANSITION.findall(chunk)
    if len(found) != lines_in(chunk):
        raise _bad_line(chunk, path, first_number)
    return found


def chunk_counts(path: Path, roi_starts: Sequence[int] = (), chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[int, Counter[TransitionKey]]]:
    """(ROI, its transitions counted) for each chunk of the trace at `path` (ROI k begins at tick roi_starts[k]).

    A caller that folds each chunk's counts into its own totals holds one
    chunk's counts at a time (profile.ProfileBuilder: one entry per line
    with traffic).
    """
    starts = list(roi_starts) or [0]
    number = 1  # the number of the chunk's first line
    try:
        for chunk in read_chunks(path, chunk_bytes):
            lines = lines_in(chunk)
            last_start = chunk.rfind(NEWLINE, 0, len(chunk) - 1) + 1
            first_roi = _roi_of(_tick(chunk, f"{path}:{number}"), starts)
            last_roi = _roi_of(_tick(chunk[last_start:], f"{path}:{number + lines - 1}"), starts)
            if first_roi == last_roi:
                yield first_roi, Counter(_count(chunk, path, number))
            else:  # an ROI starts in this chunk: line by line
                parts: dict[int, Counter[TransitionKey]] = {}
                for offset, text in enumerate(_lines(chunk)):
                    roi = _roi_of(_tick(text, f"{path}:{number + offset}"), starts)
                    parts.setdefault(roi, Counter()).update(_count(text, path, number + offset))
                yield from parts.items()
            number += lines
    except TraceFormatError as exc:
        if str(exc).startswith(f"{path}: "):  # the gzip stream ended: say after which line
            raise TraceFormatError(f"{path}:{number}: the trace ends here: {str(exc)[len(str(path)) + 2:]}") from None
        raise


def scan_trace(path: Path, roi_starts: Sequence[int] = (), chunk_bytes: int = CHUNK_BYTES) -> TraceCounts:
    """Every transition of the trace counted per ROI, in memory (tests, small traces; reports use chunk_counts())."""
    counts = TraceCounts(str(path), [Counter() for _ in range(max(1, len(roi_starts)))])
    for roi, chunk in chunk_counts(path, roi_starts, chunk_bytes):
        counts.rois[roi].update(chunk)
    return counts


def first_line_with(path: Path, key: TransitionKey, chunk_bytes: int = CHUNK_BYTES) -> int:
    """The number of the trace's first line that counts as `key` (for an error about it; 0 if none)."""
    number = 1
    for chunk in read_chunks(path, chunk_bytes):
        for offset, text in enumerate(_lines(chunk)):
            found = TRANSITION.match(text)
            if found is not None and tuple(group or b"" for group in found.groups()) == key:
                return number + offset
        number += lines_in(chunk)
    return 0
