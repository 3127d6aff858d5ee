"""The calibration testcases' ROIs as measurements: one named cost per row, in its unit.

Input: the metrics table (analysis/traffic/metrics.py: one row per run and ROI,
with the testcase's JSON measures as `metrics.<name>` columns) and, per
run, the machine facts of its config.json (the CPU clock, the caches).
Each calibration testcase (workloads/README.md, "The calibration suite")
gives one or more measurements:

  cal_latency   l1_hit, l2_hit (working set within the L1D / within the
                largest cache), else memory_local or memory_remote_d<D>
  cal_c2c       c2c_<dirty|clean>_local (both CPUs on one node) or
                c2c_<dirty|clean>_remote_d<D>
  cal_rmw       rmw_<op>, rmw_extra_<op> (over the unlocked op), op =
                lock_xadd, lock_cmpxchg
  cal_contend   contended_rmw_<N>cpus: the line's time per RMW
  cal_stream    stream_local, stream_remote_d<D> (one copy), stream_<N>copies

D is the kernel's distance between the two nodes. A run on a CPU model
other than the timing CPU has it appended: "rmw_lock_xadd (o3)".

The guest times in TSC ticks, which gem5 advances once per CPU cycle; ns
and MB/s come from the run's CPU clock in config.json, not from the
guest's own estimate of the TSC rate.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pandas as pd

from analysis.calibration.published import PublishedFile
from analysis.gem5_output.config_reader import MachineFacts
from analysis.gem5_output.runs import Results

TESTCASE_PREFIX = "cal_"
METRIC = "metrics."
DEFAULT_CPU = "timing"
NS_PER_S = 1e9
BYTES_PER_MB = 1e6
# config.json cache paths: the L1 data caches, and caches off the data path.
L1D_PATH = re.compile(r"(?i)(^|\.)l1d|l1dcache")
OFF_DATA_PATH = re.compile(r"(?i)iocache|l1i")
RMW_OPS = ("lock_xadd", "lock_cmpxchg")
COLUMNS = ["machine", "kind", "size", "size_count", "measurement", "family", "quantity", "value", "run_id"]


class CalibrationError(ValueError):
    """A calibration ROI that cannot be read as a measurement; the message names the run."""


@dataclass(frozen=True)
class RunFacts:
    clock_hz: float
    l1d_bytes: int
    largest_cache_bytes: int


def run_facts(machine: MachineFacts, run_id: str) -> RunFacts:
    data_caches = [c for c in machine.caches if not OFF_DATA_PATH.search(c.path)]
    l1d = [c.size_bytes for c in data_caches if L1D_PATH.search(c.path)]
    if not machine.cpu_clock_hz or not l1d:
        raise CalibrationError(f"run {run_id}: config.json gives no CPU clock or no L1 data cache")
    return RunFacts(float(machine.cpu_clock_hz), min(l1d), max(c.size_bytes for c in data_caches))


@dataclass(frozen=True)
class Measure:
    measurement: str
    family: str
    quantity: str  # "cycles" or "bytes_per_cycle"
    value: float


def _metric(row: pd.Series, name: str) -> float:
    value = row.get(METRIC + name, math.nan)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise CalibrationError(f"run {row['run_id']} ROI {row['roi']} ({row['testcase']}): no metrics.{name} in its JSON")
    return float(value)


def _where(row: pd.Series, cpu_node: str, mem_node: str) -> str:
    """local when both are on one node (or the kernel has no NUMA), else remote_d<distance>."""
    a, b = _metric(row, cpu_node), _metric(row, mem_node)
    if b < 0 or a == b:
        return "local"
    return f"remote_d{int(_metric(row, 'distance'))}"


def latency(row: pd.Series, facts: RunFacts) -> Iterator[Measure]:
    working_set = _metric(row, "working_set_bytes")
    if working_set <= facts.l1d_bytes:
        name, family = "l1_hit", "l1_hit"
    elif working_set <= facts.largest_cache_bytes:
        name, family = "l2_hit", "l2_hit"
    else:
        name, family = f"memory_{_where(row, 'cpu_node', 'mem_node')}", "memory"
    yield Measure(name, family, "cycles", _metric(row, "cycles_per_load"))


def c2c(row: pd.Series, facts: RunFacts) -> Iterator[Measure]:
    state = "dirty" if _metric(row, "dirty") else "clean"
    yield Measure(f"c2c_{state}_{_where(row, 'reader_node', 'owner_node')}", "c2c", "cycles", _metric(row, "cycles"))


def rmw(row: pd.Series, facts: RunFacts) -> Iterator[Measure]:
    for op in RMW_OPS:
        yield Measure(f"rmw_{op}", "rmw", "cycles", _metric(row, f"cycles_{op}"))
        yield Measure(f"rmw_extra_{op}", "rmw", "cycles", _metric(row, f"extra_cycles_{op}"))


def contend(row: pd.Series, facts: RunFacts) -> Iterator[Measure]:
    yield Measure(f"contended_rmw_{int(row['copies'])}cpus", "contended_rmw", "cycles", _metric(row, "cycles_per_rmw"))


def stream(row: pd.Series, facts: RunFacts) -> Iterator[Measure]:
    copies = int(row["copies"])
    name = f"stream_{_where(row, 'cpu_node', 'mem_node')}" if copies == 1 else f"stream_{copies}copies"
    yield Measure(name, "stream", "bytes_per_cycle", _metric(row, "bytes_per_cycle"))


MEASURES: dict[str, Callable[[pd.Series, RunFacts], Iterator[Measure]]] = {
    "cal_latency": latency,
    "cal_c2c": c2c,
    "cal_rmw": rmw,
    "cal_contend": contend,
    "cal_stream": stream,
}


def size_of(row: pd.Series) -> tuple[str, int]:
    """The machine size as the campaign names it: nodes on a NUMA machine, CPUs on a bus."""
    if str(row["kind"]).endswith("numa"):
        return f"{int(row['nodes'])} nodes", int(row["nodes"])
    return f"{int(row['cpus'])} CPUs", int(row["cpus"])


def calibration_rois(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty or "testcase" not in table:
        return table.iloc[0:0]
    return table[table["testcase"].astype(str).str.startswith(TESTCASE_PREFIX)]


def calibration_run_ids(table: pd.DataFrame) -> set[str]:
    return set(calibration_rois(table)["run_id"]) if not table.empty else set()


def measured_rows(table: pd.DataFrame, facts: dict[str, RunFacts]) -> pd.DataFrame:
    """One row per measurement of every calibration ROI, in the guest's quantity."""
    rows: list[dict[str, Any]] = []
    for _, row in calibration_rois(table).iterrows():
        measure = MEASURES.get(str(row["testcase"]))
        if measure is None:
            raise CalibrationError(f"run {row['run_id']}: testcase {row['testcase']!r} is not a calibration measurement this analysis knows")
        size, count = size_of(row)
        cpu = row.get("roi_cpu")
        cpu = cpu if isinstance(cpu, str) and cpu else DEFAULT_CPU
        for m in measure(row, facts[row["run_id"]]):
            name = m.measurement if cpu == DEFAULT_CPU else f"{m.measurement} ({cpu})"
            rows.append(dict(zip(COLUMNS, [row["machine"], row["kind"], size, count, name, m.family, m.quantity, m.value, row["run_id"]])))
    return pd.DataFrame(rows, columns=COLUMNS)


