"""Seed claims against our runs (analysis/seed_verdicts/seed_comparison.py), on a table of known values."""

from __future__ import annotations

import pandas as pd

from analysis.seed_verdicts import seed_comparison
from analysis.seed_verdicts.seeds import load_seeds

SEEDS = {seed.id: seed for seed in load_seeds()}
LOCKREF = SEEDS["004"]


def run(study: str, boot: str, nodes: int, rate: float, testcase: str = "samefile") -> dict:
    return {"study": study, "boot_args": boot, "kernel_build": "smp", "nodes": nodes, "cpus": 2 * nodes,
            "copies": 2 * nodes, "testcase": testcase, seed_comparison.OUR_METRIC: rate}  # fmt: skip


def verdicts(table: pd.DataFrame, condition: str = "as-shipped") -> dict[str, str]:
    frame = seed_comparison.comparison_table(table, LOCKREF, 0.02)
    frame = frame[frame["condition"] == condition]
    return dict(zip(frame["claim"], frame["verdict"]))


def test_claims_are_judged_by_direction_per_size() -> None:
    table = pd.DataFrame([
        run("lockref-8nodes", "lockstudy.lockref=cmpxchg", 8, 300.0),
        run("lockref-8nodes", "lockstudy.lockref=spinlock", 8, 100.0),  # cmpxchg better: agrees
        run("lockref-4nodes", "lockstudy.lockref=cmpxchg", 4, 100.0),
        run("lockref-4nodes", "lockstudy.lockref=spinlock", 4, 150.0),  # spinlock better: disagrees
        run("lockref-1nodes", "lockstudy.lockref=cmpxchg", 1, 100.0),
        run("lockref-1nodes", "lockstudy.lockref=spinlock", 1, 101.0),  # within 2 %: same
        run("other-study", "lockstudy.lockref=cmpxchg", 2, 1.0),  # not the seed's study
    ])  # fmt: skip
    found = verdicts(table)
    assert found["004-cmpxchg-8nodes-10-100 (headline)"] == "agrees"
    assert found["004-cmpxchg-4nodes-10-100"] == "disagrees"
    assert found["004-cmpxchg-1node-10-100"] == "agrees"  # the seed says "same" at 1 node
    assert found["004-cmpxchg-2nodes-10-100"].startswith("not run: a: no run with nodes=2")
    # the same claims under the precondition read the stat-lockref studies' runs, of which there are none
    assert all(v.startswith("not run: a: no run with variant=cmpxchg") for v in verdicts(table, "precondition").values())


def test_no_runs_say_what_is_missing() -> None:
    table = pd.DataFrame([run("lockref-8nodes", "lockstudy.lockref=cmpxchg", 8, 3.0, testcase="pft")])
    frame = seed_comparison.comparison_table(table, LOCKREF, 0.02)
    assert set(frame["verdict"].str.slice(0, 8)) == {"not run:"}
    assert frame["ours_a"].isna().all()


def test_the_up_kernel_stands_for_the_seeds_up_baseline() -> None:
    fdlock = SEEDS["001"]

    def write1b(study: str, build: str, boot: str, rate: float) -> dict:
        return {"study": study, "boot_args": boot, "kernel_build": build, "nodes": 1, "cpus": 1, "copies": 1,
                "testcase": "write1b", seed_comparison.OUR_METRIC: rate}  # fmt: skip

    table = pd.DataFrame([
        write1b("fdlock-up", "up", "", 200.0),
        write1b("fdlock", "smp", "lockstudy.fdlock=rwlock noreplace-smp", 150.0),
        write1b("fdlock", "smp", "lockstudy.fdlock=rwlock", 190.0),  # prefixes patched out: neither condition's SMP kernel
        write1b("fdlock", "smp", "lockstudy.fdlock=none", 199.0),
    ])  # fmt: skip
    frame = seed_comparison.comparison_table(table, fdlock, 0.02)
    judged = frame[(frame["claim"].str.startswith("001-up-vs-smp-2.5")) & (frame["workload"] == "write1b")].set_index("condition")
    # under the precondition the seed's SMP kernel is ours with the fd lock restored; as shipped, ours without it
    assert (judged.loc["precondition", "ours"], judged.loc["precondition", "verdict"]) == ("a_better", "agrees")
    assert judged.loc["precondition", "ours_b"] == 150.0  # the run with noreplace-smp only
    assert (judged.loc["as-shipped", "ours_b"], judged.loc["as-shipped", "ours"]) == (199.0, "same")


