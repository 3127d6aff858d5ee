"""Rows of runs.csv from run folders: `run.sh costs collect RESULTS_DIR`.

RESULTS_DIR is a campaign's folder (runs/, checkpoints/) or a folder of
them. A restored run gives a row when its result is ok: the costs the
worker measured (result.json "costs": host seconds and peak memory of the
gem5 process) with what run.py recorded (ROI host seconds, simulated
seconds, provenance). A boot gives a row from its checkpoint's record and
run.py's result of the boot. Runs finished before the worker measured
costs still give host seconds (run.py's own) with no peak memory.

Paths of this machine never reach the table: the command is rewritten as
`run.sh publish` rewrites a published run (`<repo>`, `<run>`, ...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lockstudy.costmodel.table import FAST_FORWARD_TO_TESTCASE, MS_PER_SECOND, RESTORED_DETAILED, CostRow
from lockstudy.publish import TRACE, placeholders, replace_paths

# gem5's tick is 1 ps unless a config changes it; run.py now records the
# value (ticks_per_second), older results did not.
GEM5_DEFAULT_TICKS_PER_SECOND = 10**12
BYTES_PER_MIB = 1024 * 1024
MEASURED = "measured"
BUILDING_SUFFIX = ".building"
ELSEWHERE = "<elsewhere>"


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object of a file, or None when it is missing or damaged (a run still being written)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def guest_memory_mib(machine: dict[str, Any]) -> float | None:
    ranges = machine.get("node_memory_ranges") or []
    try:
        return sum(int(end, 16) - int(start, 16) for start, end in ranges) / BYTES_PER_MIB or None
    except (TypeError, ValueError):
        return None


def roi_figures(gem5: dict[str, Any]) -> tuple[float | None, float | None]:
    """Host seconds and simulated ms of a run's finished ROIs, summed."""
    spans = [pair for pair in gem5.get("roi_host_seconds") or [] if len(pair) == 2 and pair[1] >= 0]
    host = sum(end - begin for begin, end in spans) if spans else None
    if gem5.get("roi_simulated_seconds"):
        simulated = sum(gem5["roi_simulated_seconds"]) * MS_PER_SECOND
    else:
        ticks_per_ms = gem5.get("ticks_per_second", GEM5_DEFAULT_TICKS_PER_SECOND) / MS_PER_SECOND
        ticks = [end - begin for begin, end in gem5.get("roi_ticks") or [] if end >= 0]
        simulated = sum(ticks) / ticks_per_ms if ticks else None
    return host, simulated


def portable_command(gem5: dict[str, Any], folder: Path, campaign: Path) -> str:
    """run.py's command with this machine's paths as placeholders; any other absolute path keeps only its name."""
    provenance = gem5.get("provenance", {})
    command = " ".join(str(word) for word in provenance.get("command") or [])
    # A boot ran in <key>.building, renamed to <key> once its checkpoint was whole.
    extra = [(str(folder.resolve()) + BUILDING_SUFFIX, "<run>"), (str(campaign.resolve()), "<campaign>")]
    command = replace_paths(command, placeholders(folder, gem5) + extra)
    return " ".join(f"{ELSEWHERE}/{Path(word).name}" if word.startswith("/") else word for word in command.split(" "))


def restore_of(provenance: dict[str, Any]) -> str:
    """How a restored run reached its testcase: run.py records the fast-forward CPU of a restore that used one."""
    return FAST_FORWARD_TO_TESTCASE if provenance.get("fast_forward") else RESTORED_DETAILED


def trace_mib(folder: Path, trace: str) -> float | None:
    """The size of a traced run's trace (None when untraced or the file is gone)."""
    path = folder / TRACE
    if trace == "off" or not path.is_file():
        return None
    return path.stat().st_size / BYTES_PER_MIB


def row_of(source_ref: str, run_id: str, phase: str, gem5: dict[str, Any], folder: Path, campaign: Path, costs: dict[str, Any]) -> CostRow:
    provenance = gem5.get("provenance", {})
    machine = provenance.get("machine", {})
    build_info = (provenance.get("kernel") or {}).get("build_info") or {}
    roi_host, roi_ms = roi_figures(gem5) if phase == "restore" else (None, None)
    cpu_model = provenance.get("roi_cpu") if phase == "restore" else provenance.get("fast_forward") or "atomic"
    trace = str(provenance.get("trace", "off")) if phase == "restore" else "off"
    return CostRow(
        source=MEASURED,
        source_ref=source_ref,
        run_id=run_id,
        phase=phase,
        machine=str(machine.get("name", "")),
        cpus=int(machine.get("cpus", 0)),
        nodes=int(machine.get("nodes", 1)),
        guest_memory_mib=guest_memory_mib(machine),
        cpu_model=str(cpu_model),
        trace=trace,
        run_spec=str(provenance.get("run_spec") or "") if phase == "restore" else "",
        host_seconds=costs.get("host_seconds", gem5.get("host_seconds")),
        cpu_seconds=costs.get("cpu_seconds"),
        roi_host_seconds=roi_host,
        roi_simulated_ms=roi_ms,
        simulated_seconds=gem5.get("simulated_seconds"),
        peak_rss_mib=costs.get("peak_rss_mib"),
        host_cpu_model=str(costs.get("host_cpu_model", "")),
        host_cpu_count=costs.get("host_cpu_count"),
        host_load_1min=costs.get("host_load_1min"),
        gem5_version=str(provenance.get("gem5_version", "")),
        machine_sha256=str(machine.get("sha256", "")),
        kernel_build_id=str(build_info.get("build_id", "")),
        command=portable_command(gem5, folder, campaign),
        trace_mib=trace_mib(folder, trace),
        restore=restore_of(provenance) if phase == "restore" else "",
    )


def campaign_folders(results: Path) -> list[Path]:
    """`results` itself when it is a campaign's folder, else the campaign folders in it."""
    if (results / "runs").is_dir() or (results / "checkpoints").is_dir():
        return [results]
    return sorted(p for p in results.iterdir() if p.is_dir() and ((p / "runs").is_dir() or (p / "checkpoints").is_dir()))


def collect_rows(results: Path) -> list[CostRow]:
    """Every measured boot and restored run of the campaign folders under `results`."""
    rows = []
    for campaign in campaign_folders(results):
        for result_file in sorted(campaign.glob("runs/*/result.json")):
            result = read_json(result_file)
            gem5 = read_json(result_file.parent / "out" / "result.json")
            if not result or not gem5 or result.get("status") != "ok" or gem5.get("status") != "ok":
                continue
            if not gem5.get("provenance", {}).get("checkpoint_in"):
                continue  # not a restored run: its host time mixes a boot and a ROI
            run_id = result_file.parent.name
            costs = (result.get("costs") or {}).get("run") or {}
            rows.append(row_of(f"{campaign.name}/runs/{run_id}", run_id, "restore", gem5, result_file.parent / "out", campaign, costs))
        for record_file in sorted(campaign.glob("checkpoints/*.json")):
            record = read_json(record_file)
            key = record_file.stem
            gem5 = read_json(record_file.with_suffix("") / "result.json")
            if not record or not gem5 or gem5.get("status") != "ok":
                continue
            rows.append(row_of(f"{campaign.name}/checkpoints/{key}", key, "boot", gem5, record_file.with_suffix(""), campaign, record.get("costs") or {}))
    return rows
