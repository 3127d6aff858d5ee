"""The measurement table results/costs/runs.csv: one row per measured gem5 process.

A row is one gem5 process: a boot to a checkpoint (phase "boot", on the
fast-forward CPU) or a run restored from one (phase "restore", the ROI on
the detailed CPU). Its costs (host seconds, ROI host seconds and simulated
ms, peak resident memory) come with what decides them (machine, CPUs,
nodes, CPU model, trace) and its provenance (gem5 version, machine file
hash, kernel build id, command). `source` says where a row comes from:
"measured" (collected from a run folder) or "issue-report" (a figure an
earlier progress report on an issue published, `source_ref` quoting it);
those stand in until measured rows exist and can then be dropped.

Host seconds are wall time. Where other processes shared the host's cores,
the process had only part of a core and its wall time grew by as much: its
CPU seconds over its wall seconds is that share. The model fits and
predicts time on a core of its own (what a Slurm task is given), the wall
time scaled by that share; a row measured before CPU seconds were recorded
counts its wall time whole.

A malformed table is refused with one line per problem, each naming the
file, its line, the field and the value.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from lockstudy.validation.problems import InputError, Problem, shown

SOURCES = ("measured", "issue-report")
PHASES = ("boot", "restore")
CPU_MODELS = ("atomic", "kvm", "timing", "o3")
TRACES = ("off", "protocol", "classic")
# How a restored run reached its testcase: on the fast-forward CPU (run.py's default since the guest asks
# for the detailed CPU, workloads/m5ops.h), or detailed from the checkpoint on (--restore-detailed, and
# every run before). A boot row has none.
FAST_FORWARD_TO_TESTCASE = "fast-forward"
RESTORED_DETAILED = "detailed"
RESTORES = ("", FAST_FORWARD_TO_TESTCASE, RESTORED_DETAILED)
MS_PER_SECOND = 1000.0


class CostTableError(InputError):
    """runs.csv does not read: one line per problem, `file:line:field: value: what is wrong`."""


@dataclass(frozen=True)
class CostRow:
    source: str
    source_ref: str
    run_id: str  # the campaign run, or the boot checkpoint's key; "" when a note does not name it
    phase: str
    machine: str
    cpus: int
    nodes: int
    guest_memory_mib: float | None
    cpu_model: str
    trace: str
    run_spec: str
    host_seconds: float | None  # the whole gem5 process, wall time
    cpu_seconds: float | None  # its user + system CPU time; empty in rows measured before it was recorded
    roi_host_seconds: float | None
    roi_simulated_ms: float | None
    simulated_seconds: float | None  # the whole process
    peak_rss_mib: float | None
    host_cpu_model: str
    host_cpu_count: int | None
    host_load_1min: float | None  # the host's load as the process ended: other runs sharing its cores slow it
    gem5_version: str
    machine_sha256: str
    kernel_build_id: str
    command: str
    trace_mib: float | None = None  # a traced run's roi.trace.gz; empty when untraced, or in rows collected before it was
    restore: str = ""  # a restored run's RESTORES; empty in a boot row, and in rows collected before the column was

    @property
    def pre_roi(self) -> str:
        """How a restored run reached its testcase (FAST_FORWARD_TO_TESTCASE or RESTORED_DETAILED): the host
        time outside its ROI depends on it. A row without the column is from before fast-forward restores."""
        return FAST_FORWARD_TO_TESTCASE if self.restore == FAST_FORWARD_TO_TESTCASE else RESTORED_DETAILED

    @property
    def traced(self) -> bool:
        return self.trace != "off"

    @property
    def boot_args(self) -> str:
        """The run's boot arguments, sorted, as its command gave them to run.py (`--boot ...`): a lock
        variant chosen at boot changes how much host time a simulated ms costs."""
        words = self.command.split(" ")
        if "--boot" not in words:
            return ""
        arguments = []
        for word in words[words.index("--boot") + 1 :]:
            if word.startswith("--"):
                break
            if word:
                arguments.append(word)
        return " ".join(sorted(arguments))

    @property
    def core_share(self) -> float:
        """The share of a core the process had over its life: CPU seconds / wall seconds (1 when not measured)."""
        if not self.cpu_seconds or not self.host_seconds:
            return 1.0
        return min(1.0, self.cpu_seconds / self.host_seconds)

    @property
    def own_core_seconds(self) -> float | None:
        """Its host seconds on a core of its own: the wall time scaled by its share of a core."""
        return None if self.host_seconds is None else self.host_seconds * self.core_share

    @property
    def roi_host_seconds_per_simulated_ms(self) -> float | None:
        """On a core of its own, like own_core_seconds (the share is the whole process's)."""
        if self.roi_host_seconds is None or not self.roi_simulated_ms:
            return None
        return self.roi_host_seconds * self.core_share / self.roi_simulated_ms

    @property
    def trace_mib_per_simulated_ms(self) -> float | None:
        """The gzip'd trace a traced ROI wrote per simulated ms (what a traced run needs of the disk)."""
        if not self.traced or self.trace_mib is None or not self.roi_simulated_ms:
            return None
        return self.trace_mib / self.roi_simulated_ms

    @property
    def outside_roi_host_seconds(self) -> float | None:
        """A restored run's host seconds outside its ROI (restoring, the guest's set-up, the exit), on a core of its own."""
        if self.host_seconds is None or self.roi_host_seconds is None:
            return None
        return max(0.0, self.host_seconds - self.roi_host_seconds) * self.core_share

    def key(self) -> tuple[str, str, str, str, str, int, str]:
        """What makes a row the same measurement: collecting again replaces it.

        A progress report's rows have no run id; one note gives several sizes."""
        return (self.source, self.source_ref, self.run_id, self.phase, self.machine, self.cpus, self.cpu_model)


COLUMNS = [f.name for f in fields(CostRow)]
REQUIRED_TEXT = {"source": SOURCES, "phase": PHASES, "cpu_model": CPU_MODELS, "trace": TRACES, "restore": RESTORES}
INTEGER_FIELDS = {"cpus", "nodes", "host_cpu_count"}
OPTIONAL_NUMBERS = {"guest_memory_mib", "host_seconds", "cpu_seconds", "roi_host_seconds", "roi_simulated_ms", "simulated_seconds", "peak_rss_mib", "host_load_1min",
                    "trace_mib"}  # fmt: skip
# Columns a table written before they existed lacks: read as empty.
LATER_COLUMNS = {"trace_mib", "restore"}


def _parse_row(path: Path, line: int, raw: dict[str, str], problems: list[str]) -> CostRow | None:
    where = f"{path}:{line}"
    values: dict[str, object] = {}
    before = len(problems)

    def refuse(name: str, value: str, wrong: str, allowed: str = "") -> None:
        problems.append(Problem(where, name, shown(value) if value else "(empty)", wrong, allowed).line())

    for name in COLUMNS:
        text = (raw.get(name) or "").strip()
        if name in REQUIRED_TEXT:
            if text not in REQUIRED_TEXT[name]:
                refuse(name, text, "is not a choice", f"one of {', '.join(REQUIRED_TEXT[name])}")
            values[name] = text
        elif name in INTEGER_FIELDS:
            if not text and name == "host_cpu_count":
                values[name] = None
                continue
            if not text.isdigit() or int(text) < 1:
                refuse(name, text, "is not a positive integer")
            values[name] = int(text) if text.isdigit() else 0
        elif name in OPTIONAL_NUMBERS:
            if not text:
                values[name] = None
                continue
            try:
                number = float(text)
            except ValueError:
                number = -1.0
            if not number >= 0 or number == float("inf"):
                refuse(name, text, "is not a number of zero or more", "or empty when not known")
            values[name] = number
        else:
            values[name] = text
    if not values["machine"]:
        refuse("machine", "", "is required")
    if values["source"] == "measured" and values["host_seconds"] is None:
        refuse("host_seconds", "", "is required in a measured row")
    if len(problems) > before:
        return None
    return CostRow(**values)  # type: ignore[arg-type]


def read_cost_table(path: Path) -> list[CostRow]:
    """The rows of `path` (none when it does not exist); CostTableError naming every bad line and field."""
    if not path.is_file():
        return []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return _read_rows(path, csv.DictReader(handle))
    except UnicodeDecodeError as exc:
        raise CostTableError(Problem(str(path), "", f"byte {exc.start}", "is not UTF-8 text").line()) from None
    except csv.Error as exc:
        raise CostTableError(Problem(str(path), "", shown(str(exc)), "is not CSV").line()) from None


def _read_rows(path: Path, reader: csv.DictReader) -> list[CostRow]:  # type: ignore[type-arg]
    header = reader.fieldnames or []
    missing = [name for name in COLUMNS if name not in header and name not in LATER_COLUMNS]
    if missing:
        raise CostTableError(Problem(f"{path}:1", "header", shown(",".join(header)) if header else "(empty)", f"lacks column(s) {', '.join(missing)}").line())
    problems: list[str] = []
    rows: list[CostRow] = []
    for raw in reader:
        if None in raw:
            extra = len(raw[None])  # type: ignore[index]
            problems.append(Problem(f"{path}:{reader.line_num}", "", f"{len(header) + extra} fields", f"has more fields than the header's {len(header)}").line())
            continue
        row = _parse_row(path, reader.line_num, raw, problems)
        if row is not None:
            rows.append(row)
    if problems:
        raise CostTableError.of(problems)
    return rows


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return str(value)


def sorted_rows(rows: list[CostRow]) -> list[CostRow]:
    return sorted(rows, key=lambda r: (r.source, r.machine, r.phase, r.cpus, r.cpu_model, r.trace, r.run_spec, r.run_id, r.source_ref))


def write_cost_table(path: Path, rows: list[CostRow]) -> None:
    """The table, sorted, rewritten whole (a header alone when there is no row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in sorted_rows(rows):
            data = asdict(row)
            writer.writerow([_cell(data[name]) for name in COLUMNS])
    temporary.replace(path)


def merged(old: list[CostRow], new: list[CostRow]) -> list[CostRow]:
    """`old` with every row of `new` added, replacing a row of the same measurement.

    A figure the new row does not know keeps the old row's value: a run
    restored from the run archive comes without its trace (and a trace may
    be deleted for disk space), so collecting it again must not blank the
    trace size measured while the file was there.
    """
    by_key = {row.key(): row for row in old}
    for row in new:
        before = by_key.get(row.key())
        by_key[row.key()] = row if before is None else kept_where_unknown(row, before)
    return list(by_key.values())


def kept_where_unknown(row: CostRow, before: CostRow) -> CostRow:
    """`row`, with each of its unknown (None) figures taken from `before`, the same measurement collected earlier."""
    known = {field.name: getattr(before, field.name) for field in fields(CostRow)
             if getattr(row, field.name) is None and getattr(before, field.name) is not None}  # fmt: skip
    return replace(row, **known) if known else row
