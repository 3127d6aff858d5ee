"""Per-lock coherence events from a Ruby ProtocolTrace, streamed.

gem5 v24 prints one ProtocolTrace line per completed (or stalled)
controller transition and per sequencer request, all with the same format
(src/mem/slicc/symbols/StateMachine.py:1653, src/mem/ruby/system/
Sequencer.cc:408 and :1107):

    "%15d %3s %10s%20s %6s>%-6s %#x %s"
     tick  version  machine  event  state>next  address  comment

where the address is `printAddress(addr)` = "[0x<addr>, line 0x<line>]"
(src/mem/ruby/common/Address.cc:80), both in lower-case hex. Controller
transitions carry the line address; the sequencer's "Begin" lines carry the
exact physical address of the request and its type in the comment
(LD, ST, ATOMIC, Locked_RMW_Read, ...). `%10s%20s` has no separator: an
event name of 20 characters or more runs into the machine name, which is
split off again with the known machine names below.

Attribution joins the trace with the kernel's lock registry (the physical
address and size of each lock, lockstudy.guest_output.RegisteredLock):

- a controller event on a line that holds a registered lock counts for
  that line, under the names of the locks it holds, by controller
  (machine and version: on CHI one machine, Cache, is every cache level
  and the home, and analysis/traffic/locks.py tells them apart by version);
- a sequencer request to such a line counts as a `lock` access when its
  address falls inside a lock's bytes and as an `other` access (data that
  shares the lock's line: false sharing) otherwise.

Lines of the trace on other lines are skipped after one substring search,
so reading is linear in the trace and memory is flat (the counters grow
with the number of distinct (lock line, controller, event) only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from analysis.gem5_output.trace_chunks import CHUNK_BYTES, NEWLINE, TraceFormatError, lines_in, read_chunks
from analysis.hotlines.rules import load_rules as load_hotline_rules

# SLICC machine names of MESI_Two_Level (src/mem/ruby/protocol/
# MESI_Two_Level.slicc) and of CHI (src/mem/ruby/protocol/chi/CHI.slicc:
# Cache, CHI-cache.sm:39; Memory, CHI-mem.sm:39; MiscNode,
# CHI-dvm-misc-node.sm:39), plus the sequencer's "Seq" (Sequencer.cc). No
# name is the start of another, so a run-together name splits one way.
MACHINES = ("L1Cache", "L2Cache", "Directory", "DMA", "Cache", "Memory", "MiscNode", "Seq")
SEQUENCER = "Seq"
SEQ_BEGIN = "Begin"
LINE_MARK = " line 0x"
ADDRESS_OPEN = "[0x"


@dataclass(frozen=True)
class TracedLock:
    name: str
    physical: int
    size: int


@dataclass(frozen=True)
class Event:
    tick: int
    version: int
    machine: str
    event: str
    transition: str  # "state>next" ("" for sequencer lines)
    address: int
    line: int
    comment: str


@dataclass
class Attribution:
    """Counts per registered lock line; `lines_read` and `lines_on_locks` for the record."""

    line_bytes: int
    lock_lines: dict[int, tuple[TracedLock, ...]]
    # (line address, machine, version, event) -> count
    events: Counter[tuple[int, str, int, str]] = field(default_factory=Counter)
    # (lock name or "other", line address, request type) -> count
    requests: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    # the part of `events` that served nothing and is printed again when it
    # does: a request set aside while its line is busy (parked_transitions()),
    # or a transition that stalled and is retried (STALLS)
    unserved: Counter[tuple[int, str, int, str]] = field(default_factory=Counter)
    lines_read: int = 0
    lines_on_locks: int = 0

    def events_by_lock(self) -> Counter[tuple[str, str, str]]:
        """(lock name, machine, event) -> count; a line with several locks counts for each."""
        out: Counter[tuple[str, str, str]] = Counter()
        for (line, machine, _version, event), count in self.events.items():
            for lock in self.lock_lines[line]:
                out[(lock.name, machine, event)] += count
        return out


# gem5 prints a transition that could not run, and is retried later, with one
# of these after its address (src/mem/slicc/symbols/StateMachine.py:1679-1692).
STALLS = ("Resource Stall", "Protocol Stall")


@lru_cache(maxsize=None)
def parked_transitions() -> frozenset[tuple[str, str, str]]:
    """(machine, state, event) of a request or snoop set aside while its line is busy.

    The controller prints the transition when it parks the message and
    again when it wakes and serves it, so counting every transition counts
    such a message twice. The states are the hot-line profile's: a home's
    `request_wait` and the states an invalidation is not counted from
    (analysis/data/hotlines.toml, each with its .sm source); the machine
    names of the protocols differ, so one set serves every protocol."""
    rules = load_hotline_rules()
    parked = set()
    for protocol in rules.protocols.values():
        parked |= {(protocol.home_machine, state, event) for state, event in protocol.request_waits}
        invalidations = protocol.invalidations
        parked |= {(invalidations.machine, state, event) for state in invalidations.not_from for event in invalidations.events}
    return frozenset(parked)


def lock_lines(locks: Iterable[TracedLock], line_bytes: int) -> dict[int, tuple[TracedLock, ...]]:
    """Line address -> the locks with at least one byte on that line."""
    lines: dict[int, list[TracedLock]] = {}
    for lock in locks:
        first = lock.physical - lock.physical % line_bytes
        last = lock.physical + max(lock.size, 1) - 1
        for line in range(first, last + 1, line_bytes):
            lines.setdefault(line, []).append(lock)
    return {line: tuple(held) for line, held in lines.items()}


def split_machine(token: str) -> tuple[str, str]:
    """'L2CacheL2_Replacement_clean' -> ('L2Cache', 'L2_Replacement_clean')."""
    for machine in MACHINES:
        if token.startswith(machine):
            return machine, token[len(machine) :]
    raise TraceFormatError(f"no known machine ({', '.join(MACHINES)}) at the start of {token!r}")


def parse_line(text: str) -> Event:
    """One ProtocolTrace line (any, not only lock lines)."""
    open_at = text.find(ADDRESS_OPEN)
    close_at = text.find("]", open_at)
    if open_at < 0 or close_at < 0:
        raise TraceFormatError(f"no [0x<addr>, line 0x<line>] in {text!r}")
    head = text[:open_at].split()
    address_text, _, line_text = text[open_at + 1 : close_at].partition(",")
    if len(head) < 3 or not line_text.strip().startswith("line 0x"):
        raise TraceFormatError(f"not a ProtocolTrace line: {text!r}")
    tick, version = int(head[0]), int(head[1])
    rest = head[2:]
    if rest[0] in MACHINES:
        machine, event, rest = rest[0], rest[1] if len(rest) > 1 else "", rest[2:]
    else:
        machine, event = split_machine(rest[0])
        rest = rest[1:]
    transition = rest[0] if rest and rest[0] != ">" else ""
    return Event(
        tick=tick,
        version=version,
        machine=machine,
        event=event,
        transition=transition,
        address=int(address_text, 16),
        line=int(line_text.strip()[len("line ") :], 16),
        comment=text[close_at + 1 :].strip(),
    )


def attribute_lines(lines: Iterable[str], locks: Iterable[TracedLock], line_bytes: int, source: str = "trace") -> Attribution:
    """Count the events and requests on the registered locks' lines."""
    by_line = lock_lines(locks, line_bytes)
    # The trace prints line addresses as lower-case hex without padding:
    # compare the text, so lines on other lines cost one search and a dict miss.
    wanted = {format(line, "x"): line for line in by_line}
    result = Attribution(line_bytes=line_bytes, lock_lines=by_line)
    for number, text in enumerate(lines, 1):
        result.lines_read += 1
        at = text.find(LINE_MARK)
        if at < 0:
            continue
        line = wanted.get(text[at + len(LINE_MARK) : text.find("]", at)])
        if line is not None:
            record(result, line, text, lambda n=number: f"{source}:{n}")
    return result


