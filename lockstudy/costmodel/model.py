"""The cost model: power laws in the simulated CPUs, fitted per group from runs.csv.

Four quantities, each fitted per group on the rows that measure it:

- host seconds per simulated ms of ROI, per (machine, CPU model, traced,
  testcase, boot arguments), per (machine, CPU model, traced, testcase)
  and per (machine, CPU model, traced) over every testcase:
  the detailed simulation, which dominates long runs. The testcase
  matters: a memory stream makes many more coherence events per simulated
  ms than a lock bench whose CPUs spin in their caches, and a lock
  variant chosen at boot moves it too (HBO's 32-CPU pft: 5 times
  test-and-set's);
- host seconds of a restored run outside its ROI, per machine and
  testcase, and per machine over every testcase, each apart for runs
  that fast-forward to their testcase and runs restored detailed
  (CostRow.pre_roi): restoring the checkpoint, the guest's set-up and
  exit;
- host seconds of a boot to a checkpoint, per machine;
- peak resident memory of the gem5 process, per (machine, phase, run
  spec with its thread count left out), per (machine, phase, testcase)
  for a restored run, and per (machine, phase). Within one machine the
  simulated memory follows the size, so the CPUs carry it; the workload
  sets how much guest memory the run touches, which gem5 keeps resident
  (32 threads of pft on altix-numa peak at 3.9 GiB, the machine's restores
  over every testcase at 2.6; a stream of 8 MiB a thread at 5.3 GiB, the
  same stream on one thread at 2.5);
- MiB of gzip'd trace per simulated ms of a traced ROI, per (machine,
  trace kind, testcase) and per (machine, trace kind) over every
  testcase: what a traced run needs of the disk.

A group with at least `min_points` rows at two or more sizes gets its own
fit. A smaller group borrows the slope of its nearest neighbour group that
has a fit (same machine; the other trace state first, then the other CPU
model, then the other phase), scaled through its own points. A group
whose points are all at the size asked for gives their median. Otherwise
there is no prediction, and the caller says so. Every estimate carries
the rule that produced it, which the output prints.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Hashable

from lockstudy.costmodel.powerlaw import FitError, PowerLaw, fit_power_law, fit_power_law_within, scale_to_points
from lockstudy.costmodel.settings import CostSettings
from lockstudy.costmodel.table import FAST_FORWARD_TO_TESTCASE, RESTORED_DETAILED, CostRow

Group = tuple[Hashable, ...]


@dataclass(frozen=True)
class Estimate:
    value: float
    rule: str  # how the value was obtained, for the output
    fallback: bool = False  # True when the group had too few points of its own
    extrapolated: bool = False  # True outside the sizes the fit saw


@dataclass(frozen=True)
class NoPrediction:
    reason: str


Prediction = Estimate | NoPrediction


def group_name(group: Group) -> str:
    return "/".join(str(part) for part in group)


class GroupedLaw:
    """One quantity: a power law per group, with the fallback rule for sparse groups."""

    def __init__(
        self,
        label: str,
        points: dict[Group, list[tuple[float, float]]],
        neighbours: Callable[[Group], list[Group]],
        min_points: int,
    ) -> None:
        self.label = label
        self.points = points
        self.neighbours = neighbours
        self.min_points = min_points
        self.laws: dict[Group, PowerLaw] = {}
        for group, pairs in points.items():
            if len(pairs) >= min_points:
                try:
                    self.laws[group] = fit_power_law([x for x, _ in pairs], [y for _, y in pairs])
                except FitError:
                    pass

    def estimate(self, group: Group, cpus: int) -> Prediction:
        name = group_name(group)
        law = self.laws.get(group)
        if law is not None:
            outside = not law.x_min <= cpus <= law.x_max
            note = f", extrapolated to {cpus} cpus" if outside else ""
            return Estimate(law(cpus), f"{self.label} {name}: {law.describe()}{note}", extrapolated=outside)
        pairs = self.points.get(group, [])
        count = f"{len(pairs)} point(s) (a fit needs {self.min_points} at two or more sizes)"
        at_size = [y for x, y in pairs if x == cpus]
        if at_size and len(at_size) == len(pairs):
            return Estimate(statistics.median(at_size), f"{self.label} {name}: {count}: the median of its {len(at_size)} point(s) at {cpus} cpus", fallback=True)
        if pairs:
            for neighbour in self.neighbours(group):
                if neighbour in self.laws:
                    law = scale_to_points(self.laws[neighbour], [x for x, _ in pairs], [y for _, y in pairs])
                    outside = not law.x_min <= cpus <= law.x_max
                    return Estimate(
                        law(cpus),
                        f"{self.label} {name}: {count}: {group_name(neighbour)}'s slope scaled to its point(s): {law.describe()}",
                        fallback=True,
                        extrapolated=outside,
                    )
        return NoPrediction(f"{self.label} {name}: {count}, and no neighbour group with a fit: no prediction")

    def first_estimate(self, groups: list[Group], cpus: int) -> Prediction:
        """The estimate of the first of `groups`, finest first, that gives one; else the last one's reason."""
        prediction: Prediction = NoPrediction(f"{self.label}: no group asked")
        for group in groups:
            prediction = self.estimate(group, cpus)
            if isinstance(prediction, Estimate):
                return prediction
        return prediction


