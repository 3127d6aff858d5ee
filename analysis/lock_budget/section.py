"""The report's "Seed 001: its locked RMWs, counted and priced"."""

from __future__ import annotations

import pandas as pd

from analysis.lock_budget.budget import ours_table, price_table
from analysis.lock_budget.rules import Budget, load_budget
from analysis.reporting.report_render import Section, Table


def budget_section(table: pd.DataFrame, budget: Budget | None = None) -> Section | None:
    """None when none of our runs is one of the budget's configurations."""
    budget = budget or load_budget()
    ours = ours_table(table, budget)
    if ours.empty or ours["n_smp"].sum() == 0 or ours["n_up"].sum() == 0:
        return None
    section = Section(f"Seed {budget.seed.id}: its locked RMWs, counted and priced")
    smp = " ".join(sorted(budget.smp.boot))
    patched = " ".join(sorted(budget.patched.boot))
    section.paragraphs.append(
        f"On one CPU the lock causes no traffic; it costs its locked read-modify-writes. gem5 counts them exactly "
        f"(`locked_rmws`: the L1 data caches' LockedRMWReadReq), per operation, for our UP kernel, the SMP kernel "
        f"under the precondition (`{smp}`) and the same binary with its lock prefixes patched out as 6.1 does on one "
        f"CPU (`{patched}`). `gem5_cycles_per_locked` is what gem5 charged for one, within that one binary (so no "
        "code-layout effect): the cycles per operation the kept prefixes add over the locked RMWs they add "
        "(analysis/data/lock_budget.toml)."
    )
    section.tables.append(Table(f"Seed {budget.seed.id}: locked RMWs and cycles per operation, one CPU (means over runs)", ours))
    prices = price_table(ours, budget)
    priced = Section(f"Seed {budget.seed.id}: what the seed's CPUs would charge for them")
    section.subsections.append(priced)
    priced.paragraphs.append(
        "What the seed's own CPUs would charge for the locked RMWs our SMP kernel adds over the UP one "
        "(`charged_cycles` = `added_locked` x `extra_cycles`), beside the gap the seed measured "
        "((SMP time - UP time) / operations x clock): " + "; ".join(f"{cpu.name}: {cpu.extra_cycles:g} cycles a locked RMW, {cpu.source}" for cpu in budget.seed_cpus) + "."
    )
    priced.tables.append(Table(f"Seed {budget.seed.id}: the seed's SMP-over-UP gap per operation against what its CPU charges for our locked RMWs", prices))
    return section
