"""`run.sh bench gem5`: host cost of booting, restoring and simulating a ROI.

For each machine of lockstudy/data/bench.toml [gem5]: one boot on the
fast-forward CPU that writes a checkpoint, then two restores of it that run
the ROI spec on the detailed CPU, back to back: as the campaigns restore
(fast-forward until the testcase asks for the detailed CPU) and with
--restore-detailed (detailed from the checkpoint on), so that the host time
the first saves before the ROI is measured side by side. The figures come
from run.py's own result.json (host_seconds, roi_host_seconds, roi_ticks),
so they time gem5 and nothing around it. Needs GEM5; without it, says what
is missing.

A chunk (--only) adds its sizes to build/bench/gem5.json: the sizes an
earlier chunk measured stay when they were measured on today's inputs (the
gem5 binary, kernel build, disk image and machine file) with the same ROI,
and each size records when it was measured and the host's load then. A
new/old ratio pairs only two sizes measured in one chunk, back to back.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from lockstudy import gem5 as gem5_finder
from lockstudy.campaign import artifacts
from lockstudy.campaign.gem5_backend import run_script_argv
from lockstudy.campaign.machines import gem5_for_machine, machine_module
from lockstudy.campaign.measured import run_measured
from lockstudy.console import error, step
from lockstudy.image import ext2_path
from lockstudy.kernel.build import kernel_output_dir

TICKS_PER_MS = 10**9  # gem5 ticks are picoseconds


def run_py(gem5: gem5_finder.Gem5Info, outdir: Path, args: list[str]) -> dict[str, Any]:
    """One run.py run; its result.json (raises if gem5 wrote none or it failed)."""
    argv = run_script_argv(gem5, outdir, args)
    outdir.mkdir(parents=True, exist_ok=True)
    measured = run_measured(argv, outdir / "gem5.log")
    result_file = outdir / "result.json"
    if not result_file.is_file():
        raise RuntimeError(f"gem5 exited with status {measured.returncode} and wrote no result.json (see {outdir / 'gem5.log'})")
    result = json.loads(result_file.read_text())
    if result["status"] != "ok":
        raise RuntimeError(f"{' '.join(argv)}\n  failed: {result['reason']} (see {outdir / 'gem5.log'})")
    result["wall_s"] = round(measured.host_seconds, 1)
    result["peak_rss_mib"] = measured.as_record()["peak_rss_mib"]
    result["peak_rss"] = measured.describe_peak()
    return result


def measure(gem5: gem5_finder.Gem5Info, config: dict[str, Any], machine: str, size: int, scratch: Path) -> dict[str, Any]:
    size_option = f"--{machine_module().find_machine(machine).size_option}"
    common = [
        "--machine", machine, size_option, str(size),
        "--kernel", str(kernel_output_dir(config["kernel_build"]) / "vmlinux"), "--image", str(ext2_path()),
    ]  # fmt: skip
    checkpoint = scratch / "checkpoint"
    step(f"{machine} {size_option[2:]}={size}: boot on the fast-forward CPU to a checkpoint")
    boot = run_py(gem5, scratch / "boot", [*common, "--checkpoint-out", str(checkpoint)])
    print(f"    boot {boot['host_seconds']:.0f} s host for {boot['simulated_seconds']:.2f} s simulated, {boot['peak_rss']}")
    restore = [*common, "--checkpoint-in", str(checkpoint), "--cpu", config["roi_cpu"], "--run", config["roi_spec"]]
    step(f"{machine} {size_option[2:]}={size}: restore, fast-forward to the testcase, then {config['roi_spec']} on the {config['roi_cpu']} CPU")
    roi = run_py(gem5, scratch / "roi", restore)
    step(f"{machine} {size_option[2:]}={size}: the same, restored onto the {config['roi_cpu']} CPU (--restore-detailed)")
    detailed = run_py(gem5, scratch / "roi-detailed", [*restore, "--restore-detailed"])
    (roi_begin, roi_end), = roi["roi_host_seconds"]
    (detailed_begin, _), = detailed["roi_host_seconds"]
    (tick_begin, tick_end), = roi["roi_ticks"]
    simulated_ms = (tick_end - tick_begin) / TICKS_PER_MS
    figures = {
        "boot_host_s": boot["host_seconds"],
        "boot_simulated_s": round(boot["simulated_seconds"], 3),
        "restore_to_roi_host_s": roi_begin,
        "roi_host_s": round(roi_end - roi_begin, 1),
        "roi_simulated_ms": round(simulated_ms, 3),
        "host_s_per_simulated_ms": round((roi_end - roi_begin) / simulated_ms, 1),
        "restore_run_host_s": roi["host_seconds"],
        "restore_detailed_to_roi_host_s": detailed_begin,
        "restore_detailed_run_host_s": detailed["host_seconds"],
        "restore_to_roi_detailed_over_fast_forward": round(detailed_begin / roi_begin, 2),
        "boot_peak_rss_mib": boot["peak_rss_mib"],
        "restore_run_peak_rss_mib": roi["peak_rss_mib"],
    }
    print(
        f"    restore to ROI {roi_begin:.0f} s (restored detailed: {detailed_begin:.0f} s); ROI {simulated_ms:.2f} ms simulated "
        f"in {roi_end - roi_begin:.0f} s host = {figures['host_s_per_simulated_ms']} host s per simulated ms"
    )
    return figures


def machine_name(machine: str, size: int) -> str:
    """How the bench names one machine size: altix-numa-4."""
    return f"{machine}-{size}"


def select_machines(machines: list[list[Any]], only: list[str] | None) -> list[list[Any]]:
    """bench.toml's machines, in its order, kept to those `--only` names.

    A chunk that fits a session: each [old, new] pair of one size still
    runs back to back when both are named. ValueError names an unknown one.
    """
    if not only:
        return machines
    known = [machine_name(machine, size) for machine, size in machines]
    unknown = [name for name in only if name not in known]
    if unknown:
        raise ValueError(f"--only {', '.join(unknown)}: not a machine of lockstudy/data/bench.toml [gem5] (known: {', '.join(known)})")
    return [[machine, size] for machine, size in machines if machine_name(machine, size) in only]


def inputs_of(binary: gem5_finder.Gem5Info, machine: str, kernel_build: str) -> dict[str, Any]:
    """What a size's figures were measured on: the gem5 binary, kernel build, disk image and machine file."""
    return {
        "gem5": binary.as_provenance(),
        "kernel_build_id": artifacts.kernel(kernel_build, "vmlinux").identity,
        "image_content_hash": artifacts.disk_image().identity,
        "machine_file": artifacts.machine_file(machine).identity,
    }


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def kept_from_earlier(previous: dict[str, Any], measured: dict[str, Any], inputs: dict[str, dict[str, Any]], config: dict[str, Any]) -> dict[str, Any]:
    """The sizes of an earlier chunk's file that this chunk did not measure and that still hold:
    the same ROI, and measured on today's inputs of their machine (`inputs`, by machine name)."""
    if previous.get("roi_spec") != config["roi_spec"] or previous.get("roi_cpu") != config["roi_cpu"]:
        return {}
    kept = {}
    for name, row in previous.get("sizes", {}).items():
        machine = row.get("machine")
        if name not in measured and machine in inputs and row.get("inputs") == inputs[machine]:
            kept[name] = row
    return kept