def test_a_seed_compared_on_one_size_ignores_the_others() -> None:
    """Seed 001's numbers are of one busy CPU: its claims use our 1-CPU runs only."""
    fdlock = SEEDS["001"]
    assert fdlock.compare_on == {"cpus": 1}

    def fd(build: str, boot: str, cpus: int, rate: float) -> dict:
        return {"study": "fdlock", "boot_args": boot, "kernel_build": build, "nodes": 1, "cpus": cpus,
                "copies": 2, "testcase": "dd1b", seed_comparison.OUR_METRIC: rate}  # fmt: skip

    table = pd.DataFrame([
        fd("smp", "lockstudy.fdlock=spinlock noreplace-smp", 1, 105.0),
        fd("smp", "lockstudy.fdlock=rwlock noreplace-smp", 1, 100.0),
        fd("smp", "lockstudy.fdlock=rwlock noreplace-smp", 2, 900.0),  # a 2-CPU run: not the seed's setting
    ])  # fmt: skip
    frame = seed_comparison.comparison_table(table, fdlock, 0.02).set_index("claim")
    headline = frame.loc["001-spinlock-vs-rwlock (headline)"]
    headline = headline[headline["workload"] == "dd1b"].iloc[0] if isinstance(headline, pd.DataFrame) else headline
    assert (headline["ours_a"], headline["ours_b"], headline["verdict"]) == (105.0, 100.0, "agrees")


def test_claims_are_judged_per_cpu_model_the_main_one_first() -> None:
    fdlock = SEEDS["001"]

    def dd(study: str, build: str, boot: str, cpu: str, rate: float) -> dict:
        return {"study": study, "boot_args": boot, "kernel_build": build, "nodes": 1, "cpus": 1, "copies": 1,
                "testcase": "dd1b", "roi_cpu": cpu, seed_comparison.OUR_METRIC: rate}  # fmt: skip

    table = pd.DataFrame([
        dd("fdlock-up", "up", "", "timing", 101.0), dd("fdlock", "smp", "lockstudy.fdlock=rwlock noreplace-smp", "timing", 100.0),
        dd("fdlock-up-o3", "up", "", "o3", 180.0), dd("fdlock-o3", "smp", "lockstudy.fdlock=rwlock noreplace-smp", "o3", 100.0),
    ])  # fmt: skip
    frame = seed_comparison.comparison_table(table, fdlock, 0.02)
    claim = frame[frame["claim"].str.startswith("001-up-vs-smp-2.5") & (frame["workload"] == "dd1b") & (frame["condition"] == "precondition")]
    assert list(claim["roi_cpu"]) == ["timing", "o3"]
    assert list(claim["ours"]) == ["same", "a_better"]  # not the mean of both models
    assert list(claim["ours_a"]) == [101.0, 180.0]


def test_a_workload_without_operations_is_judged_on_its_own_rate() -> None:
    padding = SEEDS["000"]
    dbench = next(w for w in padding.workloads if w.name == "dbench")
    assert dbench.rate == "metrics.throughput_mb_s"

    def run8(build: str, mb_s: float) -> dict:
        return {"study": "padding-dbench", "boot_args": "", "kernel_build": build, "nodes": 1, "cpus": 8, "copies": 4,
                "testcase": "dbench", "roi_cpu": "timing", seed_comparison.OUR_METRIC: float("nan"), dbench.rate: mb_s}  # fmt: skip

    frame = seed_comparison.comparison_table(pd.DataFrame([run8("smp", 216.0), run8("smp-packed", 219.0)]), padding, 0.02)
    judged = frame[(frame["workload"] == "dbench") & frame["ours_ratio"].notna()]
    assert not judged.empty and set(judged["rate"]) == {"metrics.throughput_mb_s"}
    assert set(judged["ours"]) == {"same"}  # 1.4% apart
    assert set(judged["copies"]) == {4.0}