def record(result: Attribution, line: int, text: str, where: Callable[[], str], count: int = 1) -> None:
    """Count `count` trace lines like `text`, which is on the registered line `line`."""
    result.lines_on_locks += count
    try:
        event = parse_line(text)
    except (TraceFormatError, ValueError) as exc:
        raise TraceFormatError(f"{where()}: {exc}") from exc
    if event.machine == SEQUENCER:
        if event.event == SEQ_BEGIN:
            locks = result.lock_lines[line]
            holder = next((lock.name for lock in locks if lock.physical <= event.address < lock.physical + lock.size), "other")
            result.requests[(holder, line, event.comment)] += count
        return
    key = (line, event.machine, event.version, event.event)
    result.events[key] += count
    if event.comment in STALLS or (event.machine, event.transition.partition(">")[0], event.event) in parked_transitions():
        result.unserved[key] += count


# A lock line's text without its tick, the only field attribution does not
# use: the same few hundred texts recur millions of times, so a trace is
# reduced to a count per text in the scan and each text is parsed once.
# A line whose first word is no tick keeps all its words behind BAD_TICK,
# so parsing it fails as it would have.
BAD_TICK = b"!"


def without_tick(text: bytes) -> bytes:
    words = text.lstrip()
    cut = words.find(b" ")
    return words[cut:] if cut > 0 and words[:cut].isdigit() else BAD_TICK + words


