"""Coherence metrics (analysis/traffic/metrics.py) on the real gem5 fixtures.

Expected values are taken from the fixture's stats.txt text with plain
line matching (name and first number), not through the stats reader or
the metric rules, and the guest counts from result.json as printed.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from analysis.gem5_output.runs import load_results, read_run
from analysis.traffic import metrics
from analysis_checks import FIXTURES, run_info
from lockstudy.paths import ROOT

CLASSIC = FIXTURES / "piii-smp-2-kbench"
RUBY = FIXTURES / "altix-numa-2-kbench"


def printed(folder: Path, pattern: str) -> list[float]:
    """First numbers of the stats.txt lines whose name fully matches `pattern`."""
    values = []
    for line in (folder / "stats.txt").read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and re.fullmatch(pattern, words[0]):
            values.append(float(words[1]))
    return values


def row_of(folder: Path) -> dict:
    if not (folder / "stats.txt").is_file():
        pytest.skip(f"{folder} is not there")
    rows = metrics.run_rows(read_run(run_info(folder)))
    assert len(rows) == 1
    return rows[0]


def guest(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text())["guest"]["results"][0]["result"]


def test_classic_bus_metrics_are_the_printed_stats() -> None:
    row = row_of(CLASSIC)
    bus = r"board\.cache_hierarchy\.membus\."
    assert row["bus_requests"] == printed(CLASSIC, bus + r"snoopFanout::samples")[0]
    fanout = {int(line.split("::")[1].split()[0]): float(line.split()[1])
              for line in (CLASSIC / "stats.txt").read_text().splitlines()
              if re.match(bus + r"snoopFanout::\d+ ", line)}  # fmt: skip
    assert row["snoop_lookups"] == sum(k * v for k, v in fanout.items()) > row["bus_requests"]
    ownership = sum(printed(CLASSIC, bus + r"transDist::(ReadExReq|UpgradeReq|SCUpgradeReq|InvalidateReq)"))
    shared = sum(printed(CLASSIC, bus + r"transDist::(ReadSharedReq|ReadCleanReq)"))
    assert (row["ownership_requests"], row["shared_reads"]) == (ownership, shared)
    assert row["coherence_requests"] == ownership + shared
    assert row["bus_snoops"] == printed(CLASSIC, bus + "snoops")[0] and row["bus_snoop_bytes"] == printed(CLASSIC, bus + "snoopTraffic")[0]
    l2 = r"board\.cache_hierarchy\.l2-cache-\d+\.(ReadExReq|UpgradeReq|InvalidateReq)\.misses::total"
    assert row["l2_ownership_misses"] == sum(printed(CLASSIC, l2)) > 0
    handoffs = guest(CLASSIC)["counters"]["handoffs"]
    assert row["handoffs"] == handoffs > 0
    assert row["coherence_requests_per_handoff"] == pytest.approx((ownership + shared) / handoffs)
    for ruby_only in ("invalidations", "forwards", "network_messages", "inter_node_messages"):
        assert math.isnan(row[ruby_only])
    assert (row["machine"], row["cpus"], row["variant"], row["testcase"]) == ("piii-smp", 2, "qspinlock", "kbench")


def test_ruby_metrics_are_the_printed_stats() -> None:
    row = row_of(RUBY)
    ruby = r"board\.cache_hierarchy\.ruby_system\."
    ownership = sum(printed(RUBY, ruby + r"L2Cache_Controller\.(L1_GETX|L1_UPGRADE)::total"))
    shared = sum(printed(RUBY, ruby + r"L2Cache_Controller\.L1_GETS::total"))
    assert row["coherence_requests"] == ownership + shared > 0
    assert row["invalidations"] == sum(printed(RUBY, ruby + r"L1Cache_Controller\.Inv::total")) > 0
    assert row["forwards"] == sum(printed(RUBY, ruby + r"L1Cache_Controller\.(Fwd_GETX|Fwd_GETS)::total"))
    # made before run.py reset the switches' counters per ROI: they count since the restore
    assert "network_stats_per_roi" not in json.loads((RUBY / "result.json").read_text())["provenance"]
    assert math.isnan(row["network_messages"]) and math.isnan(row["network_bytes"])
    inter_node = sum(printed(RUBY, ruby + r"network\.int_links\d+\.buffers\d+\.m_msg_count"))
    assert row["inter_node_messages"] == inter_node > 0
    counts = guest(RUBY)
    assert row["acquisitions"] == sum(run["acquisitions"] for run in counts["metrics"]["runs"])
    assert (row["handoffs_local"], row["handoffs_remote"]) == (counts["counters"]["handoffs_local"], counts["counters"]["handoffs_remote"])
    assert row["invalidations_per_acquisition"] == pytest.approx(row["invalidations"] / row["acquisitions"])
    assert math.isnan(row["bus_requests"]) and (row["nodes"], row["cpus"]) == (2, 4)
    taken = [thread["acquisitions"] for thread in counts["metrics"]["runs"][0]["threads"]]  # 208, 204, 214, 230
    assert row["acquisition_fairness"] == pytest.approx(sum(taken) ** 2 / (4 * sum(x * x for x in taken))) and 0.99 < row["acquisition_fairness"] < 1


def test_jains_index_is_one_when_all_share_alike_and_one_over_n_when_one_takes_all() -> None:
    """The CNA runs of the kbench sweep: fair on node-local homes, one node's pair holding the lock on the interleaved model."""
    from analysis.traffic.metrics import acquisitions_by_cpu, jain_fairness

    assert jain_fairness([329, 329, 330, 329, 327, 327, 326, 326]) == pytest.approx(1.0, abs=1e-4)
    assert jain_fairness([9, 14, 1307, 1304, 15, 15, 14, 14]) == pytest.approx(0.265, abs=1e-3)
    assert jain_fairness([0, 0, 5, 0]) == 0.25 and math.isnan(jain_fairness([])) and math.isnan(jain_fairness([0, 0]))
    two_runs = [{"threads": [{"cpu": 1, "acquisitions": 3}, {"cpu": 0, "acquisitions": 1}]}, {"threads": [{"cpu": 0, "acquisitions": 2}]}]
    assert acquisitions_by_cpu(two_runs) == [3.0, 3.0] and acquisitions_by_cpu([{"acquisitions": 5}]) == []