def convert(value: float, quantity: str, unit: str, clock_hz: float) -> float:
    """A guest quantity in a table unit at the run's CPU clock."""
    if quantity == "cycles" and unit == "cycles":
        return value
    if quantity == "cycles" and unit == "ns":
        return value * NS_PER_S / clock_hz
    if quantity == "bytes_per_cycle" and unit == "MB/s":
        return value * clock_hz / BYTES_PER_MB
    raise CalibrationError(f"cannot express {quantity} in {unit}")


def in_units(rows: pd.DataFrame, facts: dict[str, RunFacts], published: PublishedFile) -> pd.DataFrame:
    """Each measurement in its table unit: the published row's, else its family's."""
    if rows.empty:
        return rows.assign(unit=pd.Series(dtype=str), measured=pd.Series(dtype=float))
    units, measured = [], []
    for _, row in rows.iterrows():
        match = published.lookup(row["machine"], row["measurement"])
        unit = match.unit if match is not None else published.unit_of(row["family"])
        units.append(unit)
        measured.append(convert(row["value"], row["quantity"], unit, facts[row["run_id"]].clock_hz))
    return rows.assign(unit=units, measured=measured)


def facts_of(results: Results, run_ids: set[str]) -> dict[str, RunFacts]:
    return {run_id: run_facts(results.runs[run_id].machine, run_id) for run_id in sorted(run_ids)}