def with_tick(tail: bytes) -> str:
    """A line with the text `tail` (from without_tick()) and tick 0."""
    text = tail.decode(errors="replace")
    return text[len(BAD_TICK) :] if tail.startswith(BAD_TICK) else "0" + text


def attribute_trace(path: Path, locks: Iterable[TracedLock], line_bytes: int, chunk_bytes: int = CHUNK_BYTES) -> Attribution:
    """attribute_lines() over a (gzip'd) trace file, scanned in chunks.

    One regular expression names every registered line, so the scan of the
    text runs in the regex engine and Python only sees the lines on locks,
    counted by their text without the tick (without_tick()); memory is one
    chunk and one count per distinct text, whatever the trace's size.
    """
    by_line = lock_lines(locks, line_bytes)
    result = Attribution(line_bytes=line_bytes, lock_lines=by_line)
    if not by_line:
        return result
    hex_lines = {format(line, "x").encode(): line for line in by_line}
    mark = LINE_MARK.encode()
    pattern = re.compile(re.escape(mark) + b"(" + b"|".join(sorted(hex_lines)) + b")]")
    tails: Counter[tuple[int, bytes]] = Counter()
    lines_before = 0
    for chunk in read_chunks(path, chunk_bytes):
        for match in pattern.finditer(chunk):
            start = chunk.rfind(NEWLINE, 0, match.start()) + 1
            end = chunk.find(NEWLINE, match.end())
            tails[(hex_lines[match.group(1)], without_tick(chunk[start : end if end >= 0 else len(chunk)]))] += 1
        lines_before += lines_in(chunk)
    for (line, tail), count in tails.items():
        record(result, line, with_tick(tail), lambda t=tail: f"{path}:{_first_line_with(path, t, chunk_bytes)}", count)
    result.lines_read = lines_before
    return result


def _first_line_with(path: Path, tail: bytes, chunk_bytes: int) -> int:
    """The number of the first line of the file whose text without its tick is `tail` (for errors)."""
    number = 0
    for chunk in read_chunks(path, chunk_bytes):
        for text in chunk.splitlines():
            number += 1
            if without_tick(text) == tail:
                return number
    return 0


def format_line(event: Event) -> str:
    """The line gem5 prints for `event` (the same printf format), for generated traces."""
    address = f"[0x{event.address:x}, line 0x{event.line:x}]"
    if event.machine == SEQUENCER:
        state = f"{'':>6}>{'':<6}"
    else:
        before, _, after = event.transition.partition(">")
        state = f"{before:>6}>{after:<6}"
    return f"{event.tick:15d} {event.version:>3} {event.machine:>10}{event.event:>20} {state} {address} {event.comment}".rstrip()


def events_of(lines: Iterable[str]) -> Iterator[Event]:
    for text in lines:
        if LINE_MARK in text:
            yield parse_line(text)
