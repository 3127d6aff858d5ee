"""The rules that tie a run's fields together, shared by the campaign loader and gem5-configs/run_plan.py.

Standard library only: gem5's Python imports run_plan.py, which uses these.
A machine is passed in as gem5-configs/machine.py loads it (its name, kind,
size option and counts), so this module reads no file itself.
"""

from __future__ import annotations

from typing import Protocol

from lockstudy.validation.problems import Reason

__all__ = ["Reason", "STOCK_BOOT_SWITCHES", "boot_reasons", "size_reasons", "trace_reasons"]

BOOT_PREFIX = "lockstudy."
# Boot parameters the launch writes itself (run.py, the QEMU backend); a campaign or --boot may not set them.
RESERVED_BOOT_KEYS = ("lockstudy.numa", "lockstudy.run", "lockstudy.m5ops", "lockstudy.checkpoint")
# Stock Linux 6.1 parameters a run may set besides the study's own switches, each for a precondition
# that 6.1 moved by itself, not by a lock of ours. The analysis counts them as part of a run's
# configuration (analysis/seed_verdicts/seeds.py: a run with one stands only for a variant that names it).
STOCK_BOOT_SWITCHES = {
    # arch/x86/kernel/alternative.c: an SMP kernel booted with one CPU present patches every
    # LOCK_PREFIX site to a plain instruction (SMP alternatives, 2.6.17), so on one CPU it pays
    # no locked RMW where 2.5's SMP kernel paid one per lock operation (seed 001).
    "noreplace-smp": "keep an SMP kernel's lock prefixes on one CPU",
}
TRACE_OFF = "off"
# The coherence trace each memory system can write (run.py --trace).
TRACE_FOR_NUMA = {True: "protocol", False: "classic"}
TRACES = (TRACE_OFF, *TRACE_FOR_NUMA.values())
# How a run's failure reason starts when gem5-configs/run.py stopped it after
# an ROI because the guest neither exited nor began another ROI in time
# (run.toml). gem5 is deterministic: a retry gets stuck at the same tick.
STUCK_AFTER_ROI = "stuck after the ROI"


class SizedMachine(Protocol):
    """What the rules need of a machine family (gem5-configs/machine.py's Machine)."""

    @property
    def name(self) -> str: ...

    @property
    def is_numa(self) -> bool: ...

    @property
    def size_option(self) -> str: ...

    @property
    def memory_response_clock_hz(self) -> int: ...

    @property
    def counts(self) -> list[int]: ...


def size_reasons(machine: SizedMachine, size_unit: str, size: int) -> list[Reason]:
    """Why `size` `size_unit` is not a size of `machine` (empty: it is)."""
    if size_unit != machine.size_option:
        return [Reason(f"{machine.name} is sized by {machine.size_option}, not {size_unit}", f"give {machine.size_option}")]
    if size not in machine.counts:
        return [Reason(f"{machine.name} has no size of {size} {size_unit}", f"{size_unit}: {', '.join(map(str, machine.counts))}")]
    return []


def trace_reasons(machine: SizedMachine, trace: str) -> list[Reason]:
    """Why `machine` cannot write the coherence trace `trace` (empty: it can)."""
    fitting = TRACE_FOR_NUMA[machine.is_numa]
    if trace not in (TRACE_OFF, fitting):
        memory = "Ruby" if machine.is_numa else "the classic memory system"
        return [Reason(f"{machine.name} uses {memory}, which writes no {trace} trace", f"{TRACE_OFF} or {fitting}")]
    return []


def perturbation_reasons(machine: SizedMachine, perturb_ns: int) -> list[Reason]:
    """Why a memory-latency perturbation of up to `perturb_ns` ns changes no run on `machine` (empty: it can).

    The extra latency is drawn uniformly from [0, perturb_ns] ns, and the
    memory's response is retimed to the next edge of the clock that takes
    it (Machine.memory_response_clock_hz). When that clock's period is
    perturb_ns or more, almost every draw lands before the same edge as
    every other draw, so every repeat is the same run. Measured: kbench on
    piii-smp, whose 100 MHz bus retimes responses every 10 ns, gave five
    bit-identical repeats at perturb_ns = 4, three distinct ones at 15."""
    if perturb_ns <= 0:
        return []
    period_ns = 1e9 / machine.memory_response_clock_hz
    if perturb_ns > period_ns:
        return []
    return [
        Reason(
            f"{machine.name} retimes a memory response to its next {period_ns:g} ns clock edge, so an extra latency "
            f"of at most {perturb_ns} ns almost never moves it to another edge: every repeat would be the same run",
            f"perturb_ns of more than {period_ns:g} (e.g. {2 * period_ns:g}: the response moves by one or two cycles)",
        )
    ]


def boot_reasons(args: tuple[str, ...] | list[str]) -> list[Reason]:
    """Why the kernel switches `args` may not be given to a run (empty: they may)."""
    reasons: list[Reason] = []
    for arg in args:
        key = arg.split("=", 1)[0]
        if arg in STOCK_BOOT_SWITCHES:
            continue
        if not arg.startswith(BOOT_PREFIX) or "=" not in arg:
            stock = ", ".join(STOCK_BOOT_SWITCHES)
            reasons.append(Reason(f"{arg!r} is not a kernel switch of the study", f"{BOOT_PREFIX}<switch>=<value>, or one of {stock}"))
        elif key in RESERVED_BOOT_KEYS:
            reasons.append(Reason(f"{key}= is written by the launch itself", f"not {', '.join(RESERVED_BOOT_KEYS)}"))
    return reasons
