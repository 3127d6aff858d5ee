"""A run folder as the chart needs it: the lock's registry entry, the machine, and its line's trace lines.

A run folder is what gem5-configs/run.py writes (result.json, config.json,
roi.trace.gz with --trace), or a campaign's run folder holding it in out/.
The lock is one of the guest's registry (result.json, the same entries
analysis/traffic/locks.py attributes); its cache line is read from the trace with
analysis/traffic/protocol_trace.py's parser, keeping each line's number in the
file so that a line that does not parse is named.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collections.abc import Iterator

from analysis.gem5_output.config_reader import ConfigError, MachineFacts, machine_facts
from analysis.handoff_chart.classic_trace import NEW_STATE, ClassicLine, deferral_mark, fill_mark, on_line, parse_classic
from analysis.handoff_chart.errors import HandoffInputError
from analysis.traffic.locks import TRACE_FILE, check_symbol_physical, load_static_locks, registered_locks, system_map, system_map_file
from analysis.traffic.protocol_trace import LINE_MARK, Event, TraceFormatError, TracedLock, attribute_trace, parse_line
from analysis.traffic.trace_cache import available, cache_file, code_digest, load, store, trace_identity
from lockstudy.guest_output import parse_console

RESULT_FILE = "result.json"
CONFIG_FILE = "config.json"
BENCH_LOCK_BYTES = 4  # arch_spinlock_t on x86 (the registry prints the bench lock with size 4)
CONSOLE_FILE = "console.log"  # the guest's serial console, as run.py keeps it
CAMPAIGN_OUTPUT = "out"  # a campaign's run folder keeps run.py's outputs here (lockstudy/campaign/worker.py)
RUBY = "ruby"
CLASSIC = "classic"
# The run.py option (and campaign key) that traces a run of each memory system.
TRACE_OPTION = {RUBY: "protocol", CLASSIC: "classic"}
LISTED_LOCKS_MAX = 12  # a registry can be long; the message stays one readable line
LINE_CACHE_FOLDER = "handoff-lines"  # the trace cache's folder for the lines naming one cache line


@dataclass(frozen=True)
class TracedRun:
    folder: Path
    trace: Path
    machine: MachineFacts
    config: dict[str, Any]
    result: dict[str, Any]
    lock: TracedLock
    line: int  # the lock's cache line (its first byte's)
    line_bytes: int

    @property
    def machine_name(self) -> str:
        return str(self.result.get("provenance", {}).get("machine", {}).get("name")
                   or self.result.get("checkpoint", {}).get("machine") or "machine not recorded")  # fmt: skip


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise HandoffInputError(f"{path}: no such file: not a run folder written by gem5-configs/run.py") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HandoffInputError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise HandoffInputError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise HandoffInputError(f"{path}: not a JSON object")
    return data


def outputs_folder(run_dir: Path) -> Path:
    """run_dir itself, or its out/ when it is a campaign's run folder."""
    if not run_dir.is_dir():
        raise HandoffInputError(f"{run_dir}: no such folder")
    inner = run_dir / CAMPAIGN_OUTPUT
    return inner if not (run_dir / CONFIG_FILE).is_file() and (inner / CONFIG_FILE).is_file() else run_dir


def _shown(locks: list[str]) -> str:
    more = len(locks) - LISTED_LOCKS_MAX
    return ", ".join(locks[:LISTED_LOCKS_MAX]) + (f" and {more} more" if more > 0 else "")


def no_trace_error(run_dir: Path, trace: Path, hierarchy: str) -> HandoffInputError:
    """Why a run without its trace cannot be drawn: not traced, or restored with a chart of other code."""
    if available(trace):
        return HandoffInputError(
            f"{run_dir}: no {TRACE_FILE}: this run was restored from the run archive, which keeps no trace, and the chart "
            "it kept was drawn by other code than today's (or for another hand-off); rerun the run to draw it"
        )
    option = TRACE_OPTION.get(hierarchy, TRACE_OPTION[RUBY])
    return HandoffInputError(
        f"{run_dir}: no {TRACE_FILE}: this run was not traced; trace one with gem5-configs/run.py --trace {option}, "
        f"or trace = \"{option}\" in the campaign's [[study]]"
    )


def open_run(run_dir: Path, lock_name: str, trace_required: bool = True) -> TracedRun:
    """Everything but the trace's lines; each missing piece is one line saying what to do.

    trace_required=False opens a run whose trace is gone (restored from the run
    archive): draw.py may find the chart it kept."""
    folder = outputs_folder(run_dir)
    result = _read_json(folder / RESULT_FILE)
    config = _read_json(folder / CONFIG_FILE)
    try:
        machine = machine_facts(config, str(folder / CONFIG_FILE))
    except ConfigError as exc:
        raise HandoffInputError(str(exc)) from None
    trace = folder / TRACE_FILE
    if trace_required and not trace.is_file():
        raise no_trace_error(run_dir, trace, machine.hierarchy)
    locks = registered_locks(result) or console_locks(folder / CONSOLE_FILE) or bench_lock_from_system_map(result)
    if not locks:
        raise HandoffInputError(f"{folder / RESULT_FILE}: no lock registry (the guest printed none): no lock to chart")
    chosen = next((lock for lock in locks if lock.name == lock_name), None)
    line_bytes = machine.line_bytes or 0
    if line_bytes <= 0:
        raise HandoffInputError(f"{folder / CONFIG_FILE}: no cache line size")
    if chosen is None:
        raise HandoffInputError(f"{run_dir}: no lock {lock_name!r} in this run's registry; traced locks: {_shown(traced_lock_names(trace, locks, line_bytes))}")
    return TracedRun(folder, trace, machine, config, result, chosen, chosen.physical - chosen.physical % line_bytes, line_bytes)