def _rows_by_source(rows: list[CostRow], settings: CostSettings, group_of: Callable[[CostRow], Group]) -> dict[Group, list[CostRow]]:
    """Rows per group: the preferred source's rows where a group has any, else the stand-in source's."""
    groups: dict[Group, list[CostRow]] = {}
    for row in rows:
        groups.setdefault(group_of(row), []).append(row)
    chosen = {}
    for group, members in groups.items():
        preferred = [row for row in members if row.source == settings.preferred_source]
        chosen[group] = preferred or [row for row in members if row.source == settings.stand_in_source]
    return chosen


def _points(rows: list[CostRow], settings: CostSettings, keep: Callable[[CostRow], bool], group_of: Callable[[CostRow], Group],
            value: Callable[[CostRow], float | None]) -> dict[Group, list[tuple[float, float]]]:  # fmt: skip
    kept = [row for row in rows if keep(row) and value(row) is not None]
    return {
        group: [(float(row.cpus), float(value(row))) for row in members]  # type: ignore[arg-type]
        for group, members in _rows_by_source(kept, settings, group_of).items()
        if members
    }


def _trace_state(traced: bool) -> str:
    return "traced" if traced else "untraced"


def _rate_neighbours(group: Group) -> list[Group]:
    """Every testcase's group of the same kind, then the same testcase's of the other trace state; then
    the other trace state's over every testcase, then the other CPU model's."""
    if len(group) == len(BOOT_GROUP_FIELDS):
        machine, cpu_model, traced, testcase, _boot = group
        return [(machine, cpu_model, traced, testcase), *_rate_neighbours((machine, cpu_model, traced, testcase))]
    machine, cpu_model, traced, testcase = group
    other_model = "o3" if cpu_model == "timing" else "timing"
    other_trace = "untraced" if traced == "traced" else "traced"
    every = [(machine, cpu_model, other_trace, ANY_TESTCASE), (machine, other_model, traced, ANY_TESTCASE), (machine, other_model, other_trace, ANY_TESTCASE)]
    if testcase == ANY_TESTCASE:
        return every
    return [(machine, cpu_model, traced, ANY_TESTCASE), (machine, cpu_model, other_trace, testcase), *every]


def _memory_points(rows: list[CostRow], settings: CostSettings) -> dict[Group, list[tuple[float, float]]]:
    """Peak resident MiB, grouped by machine, phase and a restored run's spec shape (spec_shape), by
    machine, phase and its testcase, and by machine and phase."""
    def value(row: CostRow) -> float | None:
        return row.peak_rss_mib

    def restored(row: CostRow) -> bool:
        return row.phase == "restore"

    by_shape = _points(rows, settings, restored, lambda r: (r.machine, r.phase, SPEC_SHAPE_GROUP, spec_shape(r.run_spec)), value)
    by_testcase = _points(rows, settings, restored, lambda r: (r.machine, r.phase, testcases_of(r.run_spec)), value)
    by_phase = _points(rows, settings, lambda r: True, lambda r: (r.machine, r.phase), value)
    return {**by_shape, **by_testcase, **by_phase}


