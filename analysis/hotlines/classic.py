"""The hot-line profile of a classic-memory trace (piii-smp, `--trace classic`), one streaming pass.

What counts (analysis/data/hotlines.toml, [classic], with its gem5 sources):
- requests: the coherence requests the front-side bus accepted for the
  line (its `recvTimingReq` lines, less those it then refused with
  RETRY; writebacks and evictions left out); their sum over all lines
  equals the bus's own transDist of those commands (check_against_stats);
- invalidations: bus snoops that took a CPU's copy to I, counted at the
  CPU's L2;
- crossings and home messages: none, the machine is one node.

The trace's lines belong to the ROI that began last at or before their
tick (result.json `roi_ticks`), as in the Ruby profile (scan.py).
"""

from __future__ import annotations

import gzip
import re
import zlib
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.gem5_output.trace_chunks import TraceFormatError
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.profile import LineTraffic, RoiProfile
from analysis.hotlines.rules import RULES_FILE
from lockstudy.files import read_toml, typed_field

LINE_START = re.compile(r"^\s*(\d+): (\S+): ")
PACKET = re.compile(r"packet ([A-Za-z]+) \[([0-9a-f]+):[0-9a-f]+\]")
SNOOP_HIT = re.compile(r"^handleSnoop: snoop hit for [A-Za-z]+ \[([0-9a-f]+):")
STATE = re.compile(r"state: [0-9a-f]+ \((\w)\)")
INVALID = "I"
RECEIVE = "recvTimingReq: src "
REFUSED_RETRY = " RETRY"
REFUSED_BUSY = " BUSY"
SNOOP_FILTER = " SF size: "
NEW_STATE = "new state is "
CACHE_LEVEL = re.compile(r"\.(l1d|l1i|l2)-cache-\d+$")
TRANSDIST = re.compile(r"^(\S+)\.transDist::(\w+)\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class ClassicRules:
    source: str
    bus: str
    not_requests: frozenset[str]
    snooped_level: str


@lru_cache(maxsize=None)
def classic_rules(path: Path = RULES_FILE) -> ClassicRules:
    data = read_toml(path, HotlinesError)
    where = f"{path}: [classic]"
    table = typed_field(data, "classic", dict, str(path), error=HotlinesError)
    return ClassicRules(
        source=str(path),
        bus=typed_field(table, "bus", str, where, error=HotlinesError),
        not_requests=frozenset(typed_field(table, "not_requests", list, where, error=HotlinesError)),
        snooped_level=typed_field(table, "snooped_level", str, where, error=HotlinesError),
    )


class _Roi:
    def __init__(self) -> None:
        self.lines: dict[int, LineTraffic] = {}

    def traffic(self, line: int) -> LineTraffic:
        found = self.lines.get(line)
        if found is None:
            found = self.lines[line] = LineTraffic(line)
        return found

    def result(self) -> RoiProfile:
        return RoiProfile.of_lines(self.lines)  # no crossings: one node


def profile_classic(trace: Path, line_bytes: int, roi_starts: tuple[int, ...], rules: ClassicRules | None = None) -> list[RoiProfile]:
    """One profile per ROI of a classic trace; a line not in gem5's debug format names file and line."""
    rules = rules or classic_rules()
    mask = ~(line_bytes - 1)
    bus_suffix = f".{rules.bus}"
    rois = [_Roi() for _ in range(max(1, len(roi_starts)))]
    starts = list(roi_starts)
    snooped: dict[str, int] = {}  # a snooped cache -> the line its `new state is` will be about
    number = 0
    try:
        with gzip.open(trace, "rt", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if text[:1].isspace() and not text.strip()[:1].isdigit():
                    continue  # the indented rest of a multi-line message (an MSHR's targets)
                match = LINE_START.match(text)
                if match is None:
                    if not text.strip():
                        continue
                    raise TraceFormatError(f"{trace}:{number}: not a gem5 debug line (tick: object: text): {text.strip()[:80]!r}")
                obj, body = match.group(2), text[match.end() :]
                roi = rois[max(0, bisect_right(starts, int(match.group(1))) - 1)] if starts else rois[0]
                if obj.endswith(bus_suffix):
                    if body.startswith(RECEIVE) and REFUSED_BUSY not in body and SNOOP_FILTER not in body:
                        packet = PACKET.search(body)
                        if packet and packet.group(1) not in rules.not_requests:
                            step = -1 if REFUSED_RETRY in body else 1
                            roi.traffic(int(packet.group(2), 16) & mask).requests += step
                    continue
                level = CACHE_LEVEL.search(obj)
                if level is None or level.group(1) != rules.snooped_level:
                    continue
                hit = SNOOP_HIT.match(body)
                if hit:
                    states = STATE.findall(body)
                    if states and states[0] != INVALID:
                        snooped[obj] = int(hit.group(1), 16) & mask
                elif body.startswith(NEW_STATE) and obj in snooped:
                    line = snooped.pop(obj)
                    states = STATE.findall(body)
                    if states and states[0] == INVALID:
                        roi.traffic(line).invalidations += 1
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(f"{trace}: not a whole gzip stream after line {number} ({exc})") from None
    return [roi.result() for roi in rois]


def bus_requests_in_stats(stats_text: str, rules: ClassicRules | None = None) -> int | None:
    """The bus's accepted requests of the counted commands, from stats.txt's transDist (None: no such stat).

    transDist counts requests and responses by command; a request command
    ends in `Req` (src/mem/packet.cc's command names)."""
    rules = rules or classic_rules()
    counts = [
        int(value)
        for obj, command, value in TRANSDIST.findall(stats_text)
        if obj.endswith(f".{rules.bus}") and command.endswith("Req") and command not in rules.not_requests
    ]
    return sum(counts) if counts else None


def check_against_stats(profiles: list[RoiProfile], stats_text: str) -> str | None:
    """A one-line problem when the profile's requests of a one-ROI run differ from the bus's transDist; None when they agree."""
    expected = bus_requests_in_stats(stats_text)
    if expected is None or len(profiles) != 1:
        return None
    found = profiles[0].total_requests
    return None if found == expected else f"the trace's bus requests ({found}) differ from stats.txt's transDist ({expected})"


def classic_made_from(rules: ClassicRules) -> dict[str, Any]:
    return {"bus": rules.bus, "not_requests": sorted(rules.not_requests), "snooped_level": rules.snooped_level}
