"""hotlines.csv: the top lines of every traced ROI, named, and each traced study's lines summed.

Each run with `roi.trace.gz` on a Ruby machine is profiled once
(traces.py: a pool of processes, the profiles cached per trace). Names
(symbols.py) are given here, afterwards: a System.map that appears later
names lines without a rescan.

A bus-machine run (classic caches) traced with `--trace classic`
(gem5's Cache, CoherentXBar and SnoopFilter debug lines, not
ProtocolTrace) is profiled from those lines (classic.py), and its
requests are checked against the bus's own transDist in stats.txt; a
mismatch is listed in `notes`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from analysis.gem5_output.result_schema import is_number
from analysis.gem5_output.runs import CONFIG_FILE, STATS_FILE, Results, RunStats
from analysis.hotlines import symbols
from analysis.hotlines.classic import check_against_stats
from analysis.hotlines.device_space import load_device_spaces
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.fields import layouts_for, slab_fields, variable_fields
from analysis.hotlines.profile import RoiProfile
from analysis.hotlines.rules import load_rules
from analysis.hotlines.traces import CLASSIC, HotlineJob, profile_all
from analysis.traffic import trace_cache
from analysis.traffic.locks import TRACE_FILE, load_static_locks, registered_locks, static_locks, system_map_file
from analysis.traffic.metrics import study_of, variant_of
from analysis.traffic.protocol_trace import TracedLock
from lockstudy.guest_output import MemoryRange
from lockstudy.kernel.layout.store import StructLayouts
from lockstudy.run_spec import RunSpecError, parse_run_spec

RUBY = "ruby"
COLUMNS = ["study", "config", "rank", "line", "symbol", "offset", "fields", "requests", "invalidations", "crossings", "share", "requests_per_op"]


@dataclass(frozen=True)
class RunNamer:
    """Names the lines of one run: its kernel's System.map (if still there), its registered locks, each ROI's
    memory map, and its kernel's struct layouts (the fields of a slab or variable line)."""

    line_bytes: int
    symbol_table: symbols.SymbolTable | None
    locks: tuple[TracedLock, ...]
    memory: tuple[symbols.MemoryMap | None, ...] = ()  # by ROI (testcase index); None: the guest printed none
    layouts: StructLayouts | None = None

    def _memory(self, roi: int) -> symbols.MemoryMap | None:
        return self.memory[roi] if roi < len(self.memory) else None

    def name(self, line: int, roi: int = 0) -> tuple[str, int | None]:
        return symbols.symbolise(line, self.line_bytes, self.symbol_table, self.locks, self._memory(roi))

    def fields(self, line: int, roi: int = 0) -> str:
        """The registers of a device line, else the fields of the slab object or kernel variable on it
        ("" when none are known: device_space.py, fields.py)."""
        registers = load_device_spaces().registers_on(line, self.line_bytes)
        if registers:
            return registers
        memory = self._memory(roi)
        return slab_fields(self.layouts, memory, line, self.line_bytes) or variable_fields(self.layouts, self.symbol_table, memory, line, self.line_bytes)


def memory_maps(result: dict[str, Any], where: str) -> tuple[symbols.MemoryMap | None, ...]:
    """Each testcase's memory map from result.json (None for a testcase without one: an older kernel); `where` names the file."""
    maps: list[symbols.MemoryMap | None] = []
    for index, entry in enumerate(result.get("guest", {}).get("results", [])):
        ranges = entry.get("memory")
        try:
            maps.append(symbols.MemoryMap.of([MemoryRange.from_list(r) for r in ranges]) if ranges else None)
        except (TypeError, ValueError) as exc:
            raise HotlinesError(f"{where}: guest.results[{index}].memory: {exc}") from None
    return tuple(maps)