def _memory_neighbours(group: Group) -> list[Group]:
    """A run spec's group borrows its testcase's slope, then its phase's; a testcase's its phase's;
    a phase's the other phase's."""
    if len(group) == 4:
        machine, phase, _shape, spec = group
        return [(machine, phase, testcases_of(spec)), (machine, phase)]
    if len(group) == 3:
        machine, phase, _testcase = group
        return [(machine, phase)]
    machine, phase = group
    return [(machine, "boot" if phase == "restore" else "restore")]


SPEC_SHAPE_GROUP = "spec"  # marks a memory group of one run spec's shape (spec_shape)
THREADS_PARAMETER = "threads"
ANY_COUNT = "N"


def spec_shape(run_spec: str) -> str:
    """The run spec with its thread counts left out ("pft:threads=N,mb=16"): one workload over the sizes
    of a sweep, where each size runs a thread per CPU. A spec without a thread count keeps its own."""
    items = []
    for item in run_spec.split("+"):
        name, colon, parameters = item.partition(":")
        words = [f"{THREADS_PARAMETER}={ANY_COUNT}" if word.partition("=")[0] == THREADS_PARAMETER else word for word in parameters.split(",")]
        items.append(name + colon + ",".join(words))
    return "+".join(items)


ANY_TESTCASE = "any testcase"  # the outside-ROI group of all a machine's restored runs
BOOT_GROUP_FIELDS = ("machine", "cpu_model", "trace", "testcase", "boot")  # the finest rate group


def testcases_of(run_spec: str) -> str:
    """The testcases a run spec runs, '+'-joined ("kbench", "cal_latency"): what sets the guest's work
    outside the ROI (its set-up and warm-up)."""
    return "+".join(item.partition(":")[0] for item in run_spec.split("+")) if run_spec else ""


def _rate_points(rows: list[CostRow], settings: CostSettings, keep: Callable[[CostRow], bool]) -> dict[Group, list[tuple[float, float]]]:
    """Host s per simulated ms of ROI, grouped with the testcase, and over every testcase."""
    def value(row: CostRow) -> float | None:
        return row.roi_host_seconds_per_simulated_ms

    by_boot = _points(rows, settings, keep, lambda r: (r.machine, r.cpu_model, _trace_state(r.traced), testcases_of(r.run_spec), r.boot_args), value)
    by_testcase = _points(rows, settings, keep, lambda r: (r.machine, r.cpu_model, _trace_state(r.traced), testcases_of(r.run_spec)), value)
    every = _points(rows, settings, keep, lambda r: (r.machine, r.cpu_model, _trace_state(r.traced), ANY_TESTCASE), value)
    return {**by_boot, **by_testcase, **every}


def _outside_points(rows: list[CostRow], settings: CostSettings, keep: Callable[[CostRow], bool]) -> dict[Group, list[tuple[float, float]]]:
    """Host s outside the ROI, grouped by machine, testcase and how the run reached its testcase (CostRow.pre_roi),
    and by machine and that over every testcase."""
    def value(row: CostRow) -> float | None:
        return row.outside_roi_host_seconds

    by_testcase = _points(rows, settings, keep, lambda r: (r.machine, testcases_of(r.run_spec), r.pre_roi), value)
    by_machine = _points(rows, settings, keep, lambda r: (r.machine, ANY_TESTCASE, r.pre_roi), value)
    return {**by_testcase, **by_machine}


