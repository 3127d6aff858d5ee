"""One run of a campaign, normalised, with a stable id."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

RUN_ID_HEX_DIGITS = 16


@dataclass(frozen=True)
class Resources:
    """What a run may use on its host; not part of its identity."""

    time_minutes: int
    memory_gb: int
    host_cpus: int
    # Simulated ms the run may go on after an ROI before it counts as stuck
    # (run.py --after-roi-limit-ms); None: gem5-configs/run.toml's after_roi.limit_ms.
    after_roi_ms: int | None = None


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides what a run measures."""

    machine: str
    size: int  # CPUs for a bus machine, nodes for a NUMA machine (see size_unit)
    size_unit: str  # "cpus" or "nodes"
    kernel_build: str
    boot: tuple[str, ...]  # kernel arguments, sorted
    run: str  # the guest's run spec (lockstudy.run=)
    cpu_model: str
    trace: str
    repeat: int
    study: str = field(compare=False)
    resources: Resources = field(compare=False)
    # Perturbation (Alameldeen & Wood, HPCA 2003): every memory access of
    # the ROI gets a uniformly random extra latency in [0, perturb_ns] ns,
    # drawn from gem5's generator seeded with `repeat`; 0 = none.
    perturb_ns: int = 0
    # Perturbation of the ROI's start: the restored run stays on the
    # fast-forward CPU for a random [0, perturb_start_us] us more after its
    # testcase asks for the detailed one (seeded with `repeat`), so that a
    # contended line's hand-offs, which never wait for memory, start from
    # another phase; 0 = none.
    perturb_start_us: int = 0

    @property
    def perturb_seed(self) -> int:
        """The seed of this run's perturbation: its repeat index, so repeats differ and reruns agree."""
        return self.repeat

    def identity(self) -> dict[str, object]:
        """The fields that make the run what it is, in a stable form.

        An unperturbed run's identity has no perturbation field (nor a run
        perturbed one way the other way's), so the ids of runs made before
        a perturbation existed stay what they were."""
        data = asdict(self)
        data.pop("study")
        data.pop("resources")
        for perturbation in ("perturb_ns", "perturb_start_us"):
            if not data[perturbation]:
                data.pop(perturbation)
        data["boot"] = list(self.boot)
        return data

    @property
    def run_id(self) -> str:
        return digest(self.identity())

    def boot_identity(self) -> dict[str, object]:
        """What a boot checkpoint depends on, besides the built artifacts."""
        return {
            "machine": self.machine,
            "size": self.size,
            "size_unit": self.size_unit,
            "kernel_build": self.kernel_build,
            "boot": list(self.boot),
        }

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["boot"] = list(self.boot)
        data["run_id"] = self.run_id
        return data

    @staticmethod
    def from_json(data: dict[str, object]) -> "RunSpec":
        fields = dict(data)
        fields.pop("run_id", None)
        fields["boot"] = tuple(fields["boot"])  # type: ignore[arg-type]
        fields["resources"] = Resources(**fields["resources"])  # type: ignore[arg-type]
        return RunSpec(**fields)  # type: ignore[arg-type]


def digest(data: object) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:RUN_ID_HEX_DIGITS]
