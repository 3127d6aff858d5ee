"""From a run folder and a lock name to the chart of one hand-off, as text, SVG and PNG."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from analysis.handoff_chart import chart_cache
from analysis.handoff_chart.chart_cache import HandoffFacts, Rendered
from analysis.handoff_chart.chart import Chart, ChartContext, build_chart, message_counts
from analysis.handoff_chart.classic_trace import ClassicReader, bus_ports
from analysis.handoff_chart.cpu_requests import CpuRequest, cpu_requests
from analysis.handoff_chart.errors import HandoffInputError
from analysis.handoff_chart.handoff_finder import Handoff, find_handoffs, pick_handoff
from analysis.handoff_chart.line_wiring import line_wiring
from analysis.handoff_chart.messages import Controller, Reconstruction, reconstruct
from analysis.handoff_chart.protocol_rules import load_rules, rules_file
from analysis.handoff_chart.provenance import record_chart
from analysis.handoff_chart.run_input import RESULT_FILE, RUBY, no_trace_error, TracedRun, classic_lines, line_events, open_run
from analysis.handoff_chart.text_chart import render_text
from analysis.handoff_chart.topology import Topology, classic_topology, config_objects, ruby_topology
from analysis.traffic.protocol_trace import SEQUENCER
from lockstudy.files import file_sha256
from lockstudy.paths import ROOT

DEFAULT_OUT = "handoff-charts"  # inside the run folder
# A CPU at 1 GHz when config.json gives no clock: only the locked-RMW pairing uses it.
FALLBACK_CYCLE_TICKS = 1000


OK = "ok"  # result.json's status of a run that finished


@dataclass(frozen=True)
class DrawnChart:
    facts: HandoffFacts
    text: str  # the text chart
    files: tuple[Path, ...]  # .txt, .svg, .png
    from_cache: bool  # taken from the trace cache, not drawn again


CLASSIC_NOTE = (
    "The classic trace prints each request, response and snoop that hits where it arrives; a snoop that misses is not "
    "printed (CacheVerbose), so the bus's broadcast to caches without the line is not drawn; memory prints nothing, so "
    "its responses start at the bus. Senders: the bus's ports (config.json) and each cache's last send."
)


@dataclass(frozen=True)
class _Traced:
    """A run's requests and messages on the lock's line, read by its memory system's reader."""

    requests: list[CpuRequest]
    reconstruction: Reconstruction
    topology: Topology
    memory_system: str
    inference_note: str


def _ruby(run: TracedRun) -> _Traced:
    rules = load_rules(str(run.machine.ruby_protocol))
    events = line_events(run)
    cycle = round(run.machine.ticks_per_second / run.machine.cpu_clock_hz) if run.machine.cpu_clock_hz else FALLBACK_CYCLE_TICKS
    wiring = line_wiring(run.machine, run.config, run.line, rules.named_by, cycle)
    reconstruction = reconstruct(events, rules, wiring)
    touching = {Controller(e.machine, e.version) for e in events if e.machine != SEQUENCER}
    rules_name = str(rules_file(rules.protocol).relative_to(ROOT))
    note = f"Ruby's trace prints each message's arrival; its sender and send are inferred with {rules_name}."
    return _Traced(cpu_requests(events, cycle), reconstruction, ruby_topology(wiring, rules, touching), f"Ruby {rules.protocol}", note)


def _classic(run: TracedRun) -> _Traced:
    reader = ClassicReader(run.line, run.line_bytes, bus_ports(config_objects(run.config)))
    for line in classic_lines(run):
        reader.read(line)
    reader.finish()
    return _Traced(reader.requests, reader.result, classic_topology(run.machine.num_cpus), "classic caches", CLASSIC_NOTE)


def chart_for(run_dir: Path, lock_name: str, index: int | None = None, tick: int | None = None) -> tuple[Chart, Handoff, int, str]:
    return chart_of(open_run(run_dir, lock_name), run_dir, index, tick)