def bench_gem5(args: argparse.Namespace, settings: Callable[[str], dict[str, Any]], write_report: Callable[[str, dict[str, Any]], Path],
               previous: Callable[[str], dict[str, Any]]) -> int:
    config = settings("gem5")
    all_machines = config["machines"]
    try:
        config["machines"] = select_machines(all_machines, args.only)
    except ValueError as exc:
        error(str(exc))
        return 1
    binaries: dict[str, gem5_finder.Gem5Info] = {}
    inputs: dict[str, dict[str, Any]] = {}
    selected = {machine for machine, _size in config["machines"]}
    for machine in dict.fromkeys(machine for machine, _size in all_machines):
        try:
            binaries[machine] = gem5_for_machine(machine)
            inputs[machine] = inputs_of(binaries[machine], machine, config["kernel_build"])
        except gem5_finder.Gem5Unavailable as exc:
            if machine in selected:
                error(f"bench gem5 needs gem5 for machine {machine}: {exc}")
                return 1
            # no gem5 for it today: an earlier chunk's sizes of this machine are not kept
        except artifacts.MissingArtifact as exc:
            error(f"bench gem5: {exc}")
            return 1
    chunk = utc_now()
    measured: dict[str, Any] = {}
    # In the file's order: the machines compared are listed size by size,
    # so the two models of one size run back to back on the same host load.
    for machine, size in config["machines"]:
        load = os.getloadavg()[0]
        started = utc_now()
        with tempfile.TemporaryDirectory(prefix="lockstudy-bench-gem5-") as scratch:
            row = measure(binaries[machine], config, machine, size, Path(scratch))
        measured[machine_name(machine, size)] = {
            **row, "machine": machine, "size": size, "chunk": chunk, "measured_at": started,
            "host_load_1min_before": round(load, 2), "inputs": inputs[machine],
        }  # fmt: skip
    sizes = {**kept_from_earlier(previous("gem5"), measured, inputs, config), **measured}
    ordered = [[machine, size] for machine, size in all_machines if machine_name(machine, size) in sizes]
    print(f"\n    {'machine':<28} {'boot (s)':>9} {'restore to ROI (s)':>19} {'restored detailed (s)':>22} {'host s / sim ms':>16}  measured")
    for machine, size in ordered:
        row = sizes[machine_name(machine, size)]
        when = "now" if row["chunk"] == chunk else row["chunk"]
        print(
            f"    {machine_name(machine, size):<28} {row['boot_host_s']:>9.0f} {row['restore_to_roi_host_s']:>19.0f} "
            f"{row['restore_detailed_to_roi_host_s']:>22.0f} {row['host_s_per_simulated_ms']:>16.1f}  {when}"
        )
    figures: dict[str, Any] = {"roi_spec": config["roi_spec"], "roi_cpu": config["roi_cpu"], "sizes": sizes}
    comparisons = compare_models({**config, "machines": ordered}, sizes)
    if comparisons:
        figures["comparisons"] = comparisons
        print(f"\n    {'new / old model, host s per simulated ms':<44} {'ratio':>6}  measured side by side")
        for row in comparisons:
            print(f"    {row['new'] + ' / ' + row['old'] + ' at ' + str(row['size']):<44} {row['ratio']:>6.2f}  {row['chunk']}")
    print(f"\nfigures: {write_report('gem5', figures)}")
    return 0


def compare_models(config: dict[str, Any], figures: dict[str, Any]) -> list[dict[str, Any]]:
    """For each [old, new] pair of bench.toml's `compare`, new over old at every size both ran in one chunk."""
    rows = []
    for old, new in config.get("compare", []):
        for machine, size in config["machines"]:
            if machine != new or machine_name(old, size) not in figures or machine_name(new, size) not in figures:
                continue
            old_row, new_row = figures[machine_name(old, size)], figures[machine_name(new, size)]
            if old_row.get("chunk") != new_row.get("chunk"):
                continue  # not measured back to back: no ratio
            ratio = round(new_row["host_s_per_simulated_ms"] / old_row["host_s_per_simulated_ms"], 2)
            rows.append({"old": old, "new": new, "size": size, "ratio": ratio, "chunk": new_row.get("chunk")})
    return rows
