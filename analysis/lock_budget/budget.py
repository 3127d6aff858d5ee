"""The budget's tables: our locked RMWs and cycles per operation, and what the seed's CPUs would charge.

Ours are the means over untraced runs of each configuration (one CPU,
each workload and CPU model), refused when they mix timed windows or
configurations (analysis/statistics/pooling.py check_groups). The count
of locked RMWs is a property of the binary and the workload, not of the
CPU model; the cycles are the CPU model's.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.lock_budget.rules import Budget, OurConfiguration, SeedCpu
from analysis.seed_verdicts.seeds import published_frame
from analysis.statistics.pooling import check_groups, split_traced

LOCKED = "locked_rmws_per_op"
CYCLES = "cpu_cycles_per_op"
OURS_COLUMNS = ["workload", "roi_cpu", "n_up", "n_smp", "n_patched", "locked_up", "locked_smp", "locked_patched", "added_locked",
                "cycles_up", "cycles_smp", "cycles_patched", "gem5_cycles_per_locked"]  # fmt: skip
PRICE_COLUMNS = ["seed_cpu", "workload", "seed_gap_cycles", "added_locked", "extra_cycles", "charged_cycles", "share_of_gap"]
SECONDS_TO_NS = 1e9


def _means(rows: pd.DataFrame, configuration: OurConfiguration, what: str) -> dict[tuple[str, str], tuple[int, float, float]]:
    """(workload, CPU model) -> (runs, locked RMWs per op, cycles per op) of one configuration."""
    held = pd.Series([configuration.holds(build, boot) for build, boot in zip(rows["kernel_build"], rows["boot_args"])], index=rows.index, dtype=bool)
    mine = rows[held]
    check_groups(mine, ["testcase", "roi_cpu"], what=what)
    return {
        (str(testcase), str(cpu)): (len(group), float(group[LOCKED].mean()), float(group[CYCLES].mean()))
        for (testcase, cpu), group in mine.groupby(["testcase", "roi_cpu"])
    }


def ours_table(table: pd.DataFrame, budget: Budget) -> pd.DataFrame:
    """Per workload and CPU model: locked RMWs and cycles per operation of the UP kernel, the SMP kernel
    with its prefixes kept, and the same with them patched out; what the SMP kernel adds; and the cycles
    gem5 charged per locked RMW within the one SMP binary."""
    if table.empty or LOCKED not in table or CYCLES not in table:
        return pd.DataFrame(columns=OURS_COLUMNS)
    rows = split_traced(table, what="lock budget")[0]
    rows = rows[(rows["cpus"] == budget.cpus) & rows["testcase"].isin(budget.workloads)]
    up, smp, patched = (_means(rows, configuration, f"lock budget, {name}")
                        for name, configuration in (("up", budget.up), ("smp", budget.smp), ("patched", budget.patched)))  # fmt: skip
    out = []
    for key in sorted(set(up) | set(smp) | set(patched)):
        (n_up, locked_up, cycles_up), (n_smp, locked_smp, cycles_smp), (n_patched, locked_patched, cycles_patched) = (
            side.get(key, (0, math.nan, math.nan)) for side in (up, smp, patched)
        )
        extra = locked_smp - locked_patched
        out.append({
            "workload": key[0], "roi_cpu": key[1], "n_up": n_up, "n_smp": n_smp, "n_patched": n_patched,
            "locked_up": locked_up, "locked_smp": locked_smp, "locked_patched": locked_patched, "added_locked": locked_smp - locked_up,
            "cycles_up": cycles_up, "cycles_smp": cycles_smp, "cycles_patched": cycles_patched,
            "gem5_cycles_per_locked": (cycles_smp - cycles_patched) / extra if extra > 0 else math.nan,
        })  # fmt: skip
    return pd.DataFrame(out, columns=OURS_COLUMNS)


def seed_gap_cycles(budget: Budget, cpu: SeedCpu) -> float:
    """The seed's SMP-minus-UP time per operation, in its CPU's cycles."""
    frame = published_frame(budget.seed, cpu.table)

    def value(keys: dict[str, object], side: str) -> float:
        rows = frame
        for key, wanted in keys.items():
            rows = rows[rows[key] == wanted]
        if len(rows) != 1:
            raise ValueError(f"analysis/data/lock_budget.toml: {cpu.name}: {side} {dict(keys)} matches {len(rows)} row(s) of seed table {cpu.table!r}")
        return float(rows[cpu.column].iloc[0])

    return (value(dict(cpu.smp), "smp") - value(dict(cpu.up), "up")) / cpu.ops * cpu.clock_ghz * SECONDS_TO_NS


def price_table(ours: pd.DataFrame, budget: Budget) -> pd.DataFrame:
    """Per seed CPU and workload: the seed's gap, our added locked RMWs (counted on the timing CPU, else
    any), what that CPU charges for them, and their share of the gap."""
    out = []
    for cpu in budget.seed_cpus:
        gap = seed_gap_cycles(budget, cpu)
        for workload, rows in ours.groupby("workload"):
            counted = rows[rows["roi_cpu"] == "timing"] if (rows["roi_cpu"] == "timing").any() else rows
            added = float(counted["added_locked"].iloc[0])
            charged = added * cpu.extra_cycles
            out.append({
                "seed_cpu": cpu.name, "workload": workload, "seed_gap_cycles": gap, "added_locked": added,
                "extra_cycles": cpu.extra_cycles, "charged_cycles": charged, "share_of_gap": charged / gap if gap > 0 else math.nan,
            })  # fmt: skip
    return pd.DataFrame(out, columns=PRICE_COLUMNS)