def test_claims_are_judged_per_copy_count_unless_the_claim_names_its_threads() -> None:
    padding, hbo = SEEDS["000"], SEEDS["002"]
    dbench = next(w for w in padding.workloads if w.name == "dbench")

    def run8(build: str, clients: int, mb_s: float) -> dict:
        return {"study": "padding-dbench", "boot_args": "", "kernel_build": build, "nodes": 1, "cpus": 8, "copies": clients,
                "testcase": "dbench", "roi_cpu": "timing", seed_comparison.OUR_METRIC: float("nan"), dbench.rate: mb_s}  # fmt: skip

    runs = [run8("smp", 4, 216.0), run8("smp-packed", 4, 219.0), run8("smp", 8, 260.0), run8("smp-packed", 8, 200.0)]
    frame = seed_comparison.comparison_table(pd.DataFrame(runs), padding, 0.02)
    headline = frame[(frame["workload"] == "dbench") & frame["ours_ratio"].notna() & frame["claim"].str.endswith("(headline)")]
    assert list(headline["copies"]) == [4.0, 8.0]
    assert list(headline["ours"]) == ["same", "a_better"]  # not the mean of 4 and 8 clients
    assert "threads" in hbo.match_keys
    both = pd.DataFrame({"copies": [4, 8]})
    assert seed_comparison.copy_counts(both, both, hbo) == []  # its threads are a match key: the claim names them
    assert seed_comparison.copy_counts(both, both, padding) == [4.0, 8.0]
    four, eight = pd.DataFrame({"copies": [4]}), pd.DataFrame({"copies": [8, 8]})
    assert seed_comparison.copy_counts(eight, four, padding) == []  # one count a side: a scaling claim's sizes
    only_a = seed_comparison.comparison_table(pd.DataFrame(runs[:3]), padding, 0.02)
    eight = only_a[(only_a["workload"] == "dbench") & (only_a["copies"] == 8.0)]
    assert not eight.empty and set(eight["verdict"]) == {"not run: b: no run with copies=8"}  # a is the padded build


def test_a_scaling_claim_compares_two_sizes_and_their_copy_counts() -> None:
    """004's 4-nodes-against-2 claim: a and b differ in size, so in copies (one per CPU); still one judgement."""
    table = pd.DataFrame([
        run("lockref-4nodes", "lockstudy.lockref=cmpxchg", 4, 27_000.0),
        run("lockref-2nodes", "lockstudy.lockref=cmpxchg", 2, 56_000.0),
        run("lockref-4nodes", "lockstudy.lockref=spinlock", 4, 27_000.0),
        run("lockref-2nodes", "lockstudy.lockref=spinlock", 2, 55_000.0),
    ])  # fmt: skip
    frame = seed_comparison.comparison_table(table, LOCKREF, 0.02)
    frame = frame[frame["condition"] == "as-shipped"]  # the lockref-* studies: seed 004 as shipped
    scaling = frame[frame["claim"].str.startswith("004-cmpxchg-scaling-4v2")]
    assert not scaling.empty
    assert set(scaling["verdict"]) == {"disagrees"}  # 4 nodes at half the throughput of 2
    assert len(scaling) == len(set(scaling["claim"]))  # one judgement per claim, not one per copy count
    assert scaling["copies"].isna().all()  # a ran 8 copies, b 4


