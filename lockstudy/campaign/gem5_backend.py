"""The measurement backend: a run is gem5 restoring a shared boot checkpoint.

Checkpoints live in the campaign's folder, one per boot identity: machine,
size, kernel build, boot arguments, and the identities of the kernel build,
the image, the machine file and the gem5 version. A different kernel gives
a different key, so a checkpoint is never reused across kernels; one whose
completion record does not match is rebuilt. The first run that needs a
checkpoint builds it while holding its lock; the others wait for it.

Each gem5 process is measured (host seconds, peak resident memory: see
measured.py): a boot's costs go into its checkpoint's record, a run's into
its result ("costs"), which `run.sh costs collect` gathers for the cost
model.

Every gem5 process runs under the disk guard (disk_guard.py): a run whose
file system falls below the floor of free space is stopped, its partial
trace deleted, and it ends "stopped" (redone by the next launch).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Any

from lockstudy import gem5 as gem5_finder
from lockstudy.campaign import artifacts, disk_guard
from lockstudy.campaign.backends import Outcome, check_run_specs, register
from lockstudy.campaign.machines import gem5_for_machine
from lockstudy.campaign.measured import MeasuredProcess, run_measured
from lockstudy.campaign.spec import RunSpec, digest
from lockstudy.campaign.store import read_json, write_json_atomically
from lockstudy.paths import ROOT
from lockstudy.publish import TRACE
from lockstudy.validation.run_limits import AFTER_ROI_OPTION, STUCK_LIMIT_FIELD

RUN_SCRIPT = ROOT / "gem5-configs" / "run.py"
CPUINFO = "/proc/cpuinfo"


def checkpoint_identity(spec: RunSpec, gem5: gem5_finder.Gem5Info) -> dict[str, object]:
    return {
        **spec.boot_identity(),
        "kernel_build_id": artifacts.kernel(spec.kernel_build, "vmlinux").identity,
        "image": artifacts.disk_image().identity,
        "machine_file": artifacts.machine_file(spec.machine).identity,
        "gem5_version": gem5.version,
        "gem5_protocol": gem5.ruby_protocol,
        "gem5_extras": gem5.as_provenance()["extras"],
    }


def run_script_argv(gem5: gem5_finder.Gem5Info, outdir: Path, options: list[str]) -> list[str]:
    """gem5 running gem5-configs/run.py with `options`, its outputs (and gem5's m5out) in `outdir`."""
    return [str(gem5.path), "-d", str(outdir / "m5out"), str(RUN_SCRIPT), *options, "--outdir", str(outdir)]


def gem5_argv(gem5: gem5_finder.Gem5Info, spec: RunSpec, outdir: Path) -> list[str]:
    return run_script_argv(gem5, outdir, [
        "--machine", spec.machine, f"--{spec.size_unit}", str(spec.size),
        "--kernel", str(artifacts.kernel(spec.kernel_build, "vmlinux").path),
        "--image", str(artifacts.disk_image().path),
        "--boot", " ".join(spec.boot),
        "--cpu", spec.cpu_model,
    ])  # fmt: skip


def host_cpu_model() -> str:
    """The host's CPU model as /proc/cpuinfo names it ("" where there is none)."""
    try:
        for line in Path(CPUINFO).read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return ""


def host_identity() -> dict[str, Any]:
    """What the host a process ran on was: its CPU model and count, and its load as the process ended
    (runs sharing the host's cores take longer). Not its name: results are published."""
    return {"host_cpu_model": host_cpu_model(), "host_cpu_count": os.cpu_count(), "host_load_1min": round(os.getloadavg()[0], 2)}


def cost_record(measured: MeasuredProcess) -> dict[str, Any]:
    return {**measured.as_record(), **host_identity()}


def perturbation_options(spec: RunSpec) -> list[str]:
    """run.py's options for the run's perturbation (none when it has none)."""
    options = []
    if spec.perturb_ns:
        options += ["--perturb-ns", str(spec.perturb_ns)]
    if spec.perturb_start_us:
        options += ["--perturb-start-us", str(spec.perturb_start_us)]
    return [*options, "--perturb-seed", str(spec.perturb_seed)] if options else []


def after_roi_options(spec: RunSpec) -> list[str]:
    """run.py's after-ROI limit when the study sets one ([study.resources] after_roi_ms)."""
    limit = spec.resources.after_roi_ms
    return [] if limit is None else [AFTER_ROI_OPTION, str(limit)]


class DiskStop(RuntimeError):
    """A boot stopped by the disk guard: the run ends "stopped", not failed."""


@register("gem5")
class Gem5Backend:
    name = "gem5"

    def preflight(self, specs: list[RunSpec]) -> None:
        for machine in sorted({spec.machine for spec in specs}):
            try:
                gem5_for_machine(machine)
            except gem5_finder.Gem5Unavailable as exc:
                raise RuntimeError(f"the gem5 backend needs gem5 for machine {machine}: {exc}") from exc
        for spec in specs:
            artifacts.kernel(spec.kernel_build, "vmlinux")
            artifacts.machine_file(spec.machine)
        artifacts.disk_image()
        try:
            disk_guard.load_floor()  # a bad floor is refused now, not in every worker
        except disk_guard.DiskSettingsError as exc:
            raise RuntimeError(f"the disk guard's floor: {exc}") from exc
        check_run_specs(specs)

    def checkpoint(self, spec: RunSpec, gem5: gem5_finder.Gem5Info, campaign_dir: Path,
                   guard: disk_guard.DiskGuard) -> tuple[Path, dict[str, Any] | None]:
        """The run's boot checkpoint, and the boot's costs when this call built it (None when it existed)."""
        identity = checkpoint_identity(spec, gem5)
        key = digest(identity)
        root = campaign_dir / "checkpoints"
        root.mkdir(parents=True, exist_ok=True)
        target = root / key
        record = root / f"{key}.json"
        with open(root / f"{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if target.is_dir() and record.is_file() and read_json(record).get("identity") == identity:
                return target, None
            shutil.rmtree(target, ignore_errors=True)
            building = root / f"{key}.building"
            shutil.rmtree(building, ignore_errors=True)
            # No --run: the boot stops at the checkpoint, before any testcase.
            argv = [*gem5_argv(gem5, spec, building), "--checkpoint-out", str(building / "checkpoint")]
            boot = run_measured(argv, root / f"{key}.log", guard.shortfall, guard.floor.poll_seconds)
            if boot.stopped:
                shutil.rmtree(building, ignore_errors=True)
                raise DiskStop(boot.stopped)
            if boot.returncode != 0:
                raise RuntimeError(f"building boot checkpoint {key} failed (status {boot.returncode}; log {root / f'{key}.log'})")
            building.rename(target)
            costs = cost_record(boot)
            write_json_atomically(record, {"identity": identity, "command": argv, "costs": costs})
        return target, costs

    def run(self, spec: RunSpec, outdir: Path, campaign_dir: Path) -> Outcome:
        gem5 = gem5_for_machine(spec.machine)
        guard = disk_guard.DiskGuard(outdir, disk_guard.load_floor())
        short = guard.shortfall()
        if short:
            return Outcome("stopped", short, {})
        try:
            checkpoint, boot_costs = self.checkpoint(spec, gem5, campaign_dir, guard)
        except DiskStop as stop:
            return Outcome("stopped", f"{stop} (while building the boot checkpoint)", {})
        argv = [
            *gem5_argv(gem5, spec, outdir),
            "--run",
            spec.run,
            "--trace",
            spec.trace,
            "--checkpoint-in",
            str(checkpoint / "checkpoint"),
            *perturbation_options(spec),
            *after_roi_options(spec),
        ]
        measured = run_measured(argv, outdir / "gem5.log", guard.shortfall, guard.floor.poll_seconds)
        status = measured.returncode
        # The boot's costs are here only when this attempt built the checkpoint.
        costs = {"run": cost_record(measured), "checkpoint_built": boot_costs}
        if measured.stopped:
            (outdir / TRACE).unlink(missing_ok=True)  # a partial trace counts for nothing: give the space back
            return Outcome("stopped", f"{measured.stopped}; its partial {TRACE} was deleted", {"command": argv, "costs": costs})
        result_file = outdir / "result.json"
        if not result_file.is_file():
            return Outcome("failed", f"gem5 exited with status {status} and wrote no result.json (see gem5.log)", {"command": argv, "costs": costs})
        result = json.loads(result_file.read_text())
        details = {"command": argv, "checkpoint": str(checkpoint), "gem5_result": str(result_file), "costs": costs}
        if STUCK_LIMIT_FIELD in result:  # the limit a stuck run was stopped under: the store retries it above that
            details[STUCK_LIMIT_FIELD] = result[STUCK_LIMIT_FIELD]
        if result.get("status") != "ok" or status != 0:
            return Outcome("failed", str(result.get("reason") or f"gem5 exited with status {status}"), details)
        return Outcome("ok", "", details)
