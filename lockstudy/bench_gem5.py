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
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any, Callable

from lockstudy import gem5 as gem5_finder
from lockstudy.campaign.gem5_backend import run_script_argv
from lockstudy.campaign.machines import gem5_for_machine, machine_module
from lockstudy.campaign.measured import run_measured
from lockstudy.console import error, step
from lockstudy.kernel.build import kernel_output_dir
from lockstudy.image import ext2_path

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


def bench_gem5(args: argparse.Namespace, settings: Callable[[str], dict[str, Any]], write_report: Callable[[str, dict[str, Any]], Path]) -> int:
    config = settings("gem5")
    try:
        config["machines"] = select_machines(config["machines"], args.only)
    except ValueError as exc:
        error(str(exc))
        return 1
    binaries: dict[str, gem5_finder.Gem5Info] = {}
    for machine, _size in config["machines"]:
        try:
            binaries[machine] = gem5_for_machine(machine)
        except gem5_finder.Gem5Unavailable as exc:
            error(f"bench gem5 needs gem5 for machine {machine}: {exc}")
            return 1
    figures: dict[str, Any] = {
        "gem5": {machine: info.as_provenance() for machine, info in binaries.items()},
        "roi_spec": config["roi_spec"],
        "roi_cpu": config["roi_cpu"],
    }
    # In the file's order: the machines compared are listed size by size,
    # so the two models of one size run back to back on the same host load.
    for machine, size in config["machines"]:
        with tempfile.TemporaryDirectory(prefix="lockstudy-bench-gem5-") as scratch:
            figures[machine_name(machine, size)] = measure(binaries[machine], config, machine, size, Path(scratch))
    print(f"\n    {'machine':<28} {'boot (s)':>9} {'restore to ROI (s)':>19} {'restored detailed (s)':>22} {'host s / sim ms':>16}")
    for machine, size in config["machines"]:
        row = figures[machine_name(machine, size)]
        print(
            f"    {machine_name(machine, size):<28} {row['boot_host_s']:>9.0f} {row['restore_to_roi_host_s']:>19.0f} "
            f"{row['restore_detailed_to_roi_host_s']:>22.0f} {row['host_s_per_simulated_ms']:>16.1f}"
        )
    comparisons = compare_models(config, figures)
    if comparisons:
        figures["comparisons"] = comparisons
        print(f"\n    {'new / old model, host s per simulated ms':<44} {'ratio':>6}")
        for row in comparisons:
            print(f"    {row['new'] + ' / ' + row['old'] + ' at ' + str(row['size']):<44} {row['ratio']:>6.2f}")
    print(f"\nfigures: {write_report('gem5', figures)}")
    return 0


def compare_models(config: dict[str, Any], figures: dict[str, Any]) -> list[dict[str, Any]]:
    """For each [old, new] pair of bench.toml's `compare`, new over old at every size both ran."""
    rows = []
    for old, new in config.get("compare", []):
        for machine, size in config["machines"]:
            if machine != new or machine_name(old, size) not in figures:
                continue
            old_rate = figures[machine_name(old, size)]["host_s_per_simulated_ms"]
            new_rate = figures[machine_name(new, size)]["host_s_per_simulated_ms"]
            rows.append({"old": old, "new": new, "size": size, "ratio": round(new_rate / old_rate, 2)})
    return rows
