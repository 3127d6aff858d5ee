"""Coherence traffic per lock: the kernel's lock registry joined with a run's ROI trace.

A run made with `--trace protocol` (Ruby) has `roi.trace.gz`, the
ProtocolTrace lines of its ROIs only, and its result.json holds the lock
registry the guest printed after each testcase (static locks such as the
bench lock, with the physical address the kernel computed, and the
dynamic ones the testcase asked for). analysis/protocol_trace.py streams
the trace and counts, per registered cache line, every controller event
and every CPU request; this module turns that into two tables:

- `lock_events`: run_id, line, locks (every lock with a byte on that
  line), controller, event, count;
- `lock_summary`: one row per run and lock: the lock's line, its
  invalidations, forwards and home-bank requests, the CPU requests on
  the lock's own bytes, and the requests on the same line for other data
  (false sharing), each also per hand-off when the run is a kbench run.

The trace covers all ROIs of a run; runs with several testcases are
attributed with the union of their registries.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.protocol_trace import TracedLock, attribute_trace
from analysis.runs import Results, RunStats

TRACE_FILE = "roi.trace.gz"
L1 = "L1Cache"
L2 = "L2Cache"
INVALIDATION_EVENTS = ("Inv",)
FORWARD_EVENTS = ("Fwd_GETX", "Fwd_GETS")
HOME_REQUEST_EVENTS = ("L1_GETS", "L1_GETX", "L1_UPGRADE")


def registered_locks(result: dict[str, Any]) -> list[TracedLock]:
    seen: dict[tuple[str, int], TracedLock] = {}
    for entry in result.get("guest", {}).get("results", []):
        for lock in entry.get("locks", []):
            traced = TracedLock(str(lock["name"]), int(lock["physical"], 16), int(lock["size"]))
            seen[(traced.name, traced.physical)] = traced
    return list(seen.values())


def _handoffs(result: dict[str, Any]) -> float:
    total = 0.0
    for entry in result.get("guest", {}).get("results", []):
        data = entry.get("result", {})
        if data.get("testcase") == "kbench":
            total += float(data["counters"]["handoffs"])
    return total


def run_lock_tables(run: RunStats) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(event rows, summary rows) of one run; empty when it has no trace or no registry."""
    trace = run.info.gem5_dir / TRACE_FILE if run.info.gem5_dir else None
    locks = registered_locks(run.info.result)
    if trace is None or not trace.is_file() or not locks:
        return [], []
    line_bytes = int(run.info.result["provenance"]["machine"]["line_bytes"])
    attribution = attribute_trace(trace, locks, line_bytes)
    events: list[dict[str, Any]] = []
    per_line: dict[int, Counter[tuple[str, str]]] = {}
    for (line, controller, _version, event), count in attribution.events.items():
        per_line.setdefault(line, Counter())[(controller, event)] += count
    for line, counts in sorted(per_line.items()):
        names = ", ".join(lock.name for lock in attribution.lock_lines[line])
        for (controller, event), count in sorted(counts.items()):
            events.append({"run_id": run.info.run_id, "line": f"0x{line:x}", "locks": names, "controller": controller, "event": event, "count": count})
    handoffs = _handoffs(run.info.result)
    summary = []
    for lock in locks:
        line = lock.physical - lock.physical % line_bytes
        counts = per_line.get(line, Counter())
        own = sum(n for (holder, on_line, _kind), n in attribution.requests.items() if on_line == line and holder == lock.name)
        other = sum(n for (holder, on_line, _kind), n in attribution.requests.items() if on_line == line and holder != lock.name)
        row = {
            "run_id": run.info.run_id,
            "lock": lock.name,
            "line": f"0x{line:x}",
            "shares_line_with": ", ".join(o.name for o in attribution.lock_lines.get(line, ()) if o.name != lock.name),
            "invalidations": sum(counts[(L1, e)] for e in INVALIDATION_EVENTS),
            "forwards": sum(counts[(L1, e)] for e in FORWARD_EVENTS),
            "home_requests": sum(counts[(L2, e)] for e in HOME_REQUEST_EVENTS),
            "controller_events": sum(counts.values()),
            "requests_own": own,
            "requests_other_on_line": other,
            "handoffs": handoffs,
        }
        for key in ("invalidations", "forwards", "home_requests", "controller_events"):
            row[f"{key}_per_handoff"] = row[key] / handoffs if handoffs else float("nan")
        summary.append(row)
    return events, summary


def lock_tables(results: Results) -> tuple[pd.DataFrame, pd.DataFrame]:
    events: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for run_id in sorted(results.runs):
        more_events, more_summary = run_lock_tables(results.runs[run_id])
        events += more_events
        summary += more_summary
    return pd.DataFrame(events), pd.DataFrame(summary)


def traced_runs(results: Results) -> list[Path]:
    return [run.info.gem5_dir / TRACE_FILE for run in results.runs.values() if run.info.gem5_dir and (run.info.gem5_dir / TRACE_FILE).is_file()]
