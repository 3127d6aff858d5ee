"""The run script's options, checks and kernel command line (standard library only).

gem5-configs/run.py parses its options with `build_parser()` and turns them
into a RunPlan with `make_plan()` before it imports anything from gem5, so
every mistake in a command (unknown machine, wrong size, clashing options,
bad boot arguments) is reported at once, and the project's tests can check
all of it without a gem5 binary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import machine as machines

# The guest console protocol belongs to the image (lockstudy.guest_output);
# run.py puts the repository root on sys.path before importing this module.
from lockstudy import guest_output
# The rules a campaign's runs are checked by, so run.py refuses what a campaign's dry-run refuses.
from lockstudy.validation import runs as run_rules
from lockstudy.validation.run_limits import AFTER_ROI_OPTION, RUN_LIMITS_FILE, after_roi_limit_ms, run_limit

CPU_TYPES = ("timing", "o3")
FAST_FORWARD_TYPES = ("atomic", "kvm")
TRACE_MODES = run_rules.TRACES
# m5-op form the guest must use: the magic instruction only works on
# simulated CPUs, the address form (0xFFFF0000) also works under KVM.
M5OPS_FOR_FAST_FORWARD = {"atomic": "inst", "kvm": "addr"}
# gem5 v24 copies the x86 Linux command line into the bytes between
# commandLineBuff (0x90000) and realModeData (0x90200) and panics at tick 0
# when it does not fit with its NUL (src/arch/x86/linux/fs_workload.cc:66-79).
X86_LINUX_COMMAND_LINE_MAX = 0x90200 - 0x90000 - 1
# gem5 v24 clocks each CPU's local APIC at the CPU's clock divided by 16
# (src/arch/x86/X86LocalApic.py:77-78, a DerivedClockDomain of the
# parent's); run.py checks this against the X86LocalApic it builds.
LOCAL_APIC_CLOCK_DIVIDER = 16
# gem5's X86Board passes lpj=7999923, a 2 GHz delay loop at HZ=250: on our
# 0.7 and 1 GHz machines every udelay() busy-waits 2.9 and 2 times too long
# (gem5's TSC counts the CPU's cycles, src/arch/x86/isa.cc:231). run.py
# gives the machine's clock / HZ instead, HZ from the config beside the
# kernel. Without any lpj= only the boot CPU takes the loop from the TSC
# (init/calibrate.c, lpj_fine); every other CPU measures it against
# jiffies, busy, and an 8-CPU boot spent minutes of host time doing so.
LPJ_ARG = "lpj="
KERNEL_CONFIG_NEXT_TO_KERNEL = "config"  # build/kernel/<build>/config (lockstudy/kernel/build.py)
KERNEL_HZ_OPTION = re.compile(r"^CONFIG_HZ=(\d+)$", re.MULTILINE)
CHECKPOINT_META = "lockstudy-checkpoint.json"
MS_PER_SECOND = 1000
US_PER_SECOND = 1_000_000


def console_drain_ticks(ticks_per_second: int, path: Path = RUN_LIMITS_FILE) -> tuple[int, int]:
    """(how often, for how long) run.py looks for the guest's last console line after its m5 exit
    (run.toml [console_drain]), in ticks."""
    check = run_limit("console_drain", "check_us", "microseconds", path) * ticks_per_second / US_PER_SECOND
    limit = run_limit("console_drain", "limit_ms", "milliseconds", path) * ticks_per_second / MS_PER_SECOND
    return max(1, int(check)), max(1, int(limit))


def console_has_done_line(text: str) -> bool:
    """True when the guest's console holds its whole last line, LOCKSTUDY-DONE (guest_output.DONE)."""
    return any(line.startswith(guest_output.DONE + " ") for line in text.splitlines(keepends=True) if line.endswith("\n"))


# What a checkpoint and the run restoring it must agree on: the machine by its content
# (machine.py content_sha256), so that an edit of its file's comments keeps its checkpoints.
CHECKPOINT_MUST_MATCH = ("machine", "machine_content_sha256", "count", "line_bytes", "kernel_sha256", "image_sha256", "boot")