def chart_of(run: TracedRun, run_dir: Path, index: int | None = None, tick: int | None = None) -> tuple[Chart, Handoff, int, str]:
    """chart_for on a run already opened."""
    traced = _ruby(run) if run.machine.hierarchy == RUBY else _classic(run)
    handoffs = find_handoffs(traced.requests, run.lock)
    counts = message_counts(traced.reconstruction, handoffs)
    handoff = pick_handoff(handoffs, counts, index, tick, f"lock {run.lock.name!r} ({run.trace})")
    how = "by --index" if index is not None else f"at --tick {tick}" if tick is not None else "median by message count"
    context = ChartContext(
        lock=run.lock.name, line=run.line, run_name=run_dir.resolve().name, machine=run.machine_name,
        memory_system=traced.memory_system, chosen_how=how, handoff_count=len(handoffs),
        ticks_per_second=run.machine.ticks_per_second, message_counts=tuple(counts),
    )  # fmt: skip
    chart = build_chart(context, handoff, traced.reconstruction, traced.requests, traced.topology, traced.inference_note)
    if run.result.get("status") != OK:
        note = f"This run ended {run.result.get('status')}: {run.result.get('reason')}; its ROI ended first, and its trace is whole."
        chart = replace(chart, notes=(*chart.notes, note))
    return chart, handoff, len(handoffs), how


def file_stem(lock_name: str, handoff_index: int) -> str:
    return f"{chart_cache.lock_slug(lock_name)}-handoff-{handoff_index}"


def _drawn(run: TracedRun, run_dir: Path, index: int | None, tick: int | None) -> tuple[Rendered, HandoffFacts]:
    """Draw the chart: its text, its SVG and its PNG (painted into a scratch file, matplotlib writes files)."""
    from analysis.handoff_chart.png_chart import render_png
    from analysis.handoff_chart.svg_chart import render_svg

    chart, handoff, count, how = chart_of(run, run_dir, index, tick)
    with tempfile.TemporaryDirectory(prefix="lockstudy-chart-") as scratch:
        png_file = Path(scratch) / "chart.png"
        render_png(chart, png_file)
        png = png_file.read_bytes()
    arrows = chart.arrows
    facts = HandoffFacts(
        lock=run.lock.name, handoff=handoff.index, handoffs=count, chosen=how, from_cpu=handoff.releaser, to_cpu=handoff.acquirer,
        messages=len(arrows), between_nodes=sum(arrow.crosses_nodes for arrow in arrows), ticks=(handoff.start, handoff.end),
        ns=round(chart.ns(handoff.end), 1),
    )  # fmt: skip
    return Rendered(render_text(chart), render_svg(chart), png, file_sha256(run.trace)), facts


def draw(run_dir: Path, lock_name: str, index: int | None = None, tick: int | None = None, out: Path | None = None) -> DrawnChart:
    """The chart's three files in `out` (default: the run folder's handoff-charts/).

    A chart drawn before from the same trace, run result, hand-off choice and
    code is taken from the trace cache (chart_cache.py) instead of drawn again;
    so is one that a run restored from the run archive brought with it."""
    run = open_run(run_dir, lock_name, trace_required=False)
    out = out or run_dir / DEFAULT_OUT
    where = chart_cache.folder(lock_name, index, tick)
    made = chart_cache.made_from(run.trace, run.folder / RESULT_FILE, lock_name, index, tick)
    found = chart_cache.kept(run.trace, made, where)
    if found is None and not run.trace.is_file():
        raise no_trace_error(run_dir, run.trace, run.machine.hierarchy)
    try:
        if found is None:
            rendered, facts = _drawn(run, run_dir, index, tick)
            chart_cache.keep(run.trace, made, where, rendered, facts)
        else:
            rendered, facts = found
        stem = out / file_stem(lock_name, facts.handoff)
        text_file, svg_file, png_file = stem.with_suffix(".txt"), stem.with_suffix(".svg"), stem.with_suffix(".png")
        out.mkdir(parents=True, exist_ok=True)
        text_file.write_text(rendered.text)
        svg_file.write_text(rendered.svg)
        png_file.write_bytes(rendered.png)
        record_chart(out, run.folder, rendered.trace_sha256, run.result, stem.name, facts.as_json())
    except OSError as exc:
        raise HandoffInputError(f"{exc.filename or out}: cannot write the chart: {exc.strerror or exc}") from None
    return DrawnChart(facts, rendered.text, (text_file, svg_file, png_file), from_cache=found is not None)
