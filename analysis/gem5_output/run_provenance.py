"""One reader of what made a run: result.json's `provenance` (gem5-configs/run.py).

The report's provenance.json and the hand-off charts' provenance.json both
publish these facts; they read them here, so a field added to a run's
provenance (as `gem5_extras` was) reaches both at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _section(provenance: dict[str, Any], name: str) -> dict[str, Any]:
    value = provenance.get(name)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class RunProvenance:
    gem5_version: str | None
    gem5_extras: dict[str, int] = field(default_factory=dict)
    machine_name: str | None = None
    machine_file: str | None = None
    machine_sha256: str | None = None
    cpus: int | None = None
    nodes: int | None = None
    kernel_build_id: str | None = None
    kernel_sha256: str | None = None
    image_sha256: str | None = None
    roi_cpu: str | None = None
    trace: str | None = None
    run_spec: str | None = None
    command: tuple[str, ...] = ()

    @classmethod
    def of(cls, result: dict[str, Any]) -> RunProvenance:
        """The facts of a run's result.json; a fact it lacks is None (an older run)."""
        p = result.get("provenance")
        p = p if isinstance(p, dict) else {}
        machine, kernel = _section(p, "machine"), _section(p, "kernel")
        return cls(
            gem5_version=p.get("gem5_version"),
            gem5_extras=dict(p.get("gem5_extras") or {}),
            machine_name=machine.get("name"),
            machine_file=machine.get("file"),
            machine_sha256=machine.get("sha256"),
            cpus=machine.get("cpus"),
            nodes=machine.get("nodes"),
            kernel_build_id=_section(kernel, "build_info").get("build_id"),
            kernel_sha256=kernel.get("sha256"),
            image_sha256=_section(p, "image").get("sha256"),
            roi_cpu=p.get("roi_cpu"),
            trace=p.get("trace"),
            run_spec=p.get("run_spec"),
            command=tuple(str(word) for word in p.get("command") or ()),
        )

    def machine_label(self) -> str:
        """"altix-numa, 4 CPUs, 2 nodes": nodes only where there is more than one."""
        nodes = f", {self.nodes} nodes" if (self.nodes or 1) > 1 else ""
        return f"{self.machine_name}, {self.cpus} CPUs{nodes}"

    def machine_file_label(self) -> str:
        """"altix-numa.toml sha256 ...": the file and the content it had."""
        return f"{self.machine_file} sha256 {self.machine_sha256}"
