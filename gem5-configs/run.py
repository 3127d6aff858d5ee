"""lockstudy's one gem5 entry point.

    $GEM5 -d OUT gem5-configs/run.py --machine piii-smp --cpus 4 \
        --kernel build/kernel/smp/vmlinux --image build/image/rootfs.ext2 \
        --boot 'lockstudy.spinlock=ticket' --run 'kbench:variant=ticket,duration_ms=10' \
        [--cpu timing|o3] [--checkpoint-out DIR | --checkpoint-in DIR] \
        [--trace off|protocol|classic] --outdir OUT

The guest boots on the fast-forward CPU; at its first work-begin m5 op the
processor hands over to the detailed CPU. Every work-begin resets the
stats and every work-end dumps them, so stats.txt holds one block per
region of interest. OUT also gets config.json, console.log, result.json
(written atomically; it says `failed` until the run finishes) and, with
--trace, roi.trace.gz holding the coherence debug output of the ROIs only.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent):  # gem5-configs/ and the repository (lockstudy.guest_output)
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import machine as machines  # noqa: E402
import run_plan  # noqa: E402

from lockstudy import gem5 as gem5_finder  # noqa: E402  (our extras; standard library only)
from lockstudy.validation.run_limits import STUCK_LIMIT_FIELD  # noqa: E402

# gem5 writes these into its own -d directory; run.py gathers them in --outdir.
GEM5_OUTPUTS = ("stats.txt", "config.json", "config.ini")
CONSOLE_DEVICE = "board.pc.com_1.device"
CONSOLE_LOG = "console.log"
RESULT = "result.json"
PS_PER_NS = 1000
DELAY_OUTLASTED = "the ROI began before the delayed switch (the start was not perturbed)"
TRACE_FILE = "roi.trace.gz"
TRACE_FLAGS = {"protocol": ("ProtocolTrace",), "classic": ("Cache", "CoherentXBar", "SnoopFilter")}
# How result.json names a run stopped by the after-ROI limit (run.toml, or --after-roi-limit-ms): its exit
# event, and the start of its reason, which the store matches (lockstudy/campaign/store.py).
STUCK_AFTER_ROI = run_plan.run_rules.STUCK_AFTER_ROI


class RoiControl:
    """The exit-event handlers: CPU hand-over, stats and tracing per ROI."""

    def __init__(self, plan: run_plan.RunPlan, processor, started: float) -> None:
        self.plan = plan
        self.processor = processor
        self.started = started
        self.roi_ticks: list[list[int]] = []
        # Host seconds since run.py started, at each ROI's begin and end.
        self.roi_host_seconds: list[list[float]] = []
        self.checkpoint_saved = False
        self.ending_event = ""
        # When and why the detailed CPUs took over (None: the run started on them, or never switched).
        self.switched: dict | None = None
        self._trace_open = False
        self._switches: list | None = None  # Ruby's network switches, found at the first ROI
        self.after_roi_deadline: int | None = None  # the tick past which the guest is stuck after its last ROI
        self.pending_switch: int | None = None  # the tick of a perturbed start's delayed switch
        self.asked_tick: int | None = None  # when the guest first asked for the detailed CPUs
        self.drain_deadline: int | None = None  # set when the guest exits before its console has drained
        self.drained_from = 0
        self.next_drain_check = 0
        self.console_drain_ticks: int | None = None  # how long the console took to drain after m5 exit

    def _trace(self, enable: bool) -> None:
        import m5.debug
        import m5.trace

        if self.plan.trace == "off":
            return
        if enable and not self._trace_open:
            # An absolute name: gem5 would put a relative one in its -d directory.
            m5.trace.output(str((self.plan.outdir / TRACE_FILE).resolve()))
            self._trace_open = True
        for flag in TRACE_FLAGS[self.plan.trace]:
            if enable:
                m5.debug.flags[flag].enable()
            else:
                m5.debug.flags[flag].disable()

    def _switch(self, by: str) -> None:
        import m5

        if self.processor.switch_to_roi():
            # host_seconds splits a run's host time: restore and fast-forward before it, detailed after.
            self.switched = {"tick": m5.curTick(), "by": by, "host_seconds": self._host_now()}
            if self.asked_tick is not None:
                self.switched["asked_tick"] = self.asked_tick
            print(f"lockstudy: switched to {self.plan.roi_cpu} CPUs at tick {m5.curTick()} ({by})")

    def switch_cpu(self) -> bool:
        """The guest's `m5 switchcpu`: a testcase starting (workloads/m5ops.h). A start-perturbed run
        (--perturb-start-us) stays on the fast-forward CPU for its drawn delay first."""
        import _m5.core
        import m5

        if self.asked_tick is None:
            self.asked_tick = m5.curTick()
        if not self.plan.perturb_start_us or self.pending_switch is not None or self.switched is not None:
            self._switch("the guest asked")
            return False
        delay = self.plan.start_delay_ticks(_m5.core.getClockFrequency())
        self.pending_switch = m5.curTick() + delay
        m5.scheduleTickExitFromCurrent(max(1, delay))
        print(f"lockstudy: the guest asked for the detailed CPUs; switching {self.plan.start_delay_ns} ns later (perturbed start)")
        return False

    def work_begin(self) -> bool:
        import m5

        self.after_roi_deadline = None
        # A perturbed start's delay that outlasts the testcase's set-up did not perturb it: result.json says so.
        late = self.pending_switch is not None
        self.pending_switch = None
        self._switch(DELAY_OUTLASTED if late else "the ROI began")
        m5.stats.reset()
        self._reset_network_stats()
        self._trace(True)
        self.roi_ticks.append([m5.curTick(), -1])
        self.roi_host_seconds.append([self._host_now(), -1.0])
        return False

    def _reset_network_stats(self) -> None:
        """Reset what gem5's stats reset leaves running: the SimpleNetwork switches' counters."""
        import m5.objects

        from components.network_stats import reset_switch_stats, simple_network_switches

        if self._switches is None:
            self._switches = simple_network_switches(m5.objects.Root.getInstance())
        reset_switch_stats(self._switches)

    def _host_now(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def work_end(self) -> bool:
        import _m5.core
        import m5

        self._trace(False)
        m5.stats.dump()
        if self.roi_ticks and self.roi_ticks[-1][1] < 0:
            self.roi_ticks[-1][1] = m5.curTick()
            self.roi_host_seconds[-1][1] = self._host_now()
        limit = self.plan.after_roi_limit_ticks(_m5.core.getClockFrequency())
        self.after_roi_deadline = m5.curTick() + limit
        m5.scheduleTickExitFromCurrent(limit)
        return False

    def guest_exit(self) -> bool:
        """The guest's m5 exit: stop once its console holds the LOCKSTUDY-DONE line. The serial driver
        may still hold the end of the output; simulate on until it has drained, up to run.toml's
        [console_drain] limit, looking every check_us."""
        import _m5.core
        import m5

        self.ending_event = "exit"
        if self._console_done():
            return True
        if self.drain_deadline is None:
            self.drain_deadline = m5.curTick() + run_plan.console_drain_ticks(_m5.core.getClockFrequency())[1]
            self.drained_from = m5.curTick()
            print("lockstudy: the guest called m5 exit before its console had drained; simulating on until it has")
        self._schedule_drain_check()
        return False

    def _schedule_drain_check(self) -> None:
        import _m5.core
        import m5

        check = run_plan.console_drain_ticks(_m5.core.getClockFrequency())[0]
        self.next_drain_check = m5.curTick() + check
        m5.scheduleTickExitFromCurrent(check)

    def _console_done(self) -> bool:
        import m5

        console = Path(m5.options.outdir) / CONSOLE_DEVICE
        return console.is_file() and run_plan.console_has_done_line(console.read_text(errors="replace"))

    def _drain_checked(self) -> bool:
        """At a console-drain check: True to stop (drained, or the limit reached)."""
        import m5

        if m5.curTick() < self.next_drain_check:
            return False  # another limit's event (after the ROI): the drain has its own
        if self._console_done() or m5.curTick() >= self.drain_deadline:
            self.console_drain_ticks = m5.curTick() - self.drained_from
            return True
        self._schedule_drain_check()
        return False

    def scheduled_tick(self) -> bool:
        """A perturbed start's delayed switch, a console-drain check after the guest's m5 exit, or the
        after-ROI limit (run.toml): stop when no ROI began since it was set and the guest has not exited."""
        import m5

        if self.drain_deadline is not None:
            return self._drain_checked()
        if self.pending_switch is not None and m5.curTick() >= self.pending_switch:
            self.pending_switch = None
            self._switch(f"the guest asked, {self.plan.start_delay_ns} ns before")
            return False
        if self.after_roi_deadline is None or m5.curTick() < self.after_roi_deadline:
            return False  # an ROI began since: this limit is stale
        self.ending_event = STUCK_AFTER_ROI
        return True

    def checkpoint(self) -> bool:
        import m5

        if self.plan.checkpoint_out is None:
            print("lockstudy: the guest asked for a checkpoint but no --checkpoint-out was given; continuing")
            return False
        m5.checkpoint(str(self.plan.checkpoint_out.resolve()))
        self.checkpoint_saved = True
        return True

    def stop(self, name: str):
        def handler() -> bool:
            if self.drain_deadline is not None:
                # The guest had exited; what it does while its console drains (powering off) is not the run's end.
                return True
            self.ending_event = name
            return True

        return handler


def check_trace_flags(plan: run_plan.RunPlan) -> None:
    import m5.debug

    if plan.trace == "off":
        return
    missing = [flag for flag in TRACE_FLAGS[plan.trace] if flag not in m5.debug.flags]
    if missing:
        raise run_plan.PlanError(f"--trace {plan.trace}: this gem5 has no debug flag(s) {missing}; use a gem5.opt build")


def check_local_apic_divider() -> None:
    """The guest is told its local APIC timer's frequency (lapic_timer_hz=): refuse a gem5 whose
    X86LocalApic is clocked otherwise than run_plan assumes, rather than give the guest a wrong tick."""
    from m5.objects import X86LocalApic

    divider = int(X86LocalApic._params["clk_domain"].default.clk_divider)
    if divider != run_plan.LOCAL_APIC_CLOCK_DIVIDER:
        raise run_plan.PlanError(
            f"this gem5 ({sys.executable}) clocks the local APIC at the CPU clock / {divider}, not / "
            f"{run_plan.LOCAL_APIC_CLOCK_DIVIDER} (gem5-configs/run_plan.py LOCAL_APIC_CLOCK_DIVIDER): the guest's "
            "lapic_timer_hz= would be wrong"
        )


def check_extras(plan: run_plan.RunPlan) -> None:
    """Refuse a machine whose protocol needs one of our extras on a gem5 without it (unless --stock-chi)."""
    protocol = plan.instance.machine.ruby_protocol
    missing = gem5_finder.missing_extra(protocol, gem5_finder.built_in_extras())
    if missing is None or plan.stock_chi:
        return
    raise run_plan.PlanError(
        f"machine {plan.instance.machine.name} needs {protocol} with lockstudy's {missing} extra, and this gem5 "
        f"({sys.executable}) was built without it: {gem5_finder.REQUIRED_EXTRAS[protocol].why}. Rebuild gem5 with "
        f"EXTRAS=<lockstudy>/gem5-extras/{missing} (gem5-extras/README.md), or pass --stock-chi to show the loss"
    )


def cache_hierarchy_class(kind: str):
    """The hierarchy that builds a machine of this kind.

    Imported only when needed: a gem5 binary carries one Ruby protocol, and
    the stdlib's controller classes of another protocol fail to import.
    """
    if kind == machines.KIND_CHI_NUMA:
        from components.chi_numa import NumaCHIHierarchy

        return NumaCHIHierarchy
    if kind == machines.KIND_RUBY_NUMA:
        from components.ruby_numa import NumaMESITwoLevelHierarchy

        return NumaMESITwoLevelHierarchy
    from components.classic_fsb import PiiiFsbCacheHierarchy

    return PiiiFsbCacheHierarchy


def build_board(plan: run_plan.RunPlan):
    from components.board import LockstudyX86Board
    from components.memory import NodeLocalMemory
    from components.processor import CPU_TYPE_BY_NAME, FastForwardProcessor
    from gem5.utils.requires import requires

    instance = plan.instance
    data = instance.data
    if plan.fast_forwards:
        # A boot, or a restore that fast-forwards until the testcase asks
        # for the detailed CPUs: the checkpoint's thread state goes to the
        # fast-forward CPUs in the `boot` slot, which wrote it.
        boot_type, roi_type = CPU_TYPE_BY_NAME[plan.fast_forward], CPU_TYPE_BY_NAME[plan.roi_cpu]
        if plan.fast_forward == "kvm":
            requires(kvm_required=True)
    else:
        # --restore-detailed: the detailed CPUs take the `boot` slot and the
        # checkpoint's thread state; there is nothing to switch.
        boot_type, roi_type = CPU_TYPE_BY_NAME[plan.roi_cpu], None
    processor = FastForwardProcessor(boot_type, roi_type, instance.num_cpus, instance.line_bytes)
    memory = NodeLocalMemory(
        instance.node_memory_ranges(),
        data["memory"]["latency"],
        data["memory"]["bandwidth"],
        latency_var_ps=plan.perturb_ns * PS_PER_NS,
    )
    hierarchy = cache_hierarchy_class(instance.machine.kind)(instance)
    board = LockstudyX86Board(
        clk_freq=f"{instance.clock_hz}Hz",
        processor=processor,
        memory=memory,
        cache_hierarchy=hierarchy,
        cache_line_size=instance.line_bytes,
        root_device=data["board"]["root_device"],
        acpi_madt=data["board"]["acpi_madt"],
    )
    return board, processor


def provenance(plan: run_plan.RunPlan, kernel_sha256: str, image_sha256: str) -> dict:
    # gem5's version string lives in _m5.core (m5.defines has none in v24.0.0.1)
    import _m5.core

    return {
        "gem5_version": _m5.core.gem5Version,
        "gem5_binary": sys.executable,
        "gem5_extras": gem5_finder.built_in_extras(),
        "stock_chi": plan.stock_chi,
        "command": sys.argv,
        "machine": plan.instance.summary(),
        "kernel": {**run_plan.build_info_next_to(plan.kernel), "sha256": kernel_sha256},
        "image": {**run_plan.build_info_next_to(plan.image), "sha256": image_sha256},
        "boot_args": list(plan.boot_args),
        "run_spec": plan.run_spec,
        "roi_cpu": plan.roi_cpu,
        "fast_forward": plan.fast_forward if plan.fast_forwards else None,
        "checkpoint_in": str(plan.checkpoint_in.resolve()) if plan.checkpoint_in else None,
        "checkpoint_out": str(plan.checkpoint_out.resolve()) if plan.checkpoint_out else None,
        "trace": plan.trace,
        "memory_map": plan.memory_map,  # whether the guest printed its memory map after each testcase
        "perturbation": plan.perturbation,
        # the SimpleNetwork switches' counters restart with each ROI (components/network_stats.py)
        "network_stats_per_roi": True,
    }


def simulate(plan: run_plan.RunPlan, result: dict, kernel_sha256: str, image_sha256: str, started: float) -> None:
    import _m5.core
    import m5

    from gem5.resources.resource import DiskImageResource, KernelResource
    from gem5.simulate.exit_event import ExitEvent
    from gem5.simulate.simulator import Simulator

    if plan.checkpoint_in is not None:
        result["checkpoint"] = run_plan.check_checkpoint(plan, kernel_sha256, image_sha256)
    check_trace_flags(plan)
    check_extras(plan)
    check_local_apic_divider()
    board, processor = build_board(plan)
    if plan.perturb_ns:
        # The memories draw each access's extra latency from gem5's global
        # generator (src/mem/simple_mem.cc getLatency, random_mt); seeding it
        # makes a perturbed run repeatable and each repeat another sample.
        _m5.core.seedRandom(plan.perturb_seed)
    board.set_kernel_disk_workload(
        kernel=KernelResource(local_path=str(plan.kernel.resolve())),
        disk_image=DiskImageResource(local_path=str(plan.image.resolve())),
        # The run spec also goes to `m5 readfile`, so a guest restored
        # from a boot checkpoint can learn the run it is to do now.
        readfile_contents=plan.readfile(),
        kernel_args=plan.kernel_args(board.get_default_kernel_args()),
        checkpoint=plan.checkpoint_in.resolve() if plan.checkpoint_in else None,
    )
    result["kernel_command_line"] = str(board.workload.command_line)
    plan.check_command_line(result["kernel_command_line"])

    control = RoiControl(plan, processor, started)
    simulator = Simulator(
        board=board,
        on_exit_event={
            ExitEvent.SWITCHCPU: control.switch_cpu,
            ExitEvent.WORKBEGIN: control.work_begin,
            ExitEvent.WORKEND: control.work_end,
            ExitEvent.CHECKPOINT: control.checkpoint,
            ExitEvent.EXIT: control.guest_exit,
            ExitEvent.FAIL: control.stop("fail"),
            ExitEvent.KERNEL_PANIC: control.stop("kernel panic"),
            ExitEvent.KERNEL_OOPS: control.stop("kernel oops"),
            ExitEvent.MAX_TICK: control.stop("max tick"),
            ExitEvent.SCHEDULED_TICK: control.scheduled_tick,
        },
    )
    simulator.run()
    # gem5 dumps the stats once more at exit (an atexit handler); stats.txt
    # is to hold the ROI dumps only.
    m5.stats.outputList.clear()

    ticks_per_second = _m5.core.getClockFrequency()
    result["ticks_per_second"] = ticks_per_second
    result["simulated_seconds"] = m5.curTick() / ticks_per_second
    result["exit"] = {"event": control.ending_event, "cause": simulator.get_last_exit_event_cause()}
    result["roi_ticks"] = control.roi_ticks
    # Each finished ROI's simulated seconds: what the cost model divides host time by.
    result["roi_simulated_seconds"] = [(end - begin) / ticks_per_second for begin, end in control.roi_ticks if end >= 0]
    result["roi_host_seconds"] = control.roi_host_seconds
    # When the detailed CPUs took over from the fast-forward ones, why, and when the guest asked (None: no switch)
    result["switched_to_roi_cpu"] = control.switched
    # Simulated seconds run on after the guest's m5 exit for its console to drain (None: it had drained)
    result["console_drain_seconds"] = None if control.console_drain_ticks is None else control.console_drain_ticks / ticks_per_second
    gem5_dir = Path(m5.options.outdir).resolve()
    result["gem5_outdir"] = str(gem5_dir)
    if gem5_dir != plan.outdir.resolve():
        for name in GEM5_OUTPUTS:
            if (gem5_dir / name).is_file():
                shutil.copyfile(gem5_dir / name, plan.outdir / name)
    console = gem5_dir / CONSOLE_DEVICE
    if console.is_file():
        shutil.copyfile(console, plan.outdir / CONSOLE_LOG)
    guest, incomplete = run_plan.guest_summary(console.read_text(errors="replace") if console.is_file() else "")
    result["guest"] = {**guest, "incomplete": incomplete}
    # A restored guest does not boot: its topology and kernel settings are
    # the ones its checkpoint's boot reported.
    if plan.checkpoint_in:
        topology = result["checkpoint"]["guest_topology"]
        result["guest"]["boot_settings"] = result["checkpoint"].get("guest_settings")
    else:
        topology = {"boot": guest["boot"], "numa": guest["numa"]}
        result["guest"]["boot_settings"] = guest["settings"]
    topology_problems = run_plan.topology_problems(plan.instance, topology["boot"], topology["numa"])
    result["topology"] = {**topology, "problems": topology_problems}

    if topology_problems:
        result.update(status="failed", reason="the guest's topology is not the machine's: " + "; ".join(topology_problems))
    elif plan.checkpoint_out is not None:
        if control.checkpoint_saved:
            meta = {**plan.checkpoint_meta(kernel_sha256, image_sha256), "guest_topology": topology, "guest_settings": guest["settings"]}
            run_plan.write_json_atomically(plan.checkpoint_out / run_plan.CHECKPOINT_META, meta)
            result.update(status="ok", reason=f"checkpoint written to {plan.checkpoint_out}")
        else:
            result.update(status="failed", reason=f"no checkpoint: the run ended with {control.ending_event or 'no exit event'}")
    elif control.ending_event == STUCK_AFTER_ROI:
        # The limit it was stopped under: the launcher retries the run once its study allows more (lockstudy/campaign/store.py).
        limit_ms = plan.after_roi_limit()
        result[STUCK_LIMIT_FIELD] = limit_ms
        result.update(
            status="failed",
            reason=f"{STUCK_AFTER_ROI} (no exit within {limit_ms:g} simulated ms of it): stopped at simulated {result['simulated_seconds']:.3f} s",
        )
    elif control.ending_event != "exit":
        result.update(status="failed", reason=f"the run ended with {control.ending_event}: {result['exit']['cause']}")
    elif incomplete:
        result.update(status="failed", reason="; ".join(incomplete))
    else:
        result.update(status="ok", reason="")


def main() -> int:
    started = time.monotonic()
    args = run_plan.build_parser().parse_args()
    import m5

    try:
        plan = run_plan.make_plan(args, default_outdir=Path(m5.options.outdir))
    except ValueError as exc:  # PlanError and MachineError
        print(f"run.py: {exc}", file=sys.stderr)
        return 2
    kernel_sha256 = run_plan.sha256_file(plan.kernel)
    image_sha256 = run_plan.sha256_file(plan.image)
    result: dict = {
        "status": "failed",
        "reason": "gem5 ended before run.py finished (see gem5's stderr)",
        "provenance": provenance(plan, kernel_sha256, image_sha256),
    }
    result_path = plan.outdir / RESULT
    run_plan.write_json_atomically(result_path, result)
    try:
        simulate(plan, result, kernel_sha256, image_sha256, started)
    except ValueError as exc:  # a plan, checkpoint or wiring error with its own message
        result.update(status="failed", reason=str(exc))
    except Exception as exc:
        result.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        result["host_seconds"] = round(time.monotonic() - started, 3)
        run_plan.write_json_atomically(result_path, result)
    print(f"run.py: {result['status']}{': ' + result['reason'] if result['reason'] else ''}")
    return 0 if result["status"] == "ok" else 1


if __name__ in ("__main__", "__m5_main__"):
    sys.exit(main())