def test_network_messages_count_for_a_run_whose_switch_counters_restart_per_roi(tmp_path: Path) -> None:
    if not (RUBY / "stats.txt").is_file():
        pytest.skip(f"{RUBY} is not there")
    run = tmp_path / RUBY.name
    shutil.copytree(RUBY, run)
    result = json.loads((run / "result.json").read_text())
    result["provenance"]["network_stats_per_roi"] = True
    (run / "result.json").write_text(json.dumps(result))
    row = row_of(run)
    ruby = r"board\.cache_hierarchy\.ruby_system\."
    assert row["network_messages"] == sum(printed(RUBY, ruby + r"network\.msg_count\.\w+")) > 0


def test_the_table_has_a_row_per_run_and_roi() -> None:
    if not RUBY.is_dir() or not CLASSIC.is_dir():
        pytest.skip("fixtures not there")
    results, errors = load_results(FIXTURES, 1)
    assert errors == []
    table = metrics.metrics_table(results)
    assert sorted(table["run_id"]) == sorted(p.name for p in FIXTURES.iterdir() if (p / "stats.txt").is_file())
    assert set(table["kind"]) == {"classic-smp", "ruby-numa"}


def test_a_testcases_own_scalar_measures_become_columns() -> None:
    guest = {"testcase": "dbench", "ops": 0, "metrics": {"throughput_mb_s": 219.1, "clients": 4, "ok": True, "runs": [1, 2]}}
    assert metrics.guest_metrics(guest) == {"metrics.throughput_mb_s": 219.1, "metrics.clients": 4.0}
    assert metrics.guest_metrics({"testcase": "fsmix"}) == {}
    uncounted = metrics.guest_counts({**guest, "ops_unit": ""})
    assert math.isnan(uncounted["ops"]) and math.isnan(uncounted["ops_per_s"])  # not 0 operations per second
    assert metrics.guest_counts({"testcase": "fsmix", "ops": 10, "ops_per_s": 5.0, "ops_unit": "one op"})["ops"] == 10.0
    row = row_of(RUBY)
    assert row["coherence_requests_per_sim_s"] == row["coherence_requests"] / row["sim_seconds"]


