"""Campaign files: expansion, stable run ids, and rejection of bad input."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from lockstudy.campaign.executors import SlurmExecutor
from lockstudy.campaign.gem5_backend import after_roi_options, perturbation_options
from lockstudy.campaign.loader import CampaignError, load_campaign
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.paths import ROOT

GOOD = """\
[campaign]
name = "demo"

[defaults.resources]
time_minutes = 30
memory_gb = 2
host_cpus = 1

[[study]]
name = "sweep"
machine = "piii-smp"
cpus = [2, 4]
boot = ["lockstudy.spinlock=tas", "lockstudy.spinlock=ticket", ""]
run = "write1b:threads=1,iterations=100"

[[study]]
name = "numa"
machine = "altix-numa"
nodes = 2
run = ["pft:threads=2,mb=8"]
repeat = 2
perturb_ns = 4
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_matrix_expands_to_the_product(tmp_path: Path) -> None:
    campaign = load_campaign(write(tmp_path, GOOD))
    assert len(campaign.runs) == 2 * 3 + 2
    sweep = [r for r in campaign.runs if r.study == "sweep"]
    assert {(r.size, r.boot) for r in sweep} == {
        (c, b) for c in (2, 4) for b in (("lockstudy.spinlock=tas",), ("lockstudy.spinlock=ticket",), ())
    }
    numa = [r for r in campaign.runs if r.study == "numa"]
    assert {r.size_unit for r in numa} == {"nodes"} and {r.repeat for r in numa} == {0, 1}


def test_repeats_are_perturbed_and_the_perturbation_is_part_of_the_id(tmp_path: Path) -> None:
    numa = [r for r in load_campaign(write(tmp_path, GOOD)).runs if r.study == "numa"]
    assert {(r.perturb_ns, r.perturb_seed) for r in numa} == {(4, 0), (4, 1)}
    assert all(r.identity()["perturb_ns"] == 4 for r in numa)
    bigger = {r.run_id for r in load_campaign(write(tmp_path, GOOD.replace("perturb_ns = 4", "perturb_ns = 8"))).runs if r.study == "numa"}
    assert bigger.isdisjoint({r.run_id for r in numa})
    # An unperturbed run's identity has no perturbation field: ids made before it existed stay valid.
    sweep = [r for r in load_campaign(write(tmp_path, GOOD)).runs if r.study == "sweep"]
    assert all("perturb_ns" not in r.identity() for r in sweep)


def test_a_perturbed_start_alone_makes_repeats_and_is_part_of_the_id(tmp_path: Path) -> None:
    numa = [r for r in load_campaign(write(tmp_path, GOOD)).runs if r.study == "numa"]
    started = [r for r in load_campaign(write(tmp_path, GOOD.replace("perturb_ns = 4", "perturb_start_us = 4000"))).runs if r.study == "numa"]
    assert {(r.perturb_ns, r.perturb_start_us, r.perturb_seed) for r in started} == {(0, 4000, 0), (0, 4000, 1)}
    assert all(r.identity()["perturb_start_us"] == 4000 and "perturb_ns" not in r.identity() for r in started)
    # A run perturbed only in memory latency keeps the id it had before start perturbation existed.
    assert all("perturb_start_us" not in r.identity() for r in numa)
    both = [r for r in load_campaign(write(tmp_path, GOOD.replace("perturb_ns = 4", "perturb_ns = 4\nperturb_start_us = 4000"))).runs if r.study == "numa"]
    assert len({r.run_id for r in numa + started + both}) == 6
    assert perturbation_options(both[1]) == ["--perturb-ns", "4", "--perturb-start-us", "4000", "--perturb-seed", "1"]
    assert perturbation_options(started[0]) == ["--perturb-start-us", "4000", "--perturb-seed", "0"]
    assert perturbation_options(numa[1]) == ["--perturb-ns", "4", "--perturb-seed", "1"]


