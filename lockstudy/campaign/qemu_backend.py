"""The functional backend: the same run spec booted under QEMU (TCG).

It boots the kernel build, image and boot arguments a gem5 run would use,
with the machine's CPU count and NUMA layout (lockstudy.numa=, as gem5's
guest gets it), so a campaign can be validated in minutes before it spends
simulation hours. It measures no coherence traffic.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from lockstudy import qemu
from lockstudy.campaign import artifacts
from lockstudy.campaign.backends import Outcome, check_run_specs, register
from lockstudy.campaign.machines import machine_module
from lockstudy.campaign.spec import RunSpec
from lockstudy.guest_output import IncompleteRun, parse_console
from lockstudy.paths import DATA

MIB = 1 << 20
SECONDS_PER_MINUTE = 60


def settings() -> dict[str, Any]:
    with open(DATA / "campaign.toml", "rb") as handle:
        return dict(tomllib.load(handle)["qemu"])


def boot_spec(spec: RunSpec, outdir: Path) -> qemu.QemuBoot:
    config = settings()
    described = machine_module().find_machine(spec.machine)
    machine = described.instance(spec.size)
    args = [config["kernel_args"], *spec.boot, f"lockstudy.run={spec.run}"]
    if described.is_numa:
        args.append(machine.numa_boot_parameter())
    return qemu.QemuBoot(
        kernel=artifacts.kernel(spec.kernel_build, "bzImage").path,
        console_log=outdir / "console.log",
        cpus=len(machine.cpu_to_node()),
        memory_mib=min(machine.memory_bytes // MIB, int(config["max_memory_mib"])),
        kernel_args=" ".join(args),
        disk=artifacts.disk_image().path,
        timeout_seconds=spec.resources.time_minutes * SECONDS_PER_MINUTE,
    )


@register("qemu")
class QemuBackend:
    name = "qemu"

    def preflight(self, specs: list[RunSpec]) -> None:
        artifacts.disk_image()
        check_run_specs(specs)
        # The machine sizes were checked when the campaign loaded (lockstudy/validation/), as for gem5.
        for spec in specs:
            artifacts.kernel(spec.kernel_build, "bzImage")

    def run(self, spec: RunSpec, outdir: Path, campaign_dir: Path) -> Outcome:
        boot = boot_spec(spec, outdir)
        booted = qemu.boot(boot)
        guest = parse_console(booted.console)
        details: dict[str, Any] = {
            "backend": "qemu",
            "command": booted.command,
            "console": str(boot.console_log),
            "qemu": {"accel": booted.accel, "wall_seconds": round(booted.wall_seconds, 3), "exit_status": booted.exit_status,
                     "host_crashes": booted.host_crashes},
            "provenance": {
                "kernel": artifacts.kernel(spec.kernel_build, "bzImage").identity,
                "image": artifacts.disk_image().identity,
                "machine_file": artifacts.machine_file(spec.machine).identity,
            },
            "guest": {
                "done": guest.done.status if guest.done else None,
                "settings": guest.settings,
                "results": [r.data for r in guest.parsed],
                "locks": [[lock.as_dict() for lock in guest.locks.get(i, [])] for i in range(len(guest.parsed))],
                "memory": [[entry.as_list() for entry in guest.memory.get(i, [])] for i in range(len(guest.parsed))],
                "lock_event_counts": [guest.lock_event_counts.get(i) for i in range(len(guest.parsed))],
            },
        }
        if not booted.ok:
            return Outcome("failed", f"QEMU: {booted.describe()}", details)
        try:
            guest.results()
        except IncompleteRun as exc:
            return Outcome("failed", f"guest: {exc}", details)
        return Outcome("ok", "", details)