def test_the_kernels_lock_event_counts_become_columns() -> None:
    entry = {"result": {"testcase": "mmapsem"}, "locks": [], "lock_event_counts": {"rwsem_wake_skipped": 7, "rwsem_wake_writer": 120}}
    assert metrics.lock_event_columns(entry) == {"lockevent.rwsem_wake_skipped": 7.0, "lockevent.rwsem_wake_writer": 120.0}
    assert metrics.lock_event_columns({**entry, "lock_event_counts": None}) == {}  # a kernel without the counters
    assert metrics.lock_event_columns({"result": {}}) == {}  # a result.json from before the counters
    row = row_of(RUBY)
    assert not any(column.startswith("lockevent.") and not column.endswith("_per_op") for column in row)
    per_op = {column: value for column, value in row.items() if column.startswith("lockevent.")}
    assert per_op and all(math.isnan(value) for value in per_op.values())  # always columns, NaN without the counters


def test_lock_events_per_operation_count_the_whole_testcase_warm_up_too() -> None:
    """/init's counts cover the testcase's warm-up as well as its window: per operation of all of it."""
    events = ("rwsem_wake_skipped", "rwsem_sleep_reader")
    entry = {"lock_event_counts": {"rwsem_wake_skipped": 56, "rwsem_wake_writer": 120}}
    guest = {"testcase": "mmapsem", "ops": 160, "warmup": 8, "iterations": 20}  # 8 copies: 160 jobs measured, 224 in all
    rates = metrics.lock_events_per_op(entry, guest, events)
    assert rates["lockevent.rwsem_wake_skipped_per_op"] == 56 / 224
    assert math.isnan(rates["lockevent.rwsem_sleep_reader_per_op"])  # not counted by this kernel: NaN, never 0
    timed = {"testcase": "fsmix", "ops": 160, "warmup": 8, "seconds": 2.0}
    assert all(math.isnan(value) for value in metrics.lock_events_per_op(entry, timed, events).values())
    assert all(math.isnan(value) for value in metrics.lock_events_per_op({"lock_event_counts": None}, guest, events).values())


def test_kbench_lock_events_per_operation_count_its_timed_warm_up() -> None:
    """kbench's warm-up is timed (warmup_ms), not counted in iterations: it reports the warm-up's
    acquisitions itself, and the counts over the whole testcase are per acquisition of both."""
    entry = {"lock_event_counts": {"rwsem_wake_skipped": 300, "rwsem_wake_writer": 1200}}
    guest = {"testcase": "kbench", "ops": 9000, "warmup_ops": 1000, "duration_ms": 10}
    rates = metrics.lock_events_per_op(entry, guest, ("rwsem_wake_skipped",))
    assert rates["lockevent.rwsem_wake_skipped_per_op"] == 300 / 10000
    # without it (a kbench JSON before warmup_ops) the warm-up is unknown: NaN, never over ops alone
    older = {key: value for key, value in guest.items() if key != "warmup_ops"}
    assert math.isnan(metrics.lock_events_per_op(entry, older, ("rwsem_wake_skipped",))["lockevent.rwsem_wake_skipped_per_op"])


def test_a_lock_event_that_is_not_a_name_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "metrics.toml"
    bad.write_text(metrics.DATA_FILE.read_text().replace('per_op = ["rwsem_wake_skipped"', 'per_op = ["Rwsem wake"'))
    with pytest.raises(metrics.MetricsError, match=r"lock_events.per_op: \['Rwsem wake'\] are not lock event names"):
        metrics.load_metric_rules(bad)


INIT = ROOT / "disk-image" / "overlay" / "init"


def test_a_runtimed_testcase_has_its_copies_from_the_run_spec() -> None:
    rules = metrics.load_metric_rules()
    dbench = {"testcase": "dbench", "ops": 0, "ops_unit": ""}
    spec = "fsmix:threads=8+dbench:clients=4,seconds=2"
    assert metrics.copies_of(dbench, spec, 1, rules) == 4.0
    assert metrics.copies_of(dbench, "dbench:clients=8,seconds=2", 0, rules) == 8.0  # not averaged with 4
    assert metrics.copies_of({"testcase": "fsmix", "copies": 8}, spec, 0, rules) == 8.0  # its own JSON first
    assert math.isnan(metrics.copies_of({"testcase": "dd1b"}, "dd1b:count=10", 0, rules))
    with pytest.raises(metrics.MetricsError, match="ROI 0 ran 'dbench'.*not the spec's item 0"):
        metrics.copies_of(dbench, spec, 0, rules)
    with pytest.raises(metrics.MetricsError, match="clients=many is not a whole number"):
        metrics.copies_of(dbench, "dbench:clients=many", 0, rules)


