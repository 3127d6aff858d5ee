"""A claim not run yet says whether the campaign will run it (analysis/statistics/planned_runs.py)."""

from __future__ import annotations

import pandas as pd

from analysis.statistics.claims import claims_table
from analysis.statistics.planned_runs import NOT_PLANNED, TO_COME, planned_rows
from lockstudy.campaign.spec import Resources, RunSpec
from tests.analysis.statistics.test_analysis_statistics_claims import BAND, HEADLINE, LOCKREF, repeats

LIMITS = Resources(time_minutes=240, memory_gb=6, host_cpus=1)


def lockref_spec(lockref: str, nodes: int, repeat: int, *, trace: str = "off") -> RunSpec:
    """A samefile run of the lockref study, as the campaign declares it."""
    return RunSpec(
        machine="altix-numa", size=nodes, size_unit="nodes", kernel_build="smp", boot=(f"lockstudy.lockref={lockref}",),
        run=f"samefile:threads={2 * nodes},iterations=100,warmup=10", cpu_model="timing", trace=trace, repeat=repeat,
        study=f"lockref-{nodes}nodes", resources=LIMITS, perturb_ns=4,
    )  # fmt: skip


def specs(lockref: str, nodes: int, count: int = 5, **extra: str) -> list[RunSpec]:
    return [lockref_spec(lockref, nodes, repeat, **extra) for repeat in range(count)]


def verdict_of(rows: list[dict], planned: pd.DataFrame | None) -> str:
    frame = claims_table(pd.DataFrame(rows), LOCKREF, BAND, planned=planned).set_index("claim")
    return str(frame.loc[HEADLINE, "verdict"])


def test_planned_rows_are_the_runs_not_made_with_the_machines_cpus_and_the_specs_copies() -> None:
    declared = specs("cmpxchg", 8, 2) + [
        RunSpec(machine="piii-smp", size=8, size_unit="cpus", kernel_build="smp", boot=(), run="dbench:seconds=2+write1b:threads=3",
                cpu_model="o3", trace="off", repeat=0, study="padding-dbench", resources=LIMITS),
    ]  # fmt: skip
    made = declared[0].run_id
    rows = planned_rows(declared, {made})
    assert made not in set(rows["run_id"]) and rows["run_id"].nunique() == 2
    numa = rows[rows["study"] == "lockref-8nodes"].iloc[0]
    # altix-numa has two CPUs a node; the threads are the run spec's
    assert (numa["cpus"], numa["nodes"], numa["copies"], numa["roi"]) == (16, 8, 16.0, 0)
    assert numa["boot_args"] == "lockstudy.lockref=cmpxchg" and numa["roi_cpu"] == "timing" and numa["trace"] == "off"
    bus = rows[rows["study"] == "padding-dbench"].set_index("roi")
    # dbench's copies are its clients, /init's default when the spec leaves them out (analysis/data/metrics.toml)
    assert (bus.loc[0, "testcase"], bus.loc[0, "copies"], bus.loc[1, "testcase"], bus.loc[1, "copies"]) == ("dbench", 2.0, "write1b", 3.0)
    assert (bus.loc[0, "nodes"], bus.loc[0, "cpus"]) == (1, 8)


def test_a_claim_without_runs_names_the_runs_of_the_campaign_to_come() -> None:
    planned = planned_rows(specs("cmpxchg", 8) + specs("spinlock", 8, 4), set())
    said = verdict_of(repeats("cmpxchg", 4, [300, 301, 302]) + repeats("spinlock", 4, [100, 101, 102]), planned)
    assert said.startswith("not run: a: no run with nodes=8")
    assert said.endswith(f"; {TO_COME}: 5 run(s) of a and 4 run(s) of b (study lockref-8nodes)")


def test_a_claim_the_campaign_never_runs_says_so_and_which_key_no_run_has() -> None:
    planned = planned_rows(specs("cmpxchg", 4) + specs("spinlock", 4), set())
    said = verdict_of(repeats("cmpxchg", 4, [300, 301, 302]) + repeats("spinlock", 4, [100, 101, 102]), planned)
    assert said.endswith(f"; {NOT_PLANNED} (a: no run with nodes=8; b: no run with nodes=8)")


def test_only_the_side_without_runs_waits_and_traced_runs_to_come_do_not_count() -> None:
    made_a = repeats("cmpxchg", 8, [300, 301, 302])
    planned = planned_rows(specs("spinlock", 8, 3) + specs("cmpxchg", 8, 2, trace="protocol"), set())
    assert verdict_of(made_a, planned).endswith(f"; {TO_COME}: 3 run(s) of b (study lockref-8nodes)")
    traced_only = planned_rows(specs("spinlock", 8, 2, trace="protocol"), set())
    assert verdict_of(made_a, traced_only).endswith(f"; {NOT_PLANNED} (b: no run with variant=spinlock)")


def test_without_the_campaign_a_claim_not_run_says_only_that() -> None:
    said = verdict_of(repeats("cmpxchg", 4, [300, 301, 302]) + repeats("spinlock", 4, [100, 101, 102]), None)
    assert said == "not run: a: no run with nodes=8; b: no run with nodes=8"
    assert TO_COME not in said and NOT_PLANNED not in said


def test_a_seed_with_no_run_made_or_to_come_says_not_in_the_campaign() -> None:
    other_study = [dict(row, study="kbench-bus", testcase="kbench") for row in repeats("cmpxchg", 4, [300, 301])]
    said = verdict_of(other_study, planned_rows([], set()))
    assert said.endswith(f"; {NOT_PLANNED} (no untraced samefile run)")
