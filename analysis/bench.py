"""`./run.sh bench analysis`: reading 1,000 runs' stats; attributing a trace.

Generates run folders (analysis/synthetic.py) of the machines and sizes
in lockstudy/data/bench.toml [analysis], then times discovering and
reading them (goal: <= 10 s), building the tidy table and writing it as
Parquet. Then generates a gzip'd Ruby ProtocolTrace (gem5's line format,
a share of its lines on registered locks' lines) and times the per-lock
attribution (goal: >= 1 M lines/s), and times one hand-off chart drawn
and then taken from the cache. Prints the figures and writes
build/bench/analysis.json.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from analysis import synthetic
from analysis.gem5_output.runs import load_results
from analysis.gem5_output.tidy import stats_table
from analysis.traffic.protocol_trace import Event, TracedLock, attribute_trace, format_line
from analysis.traffic.trace_attribution import TraceJob, attribute_all
from lockstudy.commands.bench import settings, write_report
from lockstudy.paths import CACHE_VARIABLE, ROOT, build_dir

# The committed traced run the tests draw too: a 2-node kbench ROI with its lock registry.
CHART_RUN = ROOT / "tests" / "fixtures" / "gem5" / "altix-numa-2-kbench"
CHART_LOCK = "bench:lock"


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def generate(root: Path, config: dict[str, Any]) -> dict[str, int]:
    """The run folders; returns lines per dump for each machine."""
    lines: dict[str, int] = {}
    templates: dict[tuple[str, int], list[Path]] = {}
    for variant in range(config["variants"]):
        for name, count in config["machines"]:
            folder = root / "templates" / f"{name}-{count}-{variant}"
            dumps = synthetic.write_run(folder, name, count, config["rois_per_run"], seed=variant)
            lines[f"{name}-{count}"] = len(dumps[0].lines)
            templates.setdefault((name, count), []).append(folder)
    machines = [tuple(m) for m in config["machines"]]
    for number in range(config["runs"]):
        name, count = machines[number % len(machines)]
        source = templates[(name, count)][number % config["variants"]]
        run = root / "runs" / f"run{number:04d}"
        run.mkdir(parents=True)
        for file in ("stats.txt", "config.json", "result.json"):
            os.link(source / file, run / file)
    return lines


TRACE_MACHINES = (("L1Cache", "Load", "I>IS"), ("L2Cache", "L1_GETX", "MT>MT_MB"), ("L1Cache", "Fwd_GETX", "M>I"), ("Directory", "Fetch", "I>IM"))


def trace_bench(root: Path, config: dict[str, Any]) -> dict[str, Any]:
    """Lines per second of the per-lock attribution on a generated trace."""
    line_bytes = config["trace_line_bytes"]
    locks = [TracedLock(f"lock{i}", 0x1000000 + i * 4096, 4) for i in range(config["trace_locks"])]
    every = round(1 / config["trace_lock_share"])
    path = root / "trace.txt.gz"
    with gzip.open(path, "wt", compresslevel=1) as handle:
        for number in range(config["trace_lines"]):
            machine, event, transition = TRACE_MACHINES[number % len(TRACE_MACHINES)]
            if number % every == 0:
                address = locks[number % len(locks)].physical
            else:
                address = 0x40000000 + (number * line_bytes) % (1 << 28)
            line = address - address % line_bytes
            handle.write(format_line(Event(1000 * number, number % 8, machine, event, transition, address, line, "")) + "\n")
    started = time.monotonic()
    result = attribute_trace(path, locks, line_bytes)
    seconds = time.monotonic() - started
    rate = result.lines_read / seconds
    verdict = "within" if rate >= config["goal_trace_lines_per_s"] else "UNDER"
    print(f"    attributed {result.lines_read:,} trace lines ({result.lines_on_locks:,} on lock lines) in {seconds:.2f} s: "
          f"{rate:,.0f} lines/s ({verdict} the {config['goal_trace_lines_per_s']:,} lines/s goal)")
    first_s, kept_s = cached_trace_bench(root, TraceJob("bench", path, tuple(locks), line_bytes))
    print(f"    a report's attribution of that trace: {first_s:.2f} s the first time, {kept_s:.3f} s once kept "
          f"({first_s / kept_s:,.0f} times faster; analysis/traffic/trace_attribution.py)")
    return {"trace_lines": result.lines_read, "trace_lines_on_locks": result.lines_on_locks, "trace_s": round(seconds, 2),
            "trace_lines_per_s": round(rate), "trace_report_first_s": round(first_s, 2), "trace_report_kept_s": round(kept_s, 3)}  # fmt: skip


@contextlib.contextmanager
def private_cache(root: Path) -> Iterator[None]:
    """The trace cache in root/cache for the block, so that a first reading is a first reading."""
    before = os.environ.get(CACHE_VARIABLE)
    os.environ[CACHE_VARIABLE] = str(root / "cache")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_VARIABLE)
        else:
            os.environ[CACHE_VARIABLE] = before


def cached_trace_bench(root: Path, job: TraceJob) -> tuple[float, float]:
    """Seconds of attribute_all() on one trace: read and kept, then reused (a cache of its own)."""
    timings = []
    with private_cache(root):
        for _ in range(2):
            started = time.monotonic()
            attribute_all([job], processes=1)
            timings.append(time.monotonic() - started)
    return timings[0], timings[1]


def chart_bench(root: Path) -> dict[str, Any]:
    """Seconds to draw the committed traced run's median hand-off: drawn, then kept (analysis/handoff_chart/chart_cache.py)."""
    from analysis.handoff_chart.draw import draw

    timings = []
    with private_cache(root):
        for attempt in range(2):
            started = time.monotonic()
            drawn = draw(CHART_RUN, CHART_LOCK, out=root / f"charts-{attempt}")
            timings.append(time.monotonic() - started)
    first_s, kept_s = timings
    print(f"    a hand-off chart ({drawn.facts.messages} messages, {CHART_RUN.relative_to(ROOT)}): {first_s:.2f} s drawn, "
          f"{kept_s:.3f} s once kept ({first_s / kept_s:,.0f} times faster; a kbench trace of the report takes minutes to draw)")
    return {"chart_first_s": round(first_s, 2), "chart_kept_s": round(kept_s, 3)}