def test_a_runtimed_testcases_default_copies_are_inits() -> None:
    """The default the metrics assume is the one /init gives the program, read from /init itself."""
    init = INIT.read_text()
    for testcase, copies in metrics.load_metric_rules().copies_arguments.items():
        found = re.search(rf'\$\(ls_arg "\$args" {copies.argument} (\d+)\)', init)
        assert found, f"{INIT} sets no default for {testcase}'s {copies.argument}="
        assert int(found.group(1)) == copies.default
        assert metrics.copies_of({"testcase": testcase}, testcase, 0, metrics.load_metric_rules()) == copies.default


def test_a_zero_denominator_gives_nan_not_infinity() -> None:
    row = row_of(RUBY)
    assert metrics._ratio(row["invalidations"], 0.0) != metrics._ratio(row["invalidations"], 0.0)


def test_results_and_rois_must_pair_up(tmp_path: Path) -> None:
    run = read_run(run_info(RUBY)) if RUBY.is_dir() else pytest.skip("fixture not there")
    run.info.result = json.loads(json.dumps(run.info.result))
    run.info.result["guest"]["results"].append(run.info.result["guest"]["results"][0])
    with pytest.raises(metrics.MetricsError, match="1 ROI dump.*2 testcase result"):
        metrics.run_rows(run)


def write_rules(tmp_path: Path, old: str, new: str) -> Path:
    text = metrics.DATA_FILE.read_text()
    assert old in text
    path = tmp_path / "metrics.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('hierarchy = "classic"', 'hierarchy = "mesh"', r"metric\[0\]\.hierarchy: 'mesh' is not one of"),
        ("sub = 'samples'\ncombine = \"sum\"", "sub = 'samples'\ncombine = \"max\"", r"metric\[0\]\.combine: 'max' is not one of"),
        ("combine = \"sum\"\nrequired = true", "combine = \"sum\"\nrequired = \"yes\"", r"metric\[0\]\.required: expected bool, got 'yes'"),
        ("coherence_requests = [", 'coherence_requests = ["nonsense", ', r"derived\.coherence_requests: \['nonsense'\]"),
        ("default = 2 }", 'default = "two" }', r"copies_argument\.dbench\.default: expected int, got 'two'"),
        ('dbench = { argument = "clients", default = 2 }', 'dbench = "clients"', r"copies_argument\.dbench: expected a table"),
    ],
)
def test_a_bad_metrics_file_names_file_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = write_rules(tmp_path, old, new)
    with pytest.raises(metrics.MetricsError, match=message) as caught:
        metrics.load_metric_rules(path)
    assert str(path) in str(caught.value)


def test_a_required_stat_that_is_absent_is_an_error_not_zero(tmp_path: Path) -> None:
    if not CLASSIC.is_dir():
        pytest.skip("fixture not there")
    path = write_rules(tmp_path, r"membus\.snoopFanout'", r"membus\.snoopFanoutMisspelt'")
    with pytest.raises(metrics.MetricsError, match=r"stats\.txt: dump 0: metric bus_requests: no stat matches"):
        metrics.run_rows(read_run(run_info(CLASSIC)), metrics.load_metric_rules(path))


@pytest.mark.parametrize("folder", [CLASSIC, RUBY], ids=["classic", "ruby"])
def test_instructions_are_the_cpus_committed_instructions_of_the_roi(folder: Path) -> None:
    row = row_of(folder)
    per_cpu = printed(folder, r"board\.processor\.\w+\.core\.commitStats0\.numInsts")
    assert len(per_cpu) == row["cpus"]
    assert row["instructions"] == sum(per_cpu) > 0
    # simInsts counts since the simulation began, not since the ROI's start
    assert printed(folder, "simInsts")[0] > row["instructions"]
    assert row["instructions_per_op"] == pytest.approx(row["instructions"] / row["ops"])


