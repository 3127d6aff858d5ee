"""`run.sh bench TARGET`: benchmarks that print their figures.

Speed goals live here, not in timed tests. Each target measures what its
issue asks, prints a table and writes build/bench/<target>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from lockstudy import image
from lockstudy.console import error, step
from lockstudy.guest_output import parse_console
from lockstudy.kernel.build import kernel_output_dir
from lockstudy.paths import DATA, ROOT, build_dir
from lockstudy.qemu import QemuBoot, boot
from lockstudy.venv import run_in_venv


def settings(target: str) -> dict[str, Any]:
    with open(DATA / "bench.toml", "rb") as handle:
        return dict(tomllib.load(handle)[target])


def write_report(target: str, figures: dict[str, Any]) -> Path:
    path = build_dir() / "bench" / f"{target}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return path


def read_report(target: str) -> dict[str, Any]:
    """The figures an earlier run wrote (empty when there are none, or they do not parse)."""
    path = build_dir() / "bench" / f"{target}.json"
    try:
        figures = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as exc:
        print(f"note: {path}: {exc}; its figures are not kept")
        return {}
    return figures if isinstance(figures, dict) else {}


def timed_run_sh(args: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run([str(ROOT / "run.sh"), *args], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def bench_image(_args: argparse.Namespace) -> int:
    config = settings("image")
    figures: dict[str, Any] = {}
    step("image build: cold, then again with nothing changed")
    with tempfile.TemporaryDirectory(prefix="lockstudy-bench-") as scratch:
        env = dict(os.environ, LOCKSTUDY_BUILD=scratch)
        cold = timed_run_sh(["build", "image"], env)
        again = timed_run_sh(["build", "image"], env)
    figures["image_build_cold_s"] = round(cold, 2)
    figures["image_build_noop_s"] = round(again, 2)
    print(f"    cold build {cold:.1f} s (workloads included), no-op {again:.2f} s: {cold / again:.0f}x")

    kernel = kernel_output_dir(config["kernel_build"]) / "bzImage"
    if not kernel.is_file():
        error(f"{kernel} missing: run ./run.sh setup")
        return 1
    image.build_image()
    per_testcase: dict[str, dict[str, float]] = {}
    for cpus in config["cpus"]:
        specs = [s.format(copies=cpus) for s in config["specs"]]
        step(f"QEMU, {cpus} vCPU(s): one boot running {len(specs)} testcases")
        with tempfile.TemporaryDirectory(prefix="lockstudy-bench-") as scratch:
            result = boot(
                QemuBoot(
                    kernel=kernel,
                    console_log=Path(scratch) / "console.log",
                    cpus=cpus,
                    memory_mib=config["memory_mib"],
                    kernel_args=f"{config['kernel_args']} lockstudy.run={'+'.join(specs)}",
                    disk=image.ext2_path(),
                    timeout_seconds=config["boot_timeout_seconds"],
                )
            )
        run = parse_console(result.console)
        run.results()  # a benchmark of a failed run is no benchmark: raises
        spans = run.guest_seconds()
        first = run.started[0][1] if run.started else None
        figures[f"qemu_{cpus}cpu"] = {
            "wall_s": round(result.wall_seconds, 2),
            "accel": result.accel,
            "boot_to_first_testcase_s": first,
            "testcase_guest_s": {tc: round(spans[i], 2) for i, (tc, _) in enumerate(run.started) if i in spans},
        }
        for index, (testcase, _) in enumerate(run.started):
            per_testcase.setdefault(testcase, {})[f"{cpus} vCPU"] = spans.get(index, float("nan"))
        print(f"    QEMU wall {result.wall_seconds:.1f} s ({result.accel}); boot to first testcase {first} s")
    columns = [f"{c} vCPU" for c in config["cpus"]]
    print(f"\n    {'testcase':<10} " + " ".join(f"{c + ' (s)':>12}" for c in columns))
    for testcase, row in per_testcase.items():
        print(f"    {testcase:<10} " + " ".join(f"{row.get(c, float('nan')):>12.2f}" for c in columns))
    print(f"\nfigures: {write_report('image', figures)}")
    return 0


def bench_analysis(_args: argparse.Namespace) -> int:
    # The analysis needs pandas: it runs in .venv (analysis/bench.py).
    step("analysis: reading 1,000 runs' gem5 stats (generated, realistic size)")
    return run_in_venv("analysis.bench", [])


def bench_kernel(args: argparse.Namespace) -> int:
    from lockstudy import bench_kernel as kernel_bench

    return kernel_bench.bench_kernel(args, write_report)


def bench_gem5(args: argparse.Namespace) -> int:
    from lockstudy import bench_gem5 as gem5_bench

    return gem5_bench.bench_gem5(args, settings, write_report, read_report)


TARGETS = {
    "kernel": (bench_kernel, "dispatch cost vs unpatched 6.1 (instructions), lock bench acquisitions/s per variant under QEMU, kernel build time (warm, no-op; --cold)"),
    "image": (bench_image, "image build time (cold, no-op) and QEMU wall time per testcase"),
    "gem5": (
        bench_gem5,
        "host seconds to boot (fast-forward CPU, to a checkpoint), to restore and reach the ROI (fast-forward to the testcase, "
        "and restored detailed, side by side), and per simulated ms of ROI on the detailed CPU, for each machine size of "
        "lockstudy/data/bench.toml [gem5] (piii-smp 8 CPUs; altix-numa-interleaved then altix-numa at 1, 2, 4, 8 and 16 "
        "nodes, back to back, and their ratio; needs GEM5; about 4-5 host hours, or a chunk with --only)",
    ),
    "analysis": (bench_analysis, "seconds to read 1,000 runs' gem5 stats.txt (goal <= 10 s) and per-lock trace attribution in lines/s (goal >= 1 M/s), on generated inputs of realistic size"),
}


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "bench",
        help="run a benchmark and print its figures",
        description=(
            "Benchmarks, not tests: each prints its figures and writes build/bench/TARGET.json. "
            "Ratios are measured side by side in one run. Targets: "
            + "; ".join(f"{name}: {text}" for name, (_, text) in TARGETS.items())
        ),
    )
    parser.add_argument("target", choices=sorted(TARGETS), help="what to measure")
    parser.add_argument("--cold", action="store_true", help="kernel: also time a cold build with an empty ccache (about 20 min on 2 cores)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="MACHINE-SIZE",
        help="gem5: measure only this machine size (repeatable), e.g. --only altix-numa-interleaved-8 --only altix-numa-8: "
        "a chunk that fits a session; build/bench/gem5.json keeps the sizes of earlier chunks measured on today's inputs, "
        "and a new/old ratio pairs only sizes of one chunk",
    )
    parser.set_defaults(func=lambda args: TARGETS[args.target][0](args))