def test_a_start_perturbation_of_a_runtimed_program_is_refused(tmp_path: Path) -> None:
    both = 'run = ["kbench:variant=tas", "dd1b:count=100"]'
    timed = BUS_REPEATS.replace("PERTURB", "20\nperturb_start_us = 4000").replace('run = "kbench:variant=tas"', both)
    with pytest.raises(CampaignError) as caught:
        load_campaign(write(tmp_path, timed))
    assert "c.toml:study[0].perturb_start_us: 4000: dd1b is timed by runtimed, whose ROI begins 0.09 ms after it asks" in str(caught.value)
    assert "(perturb_start_us = 0 for its runs (perturb_ns alone), in a study of their own)" in str(caught.value)
    runs = load_campaign(write(tmp_path, timed.replace(', "dd1b:count=100"', ""))).runs
    assert {r.perturb_start_us for r in runs} == {4000}


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        (GOOD.replace("perturb_ns = 4\n", ""), "study[1].repeat: 2", "repeats without perturbation are identical runs"),
        (GOOD.replace("perturb_ns = 4", "perturb_ns = 400"), "study[1].perturb_ns: 400", "is not a whole number of ns in [0, 100]"),
        (GOOD.replace("perturb_ns = 4", "perturb_ns = -1"), "study[1].perturb_ns: -1", "is not a whole number of ns"),
        (GOOD.replace("perturb_ns = 4", 'perturb_ns = "4ns"'), "study[1].perturb_ns: 4ns", "is not a whole number of ns"),
        (GOOD.replace("perturb_ns = 4", "perturb_start_us = 40000"), "study[1].perturb_start_us: 40000", "is not a whole number of us in [0, 20000]"),
        (GOOD.replace("perturb_ns = 4", "perturb_start_us = 4.5"), "study[1].perturb_start_us: 4.5", "is not a whole number of us"),
    ],
)
def test_bad_repeats_and_perturbations_are_refused(tmp_path: Path, text: str, field: str, reason: str) -> None:
    with pytest.raises(CampaignError) as caught:
        load_campaign(write(tmp_path, text))
    assert f"c.toml:{field}: {reason}" in str(caught.value)


BUS_REPEATS = """
[campaign]
name = "bus"

[defaults.resources]
time_minutes = 30
memory_gb = 2
host_cpus = 1

[[study]]
name = "bus"
machine = "piii-smp"
cpus = 2
run = "kbench:variant=tas"
repeat = 3
perturb_ns = PERTURB
"""


def test_a_perturbation_shorter_than_a_bus_cycle_is_refused(tmp_path: Path) -> None:
    # piii-smp's 100 MHz bus takes a memory response at its next 10 ns edge:
    # 4 ns gave five bit-identical repeats on it.
    with pytest.raises(CampaignError) as caught:
        load_campaign(write(tmp_path, BUS_REPEATS.replace("PERTURB", "4")))
    assert "c.toml:study[0].perturb_ns: 4: piii-smp retimes a memory response to its next 10 ns clock edge" in str(caught.value)
    assert "(perturb_ns of more than 10 (e.g. 20" in str(caught.value)
    runs = load_campaign(write(tmp_path, BUS_REPEATS.replace("PERTURB", "20"))).runs
    assert {r.perturb_ns for r in runs} == {20} and len(runs) == 3


def test_run_ids_are_stable_and_ignore_resources(tmp_path: Path) -> None:
    first = {r.run_id for r in load_campaign(write(tmp_path, GOOD)).runs}
    more_time = GOOD.replace("time_minutes = 30", "time_minutes = 90")
    second = {r.run_id for r in load_campaign(write(tmp_path, more_time)).runs}
    assert first == second and len(first) == 8