@pytest.mark.parametrize("folder", [CLASSIC, RUBY], ids=["classic", "ruby"])
def test_idle_cycles_are_the_cycles_the_cpus_sat_halted_in_the_roi(folder: Path, tmp_path: Path) -> None:
    """Seed 004's slow repeat (51,800 operations a second against 77,700 to 78,200) had its eight CPUs
    halted 5 ms each of its 12.4 ms ROI, the others 0.1 to 0.5: its threads slept, which no metric
    showed. The simple CPUs print numIdleCycles per CPU; O3 prints idleCycles, and only when not zero."""
    row = row_of(folder)
    halted = printed(folder, r"board\.processor\.\w+\.core\.exec_context\.thread_0\.numIdleCycles")
    assert halted and row["idle_cycles"] == pytest.approx(sum(halted))
    assert 0 < row["idle_cycles"] < row["cpu_cycles"]
    assert row["idle_cycles_per_op"] == pytest.approx(row["idle_cycles"] / row["ops"])
    o3 = tmp_path / "o3"
    shutil.copytree(folder, o3)
    text = (o3 / "stats.txt").read_text()
    cores = sorted(set(re.findall(r"^(board\.processor\.\w+\.core)\.numCycles ", text, flags=re.M)))
    added = f"{cores[0]}.idleCycles 1000 # Total number of cycles that the CPU has spent unscheduled due to idling (Cycle)\n"
    end = "---------- End Simulation Statistics"
    (o3 / "stats.txt").write_text(text.replace(end, added + end, 1))
    assert row_of(o3)["idle_cycles"] == pytest.approx(sum(halted) + 1000)


def test_where_the_cpus_spent_their_cycles_is_read_and_absent_units_are_nan(tmp_path: Path) -> None:
    """Cycles and instruction-cache misses on every CPU model; BTB misses only where the CPU predicts
    branches: the timing CPU's runs read NaN, not 0, and an O3 run's printed counts add up."""
    row = row_of(CLASSIC)
    assert row["cpu_cycles"] == sum(printed(CLASSIC, r"board\.processor\.\w+\.core\.numCycles")) > 0
    assert row["l1i_misses"] == sum(printed(CLASSIC, r"board\.cache_hierarchy\.l1i-cache-\d+\.demandMisses::total")) > 0
    assert row["cpu_cycles_per_op"] == pytest.approx(row["cpu_cycles"] / row["ops"])
    locked = r"board\.cache_hierarchy\.l1d-cache-\d+\.LockedRMWReadReq\.accesses::total"
    assert row["locked_rmws"] == sum(printed(CLASSIC, locked)) > 0  # kbench's lock takes a locked RMW per acquisition
    assert math.isnan(row["btb_mispredicts"]) and math.isnan(row["btb_mispredicts_per_op"])
    assert not math.isnan(row_of(RUBY)["cpu_cycles"]) and math.isnan(row_of(RUBY)["l1i_misses"])
    o3 = tmp_path / "o3"
    shutil.copytree(CLASSIC, o3)
    text = (o3 / "stats.txt").read_text()
    cores = sorted(set(re.findall(r"^(board\.processor\.\w+\.core)\.numCycles ", text, flags=re.M)))
    added = "".join(f"{core}.branchPred.BTBMispredicted {100 + n} # Number of BTB mispredicts (Count)\n" for n, core in enumerate(cores))
    end = "---------- End Simulation Statistics"
    (o3 / "stats.txt").write_text(text.replace(end, added + end, 1))
    assert row_of(o3)["btb_mispredicts"] == sum(100 + n for n in range(len(cores)))


def test_link_stats_match_their_config_paths_without_the_index_padding() -> None:
    """config.json pads a vector's indices to its width (int_links03 of 12 links, gem5's params.py);
    stats.txt does not (int_links3): a real altix-numa run read 0 inter-node messages until both
    were compared unpadded."""
    owners = frozenset({"board.cache_hierarchy.ruby_system.network.int_links03"})
    stat = "board.cache_hierarchy.ruby_system.network.int_links{}.buffers0.m_msg_count"
    assert metrics._owned_by(stat.format(3), owners)
    assert not metrics._owned_by(stat.format(13), owners) and not metrics._owned_by(stat.format(0), owners)
    assert metrics.unpadded("a.hubs10.throttle0") == "a.hubs10.throttle0"  # an index that is not padded stays
