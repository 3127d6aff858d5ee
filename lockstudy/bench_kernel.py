"""`run.sh bench kernel`: kernel build times, lock bench speed, dispatch cost.

Three figures, as issue 3 asks:

- Build time of the smp kernel: a warm build (fresh object dir, the
  machine's ccache) and a no-op rebuild; with --cold also a cold build
  (fresh object dir, empty private ccache; about 20 min on 2 cores).
- The in-kernel lock bench under QEMU TCG: acquisitions/s and node-local
  share of hand-offs per spinlock variant, one boot, the NUMA layout and
  bench settings of lockstudy/data/bench.toml [kernel].
- Dispatch cost: instructions on the uncontended path of lock/unlock in the
  default (qspinlock) variant of our smp kernel against unpatched Debian
  6.1 built with the same configuration (its kernel/locking/spinlock.o
  only). Counted statically on the disassembly: the shortest path from
  the entry to a return through the function's own branches (the
  uncontended path: the cmpxchg succeeds, static-key sites are NOPs; the
  slow paths are calls or loops). The path is printed so the count can be
  checked by eye.
"""

from __future__ import annotations

import argparse
from collections import deque
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstudy.console import error, info, step
from lockstudy.kernel import lock_bench, specs
from lockstudy.kernel.build import build_environment, kernel_output_dir, plan_build
from lockstudy.kernel.initramfs import busybox_initramfs
from lockstudy.kernel.source import kernel_cache, patched_tree, unpacked_source
from lockstudy.paths import DATA
from lockstudy.qemu import QemuBoot, boot

OBJDUMP_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
JUMP_TARGET = re.compile(r"^([0-9a-f]+)\b")


def settings() -> dict[str, Any]:
    with open(DATA / "bench.toml", "rb") as handle:
        return dict(tomllib.load(handle)["kernel"])


# --- build times -------------------------------------------------------------


def timed_make(tree: Path, object_dir: Path, config: Path, env: dict[str, str], make_variables: list[str], jobs: int, target: str) -> float:
    object_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(config, object_dir / ".config")
    prefix = ["make", "-C", str(tree), f"O={object_dir}", *make_variables]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run([*prefix, "olddefconfig"], env=env, check=True, **quiet)  # type: ignore[call-overload]
    started = time.monotonic()
    subprocess.run([*prefix, f"-j{jobs}", target], env=env, check=True, **quiet)  # type: ignore[call-overload]
    return time.monotonic() - started


def build_times(build: str, cold: bool, jobs: int) -> dict[str, float]:
    spec = specs.load_builds()[build]
    plan = plan_build(spec)
    tree = patched_tree(plan.source, plan.series)
    config = kernel_output_dir(build) / "config"
    env = build_environment(plan)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="lockstudy-bench-kernel-", dir=kernel_cache()) as scratch:
        step(f"kernel {build}: warm build (fresh object dir, shared ccache)")
        warm = timed_make(tree, Path(scratch) / "warm", config, env, plan.make_variables, jobs, plan.settings.make_target)
        figures["warm_build_s"] = round(warm, 1)
        info(f"warm build {warm:.0f} s")
        step(f"kernel {build}: no-op rebuild of the same object dir")
        noop = timed_make(tree, Path(scratch) / "warm", config, env, plan.make_variables, jobs, plan.settings.make_target)
        figures["noop_build_s"] = round(noop, 1)
        info(f"no-op rebuild {noop:.1f} s")
        shutil.rmtree(Path(scratch) / "warm")
        if cold:
            step(f"kernel {build}: cold build (fresh object dir, empty ccache)")
            cold_env = dict(env, CCACHE_DIR=str(Path(scratch) / "ccache"))
            cold_s = timed_make(tree, Path(scratch) / "cold", config, cold_env, plan.make_variables, jobs, plan.settings.make_target)
            figures["cold_build_s"] = round(cold_s, 1)
            info(f"cold build {cold_s:.0f} s ({cold_s / warm:.1f}x the warm build)")
    return figures


# --- lock bench under QEMU ----------------------------------------------------


def lock_bench_figures(build: str, config: dict[str, Any]) -> dict[str, dict[str, float]]:
    kernel = kernel_output_dir(build) / "bzImage"
    variants = [v.name for v in specs.load_spinlock_variants()]
    cpus = config["cpus"]
    lines = lock_bench.variant_sweep(variants, cpus, config["duration_ms"], config["hold_loops"], config["think_loops"])
    step(f"lock bench under QEMU: {cpus} vCPUs in {config['sockets']} sockets, lockstudy.numa={config['numa']}, variants {', '.join(variants)}")
    with tempfile.TemporaryDirectory(prefix="lockstudy-bench-") as scratch:
        initramfs = busybox_initramfs("\n".join([*lines, "poweroff -f"]) + "\n", Path(scratch) / "initramfs.cpio.gz")
        result = boot(QemuBoot(kernel=kernel, console_log=Path(scratch) / "console.log", cpus=cpus, sockets=config["sockets"],
                               memory_mib=config["memory_mib"], kernel_args=f"lockstudy.numa={config['numa']}",
                               initrd=initramfs, timeout_seconds=config["boot_timeout_seconds"]))  # fmt: skip
        if not result.ok:
            raise RuntimeError(f"lock bench boot failed: {result.describe()}\n{result.console[-2000:]}")
    results = lock_bench.parse_bench_results(result.console)
    figures: dict[str, dict[str, float]] = {}
    print(f"\n    {'variant':<10} {'acq/s':>10} {'hand-offs':>10} {'node-local':>11} {'exclusion':>10}")
    for variant in variants:
        bench = results.get(variant)
        if bench is None:
            raise RuntimeError(f"no bench result for {variant} in the console")
        figures[variant] = {
            "acquisitions_per_sec": bench.number("acquisitions_per_sec"),
            "handoffs": bench.number("handoffs"),
            "node_local_share": round(bench.local_share(), 3),
        }
        print(f"    {variant:<10} {bench.number('acquisitions_per_sec'):>10} {bench.number('handoffs'):>10} {100 * bench.local_share():>10.0f}% {bench.values['exclusion']:>10}")
    return figures