def _outside_neighbours(group: Group) -> list[Group]:
    """Every testcase's group of the same restore, then the other restore's (a restored-detailed run spends
    more host time before its ROI than a fast-forward one: an upper bound until the runs come in)."""
    machine, testcase, pre_roi = group
    other = RESTORED_DETAILED if pre_roi == FAST_FORWARD_TO_TESTCASE else FAST_FORWARD_TO_TESTCASE
    same = [] if testcase == ANY_TESTCASE else [(machine, ANY_TESTCASE, pre_roi)]
    return [*same, (machine, testcase, other), (machine, ANY_TESTCASE, other)]


def _trace_points(rows: list[CostRow], settings: CostSettings) -> dict[Group, list[tuple[float, float]]]:
    """Trace MiB per simulated ms of traced ROIs, grouped by machine, trace kind and testcase, and over every testcase."""
    def value(row: CostRow) -> float | None:
        return row.trace_mib_per_simulated_ms

    def traced(row: CostRow) -> bool:
        return row.phase == "restore" and row.traced

    by_testcase = _points(rows, settings, traced, lambda r: (r.machine, r.trace, testcases_of(r.run_spec)), value)
    every = _points(rows, settings, traced, lambda r: (r.machine, r.trace, ANY_TESTCASE), value)
    return {**by_testcase, **every}


def _trace_neighbours(group: Group) -> list[Group]:
    machine, trace, _testcase = group
    return [(machine, trace, ANY_TESTCASE)]


def _boot_points(rows: list[CostRow], settings: CostSettings, keep: Callable[[CostRow], bool]) -> dict[Group, list[tuple[float, float]]]:
    """Host s of a boot, grouped by machine and kernel build, and by machine. A kernel's boot is its
    own: one 6.1 build booted piii-smp in 3 times the host time of the one before it."""
    def value(row: CostRow) -> float | None:
        return row.own_core_seconds

    by_kernel = _points(rows, settings, lambda r: keep(r) and bool(r.kernel_build_id), lambda r: (r.machine, r.kernel_build_id), value)
    by_machine = _points(rows, settings, keep, lambda r: (r.machine,), value)
    return {**by_kernel, **by_machine}


def _boot_neighbours(group: Group) -> list[Group]:
    return [(group[0],)] if len(group) == 2 else []


def _within_build_slopes(boot: GroupedLaw) -> GroupedLaw:
    """Each machine's boot slope taken within its kernel builds: a build booted 3 times slower at one
    size would otherwise bend the slope that its own sparse group borrows."""
    for group in [g for g in boot.points if len(g) == 1 and len(boot.points[g]) >= boot.min_points]:
        builds = [pairs for g, pairs in boot.points.items() if len(g) == 2 and g[0] == group[0]]
        try:
            boot.laws[group] = fit_power_law_within([([x for x, _ in pairs], [y for _, y in pairs]) for pairs in builds])
        except FitError:
            pass
    return boot


