"""The traffic behind each seed's claim (analysis/seed_verdicts/seed_evidence.py) and our written reading
(analysis/reporting/discussion.py), on tables of known values."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from analysis.reporting import discussion
from analysis.seed_verdicts import seed_evidence
from analysis.seed_verdicts.seeds import load_seeds

SEEDS = {seed.id: seed for seed in load_seeds()}
SEED_IDS = set(SEEDS)


def run(run_id: str, study: str, build: str, boot: str, cpus: int, ops: float, rate: float, requests: float, testcase: str = "fsmix",
        cpu: str = "timing") -> dict:  # fmt: skip
    return {"run_id": run_id, "roi": 0, "study": study, "kernel_build": build, "boot_args": boot, "testcase": testcase, "roi_cpu": cpu,
            "cpus": cpus, "nodes": 1, "copies": 4, "ops": ops, "ops_per_sim_s": rate,
            "coherence_requests_per_op": requests, "ownership_requests_per_op": requests / 2,
            "bus_snoops_per_op": 1.0, "l2_ownership_misses_per_op": 0.5,
            "coherence_requests_per_sim_s": requests * rate, "ownership_requests_per_sim_s": requests * rate / 2}  # fmt: skip


def test_every_seed_names_evidence_and_locks() -> None:
    for seed in SEEDS.values():
        assert seed.evidence and seed.evidence[0] == "coherence_requests_per_op", seed.id
        assert seed.locks, seed.id


def test_runs_are_labelled_with_the_seeds_variant_names() -> None:
    padding, fdlock = SEEDS["000"], SEEDS["001"]
    assert seed_evidence.seed_variant("smp", "", padding) == "padded"
    assert seed_evidence.seed_variant("smp-packed", "", padding) == "packed"
    assert seed_evidence.seed_variant("up", "", fdlock) == "none"
    # the seed's SMP kernel: ours as shipped (no fd lock), or with the 2.5 lock restored by the switch
    assert seed_evidence.seed_variant("smp", "lockstudy.fdlock=none", fdlock) == "rwlock"
    assert seed_evidence.seed_variant("smp", "tsc=reliable lockstudy.fdlock=rwlock", fdlock) == seed_evidence.NO_VARIANT
    precondition = fdlock.under("precondition")
    assert seed_evidence.seed_variant("smp", "tsc=reliable lockstudy.fdlock=rwlock noreplace-smp", precondition) == "rwlock"
    # on one CPU without noreplace-smp the lock prefixes are patched out: not the seed's precondition
    assert seed_evidence.seed_variant("smp", "tsc=reliable lockstudy.fdlock=rwlock", precondition) == seed_evidence.NO_VARIANT
    # a stock switch the variant does not name makes another kernel: 6.1 as shipped patches them
    assert seed_evidence.seed_variant("smp", "lockstudy.fdlock=none noreplace-smp", fdlock) == seed_evidence.NO_VARIANT


def test_the_evidence_table_says_under_which_condition_a_run_stands() -> None:
    table = pd.DataFrame([
        run("u", "fdlock-up", "up", "", 1, 100, 10.0, 1.0, testcase="dd1b"),
        run("n", "fdlock", "smp", "lockstudy.fdlock=none", 1, 100, 9.0, 2.0, testcase="dd1b"),
        run("r", "fdlock", "smp", "lockstudy.fdlock=rwlock noreplace-smp", 1, 100, 8.0, 3.0, testcase="dd1b"),
    ]).assign(instructions_per_op=100.0, cpu_cycles_per_op=90.0, locked_rmws_per_op=2.0, l1i_misses_per_op=2.0, btb_mispredicts_per_op=float("nan"))  # fmt: skip
    frame = seed_evidence.configuration_table(table, SEEDS["001"]).set_index("boot_args")
    assert frame.loc["", "condition"] == "as-shipped, precondition"  # the UP kernel: no lock either way
    assert (frame.loc["lockstudy.fdlock=none", "seed_variant"], frame.loc["lockstudy.fdlock=none", "condition"]) == ("rwlock", "as-shipped")
    kept = "lockstudy.fdlock=rwlock noreplace-smp"
    assert (frame.loc[kept, "seed_variant"], frame.loc[kept, "condition"]) == ("rwlock", "precondition")


def test_configurations_average_their_repeats_and_count_runs() -> None:
    table = pd.DataFrame([
        run("a", "padding", "smp", "", 8, 100, 10.0, 40.0),
        run("b", "padding", "smp", "", 8, 100, 20.0, 60.0),  # a repeat of a
        run("c", "padding", "smp-packed", "", 8, 100, 12.0, 90.0),
        run("d", "fdlock", "smp", "", 8, 100, 99.0, 1.0),  # another seed's study
        run("e", "padding-o3", "smp", "", 8, 100, 5.0, 70.0, cpu="o3"),  # another CPU model: not averaged in
    ])  # fmt: skip
    frame = seed_evidence.configuration_table(table, SEEDS["000"])
    assert list(zip(frame["seed_variant"], frame["roi_cpu"])) == [("packed", "timing"), ("padded", "o3"), ("padded", "timing")]
    frame = frame[frame["roi_cpu"] == "timing"]
    padded = frame[frame["seed_variant"] == "padded"].iloc[0]
    assert (padded["runs"], padded["ops_per_sim_s"], padded["coherence_requests_per_op"]) == (2, 15.0, 50.0)
    assert list(frame.columns[-len(SEEDS["000"].evidence):]) == list(SEEDS["000"].evidence)


def test_extra_points_of_one_build_that_differ_in_their_run_spec_are_not_averaged() -> None:
    """qspinlock's lock pair stands for neither of seed 000's variants: packed and padded are two rows, not
    one mean of both."""

    def pair(run_id: str, placement: str, rate: float) -> dict:
        spec = f"kbench:variant=qspinlock,duration_ms=10,hold_loops=10,think_loops=100,placement={placement}"
        return {**run(run_id, "kbench-lock-pair", "smp-bench-pair", "", 8, 100, rate, 8.0, testcase="kbench"), "run_spec": spec}

    table = pd.DataFrame([pair("p1", "pair-packed", 760.0), pair("p2", "pair-packed", 762.0), pair("d1", "pair-padded", 983.0)])
    frame = seed_evidence.configuration_table(table, SEEDS["000"])
    assert set(frame["seed_variant"]) == {seed_evidence.NO_VARIANT}
    assert sorted(zip(frame["runs"], frame["ops_per_sim_s"])) == [(1, 983.0), (2, 761.0)]


def test_evidence_not_in_the_metrics_table_is_named() -> None:
    table = pd.DataFrame([run("a", "padding", "smp", "", 8, 100, 10.0, 40.0)]).drop(columns=["bus_snoops_per_op"])
    with pytest.raises(seed_evidence.EvidenceError, match=r"seeds.toml: seed 000: evidence \['bus_snoops_per_op'\]"):
        seed_evidence.configuration_table(table, SEEDS["000"])


def test_lock_lines_per_operation_of_traced_runs() -> None:
    seed = dataclasses.replace(SEEDS["004"], locks=("dentry:",))
    table = pd.DataFrame([
        run("a", "lockref-2nodes", "smp", "lockstudy.lockref=cmpxchg", 4, 200, 1.0, 1.0, "samefile"),
        run("b", "lockref-2nodes", "smp", "lockstudy.lockref=spinlock", 4, 100, 1.0, 1.0, "samefile"),
    ])  # fmt: skip
    summary = pd.DataFrame([
        {"run_id": "a", "lock": "dentry:/x d_lockref", "invalidations": 400, "forwards": 200, "home_requests": 1000, "requests_other_on_line": 3},
        {"run_id": "b", "lock": "dentry:/x d_lockref", "invalidations": 500, "forwards": 100, "home_requests": 900, "requests_other_on_line": 0},
        {"run_id": "a", "lock": "mm:171 mmap_lock", "invalidations": 7, "forwards": 7, "home_requests": 7, "requests_other_on_line": 0},
    ])  # fmt: skip
    frame = seed_evidence.lock_table(summary, table, seed)
    assert list(frame["lock"]) == ["dentry:/x d_lockref"] * 2  # only the seed's locks
    by_variant = frame.set_index("seed_variant")
    assert by_variant.loc["cmpxchg", "home_requests_per_op"] == 5.0
    assert by_variant.loc["spinlock", "invalidations_per_op"] == 5.0
    assert by_variant.loc["cmpxchg", "requests_other_on_line"] == 3


def test_dynamic_lock_names_lose_their_process_id() -> None:
    seed = dataclasses.replace(SEEDS["003"], locks=("mm:",))
    table = pd.DataFrame([run(r, "rwsem-wakeflag", "smp", "lockstudy.rwsem_wakeflag=1", 4, 10, 1.0, 1.0, "mmapsem") for r in "ab"])
    summary = pd.DataFrame([
        {"run_id": "a", "lock": "mm:171 mmap_lock", "invalidations": 10, "forwards": 0, "home_requests": 20, "requests_other_on_line": 0},
        {"run_id": "b", "lock": "mm:185 mmap_lock", "invalidations": 30, "forwards": 0, "home_requests": 40, "requests_other_on_line": 0},
    ])  # fmt: skip
    frame = seed_evidence.lock_table(summary, table, seed)
    assert list(frame["lock"]) == ["mm:<pid> mmap_lock"]
    assert (frame.iloc[0]["runs"], frame.iloc[0]["home_requests_per_op"]) == (2, 3.0)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "seeds.discussion.toml"
    path.write_text(text)
    return path


def test_a_discussion_is_read_and_knows_when_it_is_stale(tmp_path: Path) -> None:
    path = write(tmp_path, (
        '[[reading]]\nabout = "004"\nwritten_for = 8\ntext = """\nFirst\nparagraph.\n\nSecond."""\n'
        '[[reading]]\nabout = "handoffs"\nwritten_for = 30\ntext = "Queue locks stay flat."\n'
    ))  # fmt: skip
    found = discussion.load(path, SEED_IDS)
    assert found["004"].paragraphs == ("First paragraph.", "Second.")
    assert found[discussion.HANDOFFS].paragraphs == ("Queue locks stay flat.",)
    assert found["004"].staleness(8) == ""
    assert "Written when 8 run(s)" in found["004"].staleness(10) and "hold 10" in found["004"].staleness(10)
    assert discussion.load(tmp_path / "none.toml", SEED_IDS) == {}
    assert discussion.path_for(Path("campaigns/seeds.toml")) == Path("campaigns/seeds.discussion.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[reading]]\nabout = "009"\nwritten_for = 1\ntext = "x"\n', r"reading\[0\].about: '009' is neither a seed"),
        ('[[reading]]\nabout = "004"\nwritten_for = -1\ntext = "x"\n', r"reading\[0\].written_for: must be a count"),
        ('[[reading]]\nabout = "004"\nwritten_for = 1\ntext = " "\n', r"reading\[0\].text: must be non-empty"),
        ('[[reading]]\nabout = "004"\nwritten_for = 1\n', r"reading\[0\]: missing \['text'\]"),
        ('[[reading]]\nabout = "004"\nwritten_for = 1\ntext = "x"\nwriten = 2\n', r"unknown field\(s\) \['writen'\]"),
        ('[[reading]]\nabout = "004"\nwritten_for = 1\ntext = "x"\n[[reading]]\nabout = "004"\nwritten_for = 1\ntext = "y"\n', r"reading\[1\].about: 004 has two readings"),
        ('[[seed]]\nid = "004"\n', r"unknown top-level field\(s\) \['seed'\]"),
        ("reading = 3\n[x", r"not valid TOML"),
    ],
)
def test_a_broken_discussion_names_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(discussion.DiscussionError, match=message) as caught:
        discussion.load(path, SEED_IDS)
    assert str(path) in str(caught.value)