def console_locks(console: Path) -> list[TracedLock]:
    """The registry as the guest printed it on its console, when result.json has none (a run stopped while
    printing it, parsed before cut-short registries were kept: lockstudy/guest_output.py)."""
    if not console.is_file():
        return []
    parsed = parse_console(console.read_text(errors="replace"))
    return [TracedLock(lock.name, lock.physical, lock.size) for registry in parsed.locks.values() for lock in registry]


def bench_lock_from_system_map(result: dict[str, Any]) -> list[TracedLock]:
    """The bench lock placed from the booted kernel's System.map, when the guest printed no registry at all (a run
    stopped before it). Every run with a registry checks this very placement (analysis/traffic/locks.py static_locks)."""
    config = load_static_locks()
    map_file = system_map_file(result)
    if map_file is None:
        return []
    physical = check_symbol_physical(system_map(map_file), config)
    return [] if physical is None else [TracedLock(config["check_registry_lock"], physical, BENCH_LOCK_BYTES)]


def traced_lock_names(trace: Path, locks: list[TracedLock], line_bytes: int) -> list[str]:
    """The registered locks the trace has CPU requests on (all registered ones if it has none)."""
    try:
        attribution = attribute_trace(trace, locks, line_bytes)
    except TraceFormatError as exc:
        raise HandoffInputError(str(exc)) from None
    with_requests = sorted({name for name, _line, _kind in attribution.requests if name != "other"})
    return with_requests or sorted(lock.name for lock in locks)


def _is_tick(word: str) -> bool:
    return word.rstrip(":").isdigit()


def _continues_debug_line(text: str, previous_first_word: str) -> bool:
    """An indented line after a classic debug line (`tick: object: text`): the rest of a
    multi-line message, such as an MSHR's target list (src/mem/cache/mshr.cc, MSHR::print)."""
    return text[:1].isspace() and previous_first_word.endswith(":") and _is_tick(previous_first_word)


def _trace_lines(run: TracedRun) -> Iterator[tuple[int, str]]:
    """(number, text) of the trace's non-empty lines; one that does not start with a tick names its file and line.

    The indented lines that continue a classic debug message are skipped: they
    carry no tick and nothing the chart reads.
    """
    number = 0
    previous_first_word = ""
    try:
        with gzip.open(run.trace, "rt", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                words = text.split(maxsplit=1)
                if not words:
                    continue
                if not _is_tick(words[0]):
                    if _continues_debug_line(text, previous_first_word):
                        continue
                    raise HandoffInputError(f"{run.trace}:{number}: not a gem5 trace line (no tick first): {text.strip()[:80]!r}")
                previous_first_word = words[0]
                yield number, text
    except (OSError, EOFError, zlib.error) as exc:
        raise HandoffInputError(f"{run.trace}: not a whole gzip stream after line {number} ({exc})") from None


def _none_on_the_line(run: TracedRun) -> HandoffInputError:
    locks = registered_locks(run.result)
    return HandoffInputError(
        f"{run.trace}: no line about lock {run.lock.name!r} (line {run.line:#x}); traced locks: {_shown(traced_lock_names(run.trace, locks, run.line_bytes))}"
    )


def lines_naming(run: TracedRun) -> list[tuple[int, str]]:
    """The Ruby trace's lines that name the lock's cache line, with their numbers in the file.

    Finding them means reading the whole trace (gigabytes for a kbench run),
    so they are kept in the trace cache (analysis/traffic/trace_cache.py),
    one file per trace and line, made from the trace's identity and this
    module's code: the report's teaching page reads each trace once."""
    made_from = {**trace_identity(run.trace), "line": run.line, "code": code_digest(__file__)}
    kept_in = cache_file(f"{LINE_CACHE_FOLDER}/{run.line:x}", run.trace)
    kept = load(kept_in, made_from)
    if kept is not None and isinstance(kept.get("lines"), list):
        return [(int(number), str(text)) for number, text in kept["lines"]]
    wanted = f"{LINE_MARK}{run.line:x}]"
    found = [(number, text) for number, text in _trace_lines(run) if wanted in text]
    store(kept_in, {"made_from": made_from, "lines": found})
    return found


def line_events(run: TracedRun) -> list[Event]:
    """Every Ruby trace line about the lock's cache line, in file order; a line that is not gem5's names file and line."""
    events: list[Event] = []
    for number, text in lines_naming(run):
        try:
            events.append(parse_line(text))
        except (TraceFormatError, ValueError) as exc:
            raise HandoffInputError(f"{run.trace}:{number}: {exc}") from None
    if not events:
        raise _none_on_the_line(run)
    return events


def classic_lines(run: TracedRun) -> list[ClassicLine]:
    """The classic trace's lines that may concern the lock's line: a packet on it, or a snoop's new state."""
    last = run.line + run.line_bytes - 1
    fill, deferral = fill_mark(run.line), deferral_mark(run.line)
    lines: list[ClassicLine] = []
    touched = False
    for number, text in _trace_lines(run):
        if "[" not in text and NEW_STATE not in text and fill not in text:
            continue
        line = parse_classic(number, text.rstrip("\n"))
        if line is None:
            raise HandoffInputError(f"{run.trace}:{number}: not a gem5 debug line (tick: object: text): {text.strip()[:80]!r}")
        if NEW_STATE in line.text or fill in line.text or deferral in line.text or on_line(line.text, run.line, last):
            lines.append(line)
            touched = touched or NEW_STATE not in line.text
    if not touched:
        raise _none_on_the_line(run)
    return lines

