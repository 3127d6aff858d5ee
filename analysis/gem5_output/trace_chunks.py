"""A gzip'd (or plain) gem5 debug trace read in chunks of whole lines.

ROI traces are gigabytes once unzipped: every reader of them
(analysis/traffic/protocol_trace.py for the registered lock lines,
analysis/hotlines/ for every line) scans them a few megabytes at a time,
with the regular-expression engine doing the per-line work, so memory
is one chunk whatever the trace's size.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

CHUNK_BYTES = 1 << 22
NEWLINE = b"\n"


class TraceFormatError(ValueError):
    """A trace that is not a whole gzip stream, or a line that does not have gem5's format."""


def read_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The file (gunzipped when .gz) in pieces of whole lines (the last may lack its newline).

    A cut or damaged gzip stream is a TraceFormatError naming the file;
    the chunks before it have been yielded already (a caller that counts
    lines can say where the stream ended).
    """
    opener = gzip.open if path.suffix == ".gz" else open
    carry = b""
    with opener(path, "rb") as handle:
        while True:
            try:
                block = handle.read(chunk_bytes)
            except (OSError, EOFError, zlib.error) as exc:  # a cut or damaged gzip stream
                raise TraceFormatError(f"{path}: not a whole gzip stream ({exc})") from None
            data = carry + block
            cut = len(data) if not block else data.rfind(NEWLINE) + 1
            chunk, carry = data[:cut], data[cut:]
            if chunk:
                yield chunk
            if not block:
                return


def lines_in(chunk: bytes) -> int:
    """The number of lines of a chunk from read_chunks() (its last line may lack the newline)."""
    return chunk.count(NEWLINE) + (0 if chunk.endswith(NEWLINE) else 1)