@dataclass
class HotlineTables:
    """hotlines.csv's rows, every ROI's profile (for the report's per-study tables) and what was not profiled."""

    rows: pd.DataFrame
    profiles: dict[tuple[str, int], RoiProfile] = field(default_factory=dict)
    namers: dict[str, RunNamer] = field(default_factory=dict)  # run id -> its namer
    labels: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)  # (run, roi) -> (study, config)
    ops: dict[tuple[str, int], float] = field(default_factory=dict)  # (run, roi) -> the guest's operations (kbench: acquisitions)
    notes: list[str] = field(default_factory=list)


def hotline_job(run: RunStats) -> HotlineJob | str | None:
    """The run's job; a note (str) when it has a trace this profile cannot read; None when it has no trace."""
    trace = run.info.gem5_dir / TRACE_FILE if run.info.gem5_dir else None
    if trace is None or not trace_cache.available(trace):
        return None
    hotline_rules = load_rules()
    if run.machine.hierarchy == RUBY and run.machine.ruby_protocol not in hotline_rules.protocols:
        return (f"run {run.info.run_id}: Ruby protocol {run.machine.ruby_protocol} has no hot-line rules yet "
                f"(analysis/data/hotlines.toml has {', '.join(sorted(hotline_rules.protocols))}): not profiled")  # fmt: skip
    result = run.info.result
    machine = result.get("provenance", {}).get("machine", {})
    return HotlineJob(
        key=run.info.run_id,
        trace=trace,
        config=run.info.gem5_dir / CONFIG_FILE,  # type: ignore[operator]
        protocol=str(run.machine.ruby_protocol) if run.machine.hierarchy == RUBY else CLASSIC,
        line_bytes=int(run.machine.line_bytes or machine.get("line_bytes")),
        roi_starts=tuple(int(begin) for begin, _end in result.get("roi_ticks", []) or []),
        cpu_to_node=tuple(int(node) for node in machine.get("cpu_to_node", []) or []),
    )


def guest_ops(result: dict[str, Any], roi: int) -> float:
    """The guest's operations in a ROI (its testcase's `ops`; kbench: acquisitions of the bench lock), NaN if none."""
    guests = result.get("guest", {}).get("results", [])
    value = guests[roi].get("result", {}).get("ops") if roi < len(guests) else None
    return float(value) if is_number(value) else math.nan


def _spec_items(run_spec: Any) -> list[str]:
    """The run spec's items as text, one per ROI ([] without a readable spec)."""
    if not isinstance(run_spec, str) or not run_spec:
        return []
    try:
        return [item.text() for item in parse_run_spec(run_spec)]
    except RunSpecError:
        return []


def run_labels(run: RunStats, rois: int) -> list[tuple[str, str]]:
    """(study, config) of each ROI: the campaign study, and the configuration as a reader names it."""
    result = run.info.result
    provenance = result.get("provenance", {})
    machine = provenance.get("machine", {})
    guests = [entry.get("result", {}) for entry in result.get("guest", {}).get("results", [])]
    boot = " ".join(provenance.get("boot_args", []) or [])
    build = provenance.get("kernel", {}).get("build_info", {}).get("build")
    items = _spec_items(provenance.get("run_spec"))
    labels = []
    for roi in range(rois):
        guest = guests[roi] if roi < len(guests) else {}
        # the ROI's whole run-spec item: two placements or windows of one testcase are two configurations
        testcase = items[roi] if roi < len(items) else str(guest.get("testcase", "?"))
        parts = [f"{machine.get('name', '?')} {machine.get('cpus', run.machine.num_cpus)} CPUs", variant_of(result, guest), testcase]
        if build:
            parts.append(f"kernel {build}")
        if boot:
            parts.append(boot)
        parts.append(f"run {run.info.run_id}" + (f" ROI {roi}" if rois > 1 else ""))
        labels.append((study_of(run), ", ".join(parts)))
    return labels