def test_a_study_may_allow_a_longer_after_roi_phase_without_changing_its_runs(tmp_path: Path) -> None:
    """32 threads freeing 8 MiB each outlast run.toml's 250 ms after the ROI (a calibration run, 2026-11-27):
    [study.resources] after_roi_ms gives such a study more, as run.py's --after-roi-limit-ms."""
    longer = GOOD.replace('perturb_ns = 4\n', 'perturb_ns = 4\n[study.resources]\nafter_roi_ms = 600\n')
    runs = load_campaign(write(tmp_path, longer)).runs
    numa = [r for r in runs if r.study == "numa"]
    assert {r.resources.after_roi_ms for r in numa} == {600} and after_roi_options(numa[0]) == ["--after-roi-limit-ms", "600"]
    sweep = [r for r in runs if r.study == "sweep"]
    assert {r.resources.after_roi_ms for r in sweep} == {None} and after_roi_options(sweep[0]) == []
    assert {r.run_id for r in runs} == {r.run_id for r in load_campaign(write(tmp_path, GOOD)).runs}
    # Both stopped as stuck under run.toml's limit: the launch retries the one whose study now allows more.
    from lockstudy.validation.runs import STUCK_AFTER_ROI

    store = CampaignStore("c", tmp_path / "results")
    for run in (numa[0], sweep[0]):
        folder = store.run_dir(run.run_id)
        folder.path.mkdir(parents=True)
        folder.result_file.write_text(json.dumps({"attempt": 1, "status": "failed", "reason": f"{STUCK_AFTER_ROI}: stopped"}))
    assert [s.state for s in store.statuses([numa[0], sweep[0]], max_attempts=2)] == [State.FAILED, State.GAVE_UP]
    bad = GOOD.replace('perturb_ns = 4\n', 'perturb_ns = 4\n[study.resources]\nafter_roi_ms = 0\n')
    with pytest.raises(CampaignError, match=r"study\[1\]\.resources\.after_roi_ms: 0: is not a positive integer"):
        load_campaign(write(tmp_path, bad))


def test_boot_argument_order_does_not_change_the_id(tmp_path: Path) -> None:
    one = GOOD.replace('"lockstudy.spinlock=tas"', '"lockstudy.spinlock=tas lockstudy.lockref=spinlock"')
    two = GOOD.replace('"lockstudy.spinlock=tas"', '"lockstudy.lockref=spinlock lockstudy.spinlock=tas"')
    assert {r.run_id for r in load_campaign(write(tmp_path, one)).runs} == {
        r.run_id for r in load_campaign(write(tmp_path, two)).runs
    }


def test_a_stock_switch_of_the_list_is_taken_and_is_part_of_the_id(tmp_path: Path) -> None:
    """noreplace-smp keeps an SMP kernel's lock prefixes on one CPU (seed 001's precondition): a run
    with it is another run than one without."""
    kept = GOOD.replace('"lockstudy.spinlock=tas"', '"lockstudy.spinlock=tas noreplace-smp"')
    runs = [r for r in load_campaign(write(tmp_path, kept)).runs if "noreplace-smp" in r.boot]
    assert len(runs) == 2 and {r.boot for r in runs} == {("lockstudy.spinlock=tas", "noreplace-smp")}
    plain = {r.run_id for r in load_campaign(write(tmp_path, GOOD)).runs}
    assert not {r.run_id for r in runs} & plain


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("cpus = [2, 4]", "cpus = [2, 0]"), "study[0].cpus: 0: is not a positive integer"),
        (('machine = "piii-smp"', 'machine = "pentium9"'), "study[0].machine: pentium9: has no machine file (machines: "),
        (('name = "sweep"', 'name = "sweep"\ncolour = "red"'), "study[0].colour: red: is an unknown field (allowed: "),
        (('name = "numa"', 'name = "sweep"'), "study[1].name: sweep: names two studies"),
        (("cpus = [2, 4]", "cpus = [2, 4]\nnodes = 2"), "study[0]: cpus and nodes: gives no size (exactly one of cpus"),
        (("time_minutes = 30\n", ""), "study[0].resources.time_minutes: (missing): is required"),
        (('run = "write1b:threads=1,iterations=100"', 'run = "write1b:x=1;reboot"'), "study[0].run: write1b:x=1;reboot: is not a run spec"),
        (('run = "write1b:threads=1,iterations=100"', 'run = "kbench:variant=mcs"'), "study[0].run: kbench:variant=mcs: kbench: variant=mcs"),
        (('"lockstudy.spinlock=tas"', '"lockstudy.spinlock=tas$(touch /tmp/pwned)"'), "study[0].boot: lockstudy.spinlock=tas$(touch: has characters outside"),
        (('"lockstudy.spinlock=tas"', '"lockstudy.spinlock=\'tas\'"'), "study[0].boot: lockstudy.spinlock='tas': has characters outside"),
        (('"lockstudy.spinlock=tas"', '"lockstudy.run=pft"'), "study[0].boot: lockstudy.run=pft: lockstudy.run= is written by the launch itself"),
        (('"lockstudy.spinlock=tas"', '"nosmp"'), "study[0].boot: nosmp: 'nosmp' is not a kernel switch of the study (lockstudy.<switch>=<value>, or one of noreplace-smp)"),
        (('name = "demo"', 'name = "de mo"'), "campaign.name: de mo: is not a name"),
        (('[[study]]\nname = "numa"', '[[study]]\nname = "numa"\ncpu_model = "pentium"'), "study[1].cpu_model: pentium: is not a choice (one of timing, o3)"),
        (("cpus = [2, 4]", "cpus = [2, 3]"), "study[0].cpus: 3: piii-smp has no size of 3 cpus (cpus: 1, 2, 4, 8)"),
        (("nodes = 2", "cpus = 2"), "study[1].cpus: 2: altix-numa is sized by nodes, not cpus (give nodes)"),
        (("repeat = 2", "repeat = 2\ntrace = 'classic'"), "study[1].trace: classic: altix-numa uses Ruby, which writes no classic trace (off or protocol)"),
    ],
)
def test_bad_campaigns_are_rejected_with_file_field_and_reason(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    assert str(caught.value).startswith(f"{path}:")
    assert message in str(caught.value)


def test_not_toml_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match="not valid TOML"):
        load_campaign(write(tmp_path, "[campaign\nname="))


