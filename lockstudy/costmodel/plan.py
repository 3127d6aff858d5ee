"""What a campaign will cost: each run's predicted host time and memory, its Slurm request, the totals.

A run's host time is its restored run's; the boot to its checkpoint is
counted once per checkpoint, not per run. A run already done is not
counted, nor is the boot of a checkpoint one of whose runs is done (that
boot was paid; a rebuilt kernel would need it again, which the dry-run
cannot see without the built artifacts).

A Slurm array task may be the one that builds its checkpoint (the others
wait for it), so its time covers the boot and the run; its memory the
larger of the two. Each resource comes from the model with the margin of
costmodel.toml [slurm], or, when the model cannot predict it, from the
campaign file's explicit limit, which the output names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from lockstudy.campaign.machines import machine_module
from lockstudy.campaign.spec import Resources, RunSpec, digest
from lockstudy.costmodel.model import CostModel, Estimate, NoPrediction, Prediction
from lockstudy.costmodel.settings import SlurmMargin
from lockstudy.costmodel.simulated import SimulatedTime

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
MIB_PER_GIB = 1024.0


@dataclass(frozen=True)
class SlurmRequest:
    """An array task's resources, and where each came from."""

    time_minutes: int
    memory_gb: int
    host_cpus: int
    time_from_model: bool
    memory_from_model: bool

    def resources(self) -> Resources:
        return Resources(self.time_minutes, self.memory_gb, self.host_cpus)

    def sources(self) -> str:
        time = "model" if self.time_from_model else "campaign time_minutes"
        memory = "model" if self.memory_from_model else "campaign memory_gb"
        return f"time: {time}, memory: {memory}"


@dataclass(frozen=True)
class CheckpointCost:
    key: str
    machine: str
    size: int
    size_unit: str
    cpus: int
    kernel_build: str
    boot: tuple[str, ...]
    run_ids: list[str]
    host_seconds: Prediction
    peak_mib: Prediction
    paid: bool  # one of its runs is done: the boot was paid


@dataclass(frozen=True)
class RunCost:
    spec: RunSpec
    cpus: int
    done: bool
    roi_ms: Prediction
    host_seconds: Prediction
    peak_mib: Prediction
    checkpoint: CheckpointCost
    slurm: SlurmRequest
    trace_mib: Prediction | None = None  # a traced run's trace on the disk; None when untraced


@dataclass
class StudyCost:
    """One study's share of what is left, in core-seconds (host seconds times each run's host CPUs)."""

    study: str
    runs: int = 0
    left: int = 0
    run_seconds: float = 0.0
    boot_seconds: float = 0.0
    unpredicted: int = 0
    unpredicted_boots: int = 0
    traced_left: int = 0
    largest_trace_mib: float = 0.0  # the largest predicted trace of its traced runs left
    unpredicted_traces: int = 0


@dataclass(frozen=True)
class CampaignCost:
    runs: list[RunCost]
    checkpoints: list[CheckpointCost]

    def to_do(self) -> list[RunCost]:
        return [run for run in self.runs if not run.done]

    def unpaid_checkpoints(self) -> list[CheckpointCost]:
        return [c for c in self.checkpoints if not c.paid and any(not r.done for r in self.runs if r.checkpoint.key == c.key)]

    def host_seconds(self) -> float:
        """Predicted host seconds of what is left: runs to do and boots not paid, each boot once."""
        runs = sum(r.host_seconds.value for r in self.to_do() if isinstance(r.host_seconds, Estimate))
        boots = sum(c.host_seconds.value for c in self.unpaid_checkpoints() if isinstance(c.host_seconds, Estimate))
        return runs + boots

    def core_seconds(self) -> float:
        """Host seconds times the host CPUs each run and boot holds (its resources' host_cpus)."""
        cpus_of = {r.checkpoint.key: r.spec.resources.host_cpus for r in self.runs}
        runs = sum(r.host_seconds.value * r.spec.resources.host_cpus for r in self.to_do() if isinstance(r.host_seconds, Estimate))
        boots = sum(c.host_seconds.value * cpus_of[c.key] for c in self.unpaid_checkpoints() if isinstance(c.host_seconds, Estimate))
        return runs + boots

    def unpredicted_runs(self) -> list[RunCost]:
        return [r for r in self.to_do() if isinstance(r.host_seconds, NoPrediction)]

    def by_study(self) -> list[StudyCost]:
        """What is left of each study, in the campaign's order: a chunk's size before it is launched.

        A boot not paid is counted with the first study (in campaign order) that has a run
        left in it: launched in that order, that study's runs build the checkpoint."""
        studies: dict[str, StudyCost] = {}
        booted: set[str] = set()
        for run in self.runs:
            study = studies.setdefault(run.spec.study, StudyCost(run.spec.study))
            study.runs += 1
            if run.done:
                continue
            study.left += 1
            if run.trace_mib is not None:
                study.traced_left += 1
                if isinstance(run.trace_mib, Estimate):
                    study.largest_trace_mib = max(study.largest_trace_mib, run.trace_mib.value)
                else:
                    study.unpredicted_traces += 1
            if isinstance(run.host_seconds, Estimate):
                study.run_seconds += run.host_seconds.value * run.spec.resources.host_cpus
            else:
                study.unpredicted += 1
            checkpoint = run.checkpoint
            if not checkpoint.paid and checkpoint.key not in booted:
                booted.add(checkpoint.key)
                if isinstance(checkpoint.host_seconds, Estimate):
                    study.boot_seconds += checkpoint.host_seconds.value * run.spec.resources.host_cpus
                else:
                    study.unpredicted_boots += 1
        return list(studies.values())

    def largest_traces_mib(self, parallel: int) -> float:
        """The disk the `parallel` largest predicted traces of the runs left take at once."""
        sizes = sorted((r.trace_mib.value for r in self.to_do() if isinstance(r.trace_mib, Estimate)), reverse=True)
        return sum(sizes[: max(1, parallel)])

    def unpredicted_checkpoints(self) -> list[CheckpointCost]:
        return [c for c in self.unpaid_checkpoints() if isinstance(c.host_seconds, NoPrediction)]