def hotline_tables(results: Results, processes: int | None = None) -> HotlineTables:
    """hotlines.csv's rows (top csv_top_lines of every traced ROI) and the profiles behind them."""
    hotline_rules = load_rules()
    jobs, notes = [], []
    for run_id in sorted(results.runs):
        job = hotline_job(results.runs[run_id])
        if isinstance(job, str):
            notes.append(job)
        elif job is not None:
            jobs.append(job)
    tables = HotlineTables(pd.DataFrame(columns=COLUMNS), notes=notes)
    rows: list[dict[str, Any]] = []
    image_base = int(load_static_locks()["kernel_image_base"])
    all_profiles = profile_all(jobs, processes)
    for job in jobs:
        run = results.runs[job.key]
        if job.key not in all_profiles:
            tables.notes.append(trace_cache.left_out_note(job.key, "profiled"))
            continue
        registered = registered_locks(run.info.result)
        map_file = system_map_file(run.info.result)
        symbol_table = symbols.read_system_map(map_file, image_base) if map_file is not None else None
        namer = tables.namers[job.key] = RunNamer(
            job.line_bytes,
            symbol_table,
            tuple(registered + static_locks(run.info.result, registered)),
            memory_maps(run.info.result, str(run.info.gem5_dir / "result.json") if run.info.gem5_dir else run.info.run_id),
            layouts_for(run.info.result),
        )
        profiles = all_profiles[job.key]
        if job.protocol == CLASSIC and run.info.gem5_dir is not None and (run.info.gem5_dir / STATS_FILE).is_file():
            problem = check_against_stats(profiles, (run.info.gem5_dir / STATS_FILE).read_text())
            if problem:
                tables.notes.append(f"run {run.info.run_id}: {problem}")
        for roi, ((study, config), roi_profile) in enumerate(zip(run_labels(run, len(profiles)), profiles)):
            tables.profiles[(job.key, roi)] = roi_profile
            tables.labels[(job.key, roi)] = (study, config)
            ops = tables.ops[(job.key, roi)] = guest_ops(run.info.result, roi)
            for rank, traffic in enumerate(roi_profile.ranked()[: hotline_rules.csv_top_lines], 1):
                name = namer.name(traffic.line, roi)
                rows.append(
                    {
                        "study": study,
                        "config": config,
                        "rank": rank,
                        "line": f"0x{traffic.line:x}",
                        "symbol": name[0],
                        "offset": name[1],
                        "fields": namer.fields(traffic.line, roi),
                        "requests": traffic.requests,
                        "invalidations": traffic.invalidations,
                        "crossings": traffic.crossings,
                        "share": roi_profile.share(traffic),
                        "requests_per_op": traffic.requests / ops if ops > 0 else math.nan,
                    }
                )
    if rows:
        tables.rows = pd.DataFrame(rows, columns=COLUMNS).astype({"offset": "Int64"})
    return tables


K = TypeVar("K")
RUN_PART = re.compile(r", run \S+(?: ROI \d+)?$")


def configuration_of(config: str) -> str:
    """A ROI's configuration as a reader names it, without the run that measured it: repeats share it."""
    return RUN_PART.sub("", config)


def traced_groups(tables: HotlineTables) -> list[tuple[str, str]]:
    """(study, configuration) of every traced ROI, once each, sorted: a profile is of one configuration's
    ROIs (two kernel builds or placements summed would hide the very difference a traced pair is for)."""
    return sorted({(study, configuration_of(config)) for study, config in tables.labels.values()})


def _study_sums(
    tables: HotlineTables, group: tuple[str, str], key_of: Callable[[str, int, int], K]
) -> tuple[dict[K, Counter[str]], dict[K, set[int]], int, list[tuple[str, int]]]:
    """Over the group's traced ROIs (one study's, of one configuration): each key's summed counts (requests,
    invalidations, crossings, rois) and its lines, where key_of(run id, roi, line) keys a line; the group's
    total requests; its (run id, roi) pairs."""
    keys = [key for key, (study, config) in tables.labels.items() if (study, configuration_of(config)) == group]
    summed: dict[K, Counter[str]] = {}
    lines: dict[K, set[int]] = {}
    total = 0
    for run_id, roi in keys:
        roi_profile = tables.profiles[(run_id, roi)]
        total += roi_profile.total_requests
        for traffic in roi_profile.lines.values():
            key = key_of(run_id, roi, traffic.line)
            summed.setdefault(key, Counter()).update(requests=traffic.requests, invalidations=traffic.invalidations, crossings=traffic.crossings, rois=1)
            lines.setdefault(key, set()).add(traffic.line)
    return summed, lines, total, keys