def test_cli_rejects_a_bad_file_before_running(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("cpus = [2, 4]", "cpus = [-1]"))
    result = subprocess.run([str(ROOT / "run.sh"), "campaign", str(path)], capture_output=True, text=True)
    assert result.returncode == 2
    assert f"{path}:study[0].cpus: -1: is not a positive integer" in result.stderr


def test_dry_run_lists_runs_and_shared_checkpoints(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    result = subprocess.run([str(ROOT / "run.sh"), "campaign", str(path), "--dry-run"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    campaign = load_campaign(path)
    for spec in campaign.runs:
        assert spec.run_id in result.stdout
    # 2 sizes x 3 boots on piii-smp, plus one boot shared by both numa repeats.
    assert "7 boot checkpoint(s)" in result.stdout
    assert "altix-numa 2 nodes, smp, (default boot): 2 run(s)" in result.stdout


def test_dry_run_of_chosen_studies_lists_only_their_runs(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    campaign = load_campaign(path)
    result = subprocess.run([str(ROOT / "run.sh"), "campaign", str(path), "--dry-run", "--only-study", "numa"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    numa = [spec.run_id for spec in campaign.runs if spec.study == "numa"]
    assert f"campaign demo: {len(numa)} run(s) of {len(campaign.runs)} (the chosen studies)" in result.stdout
    assert all(spec.run_id in result.stdout for spec in campaign.runs if spec.study == "numa")
    assert not any(spec.run_id in result.stdout for spec in campaign.runs if spec.study != "numa")
    assert "1 boot checkpoint(s)" in result.stdout
    bad = subprocess.run([str(ROOT / "run.sh"), "campaign", str(path), "--dry-run", "--only-study", "nosuch"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no study 'nosuch'" in bad.stderr


def test_job_script_quotes_every_value(tmp_path: Path) -> None:
    """A results path full of shell syntax reaches the worker as one literal word."""
    campaign = load_campaign(write(tmp_path, GOOD))
    hostile = tmp_path / "results $(touch pwned) `touch pwned2`; touch pwned3"
    store = CampaignStore(campaign.name, hostile)
    tasks = store.path / "slurm" / "t.tasks"
    tasks.parent.mkdir(parents=True)
    tasks.write_text("0123456789abcdef\n")
    script = SlurmExecutor().script(store, campaign.runs[0].resources, campaign.runs, "qemu", tasks)
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={"SLURM_ARRAY_TASK_ID": "0", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert not list(tmp_path.glob("pwned*")), "a value was executed by the shell"
    # The worker ran and named the literal path (the run does not exist there).
    assert result.returncode == 2, result.stderr
    assert f"{store.path}/runs/0123456789abcdef/spec.json does not exist" in result.stderr


def test_workers_start_on_different_boot_checkpoints() -> None:
    from lockstudy.campaign.launcher import spread_checkpoints
    from lockstudy.campaign.spec import digest

    runs = load_campaign(ROOT / "campaigns" / "seeds.toml").runs
    for width in (1, 2, 4):
        spread = spread_checkpoints(runs, width)
        assert sorted(s.run_id for s in spread) == sorted(s.run_id for s in runs)
        first = [digest(s.boot_identity()) for s in spread[:width]]
        assert len(set(first)) == width, "the first runs must build different checkpoints"
        for key in set(digest(s.boot_identity()) for s in runs):
            in_file = [s.run_id for s in runs if digest(s.boot_identity()) == key]
            assert [s.run_id for s in spread if digest(s.boot_identity()) == key] == in_file


@pytest.mark.kernel
def test_a_spec_the_guest_would_refuse_stops_the_campaign_before_any_boot(tmp_path: Path) -> None:
    from lockstudy.campaign.backends import check_run_specs

    campaign = tmp_path / "refused.toml"
    campaign.write_text(textwrap.dedent("""
        [campaign]
        name = "refused"
        [defaults.resources]
        time_minutes = 10
        memory_gb = 1
        host_cpus = 1
        [[study]]
        name = "short-dbench"
        machine = "piii-smp"
        cpus = 1
        kernel_build = "smp"
        run = ["write1b:threads=1,iterations=10", "dbench:clients=2,seconds=1"]
    """))
    # The host's registry refuses it while the file loads: the dry-run and every launch.
    with pytest.raises(CampaignError, match=r"study\[0\]\.run: dbench:clients=2,seconds=1: dbench: seconds=1 is out of range \(a whole number in \[2, 86400\]\)"):
        load_campaign(campaign)
    # And the guest's own code, the launch's second opinion, refuses it too.
    runs = load_campaign(write(tmp_path, GOOD)).runs[:1]
    refused = dataclasses.replace(runs[0], run="dbench:clients=2,seconds=1")
    with pytest.raises(RuntimeError, match=r"run = 'dbench:clients=2,seconds=1': the guest would refuse it: .*seconds=1 is out of range \[2, 86400\]"):
        check_run_specs([refused])


BENCH_FEATURES = """
    [campaign]
    name = "features"
    [defaults.resources]
    time_minutes = 10
    memory_gb = 1
    host_cpus = 1
    [[study]]
    name = "pair"
    machine = "piii-smp"
    cpus = CPUS
    kernel_build = "BUILD"
    run = "kbench:variant=tas,duration_ms=10,placement=pair-packed"
"""


@pytest.mark.parametrize(
    ("build", "cpus", "message"),
    [
        ("smp", "[2, 4]", r"study\[0\]\.run: kbench:variant=tas,duration_ms=10,placement=pair-packed: placement=pair-packed needs "
                          r"lockstudy-bench-lock-pair.patch, which this kernel build does not apply \(kernel/builds.toml extra_patches\) "
                          r"\(kernel_build smp, 2 CPU\)"),
        ("smp-bench-pair", "[1, 2]", r"placement=pair-packed: a lock pair needs two bench threads or more; 1 CPU gives one "
                                     r"\(kernel_build smp-bench-pair, 1 CPU\)"),
    ],
)
def test_a_bench_feature_the_build_lacks_is_refused_before_any_boot(tmp_path: Path, build: str, cpus: str, message: str) -> None:
    """The lock pair (and the bench's rwsem) exist only in the build that applies their patch, and a pair
    needs two threads: a study asking otherwise would boot, then fail in the guest."""
    text = BENCH_FEATURES.replace("BUILD", build).replace("CPUS", cpus)
    with pytest.raises(CampaignError, match=message):
        load_campaign(write(tmp_path, text))
    runs = load_campaign(write(tmp_path, BENCH_FEATURES.replace("BUILD", "smp-bench-pair").replace("CPUS", "[2, 8]"))).runs
    assert {r.size for r in runs} == {2, 8}
    rwsem = BENCH_FEATURES.replace("BUILD", "smp-lockevents").replace("CPUS", "2").replace("variant=tas,duration_ms=10,placement=pair-packed", "lock=rwsem")
    with pytest.raises(CampaignError, match=r"lock=rwsem needs lockstudy-bench-rwsem.patch"):
        load_campaign(write(tmp_path, rwsem))


def test_a_campaign_runs_in_chunks_of_studies() -> None:
    from lockstudy.commands.campaign import select_studies

    campaign = load_campaign(ROOT / "campaigns" / "seeds.toml")
    chunk = select_studies(campaign, [], ["padding-dbench"])
    assert {s.study for s in chunk.runs} == {s.study for s in campaign.runs} - {"padding-dbench"}
    only = select_studies(campaign, ["kbench-bus", "lockref-8nodes"], [])
    assert {s.study for s in only.runs} == {"kbench-bus", "lockref-8nodes"}
    # the studies run in the order given, not the file's; each study's runs in the file's order
    given = select_studies(campaign, ["ptlock-spinlock-8nodes", "numa-spinlock-2nodes"], [])
    studies = [spec.study for spec in given.runs]
    assert studies == sorted(studies, key=["ptlock-spinlock-8nodes", "numa-spinlock-2nodes"].index)
    in_file = [spec for spec in campaign.runs if spec.study == "ptlock-spinlock-8nodes"]
    assert [spec for spec in given.runs if spec.study == "ptlock-spinlock-8nodes"] == in_file
    with pytest.raises(CampaignError, match=r"no study 'nonsense' \(studies: "):
        select_studies(campaign, ["nonsense"], [])


def test_a_baseline_curve_runs_before_its_variants() -> None:
    from lockstudy.commands.campaign import select_boots, select_studies

    campaign = select_studies(load_campaign(ROOT / "campaigns" / "seeds.toml"), ["ptlock-spinlock-2nodes", "ptlock-spinlock-16nodes"], [])
    baseline = select_boots(campaign, ["lockstudy.spinlock=tas"])
    assert baseline.runs and all(spec.boot == ("lockstudy.spinlock=tas",) for spec in baseline.runs)
    assert len(baseline.runs) == len(campaign.runs) // 5  # one of the five variants
    assert select_boots(campaign, []) is campaign
    with pytest.raises(CampaignError, match=r"no run of the chosen studies boots with 'lockstudy.spinlock=mcs' \(boot arguments: .*lockstudy.spinlock=cna"):
        select_boots(campaign, ["lockstudy.spinlock=mcs"])


def test_a_chunk_can_be_one_size_of_a_study() -> None:
    from lockstudy.commands.campaign import select_sizes, select_studies

    campaign = select_studies(load_campaign(ROOT / "campaigns" / "seeds.toml"), ["rwsem-wakeflag", "fdlock"], [])
    two = select_sizes(campaign, [2])
    # rwsem-wakeflag's 2 nodes and fdlock's 2 CPUs: each study's own unit
    assert {(spec.study, spec.size, spec.size_unit) for spec in two.runs} == {("rwsem-wakeflag", 2, "nodes"), ("fdlock", 2, "cpus")}
    four = select_sizes(campaign, [4])
    assert {spec.study for spec in four.runs} == {"rwsem-wakeflag"} and len(four.runs) == 10  # two variants, five repeats
    assert select_sizes(campaign, []) is campaign
    with pytest.raises(CampaignError, match=r"no run of the chosen studies has size 3 \(sizes: .*2 nodes, 4 nodes"):
        select_sizes(campaign, [3, 4])


def test_a_first_look_runs_one_repeat_of_every_configuration() -> None:
    from lockstudy.commands.campaign import select_first_repeats, select_studies

    campaign = select_studies(load_campaign(ROOT / "campaigns" / "seeds.toml"), ["kbench-numa"], [])
    first = select_first_repeats(campaign, 1)
    assert len(first.runs) == len(campaign.runs) // 5
    assert len({(spec.boot, spec.size, spec.run) for spec in first.runs}) == len(first.runs)
    assert select_first_repeats(campaign, None) is campaign
    with pytest.raises(CampaignError, match=r"--first-repeats 0: give a count of 1 or more"):
        select_first_repeats(campaign, 0)


def test_gem5_runs_and_the_gem5_bench_share_one_command_shape(tmp_path: Path) -> None:
    from lockstudy.campaign.gem5_backend import RUN_SCRIPT, run_script_argv
    from lockstudy.gem5 import Gem5Info

    gem5 = Gem5Info(Path("/opt/gem5.opt"), "24.0.0.1", {})
    argv = run_script_argv(gem5, tmp_path / "out", ["--machine", "piii-smp", "--cpus", "2"])
    assert argv == ["/opt/gem5.opt", "-d", str(tmp_path / "out" / "m5out"), str(RUN_SCRIPT),
                    "--machine", "piii-smp", "--cpus", "2", "--outdir", str(tmp_path / "out")]  # fmt: skip
