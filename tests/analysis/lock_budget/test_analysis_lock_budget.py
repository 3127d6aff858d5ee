"""Seed 001's locked RMWs, counted in our runs and priced at the seed's CPUs (analysis/lock_budget/)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.lock_budget.budget import ours_table, price_table, seed_gap_cycles
from analysis.lock_budget.rules import DATA_FILE, LockBudgetError, load_budget
from analysis.lock_budget.section import budget_section
from analysis.statistics.pooling import PoolingError

BUDGET = load_budget()


def run(run_id: str, build: str, boot: str, cpu: str, locked: float, cycles: float, testcase: str = "write1b", window: str = "iterations=2000") -> dict:
    return {
        "run_id": run_id, "machine": "piii-smp", "kind": "classic-smp", "cpus": 1, "nodes": 1, "kernel_build": build,
        "boot_args": boot or float("nan"), "variant": "qspinlock", "testcase": testcase, "copies": 2.0, "roi": 0,
        "run_spec": f"{testcase}:threads=2,{window}", "roi_cpu": cpu, "trace": "off", "perturb_ns": 20.0,
        "perturb_seed": float(len(run_id)), "locked_rmws_per_op": locked, "cpu_cycles_per_op": cycles,
    }  # fmt: skip


def table() -> pd.DataFrame:
    return pd.DataFrame([
        run("u1", "up", "", "timing", 2.0, 3470.0), run("u2", "up", "", "timing", 2.0, 3474.0),
        run("s1", "smp", "lockstudy.fdlock=rwlock noreplace-smp", "timing", 17.0, 3730.0),
        run("p1", "smp", "lockstudy.fdlock=rwlock", "timing", 4.0, 3732.0),
        run("o1", "smp", "lockstudy.fdlock=rwlock noreplace-smp", "o3", 17.0, 2000.0),
        run("q1", "smp", "lockstudy.fdlock=rwlock", "o3", 4.0, 1740.0),
        run("x1", "smp", "lockstudy.fdlock=none", "timing", 4.0, 3617.0),  # neither configuration: left out
    ])  # fmt: skip


def test_the_seeds_gap_is_its_smp_minus_up_time_per_operation_in_its_cycles() -> None:
    p4, piii = BUDGET.seed_cpus
    # seed lines 22 and 24: 1.348 s UP, 2.445 s SMP for dd bs=1 count=1M on the 2.7 GHz P4
    assert seed_gap_cycles(BUDGET, p4) == pytest.approx((2.445 - 1.348) / 1048576 * 2.7e9)
    assert seed_gap_cycles(BUDGET, piii) == pytest.approx((5.999 - 3.971) / 1048576 * 0.5e9)


def test_our_locked_rmws_are_counted_per_configuration_and_gem5s_charge_is_within_one_binary() -> None:
    ours = ours_table(table(), BUDGET).set_index(["workload", "roi_cpu"])
    timing, o3 = ours.loc[("write1b", "timing")], ours.loc[("write1b", "o3")]
    assert (timing["n_up"], timing["n_smp"], timing["n_patched"]) == (2, 1, 1)
    assert (timing["locked_up"], timing["locked_smp"], timing["added_locked"]) == (2.0, 17.0, 15.0)
    assert timing["gem5_cycles_per_locked"] == pytest.approx((3730.0 - 3732.0) / 13.0)  # the timing CPU charges ~nothing
    assert o3["gem5_cycles_per_locked"] == pytest.approx(260.0 / 13.0) and o3["n_up"] == 0 and math.isnan(o3["added_locked"])
    prices = price_table(ours.reset_index(), BUDGET).set_index("seed_cpu")
    p4 = prices.loc[BUDGET.seed_cpus[0].name]
    assert p4["added_locked"] == 15.0 and p4["charged_cycles"] == 15.0 * 120
    assert p4["share_of_gap"] == pytest.approx(1800 / seed_gap_cycles(BUDGET, BUDGET.seed_cpus[0]))


def test_runs_of_two_windows_in_one_configuration_are_refused() -> None:
    rows = table()
    longer = run("u3", "up", "", "timing", 2.0, 3000.0, window="iterations=4000")
    with pytest.raises(PoolingError, match="u3"):
        ours_table(pd.concat([rows, pd.DataFrame([longer])], ignore_index=True), BUDGET)


def test_the_section_needs_both_kernels_and_renders_both_tables() -> None:
    assert budget_section(table()[table()["kernel_build"] == "smp"]) is None
    assert budget_section(table()[table()["run_id"] == "x1"]) is None  # none of its configurations at all
    section = budget_section(table())
    assert section is not None and len(section.tables) == 1 and len(section.subsections[0].tables) == 1


def test_a_bad_budget_file_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "lock_budget.toml"
    path.write_text(DATA_FILE.read_text().replace('column = "total_s"', 'column = "wall_s"', 1))
    with pytest.raises(LockBudgetError, match=r"budget.cpu\[0\].column: 'wall_s' is not a column of seed 001's table 'dd-p4'"):
        load_budget(path)
    path.write_text(DATA_FILE.read_text().replace("extra_cycles = 120", "extra_cycles = -1"))
    with pytest.raises(LockBudgetError, match=r"budget.cpu\[0\].extra_cycles: -1 is not a positive number"):
        load_budget(path)