def study_lines(tables: HotlineTables, group: tuple[str, str], top: int) -> tuple[list[dict[str, Any]], int]:
    """The `top` lines over a (study, configuration)'s traced ROIs (a line's counts summed), most requests
    first; and its ROI count.

    Repeats of one configuration restore one boot checkpoint, so a heap
    address is the same object in each of them; a line named differently
    by two runs shows both names.
    """
    summed, _lines, total, keys = _study_sums(tables, group, lambda _run_id, _roi, line: line)
    ops = sum(tables.ops.get(key, math.nan) for key in keys)
    ranked = sorted(summed.items(), key=lambda item: (-item[1]["requests"], -item[1]["invalidations"], -item[1]["crossings"], item[0]))
    out = []
    for line, counts in ranked[:top]:
        named: list[tuple[str, int | None]] = []
        fields: list[str] = []
        for run_id, roi in sorted({(run_id, roi) for run_id, roi in keys if line in tables.profiles[(run_id, roi)].lines}):
            name = tables.namers[run_id].name(line, roi)
            if name not in named:
                named.append(name)
            held = tables.namers[run_id].fields(line, roi)
            if held and held not in fields:
                fields.append(held)
        out.append(
            {
                "line": line,
                "symbol": " / ".join(name for name, _ in named) if named else None,
                "offset": named[0][1] if len(named) == 1 else None,
                "fields": " / ".join(fields),
                "requests": counts["requests"],
                "invalidations": counts["invalidations"],
                "crossings": counts["crossings"],
                "share": counts["requests"] / total if total else 0.0,
                "per_op": counts["requests"] / ops if ops > 0 else math.nan,
                "rois": counts["rois"],
            }
        )
    return out, len(keys)


# Parts of a line's name that tell one instance of an object from another: a CPU, a task's or a process's id.
INSTANCE_PARTS = (re.compile(r" \[cpu \d+\]"), re.compile(r"(?<=^stack:)(.*)/\d+$"), re.compile(r" \(slab tail\)"))
PROCESS_ID = re.compile(r":\d+ ")


def object_of(name: str) -> str:
    """The kind of object a line's name is in: per-CPU copies, tasks' stacks and processes' locks counted as one."""
    parts = []
    for part in name.split(symbols.SEPARATOR):
        part = INSTANCE_PARTS[0].sub("", part)
        part = INSTANCE_PARTS[1].sub(lambda m: m.group(1), part)
        part = INSTANCE_PARTS[2].sub("", part)
        parts.append(PROCESS_ID.sub(":<pid> ", part))
    return symbols.SEPARATOR.join(parts)


def study_objects(tables: HotlineTables, group: tuple[str, str], top: int) -> list[dict[str, Any]]:
    """A (study, configuration)'s `top` objects (object_of each line's name), lines and counts summed over its traced ROIs."""
    summed, lines, total, _keys = _study_sums(tables, group, lambda run_id, roi, line: object_of(tables.namers[run_id].name(line, roi)[0]))
    ranked = sorted(summed.items(), key=lambda item: (-item[1]["requests"], -item[1]["invalidations"], item[0]))
    return [
        {
            "object": kind,
            "lines": len(lines[kind]),
            "requests": counts["requests"],
            "invalidations": counts["invalidations"],
            "crossings": counts["crossings"],
            "share": counts["requests"] / total if total else 0.0,
        }
        for kind, counts in ranked[:top]
    ]