def main() -> int:
    config = settings("analysis")
    figures: dict[str, Any] = {"runs": config["runs"], "cpus_here": os.cpu_count()}
    scratch_parent = build_dir() / "bench"
    scratch_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="analysis-", dir=scratch_parent) as scratch:
        root = Path(scratch)
        started = time.monotonic()
        lines = generate(root, config)
        figures["generate_s"] = round(time.monotonic() - started, 2)
        figures["lines_per_dump"] = lines
        for name, count in lines.items():
            print(f"    {name}: {count:,} stat lines per dump (generated)")
        load_before = os.getloadavg()[0]
        cpu_before = _cpu_seconds()
        started = time.monotonic()
        results, errors = load_results(root / "runs")
        read = time.monotonic() - started
        read_cpu = _cpu_seconds() - cpu_before
        if errors:
            print(f"bench: {len(errors)} generated runs did not read, e.g. {errors[0][1]}", file=sys.stderr)
            return 1
        runs = list(results.runs.values())
        total_lines = sum(len(d) for r in runs for d in r.dumps)
        started = time.monotonic()
        table = stats_table(runs)
        table_s = time.monotonic() - started
        started = time.monotonic()
        table.to_parquet(root / "stats.parquet", index=False)
        parquet_s = time.monotonic() - started
        figures.update(trace_bench(root, config))
        figures.update(chart_bench(root))
    figures.update(
        read_s=round(read, 2),
        read_cpu_s=round(read_cpu, 2),
        read_cpu_ms_per_run=round(1000 * read_cpu / max(1, len(runs)), 1),
        load_average_before=load_before,
        values_read=total_lines,
        values_per_s=round(total_lines / read),
        table_s=round(table_s, 2),
        parquet_s=round(parquet_s, 2),
        goal_read_s=config["goal_read_s"],
    )
    verdict = "within" if read <= config["goal_read_s"] else "OVER"
    print(f"    read {len(runs)} runs ({total_lines:,} values) in {read:.2f} s: {total_lines / read:,.0f} values/s "
          f"({verdict} the {config['goal_read_s']:.0f} s goal, {os.cpu_count()} CPUs)")
    print(f"    CPU time of the read {read_cpu:.1f} s (all processes); load average before: {load_before:.1f} "
          "(other work on the machine slows the wall-clock figure)")
    print(f"    tidy table {table_s:.2f} s ({len(table):,} rows), Parquet {parquet_s:.2f} s")
    print(f"\nfigures: {write_report('analysis', figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