def cpus_of(spec: RunSpec) -> int:
    """The simulated CPUs of a run (a NUMA machine's size is its nodes)."""
    return int(machine_module().find_machine(spec.machine).instance(spec.size).num_cpus)


def requested_minutes(run_seconds: Prediction, boot_seconds: Prediction, limit_minutes: int, margin: SlurmMargin) -> tuple[int, bool]:
    """The time to ask for a boot and a run: (minutes, whether from the model).

    The predicted host time with the margin when the model predicts both;
    the campaign's time limit when it cannot."""
    if isinstance(run_seconds, Estimate) and isinstance(boot_seconds, Estimate):
        seconds = run_seconds.value + boot_seconds.value
        return math.ceil(seconds / SECONDS_PER_MINUTE * margin.time_factor + margin.time_add_minutes), True
    return limit_minutes, False


def slurm_request(run_seconds: Prediction, boot_seconds: Prediction, run_peak: Prediction, boot_peak: Prediction,
                  limits: Resources, margin: SlurmMargin) -> SlurmRequest:  # fmt: skip
    """Model-derived time and memory with the margin; the campaign's limit for what the model cannot predict."""
    minutes, time_known = requested_minutes(run_seconds, boot_seconds, limits.time_minutes, margin)
    memory_known = isinstance(run_peak, Estimate) and isinstance(boot_peak, Estimate)
    if memory_known:
        peak = max(run_peak.value, boot_peak.value)  # type: ignore[union-attr]
        memory_gb = max(margin.min_memory_gb, math.ceil(peak * margin.memory_factor / MIB_PER_GIB))
    else:
        memory_gb = limits.memory_gb
    return SlurmRequest(minutes, memory_gb, limits.host_cpus, time_known, memory_known)


def trace_prediction(model: CostModel, spec: RunSpec, cpus: int, roi: Prediction) -> Prediction | None:
    """What a traced run's trace takes on the disk (None for an untraced run)."""
    if spec.trace == "off":
        return None
    if isinstance(roi, NoPrediction):
        return roi
    return model.trace_mib(spec.machine, cpus, spec.trace, roi.value, spec.run)


def no_kernel_build_id(_build: str) -> str:
    return ""


def campaign_cost(
    specs: list[RunSpec], model: CostModel, simulated: SimulatedTime, margin: SlurmMargin, is_done: Callable[[RunSpec], bool],
    kernel_build_id: Callable[[str], str] = no_kernel_build_id,
) -> CampaignCost:
    """Each run's and each boot's predicted cost. `kernel_build_id` names the build a kernel build name
    has now ("" when it is not built): a boot's cost, a ROI's length and a window's ROI/window ratio are
    its kernel build's where measured."""
    groups: dict[str, list[RunSpec]] = {}
    for spec in specs:
        groups.setdefault(digest(spec.boot_identity()), []).append(spec)
    done = {spec.run_id: is_done(spec) for spec in specs}
    checkpoints: dict[str, CheckpointCost] = {}
    for key, members in groups.items():
        first = members[0]
        cpus = cpus_of(first)
        checkpoints[key] = CheckpointCost(
            key, first.machine, first.size, first.size_unit, cpus, first.kernel_build, first.boot,
            [s.run_id for s in members],
            model.boot_seconds(first.machine, cpus, kernel_build_id(first.kernel_build)),
            model.peak_memory_mib(first.machine, cpus, "boot"),
            any(done[s.run_id] for s in members),
        )  # fmt: skip
    runs = []
    for spec in specs:
        cpus = cpus_of(spec)
        checkpoint = checkpoints[digest(spec.boot_identity())]
        roi = simulated.roi_ms(spec.machine, cpus, spec.run, spec.cpu_model, kernel_build_id(spec.kernel_build))
        roi_value = roi.value if isinstance(roi, Estimate) else 0.0
        seconds = model.restored_run_seconds(spec.machine, cpus, spec.cpu_model, spec.trace != "off", roi_value, spec.run, " ".join(spec.boot))
        if isinstance(roi, NoPrediction) and isinstance(seconds, Estimate):
            seconds = roi  # the host model could predict: what is missing is the ROI's length
        peak = model.peak_memory_mib(spec.machine, cpus, "restore", spec.run)
        boot_seconds = Estimate(0.0, "checkpoint already built") if checkpoint.paid else checkpoint.host_seconds
        boot_peak = Estimate(0.0, "checkpoint already built") if checkpoint.paid else checkpoint.peak_mib
        request = slurm_request(seconds, boot_seconds, peak, boot_peak, spec.resources, margin)
        trace = trace_prediction(model, spec, cpus, roi)
        runs.append(RunCost(spec, cpus, done[spec.run_id], roi, seconds, peak, checkpoint, request, trace))
    return CampaignCost(runs, list(checkpoints.values()))