class PlanError(ValueError):
    """A command line that cannot run; the message says which option and why."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gem5 gem5-configs/run.py",
        description=(
            "Boot the lockstudy kernel on a machine from gem5-configs/machines/ and run "
            "the guest's testcases; the region of interest runs on a detailed CPU. "
            "gem5 writes into its own -d directory; run.py copies stats.txt and config.json "
            "from there into --outdir when the two differ"
        ),
    )
    parser.add_argument("--machine", required=True, help="machine name (gem5-configs/machines/NAME.toml) or a .toml path")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--cpus", type=int, help="number of CPUs (SMP machines)")
    size.add_argument("--nodes", type=int, help="number of nodes (NUMA machines)")
    parser.add_argument("--line-bytes", type=int, help="cache line size, one of the machine's cache_line.allowed")
    parser.add_argument("--kernel", required=True, type=Path, help="uncompressed 64-bit vmlinux")
    parser.add_argument("--image", required=True, type=Path, help="root file system image (rootfs.ext2)")
    parser.add_argument("--boot", default="", help="kernel switches, all lockstudy.* (e.g. 'lockstudy.spinlock=ticket')")
    parser.add_argument("--run", default="", dest="run_spec", help="the guest's run spec (lockstudy.run=)")
    parser.add_argument("--cpu", choices=CPU_TYPES, default="timing", help="CPU for the region of interest")
    parser.add_argument(
        "--fast-forward", choices=FAST_FORWARD_TYPES, default="atomic",
        help="CPU until the region of interest: atomic (works everywhere) or kvm (needs a working /dev/kvm)",
    )
    checkpoint = parser.add_mutually_exclusive_group()
    checkpoint.add_argument("--checkpoint-out", type=Path, help="boot, save a checkpoint here when the guest asks, stop")
    checkpoint.add_argument("--checkpoint-in", type=Path, help="restore this checkpoint and run the ROI on the detailed CPU")
    parser.add_argument(
        "--restore-detailed", action="store_true",
        help="with --checkpoint-in: restore onto the detailed CPUs, so that everything after the checkpoint (the "
        "init script, exec, the testcase's set-up) runs detailed. By default a restored run stays on the "
        "fast-forward CPU until the testcase asks for the detailed one (m5 switchcpu, workloads/README.md) or "
        "its ROI begins",
    )
    parser.add_argument("--trace", choices=TRACE_MODES, default="off", help="coherence trace during the ROI (gzip)")
    parser.add_argument(
        "--perturb-ns", type=int, default=0,
        help="perturbation (Alameldeen & Wood, HPCA 2003): every memory access gets a uniformly random "
        "extra latency in [0, N] ns; 0 (default) = none",
    )
    parser.add_argument(
        "--perturb-start-us", type=int, default=0,
        help="perturbation of the ROI's start: a restored run stays on the fast-forward CPU for a uniformly random "
        "[0, N] us more after the testcase asks for the detailed one, so that the timer ticks and the threads meet "
        "the detailed CPUs at another phase; 0 (default) = none",
    )
    parser.add_argument("--perturb-seed", type=int, default=0, help="seed of the perturbation's random draws (a repeat's index)")
    parser.add_argument(
        AFTER_ROI_OPTION, type=float, default=None,
        help="stop as stuck when the guest neither exits nor begins another ROI this many simulated ms after an ROI "
        "(default: gem5-configs/run.toml after_roi.limit_ms)",
    )
    parser.add_argument(
        "--no-memory-map", action="store_true",
        help="a traced run without the guest's memory map after each testcase: the hot-line profile then names "
        "heap lines by address only, and each testcase ends sooner (the kernel walks every page frame: about "
        "100 simulated ms on altix-numa at 4 nodes)",
    )
    parser.add_argument(
        "--stock-chi", action="store_true",
        help="run a CHI machine on a gem5 without lockstudy's chi-x86-locked-rmw extra, whose contended x86 locked "
        "read-modify-writes lose updates (gem5-extras/README.md); only to show that, and recorded in result.json",
    )
    parser.add_argument("--init", default="/init", help="the guest's init program (init=)")
    parser.add_argument("--outdir", type=Path, help="output directory (default: gem5's -d directory)")
    return parser


@dataclass(frozen=True)
class RunPlan:
    instance: machines.MachineInstance
    kernel: Path
    image: Path
    boot_args: tuple[str, ...]
    run_spec: str
    roi_cpu: str
    fast_forward: str
    checkpoint_out: Path | None
    checkpoint_in: Path | None
    trace: str
    init: str
    outdir: Path
    perturb_ns: int = 0
    perturb_seed: int = 0
    perturb_start_us: int = 0
    after_roi_ms: float | None = None  # None: run.toml's after_roi.limit_ms
    stock_chi: bool = False  # run CHI without the locked-RMW extra (gem5-extras/README.md)
    no_memory_map: bool = False  # a traced run that does not ask for the guest's memory map
    restore_detailed: bool = False  # a restored run on the detailed CPUs from the checkpoint on

    def after_roi_limit(self) -> float:
        """Simulated ms the run may go on after an ROI: --after-roi-limit-ms, else run.toml's after_roi.limit_ms."""
        return self.after_roi_ms if self.after_roi_ms is not None else after_roi_limit_ms()

    def after_roi_limit_ticks(self, ticks_per_second: int) -> int:
        """after_roi_limit(), in ticks."""
        return max(1, int(self.after_roi_limit() * ticks_per_second // MS_PER_SECOND))

    @property
    def perturbation(self) -> dict[str, int] | None:
        """What result.json's provenance records of the perturbation (None: unperturbed)."""
        if not self.perturb_ns and not self.perturb_start_us:
            return None
        perturbation = {"memory_latency_var_ns": self.perturb_ns, "seed": self.perturb_seed}
        if self.perturb_start_us:
            perturbation.update(start_delay_max_us=self.perturb_start_us, start_delay_ns=self.start_delay_ns)
        return perturbation

    @property
    def start_delay_ns(self) -> int:
        """How long the run stays on the fast-forward CPU after the testcase asks for the detailed one:
        uniform in [0, perturb_start_us] us, drawn from the seed alone (not gem5's generator, whose draws
        the memory perturbation takes), so that a rerun delays the same and each repeat differently."""
        if not self.perturb_start_us:
            return 0
        draw = random.Random(f"{START_DELAY_STREAM}:{self.perturb_seed}")
        return draw.randint(0, self.perturb_start_us * NS_PER_US)

    def start_delay_ticks(self, ticks_per_second: int) -> int:
        return self.start_delay_ns * ticks_per_second // NS_PER_SECOND

    @property
    def m5ops(self) -> str:
        return M5OPS_FOR_FAST_FORWARD[self.fast_forward]

    @property
    def boots(self) -> bool:
        """True when this run boots the kernel (no checkpoint to restore)."""
        return self.checkpoint_in is None

    @property
    def fast_forwards(self) -> bool:
        """True when the run starts on the fast-forward CPU: a boot, or a restore that is not --restore-detailed."""
        return self.boots or not self.restore_detailed

    @property
    def local_apic_timer_hz(self) -> int:
        """The local APIC timer's input clock, given to the guest (kernel/patches/x86-apic-timer-hz.patch)
        so that its boot does not spend 216 simulated ms measuring it against the PIT."""
        return self.instance.clock_hz // LOCAL_APIC_CLOCK_DIVIDER

    @property
    def loops_per_jiffy(self) -> int | None:
        """The machine's clock / the kernel's HZ (None: no config beside the kernel, whose HZ we cannot know)."""
        config = self.kernel.resolve().parent / KERNEL_CONFIG_NEXT_TO_KERNEL
        try:
            found = KERNEL_HZ_OPTION.search(config.read_text())
        except OSError:
            return None
        if found is None:
            raise PlanError(f"{config}: no CONFIG_HZ line; the kernel's delay loop (lpj=) cannot be computed")
        return self.instance.clock_hz // int(found.group(1))

    def kernel_args(self, board_defaults: list[str]) -> list[str]:
        """The kernel command line: the board's defaults (lpj= replaced by the machine's, when the kernel's
        HZ is known), then ours.

        Our arguments have braces escaped because the stdlib passes the
        joined line through str.format() to fill {root_value}.
        """
        lpj = self.loops_per_jiffy
        kept = [f"{LPJ_ARG}{lpj}" if lpj is not None and arg.startswith(LPJ_ARG) else arg for arg in board_defaults]
        ours = [f"init={self.init}", "rw", *self.instance.data["board"]["kernel_args"], f"lapic_timer_hz={self.local_apic_timer_hz}"]
        if self.instance.machine.is_numa:
            ours.append(self.instance.numa_boot_parameter())
        ours.extend(self.boot_args)
        ours.append(f"lockstudy.m5ops={self.m5ops}")
        if self.checkpoint_out is not None:
            ours.append("lockstudy.checkpoint=1")
        if self.run_spec:
            ours.append(f"lockstudy.run={self.run_spec}")
        if self.memory_map and self.checkpoint_out is None:  # a boot checkpoint is shared by untraced runs
            ours.append("lockstudy.memory_map=1")
        return kept + [arg.replace("{", "{{").replace("}", "}}") for arg in ours]

    @property
    def memory_map(self) -> bool:
        """Whether the guest prints its memory map after each testcase: only a traced run names lines with it,
        and the kernel's walk of every page frame costs simulated time (disk-image/overlay/opt/lockstudy/lib/spec.sh)."""
        return self.trace != "off" and not self.no_memory_map

    def readfile(self) -> str | None:
        """What `m5 readfile` gives a guest restored from a boot checkpoint: the run spec, then its options."""
        if not self.run_spec:
            return None
        return self.run_spec + "\n" + ("memory_map=1\n" if self.memory_map else "")

    def check_command_line(self, line: str) -> None:
        """Refuse a kernel command line gem5's x86 Linux loader cannot hold, naming what is long.

        Only a boot passes it to the kernel: the loader writes it into guest
        memory in its initState(), which a restore from a checkpoint skips,
        and a restored guest reads its run spec through `m5 readfile`. A
        restored run's line may therefore be longer (a spec of many items).
        """
        if not self.boots or len(line) <= X86_LINUX_COMMAND_LINE_MAX:
            return
        longest = max(line.split(), key=len)
        raise PlanError(
            f"{self.instance.machine.name} at {self.instance.size} {self.instance.machine.size_option}: "
            f"the kernel command line is {len(line)} bytes; "
            f"gem5's x86 Linux loader holds {X86_LINUX_COMMAND_LINE_MAX} (src/arch/x86/linux/fs_workload.cc). "
            f"Its longest argument is {longest[:40]}... ({len(longest)} bytes)"
        )

    def checkpoint_meta(self, kernel_sha256: str, image_sha256: str) -> dict[str, Any]:
        return {
            "machine": self.instance.machine.name,
            "machine_sha256": self.instance.machine.sha256,
            "machine_content_sha256": self.instance.machine.content_sha256,
            "count": self.instance.size,
            "line_bytes": self.instance.line_bytes,
            "kernel_sha256": kernel_sha256,
            "image": str(self.image.resolve()),
            "image_sha256": image_sha256,
            "boot": list(self.boot_args),
            "fast_forward": self.fast_forward,
        }


def refuse(option: str, value: object, reasons: list[run_rules.Reason]) -> None:
    """PlanError with the first reason a shared rule gives, as the campaign loader words it."""
    if reasons:
        allowed = f" ({reasons[0].allowed})" if reasons[0].allowed else ""
        raise PlanError(f"{option}: {value}: {reasons[0].wrong}{allowed}")


# The same bounds as the campaign loader's (lockstudy/campaign/loader.py).
MAX_PERTURB_NS = 100
MAX_PERTURB_START_US = 20_000
START_DELAY_STREAM = "start-delay"  # names the seeded draw of the start delay
NS_PER_US = 1_000
NS_PER_SECOND = 1_000_000_000


def split_boot_args(text: str) -> tuple[str, ...]:
    args = tuple(text.split())
    for arg in args:
        refuse("--boot", arg, run_rules.boot_reasons([arg]))
    return args


def make_plan(args: argparse.Namespace, default_outdir: Path | None = None) -> RunPlan:
    """Check the options against the machine file; raise PlanError/MachineError."""
    machine = machines.find_machine(args.machine)
    count = args.nodes if machine.is_numa else args.cpus
    wrong = "cpus" if machine.is_numa else "nodes"
    if getattr(args, wrong) is not None:
        raise PlanError(f"--{wrong}: {machine.name} is sized with --{machine.size_option}, not --{wrong}")
    refuse(f"--{machine.size_option}", count, run_rules.size_reasons(machine, machine.size_option, count))
    instance = machine.instance(count, args.line_bytes)
    for option, path in (("--kernel", args.kernel), ("--image", args.image)):
        if not path.is_file():
            raise PlanError(f"{option}: {path}: no such file")
    refuse("--trace", args.trace, run_rules.trace_reasons(machine, args.trace))
    if any(ch.isspace() or ch == '"' for ch in args.run_spec):
        raise PlanError(f"--run: {args.run_spec!r} must not contain spaces or quotes (it becomes one kernel argument)")
    if args.checkpoint_in is not None and not (args.checkpoint_in / CHECKPOINT_META).is_file():
        raise PlanError(f"--checkpoint-in: {args.checkpoint_in}: no {CHECKPOINT_META}; not a checkpoint made by run.py")
    outdir = args.outdir or default_outdir
    if outdir is None:
        raise PlanError("--outdir: required")
    perturb_ns, perturb_seed = getattr(args, "perturb_ns", 0), getattr(args, "perturb_seed", 0)
    if not 0 <= perturb_ns <= MAX_PERTURB_NS:
        raise PlanError(f"--perturb-ns: {perturb_ns}: not in [0, {MAX_PERTURB_NS}] ns (a perturbation is small against a memory access)")
    refuse("--perturb-ns", perturb_ns, run_rules.perturbation_reasons(machine, perturb_ns))
    if perturb_seed < 0:
        raise PlanError(f"--perturb-seed: {perturb_seed}: not a whole number >= 0")
    restore_detailed = getattr(args, "restore_detailed", False)
    if restore_detailed and args.checkpoint_in is None:
        raise PlanError("--restore-detailed: only with --checkpoint-in (a boot starts on the fast-forward CPU)")
    if perturb_ns and args.checkpoint_out is not None:
        raise PlanError("--perturb-ns: a boot to a checkpoint runs on the fast-forward CPU; perturb the restored runs")
    perturb_start_us = getattr(args, "perturb_start_us", 0)
    if not 0 <= perturb_start_us <= MAX_PERTURB_START_US:
        raise PlanError(
            f"--perturb-start-us: {perturb_start_us}: not in [0, {MAX_PERTURB_START_US}] us "
            "(the delay must end before the testcase's ROI begins)"
        )
    if perturb_start_us and (args.checkpoint_in is None or restore_detailed):
        raise PlanError(
            "--perturb-start-us: delays the switch from the fast-forward CPU that a restored run makes when its "
            "testcase asks; only with --checkpoint-in and without --restore-detailed"
        )
    after_roi_ms = getattr(args, "after_roi_limit_ms", None)
    if after_roi_ms is not None and not after_roi_ms > 0:
        raise PlanError(f"--after-roi-limit-ms: {after_roi_ms}: not a positive number of simulated milliseconds")
    return RunPlan(
        instance=instance,
        kernel=args.kernel,
        image=args.image,
        boot_args=split_boot_args(args.boot),
        run_spec=args.run_spec,
        roi_cpu=args.cpu,
        fast_forward=args.fast_forward,
        checkpoint_out=args.checkpoint_out,
        checkpoint_in=args.checkpoint_in,
        trace=args.trace,
        init=args.init,
        outdir=Path(outdir),
        perturb_ns=perturb_ns,
        perturb_seed=perturb_seed,
        perturb_start_us=perturb_start_us,
        after_roi_ms=after_roi_ms,
        stock_chi=args.stock_chi,
        no_memory_map=args.no_memory_map,
        restore_detailed=restore_detailed,
    )


def check_checkpoint(plan: RunPlan, kernel_sha256: str, image_sha256: str) -> dict[str, Any]:
    """The checkpoint's metadata, if it matches this run; PlanError if not."""
    assert plan.checkpoint_in is not None
    saved = json.loads((plan.checkpoint_in / CHECKPOINT_META).read_text())
    wanted = plan.checkpoint_meta(kernel_sha256, image_sha256)
    for key in CHECKPOINT_MUST_MATCH:
        if key == "boot" and not plan.boot_args:
            continue  # --boot may be left out: the checkpoint's kernel already booted with its own
        if saved.get(key) != wanted[key]:
            raise PlanError(
                f"--checkpoint-in: {plan.checkpoint_in}: the checkpoint has {key}={saved.get(key)!r}, "
                f"this run has {wanted[key]!r}"
            )
    if plan.fast_forwards and saved.get("fast_forward") != plan.fast_forward:
        # The guest's m5 ops form was chosen at its boot (M5OPS_FOR_FAST_FORWARD): the
        # "inst" form of an atomic boot is an invalid opcode on KVM.
        raise PlanError(
            f"--checkpoint-in: {plan.checkpoint_in}: the checkpoint was booted on the {saved.get('fast_forward')!r} "
            f"fast-forward CPU, this run fast-forwards on {plan.fast_forward!r} (--fast-forward, or --restore-detailed)"
        )
    return saved


# --------------------------------------------------------------------------
# Provenance and output files


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_info_next_to(artifact: Path) -> dict[str, Any]:
    """The build-info.json beside a kernel or image, as provenance."""
    info_path = artifact.resolve().parent / "build-info.json"
    record: dict[str, Any] = {"path": str(artifact.resolve())}
    if info_path.is_file():
        record["build_info_sha256"] = sha256_file(info_path)
        try:
            record["build_info"] = json.loads(info_path.read_text())
        except json.JSONDecodeError as exc:
            record["build_info"] = None
            record["warning"] = f"{info_path}: not JSON: {exc}"
    else:
        record["build_info"] = None
        record["warning"] = f"no build-info.json next to {artifact}"
    return record


def write_json_atomically(path: Path, data: Any) -> None:
    """Write JSON so that readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(data, stream, indent=2, sort_keys=True)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def guest_summary(console_text: str) -> tuple[dict[str, Any], list[str]]:
    """What the guest printed, for result.json, and why it is incomplete (empty: complete)."""
    run = guest_output.parse_console(console_text)
    summary = {
        "results": [
            {
                "testcase": result.testcase,
                "result": result.data,
                "locks": [lock.as_dict() for lock in run.locks.get(index, [])],
                "memory": [entry.as_list() for entry in run.memory.get(index, [])],
                "lock_event_counts": run.lock_event_counts.get(index),
            }
            for index, result in enumerate(run.parsed)
        ],
        "boot": run.boot,
        "numa": None if run.numa is None else run.numa.as_dict(),
        "spec": run.spec,
        "settings": run.settings,
        "errors": run.errors,
        "done": None if run.done is None else {"status": run.done.status, "reason": run.done.reason, **run.done.fields},
    }
    return summary, run.incompleteness()


def topology_problems(instance: machines.MachineInstance, boot: dict[str, str], numa: dict[str, Any] | None) -> list[str]:
    """How the topology the guest reported differs from the machine built (empty: it agrees).

    `boot` is the LOCKSTUDY-BOOT fields, `numa` the NumaReport as a dict.
    A NUMA machine needs the whole report; on an SMP machine a kernel
    without NUMA (no node directory) is fine, one with NUMA must see one node.
    """
    problems: list[str] = []
    cpus = boot.get("cpus")
    if cpus != str(instance.num_cpus):
        problems.append(f"the guest runs {cpus or 'an unknown number of'} CPUs, the machine has {instance.num_cpus}")
    if numa is None or not numa["done"]:
        if instance.machine.is_numa:
            problems.append("the guest printed no complete NUMA report (LOCKSTUDY-NUMA done)")
        return problems
    expected_node = instance.cpu_to_node()
    if numa["cpu_node"] != expected_node:
        problems.append(f"getcpu() nodes per CPU are {numa['cpu_node']}, the machine file says {expected_node}")
    expected_cpulist = [machines.format_cpu_list(instance.node_cpus(node)) for node in range(instance.num_nodes)]
    if numa["cpulist"] != expected_cpulist:
        problems.append(f"node cpulists are {numa['cpulist']}, the machine file says {expected_cpulist}")
    if instance.machine.is_numa and numa["distance"] != instance.distances():
        problems.append(f"node distances are {numa['distance']}, the machine file says {instance.distances()}")
    for node, kb in enumerate(numa["memtotal_kb"]):
        if kb is None or not 0 < kb * 1024 <= instance.node_bytes:
            problems.append(f"node {node} has MemTotal {kb} kB, its range is {instance.node_bytes // 1024} kB")
    return problems