# --- dispatch cost ------------------------------------------------------------


@dataclass
class Instruction:
    address: int
    mnemonic: str
    operands: str

    def text(self) -> str:
        return f"{self.mnemonic} {self.operands}".strip()


def disassemble(binary: Path, function: str) -> list[Instruction]:
    output = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={function}", str(binary)],
                            check=True, capture_output=True, text=True).stdout  # fmt: skip
    body: list[Instruction] = []
    inside = False
    for line in output.splitlines():
        if line.endswith(f"<{function}>:"):
            inside = True
            continue
        if inside:
            match = OBJDUMP_LINE.match(line)
            if not match:
                if body:
                    break
                continue
            body.append(Instruction(int(match.group(1), 16), match.group(2), match.group(3).strip()))
    if not body:
        raise RuntimeError(f"{function} not found in {binary}")
    return body


def is_return(insn: Instruction) -> bool:
    """ret, or the return thunk jump that replaces it with RETHUNK mitigations."""
    return insn.mnemonic.startswith("ret") or (insn.mnemonic == "jmp" and "return_thunk" in insn.operands)


def successors(body: list[Instruction], index: int, by_address: dict[int, int]) -> list[int]:
    insn = body[index]
    if is_return(insn):
        return []
    following = [index + 1] if index + 1 < len(body) and insn.mnemonic != "jmp" else []
    if insn.mnemonic.startswith("j"):
        target = JUMP_TARGET.match(insn.operands)
        if target and int(target.group(1), 16) in by_address:
            return [*following, by_address[int(target.group(1), 16)]]
    return following


def uncontended_path(body: list[Instruction]) -> list[Instruction]:
    """The shortest path from the entry to a return, through local branches only.

    A tail jump to another function (a slow path) ends no path: the
    shortest way out is then the uncontended one (the cmpxchg succeeds,
    no loop, static-key sites are NOPs), whatever way the compiler laid
    the branches out.
    """
    by_address = {insn.address: i for i, insn in enumerate(body)}
    previous: dict[int, int | None] = {0: None}
    queue = deque([0])
    while queue:
        index = queue.popleft()
        if is_return(body[index]):
            path = []
            step: int | None = index
            while step is not None:
                path.append(body[step])
                step = previous[step]
            return path[::-1]
        for successor in successors(body, index, by_address):
            if successor not in previous:
                previous[successor] = index
                queue.append(successor)
    raise RuntimeError("no path from the entry to a return")


def unpatched_spinlock_object(build: str, jobs: int) -> Path:
    """kernel/locking/spinlock.o of unpatched 6.1 with the build's configuration."""
    plan = plan_build(specs.load_builds()[build])
    tree = unpacked_source(plan.source)
    object_dir = kernel_cache() / "bench-unpatched" / build
    env = build_environment(plan)
    step("unpatched 6.1: kernel/locking/spinlock.o with the same configuration")
    timed_make(tree, object_dir, kernel_output_dir(build) / "config", env, plan.make_variables, jobs, "kernel/locking/spinlock.o")
    return object_dir / "kernel" / "locking" / "spinlock.o"


def dispatch_figures(build: str, functions: list[list[str]], jobs: int) -> dict[str, dict[str, int]]:
    patched = kernel_output_dir(build) / "vmlinux"
    unpatched = unpatched_spinlock_object(build, jobs)
    figures: dict[str, dict[str, int]] = {}
    for pair in functions:
        counts: dict[str, int] = {}
        for label, binary in (("unpatched", unpatched), ("lockstudy", patched)):
            total = 0
            for function in pair:
                path = uncontended_path(disassemble(binary, function))
                total += len(path)
                print(f"    {label} {function}: {len(path)} instructions: " + "; ".join(i.text() for i in path))
            counts[label] = total
        name = " + ".join(pair)
        figures[name] = counts
        print(f"  {name}: unpatched {counts['unpatched']}, lockstudy {counts['lockstudy']} instructions (+{counts['lockstudy'] - counts['unpatched']})\n")
    return figures


def bench_kernel(args: argparse.Namespace, write_report: Any) -> int:
    config = settings()
    build = config["kernel_build"]
    if not (kernel_output_dir(build) / "bzImage").is_file():
        error(f"{kernel_output_dir(build)} has no kernel: run ./run.sh setup")
        return 1
    jobs = os.cpu_count() or 1
    figures: dict[str, Any] = {"build": build}
    step("dispatch cost: uncontended lock/unlock, default variant vs unpatched 6.1")
    figures["dispatch_instructions"] = dispatch_figures(build, config["dispatch_functions"], jobs)
    figures["lock_bench_qemu"] = lock_bench_figures(build, config["lock_bench"])
    figures["build_times"] = build_times(build, args.cold, jobs)
    print(f"\nfigures: {write_report('kernel', figures)}")
    return 0