@dataclass(frozen=True)
class CostModel:
    roi_rate: GroupedLaw  # host s per simulated ms of ROI
    outside_roi: GroupedLaw  # host s of a restored run outside its ROI
    boot: GroupedLaw  # host s of a boot to a checkpoint
    memory: GroupedLaw  # peak resident MiB
    trace_rate: GroupedLaw  # MiB of trace per simulated ms of a traced ROI

    @staticmethod
    def fit(rows: list[CostRow], settings: CostSettings) -> "CostModel":
        def restored(row: CostRow) -> bool:
            return row.phase == "restore"

        def booted(row: CostRow) -> bool:
            return row.phase == "boot"

        least = settings.min_points
        return CostModel(
            roi_rate=GroupedLaw("host s per simulated ms", _rate_points(rows, settings, restored), _rate_neighbours, least),
            outside_roi=GroupedLaw("host s outside the ROI", _outside_points(rows, settings, restored), _outside_neighbours, least),
            boot=_within_build_slopes(GroupedLaw("boot host s", _boot_points(rows, settings, booted), _boot_neighbours, least)),
            memory=GroupedLaw("peak MiB", _memory_points(rows, settings), _memory_neighbours, least),
            trace_rate=GroupedLaw("trace MiB per simulated ms", _trace_points(rows, settings), _trace_neighbours, least),
        )  # fmt: skip

    def restored_run_seconds(self, machine: str, cpus: int, cpu_model: str, traced: bool, roi_simulated_ms: float, run_spec: str = "",
                             boot_args: str = "") -> Prediction:  # fmt: skip
        """Host seconds of a restored run: outside its ROI + host s per simulated ms x its ROI's ms,
        each its testcase's where measured, else every testcase's on the machine."""
        trace, testcase = _trace_state(traced), testcases_of(run_spec)
        boot = " ".join(sorted(boot_args.split()))
        rate = self.roi_rate.first_estimate(
            [(machine, cpu_model, trace, testcase, boot), (machine, cpu_model, trace, testcase), (machine, cpu_model, trace, ANY_TESTCASE)], cpus
        )
        if isinstance(rate, NoPrediction):
            return rate
        outside = self.outside_roi_seconds(machine, testcase, cpus)
        if isinstance(outside, NoPrediction):
            return outside
        return Estimate(
            outside.value + rate.value * roi_simulated_ms,
            f"{rate.rule}; {outside.rule}",
            fallback=rate.fallback or outside.fallback,
            extrapolated=rate.extrapolated or outside.extrapolated,
        )

    def outside_roi_seconds(self, machine: str, testcase: str, cpus: int) -> Prediction:
        """Host seconds of a restored run outside its ROI. The campaigns' runs fast-forward to their testcase
        (run.py's default); until such runs are measured on a machine, its restored-detailed runs give an
        upper bound, marked as a fallback."""
        fast = self.outside_roi.first_estimate([(machine, testcase, FAST_FORWARD_TO_TESTCASE), (machine, ANY_TESTCASE, FAST_FORWARD_TO_TESTCASE)], cpus)
        if isinstance(fast, Estimate):
            return fast
        detailed = self.outside_roi.first_estimate([(machine, testcase, RESTORED_DETAILED), (machine, ANY_TESTCASE, RESTORED_DETAILED)], cpus)
        if isinstance(detailed, NoPrediction):
            return fast
        return Estimate(
            detailed.value,
            f"{detailed.rule} (no fast-forward restore measured: the restored-detailed runs' time, an upper bound)",
            fallback=True,
            extrapolated=detailed.extrapolated,
        )

    def boot_seconds(self, machine: str, cpus: int, kernel_build_id: str = "") -> Prediction:
        """Host seconds of a boot: its kernel build's where measured (the machine's slope scaled to
        that build's points when it has too few for a fit of its own), else the machine's."""
        if not kernel_build_id:
            return self.boot.estimate((machine,), cpus)
        return self.boot.first_estimate([(machine, kernel_build_id), (machine,)], cpus)

    def peak_memory_mib(self, machine: str, cpus: int, phase: str, run_spec: str = "") -> Prediction:
        """Peak resident MiB of a gem5 process: a restored run's spec's (spec_shape) where measured, else its
        testcase's, else its machine and phase's."""
        if phase != "restore" or not run_spec:
            return self.memory.estimate((machine, phase), cpus)
        groups = [(machine, phase, SPEC_SHAPE_GROUP, spec_shape(run_spec)), (machine, phase, testcases_of(run_spec)), (machine, phase)]
        return self.memory.first_estimate(groups, cpus)

    def trace_mib(self, machine: str, cpus: int, trace: str, roi_simulated_ms: float, run_spec: str = "") -> Prediction:
        """The trace a traced run writes: MiB per simulated ms (its testcase's where measured) x its ROI's ms."""
        testcase = testcases_of(run_spec)
        rate = self.trace_rate.first_estimate([(machine, trace, testcase), (machine, trace, ANY_TESTCASE)], cpus)
        if isinstance(rate, NoPrediction):
            return rate
        return Estimate(rate.value * roi_simulated_ms, rate.rule, fallback=rate.fallback, extrapolated=rate.extrapolated)
