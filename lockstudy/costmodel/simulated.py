"""How much guest time a run's region of interest (ROI) simulates, before it runs.

gem5's host time is paid per simulated ms, so a run's cost needs its ROI's
simulated time. In order:

1. measured: runs of the same machine, size, run spec and CPU model in
   runs.csv (its measured rows) or in a committed result table (costmodel.toml
   [[simulated_time.measured_tables]]) took this long; gem5 is
   deterministic, so the median of those is the answer;
2. a window: testcases whose ROI is a window of guest time (kbench's
   duration_ms, dbench's seconds) run that long, plus their set-up and
   tear-down: the window times the ROI/window ratio measured for that
   testcase on that machine at the nearest size, or the bare window when
   none was measured;
3. work: testcases whose window is a count of work (costmodel.toml
   [simulated_time.work]: pft's area x iterations, ...): a measured ROI of
   the same testcase on that machine and CPU model at the nearest size,
   doing the same kind of work (costmodel.toml [simulated_time.kinds]:
   samefile's stat() loop is not its mix of calls), times the
   ratio of the work's products;
4. the same spec elsewhere: the same run spec on that machine and CPU
   model at the nearest other size (a calibration chase's work is fixed
   by its spec, and only its latencies change with the size);
5. siblings: a testcase with no work rule, run with other arguments on
   that machine and CPU model at the nearest size: its longest ROI times
   a margin (costmodel.toml [simulated_time.siblings]), for a calibration
   chase at a distance or a footprint not yet measured;
6. otherwise it is not known, and the caller says so.

In 1 and 2, runs of the kernel build the campaign will run are taken when
there are any: a kernel change can move a ROI (the lock bench's threads,
once made inside its ROI, took 1.2-7.9 times its window).
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Iterator

from lockstudy.costmodel.model import Estimate, NoPrediction, Prediction
from lockstudy.costmodel.settings import CostSettings, MeasuredTable
from lockstudy.costmodel.table import MS_PER_SECOND, CostRow
from lockstudy.validation.problems import InputError, Problem

MEASURED_TABLE_COLUMNS = ("run_id", "machine", "cpus", "run_spec", "roi_cpu", "sim_seconds")
# provenance.json names a run's machine as "<file> sha256 <hash>".
PROVENANCE_HASH_MARK = " sha256 "

Key = tuple[str, int, str, str]  # machine, cpus, run spec, CPU model
ANY_BUILD = ""  # a kernel build id not known: runs of every build count


def window_items(run_spec: str) -> list[tuple[str, dict[str, str]]]:
    """The (testcase, parameters) of each '+'-joined item of a run spec (grammar only)."""
    items = []
    for text in run_spec.split("+"):
        name, _, args = text.partition(":")
        params = dict(word.partition("=")[::2] for word in args.split(",") if word)
        items.append((name, params))
    return items


def read_measured_table(table: MeasuredTable) -> list[tuple[Key, float]]:
    """(machine, cpus, run spec, CPU model) and ROI ms of each run of a committed result table.

    A run with several ROIs is their sum; a machine is renamed by its file's
    hash (table.models_renamed) when the provenance names it."""
    if not table.path.is_file():
        return []
    renamed: dict[str, str] = {}
    if table.provenance is not None and table.provenance.is_file():
        runs = json.loads(table.provenance.read_text()).get("runs", {})
        for run_id, record in runs.items():
            _, mark, sha = str(record.get("machine", "")).partition(PROVENANCE_HASH_MARK)
            if mark and sha in table.models_renamed:
                renamed[run_id] = table.models_renamed[sha]
    per_run: dict[str, tuple[Key, float]] = {}
    with open(table.path, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in MEASURED_TABLE_COLUMNS if name not in (reader.fieldnames or [])]
        if missing:
            raise InputError(Problem(f"{table.path}:1", "header", "...", f"lacks column(s) {', '.join(missing)}").line())
        for raw in reader:
            try:
                cpus, seconds = int(raw["cpus"]), float(raw["sim_seconds"])
            except ValueError:
                raise InputError(Problem(f"{table.path}:{reader.line_num}", "cpus/sim_seconds", f"{raw['cpus']}/{raw['sim_seconds']}",
                                         "is not a number").line()) from None  # fmt: skip
            machine = renamed.get(raw["run_id"], raw["machine"])
            key = (machine, cpus, raw["run_spec"], raw["roi_cpu"])
            previous = per_run.get(raw["run_id"], (key, 0.0))[1]
            per_run[raw["run_id"]] = (key, previous + seconds * MS_PER_SECOND)
    return list(per_run.values())


def _nearest_size(by_size: dict[int, list[float]], cpus: int) -> int:
    """The measured size nearest `cpus` on a log scale (the smaller of two as near)."""
    return min(by_size, key=lambda size: (abs(math.log(size / cpus)), size))


def work_ratio(keys: tuple[str, ...], new: dict[str, str], measured: dict[str, str]) -> float | None:
    """The product of `keys` in `new` over that in `measured` (a key `new` lacks is the measured
    run's); None when a value is not a positive number or the measured run lacks a key."""
    ratio = 1.0
    for key in keys:
        if key not in measured:
            return None
        try:
            old, value = float(measured[key]), float(new.get(key, measured[key]))
        except ValueError:
            return None
        if old <= 0 or value <= 0:
            return None
        ratio *= value / old
    return ratio


def same_kind(defaults: dict[str, str], new: dict[str, str], measured: dict[str, str]) -> bool:
    """Whether two runs of a testcase do the same kind of work: every key of `defaults` (a key a spec
    leaves out takes its default) has one value in both."""
    return all(new.get(key, default) == measured.get(key, default) for key, default in defaults.items())


@dataclass
class SimulatedTime:
    """Measured ROI times by (machine, cpus, run spec, CPU model), and the window rules."""

    settings: CostSettings
    measured: dict[Key, list[float]] = field(default_factory=dict)
    sources: dict[Key, str] = field(default_factory=dict)
    by_build: dict[str, dict[Key, list[float]]] = field(default_factory=dict)  # kernel build id -> runs.csv's of it

    @staticmethod
    def gather(rows: list[CostRow], settings: CostSettings) -> "SimulatedTime":
        known = SimulatedTime(settings)
        # Measured rows only: a progress report's ROI times were copied from the tables below.
        for row in rows:
            if row.source == settings.preferred_source and row.phase == "restore" and row.roi_simulated_ms:
                key = (row.machine, row.cpus, row.run_spec, row.cpu_model)
                known.add(key, row.roi_simulated_ms, "runs.csv")
                if row.kernel_build_id:
                    known.by_build.setdefault(row.kernel_build_id, {}).setdefault(key, []).append(row.roi_simulated_ms)
        for table in settings.measured_tables:
            for key, ms in read_measured_table(table):
                known.add(key, ms, table.path.name)
        return known

    def add(self, key: Key, ms: float, source: str) -> None:
        self.measured.setdefault(key, []).append(ms)
        self.sources.setdefault(key, source)

    def roi_ms(self, machine: str, cpus: int, run_spec: str, cpu_model: str, kernel_build_id: str = ANY_BUILD) -> Prediction:
        key = (machine, cpus, run_spec, cpu_model)
        same_build = self.by_build.get(kernel_build_id, {}).get(key)
        if same_build:
            return Estimate(statistics.median(same_build), f"ROI measured: median of {len(same_build)} run(s) of this kernel build (runs.csv)")
        if key in self.measured:
            values = self.measured[key]
            return Estimate(statistics.median(values), f"ROI measured: median of {len(values)} run(s) ({self.sources[key]})")
        total = 0.0
        rules = []
        for testcase, params in window_items(run_spec):
            window = self.window_ms(testcase, params)
            if window is not None:
                ratio, where = self.overhead_ratio(machine, cpus, testcase, kernel_build_id)
                total += window * ratio
                rules.append(f"{testcase} window {window:g} ms x {ratio:.3f} ({where})")
                continue
            scaled = (self.scaled_by_work(machine, cpus, testcase, params, cpu_model)
                      or self.same_spec_elsewhere(machine, cpus, run_spec, cpu_model)
                      or self.siblings(machine, cpus, testcase, cpu_model))  # fmt: skip
            if scaled is None:
                return NoPrediction(
                    f"ROI time unknown: no measured run of {run_spec} on {machine} at any size ({cpu_model}), and {testcase} "
                    "has neither a time window nor a measured run to scale by its work"
                )
            total += scaled[0]
            rules.append(scaled[1])
        return Estimate(total, "ROI: " + "; ".join(rules), fallback=True)

    def _nearest_measured(self, machine: str, cpus: int,
                          by_size_on: Callable[[str | None], dict[int, list[float]]]) -> tuple[list[float], int, str] | None:
        """(the ROI ms at the nearest size, that size, how the rule names a stand-in) from `by_size_on(machine)`,
        else from `by_size_on` the machine's stand-in (costmodel.toml [simulated_time.stand_ins]); None when
        neither has a measured size."""
        for source in (machine, self.settings.stand_ins.get(machine)):
            by_size = by_size_on(source)
            if by_size:
                nearest = _nearest_size(by_size, cpus)
                on = "" if source == machine else f" on {source} (stand-in: none measured on {machine})"
                return by_size[nearest], nearest, on
        return None

    def scaled_by_work(self, machine: str, cpus: int, testcase: str, params: dict[str, str], cpu_model: str) -> tuple[float, str] | None:
        """(ROI ms, the rule) from measured runs of `testcase` on `machine` and `cpu_model` at the nearest
        size, each times the ratio of its work to this spec's (costmodel.toml [simulated_time.work])."""
        keys = self.settings.work.get(testcase)
        if not keys:
            return None
        kinds = self.settings.kinds.get(testcase, {})

        def scaled(source: str | None) -> dict[int, list[float]]:
            by_size: dict[int, list[float]] = {}
            for key_cpus, measured_params, values in self._single_runs(source, testcase, cpu_model):
                if not same_kind(kinds, params, measured_params):
                    continue
                factor = work_ratio(keys, params, measured_params)
                if factor is not None:
                    by_size.setdefault(key_cpus, []).extend(value * factor for value in values)
            return by_size

        found = self._nearest_measured(machine, cpus, scaled)
        if found is None:
            return None
        values, nearest, on = found
        kind = "".join(f", {key}={params.get(key, default)}" for key, default in kinds.items())
        return statistics.median(values), f"{testcase} ROI measured at {nearest} cpus{on}{kind}, scaled by its work ({' x '.join(keys)})"

    def same_spec_elsewhere(self, machine: str, cpus: int, run_spec: str, cpu_model: str) -> tuple[float, str] | None:
        """(ROI ms, the rule) of this very run spec measured on `machine` and `cpu_model` at the nearest other
        size: a testcase whose work is fixed by its spec (a calibration chase) takes about as long at every
        size, apart from the latencies the size changes."""
        found = self._nearest_measured(machine, cpus, lambda source: {
            key_cpus: values for (key_machine, key_cpus, spec, model), values in self.measured.items()
            if (key_machine, spec, model) == (source, run_spec, cpu_model)})  # fmt: skip
        if found is None:
            return None
        values, nearest, on = found
        return statistics.median(values), f"the same spec's ROI measured at {nearest} cpus{on}"

    def siblings(self, machine: str, cpus: int, testcase: str, cpu_model: str) -> tuple[float, str] | None:
        """(ROI ms, the rule) from `testcase` run alone with other arguments on `machine` and `cpu_model`
        at the nearest size: the longest of those ROIs times the settings' margin. An upper guess, for a
        run whose arguments were never measured (a chase at a farther node, a larger footprint)."""
        margin = self.settings.sibling_margin
        if margin is None or testcase in self.settings.work:
            return None  # a testcase with a work rule is scaled by its work or not at all

        def runs(source: str | None) -> dict[int, list[float]]:
            by_size: dict[int, list[float]] = {}
            for key_cpus, _, values in self._single_runs(source, testcase, cpu_model):
                by_size.setdefault(key_cpus, []).extend(values)
            return by_size

        found = self._nearest_measured(machine, cpus, runs)
        if found is None:
            return None
        values, nearest, on = found
        return max(values) * margin, f"{testcase}'s longest ROI with other arguments at {nearest} cpus{on}, x {margin:g}"

    def _single_runs(self, machine: str | None, testcase: str, cpu_model: str | None = None,
                     measured: dict[Key, list[float]] | None = None) -> Iterator[tuple[int, dict[str, str], list[float]]]:
        """(cpus, run-spec parameters, ROI ms) of the measured runs of `machine` whose spec is `testcase`
        alone, of `cpu_model` when one is given (among `measured`: every measured run by default)."""
        for (key_machine, key_cpus, spec, model), values in (self.measured if measured is None else measured).items():
            items = window_items(spec)
            if key_machine == machine and len(items) == 1 and items[0][0] == testcase and cpu_model in (None, model):
                yield key_cpus, items[0][1], values

    def window_ms(self, testcase: str, params: dict[str, str]) -> float | None:
        window = self.settings.windows.get(testcase)
        if window is None or window.key not in params:
            return None
        try:
            return float(params[window.key]) * window.ms_per_unit
        except ValueError:
            return None

    def overhead_ratio(self, machine: str, cpus: int, testcase: str, kernel_build_id: str = ANY_BUILD) -> tuple[float, str]:
        """ROI over window, measured for this testcase on this machine at the nearest size: with this kernel
        build where it was measured at any size, else with any (1.0 when never measured)."""
        same_build = self._ratios_by_size(machine, testcase, self.by_build.get(kernel_build_id, {}))
        by_size = same_build or self._ratios_by_size(machine, testcase, self.measured)
        if not by_size:
            return 1.0, f"no {testcase} ROI measured on {machine}: the bare window"
        nearest = _nearest_size(by_size, cpus)
        which = " with this kernel build" if same_build else ""
        return statistics.median(by_size[nearest]), f"ROI/window measured at {nearest} cpus{which}"

    def _ratios_by_size(self, machine: str, testcase: str, measured: dict[Key, list[float]]) -> dict[int, list[float]]:
        by_size: dict[int, list[float]] = {}
        for key_cpus, params, values in self._single_runs(machine, testcase, measured=measured):
            window = self.window_ms(testcase, params)
            if window:
                by_size.setdefault(key_cpus, []).extend(value / window for value in values)
        return by_size
