"""From a run folder and a lock name to the chart of one hand-off, as text, SVG and PNG."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from analysis.handoff_chart.chart import Chart, ChartContext, build_chart, messages_in
from analysis.handoff_chart.cpu_requests import cpu_requests
from analysis.handoff_chart.handoff_finder import Handoff, find_handoffs, pick_handoff
from analysis.handoff_chart.messages import reconstruct
from analysis.handoff_chart.protocol_rules import load_rules, rules_file
from analysis.handoff_chart.run_input import line_events, open_run
from analysis.handoff_chart.text_chart import render_text
from analysis.handoff_chart.topology import ruby_topology
from lockstudy.paths import ROOT

DEFAULT_OUT = "handoff-charts"  # inside the run folder
# A CPU at 1 GHz when config.json gives no clock: only the locked-RMW pairing uses it.
FALLBACK_CYCLE_TICKS = 1000
SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class DrawnChart:
    chart: Chart
    handoff: Handoff
    handoff_count: int
    chosen_how: str
    files: tuple[Path, ...]


def chart_for(run_dir: Path, lock_name: str, index: int | None = None, tick: int | None = None) -> tuple[Chart, Handoff, int, str]:
    run = open_run(run_dir, lock_name)
    rules = load_rules(str(run.machine.ruby_protocol))
    events = line_events(run)
    cycle = round(run.machine.ticks_per_second / run.machine.cpu_clock_hz) if run.machine.cpu_clock_hz else FALLBACK_CYCLE_TICKS
    requests = cpu_requests(events, cycle)
    handoffs = find_handoffs(requests, run.lock)
    reconstruction = reconstruct(events, rules)
    counts = [messages_in(reconstruction, handoff) for handoff in handoffs]
    handoff = pick_handoff(handoffs, counts, index, tick, f"lock {run.lock.name!r} ({run.trace})")
    how = "by --index" if index is not None else f"at --tick {tick}" if tick is not None else "median by message count"
    machines = {rules.cpu_cache, rules.home, rules.memory} | {m.receiver.machine for m in reconstruction.messages}
    topology = ruby_topology(run.config, rules, machines)
    context = ChartContext(
        lock=run.lock.name, line=run.line, run_name=run_dir.resolve().name, machine=run.machine_name,
        protocol=rules.protocol, chosen_how=how, handoff_count=len(handoffs),
        ticks_per_second=run.machine.ticks_per_second,
    )  # fmt: skip
    rules_name = str(rules_file(rules.protocol).relative_to(ROOT))
    chart = build_chart(context, handoff, reconstruction, requests, topology, rules_name)
    return chart, handoff, len(handoffs), how


def file_stem(lock_name: str, handoff: Handoff) -> str:
    return f"{SLUG.sub('_', lock_name).strip('_')}-handoff-{handoff.index}"


def draw(run_dir: Path, lock_name: str, index: int | None = None, tick: int | None = None, out: Path | None = None) -> DrawnChart:
    """The chart's three files in `out` (default: the run folder's handoff-charts/)."""
    chart, handoff, count, how = chart_for(run_dir, lock_name, index, tick)
    from analysis.handoff_chart.png_chart import render_png
    from analysis.handoff_chart.svg_chart import render_svg

    out = out or run_dir / DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    stem = out / file_stem(lock_name, handoff)
    text_file, svg_file, png_file = stem.with_suffix(".txt"), stem.with_suffix(".svg"), stem.with_suffix(".png")
    text_file.write_text(render_text(chart))
    svg_file.write_text(render_svg(chart))
    render_png(chart, png_file)
    return DrawnChart(chart, handoff, count, how, (text_file, svg_file, png_file))