def test_a_seeds_runs_are_those_of_its_studies_under_both_conditions() -> None:
    hbo = SEEDS["002"]
    table = pd.DataFrame([
        {**run("numa-spinlock-2nodes", "lockstudy.spinlock=tas", 2, 1.0, testcase="pft"), "run_id": "shipped"},
        {**run("ptlock-spinlock-16nodes", "lockstudy.spinlock=tas", 16, 1.0, testcase="pft"), "run_id": "restored"},
        {**run("kbench-numa", "", 2, 1.0, testcase="kbench"), "run_id": "other"},
    ])  # fmt: skip
    assert seed_comparison.seed_run_ids(table, hbo) == {"shipped", "restored"}
    assert seed_comparison.seed_run_ids(table, LOCKREF) == set()  # no precondition declared, no lockref run


def test_a_testcase_parameter_stands_for_a_variant_under_the_precondition_only() -> None:
    """Seed 000's precondition: the lock bench's lock pair with the second lock on the first one's line
    (placement=pair-packed, the smp-bench-pair build) stands for the packed kernel, on a line of its own for
    the padded one; kbench is judged under the precondition only, and the as-shipped claims keep to fsmix
    and dbench. The first precondition's counter runs (kbench-false-sharing, placement=shared on smp) stand
    for neither."""
    padding = SEEDS["000"]

    def kbench(placement: str, cpus: int, rate: float, study: str = "kbench-lock-pair", build: str = "smp-bench-pair") -> dict:
        return {"study": study, "boot_args": "", "kernel_build": build, "nodes": 1, "cpus": cpus, "copies": cpus,
                "testcase": "kbench", "run_spec": f"kbench:variant=tas,duration_ms=10,placement={placement}",
                seed_comparison.OUR_METRIC: rate}  # fmt: skip

    table = pd.DataFrame([kbench("pair-padded", 8, 200.0), kbench("pair-packed", 8, 100.0), kbench("pair-padded", 2, 100.0),
                          kbench("pair-packed", 2, 100.5), kbench("padded", 4, 300.0, "kbench-false-sharing", "smp"),
                          kbench("shared", 4, 100.0, "kbench-false-sharing", "smp")])  # fmt: skip
    frame = seed_comparison.comparison_table(table, padding, 0.02)
    assert set(zip(frame["condition"], frame["workload"])) == {("as-shipped", "fsmix"), ("as-shipped", "dbench"), ("precondition", "kbench")}
    under = frame[frame["condition"] == "precondition"].set_index("claim")
    assert under.loc["000-peak-8cpus (headline)", ["ours_a", "ours_b", "verdict"]].tolist() == [200.0, 100.0, "agrees"]
    assert under.loc["000-peak-2cpus", "verdict"] == "disagrees"  # the seed's padding lost 0.8 %; ours 0.5 % apart: same
    assert under.loc["000-peak-4cpus", "verdict"].startswith("not run: a: no run with cpus=4")
    # a run without the parameter, or of the counter's placements, stands for neither variant
    packed = padding.under("precondition").variants["packed"]
    assert not packed.stands_for("smp-bench-pair", "", "kbench:variant=tas")
    assert not packed.stands_for("smp", "", "kbench:variant=tas,placement=shared")


def test_a_variant_named_by_two_testcase_parameters_needs_both() -> None:
    """Seed 000's precondition names the lock as well as the placement: the seed's test-and-set lock with the
    second lock packed on its line stands for the packed kernel; qspinlock's run of the same placement is
    another configuration and stands for neither variant."""
    packed = SEEDS["000"].under("precondition").variants["packed"]
    assert packed.stands_for("smp-bench-pair", "", "kbench:variant=tas,duration_ms=10,placement=pair-packed")
    assert not packed.stands_for("smp-bench-pair", "", "kbench:variant=qspinlock,duration_ms=10,placement=pair-packed")
    assert not packed.stands_for("smp-bench-pair", "", "kbench:variant=tas,duration_ms=10,placement=pair-padded")
