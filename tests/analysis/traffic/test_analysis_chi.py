"""CHI runs (altix-numa) read by the analysis: machine facts, metrics, per-lock attribution, hot lines.

No real CHI run exists yet: the inputs are tests/fixtures/chi/, made by
hand from gem5 v24.0.0.1's source (its README says from which lines) and
to be replaced by a real run's files. The MESI_Two_Level and classic
fixtures must read as before (the last tests).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.gem5_output.config_reader import ConfigError, machine_facts, read_config
from analysis.gem5_output.runs import MissingStatError, RunStats, load_results
from analysis.gem5_output.stats_reader import read_dumps
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.profile import UnreadableTransition, roi_profile
from analysis.hotlines.rules import load_rules
from analysis.hotlines.scan import scan_trace
from analysis.hotlines.table import hotline_tables
from analysis.hotlines.topology import read_topology
from analysis.traffic import metrics
from analysis.traffic.locks import lock_tables, run_lock_tables
from analysis.traffic.protocol_trace import TracedLock, attribute_trace
from analysis.traffic.trace_attribution import TraceJob
from analysis_checks import FIXTURES
from lockstudy.paths import ROOT

CHI_FIXTURES = ROOT / "tests" / "fixtures" / "chi"
CHI_RUN = CHI_FIXTURES / "altix-numa-2"
MESI_RUN = FIXTURES / "altix-numa-2-kbench"
SMP_RUN = FIXTURES / "piii-smp-2-kbench"
GIB = 1 << 30
NODES, CPUS = 2, 4
# Cache versions as chi_numa.py creates them (one AbstractNode counter):
# the homes first, then each CPU's L1I, L1D, L2, then the DMA requesters.
HOMES = (0, 1)
L2S = (4, 7, 10, 13)
L1S = (2, 3, 5, 6, 8, 9, 11, 12)
DMAS = (14, 15)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Traces read here are cached in the test's own folder, not the machine's lockstudy cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(cache))
    return cache


def test_a_chi_config_is_recognised_with_its_facts() -> None:
    facts = read_config(CHI_RUN / "config.json")
    assert (facts.num_cpus, facts.hierarchy, facts.ruby_protocol, facts.line_bytes) == (CPUS, "ruby", "CHI", 64)
    assert facts.cpu_clock_hz == pytest.approx(1e9)
    assert facts.memory_ranges[0] == (0, 2 * GIB)
    sizes = sorted(c.size_bytes for c in facts.caches)
    assert sizes.count(16384) == 2 * CPUS and sizes.count(2097152) == CPUS


def test_every_chi_controller_has_its_role_cpu_and_node() -> None:
    facts = read_config(CHI_RUN / "config.json")
    assert facts.versions_of("home") == frozenset(HOMES)
    assert facts.versions_of("l2") == frozenset(L2S)
    assert facts.versions_of("l1") == frozenset(L1S)
    assert facts.versions_of("dma") == frozenset(DMAS)
    assert facts.versions_of("memory") == frozenset({0, 1})
    by_path = {c.path: c for c in facts.controllers}
    home1 = by_path["board.cache_hierarchy.numa_nodes1.home"]
    assert (home1.machine, home1.version, home1.node, home1.addr_ranges) == ("Cache", 1, 1, ((GIB, 2 * GIB),))
    l1d3 = by_path["board.cache_hierarchy.core_clusters3.l1d"]
    assert (l1d3.role, l1d3.cpu, l1d3.node) == ("l1", 3, 1)
    assert [by_path[f"board.cache_hierarchy.core_clusters{cpu}.l2"].node for cpu in range(CPUS)] == [0, 0, 1, 1]
    assert by_path["board.cache_hierarchy.dma_controllers0"].node == 0
    # Only the router tree's links cross nodes; a CPU's port switch is on its hub's node.
    assert sorted(facts.inter_node_links) == [f"board.cache_hierarchy.ruby_system.network.int_links0{i}" for i in range(4)]


def _chi_tree() -> dict:
    return json.loads((CHI_RUN / "config.json").read_text())


def test_a_cache_controller_no_role_describes_is_named() -> None:
    tree = _chi_tree()
    tree["board"]["cache_hierarchy"]["core_clusters"][1]["l2"]["alloc_on_readshared"] = "maybe"
    with pytest.raises(ConfigError, match=r"^test: board.cache_hierarchy.core_clusters1.l2: a Cache_Controller that no role of .*gem5_config.toml describes$"):
        machine_facts(tree, "test")


def test_without_chi_signature_the_protocol_is_not_recognised() -> None:
    tree = _chi_tree()
    for cluster in tree["board"]["cache_hierarchy"]["core_clusters"]:
        for part in ("l1i", "l1d", "l2"):
            del cluster[part]["is_HN"]
    for node in tree["board"]["cache_hierarchy"]["numa_nodes"]:
        del node["home"]["is_HN"]
    for dma in tree["board"]["cache_hierarchy"]["dma_controllers"]:
        del dma["is_HN"]
    with pytest.raises(ConfigError, match="protocol is not recognised"):
        machine_facts(tree, "test")


def test_unreadable_wiring_leaves_nodes_unknown_with_the_reason() -> None:
    tree = _chi_tree()
    tree["board"]["cache_hierarchy"]["ruby_system"]["network"]["ext_links"] = []
    facts = machine_facts(tree, "test")
    assert all(c.node is None for c in facts.controllers) and "without a network link" in facts.wiring_note


def test_mesi_and_classic_fixtures_read_as_before() -> None:
    mesi = read_config(MESI_RUN / "config.json")
    assert (mesi.num_cpus, mesi.hierarchy, mesi.ruby_protocol, mesi.line_bytes) == (4, "ruby", "MESI_Two_Level", 64)
    assert [c.node for c in mesi.controllers if c.role == "l1"] == [0, 0, 1, 1]
    assert mesi.versions_of("home") == frozenset({0, 1})
    smp = read_config(SMP_RUN / "config.json")
    assert (smp.hierarchy, smp.ruby_protocol, smp.controllers) == ("classic", None, ())


# -- metrics ----------------------------------------------------------------------------------------------------------


def chi_run() -> RunStats:
    stats = CHI_RUN / "stats.txt"
    # a run made by today's run.py: its network switches' counters restart per ROI
    info = SimpleNamespace(result={"provenance": {"network_stats_per_roi": True}})
    return RunStats(info=info, stats_path=stats, dumps=read_dumps(stats), machine=read_config(CHI_RUN / "config.json"))  # type: ignore[arg-type]


def test_chi_metrics_count_each_request_and_snoop_once_at_its_role() -> None:
    """Expected values read off the hand-made stats.txt: the home's requests out of its non-busy states (a
    request parked in BUSY_BLKD/BUSY_INTR prints again when served), the L2s' snoops out of states that do not
    stall them; the L2's own requests from its L1s and the L1s' snoops from their L2 are not counted."""
    values = metrics.roi_metrics(chi_run(), 0)
    assert values["ownership_requests"] == 2 + 4 + 3  # RU/I.ReadUnique_PoC at homes 0/1, RSC.CleanUnique at home 0
    assert values["shared_reads"] == 5 + 3 + 1  # I.ReadShared at homes 0 and 1, RSC.ReadShared at home 0
    assert values["coherence_requests"] == 18
    assert values["invalidations"] == 2 + 1 + 1  # SC.SnpUnique at L2s 7 and 10, BUSY_INTR.SnpCleanInvalid at L2 10
    assert values["forwards"] == 3 + 2  # UD.SnpUniqueFwd at L2 13, UD.SnpSharedFwd at L2 4
    assert values["network_messages"] == 140 and values["network_bytes"] == 800 + 40 * 72
    assert values["inter_node_messages"] == sum((link + 1) * 10 + vnet for link in range(4) for vnet in range(4))
    assert values["instructions"] == 10000
    assert math.isnan(values["bus_requests"]) and math.isnan(values["snoop_lookups"])


def test_a_chi_metric_whose_role_or_links_config_json_cannot_give_is_nan() -> None:
    run = chi_run()
    no_l2 = dataclasses.replace(run.machine, controllers=tuple(c for c in run.machine.controllers if c.role != "l2"))
    unwired = dataclasses.replace(run.machine, wiring_note="no links", inter_node_links=frozenset())
    assert math.isnan(metrics.roi_metrics(dataclasses.replace(run, machine=no_l2), 0)["invalidations"])
    assert math.isnan(metrics.roi_metrics(dataclasses.replace(run, machine=unwired), 0)["inter_node_messages"])


def test_mesi_metrics_ignore_chi_rules_and_read_as_before() -> None:
    if not (MESI_RUN / "stats.txt").is_file():
        pytest.skip("no real MESI fixture")
    stats = MESI_RUN / "stats.txt"
    run = RunStats(info=None, stats_path=stats, dumps=read_dumps(stats), machine=read_config(MESI_RUN / "config.json"))  # type: ignore[arg-type]
    values = metrics.roi_metrics(run, 0)
    assert values["invalidations"] == 7800  # L1Cache_Controller.Inv::total, as printed
    assert values["forwards"] == 2521 + 5702  # Fwd_GETX, Fwd_GETS ::total


# -- ProtocolTrace: the hot-line profile and per-lock attribution ------------------------------------------------------
#
# Lines in gem5's printf format as spelled in gem5 v24.0.0.1
# (src/mem/slicc/symbols/StateMachine.py:1653: "%15d %3s %10s%20s %6s>%-6s %#x %s", the address printed as
# "[0x<addr>, line 0x<line>]", src/mem/ruby/common/Address.cc), written here, not with the analysis' code; events
# and states from src/mem/ruby/protocol/chi/CHI-cache.sm and CHI-mem.sm, the transitions from
# CHI-cache-transitions.sm (each line says which). Versions as chi_numa.py numbers them (above); node 0's
# memory is [0, 1 GiB), node 1's [1 GiB, 2 GiB).

GEM5_FORMAT = "%15d %3s %10s%20s %6s>%-6s %s %s"
LINE_BYTES = 64
A, B, C = 0x1D08100, 0x40001000, 0x3000040  # homes: A and C on node 0 (home 0), B on node 1 (home 1)
TICK = 5000


def gem5_line(version: int, machine: str, event: str, state: str, next_state: str, line: int, comment: str = "", offset: int = 4) -> str:
    return GEM5_FORMAT % (TICK, version, machine, event, state, next_state, f"[0x{line + offset:x}, line 0x{line:x}]", comment)


# (trace line, what it counts for): the expected counts below are the sums of the right-hand comments
CHI_TRACE = [
    gem5_line(2, "Seq", "Begin", "", "", A, "ST"),  # CPU 2's store: a CPU access, nothing
    gem5_line(9, "Cache", "AllocSeqRequest", "I", "I", A),  # CPU 2's L1D takes it (transitions.sm:74): nothing
    gem5_line(9, "Cache", "Store", "I", "BUSY_BLKD", A),  # L1 miss (:672): nothing
    gem5_line(9, "Cache", "SendReadUnique", "BUSY_BLKD", "BUSY_INTR", A),  # L1 -> its own L2: nothing
    gem5_line(10, "Cache", "ReadUnique", "I", "BUSY_BLKD", A),  # at CPU 2's L2 (not a home): not a request
    gem5_line(10, "Cache", "SendReadUnique", "BUSY_BLKD", "BUSY_INTR", A),  # L2 (node 1) -> A's home 0 (node 0): 1 crossing
    gem5_line(0, "Cache", "AllocRequest", "RU", "RU", A),  # the home takes it (:43): nothing
    gem5_line(0, "Cache", "ReadUnique_PoC", "RU", "BUSY_BLKD", A),  # A: request 1 (:281)
    gem5_line(4, "Cache", "SnpUniqueFwd", "UD", "BUSY_BLKD", A),  # CPU 0's L2 (node 0), from home 0: a forward, no crossing
    gem5_line(3, "Cache", "SnpUnique", "UD", "BUSY_BLKD", A),  # CPU 0's L2 invalidates its L1D: inside the CPU, nothing
    gem5_line(4, "Cache", "SendSnpUniqueFwdCompData", "BUSY_BLKD", "BUSY_BLKD", A),  # 24 characters: runs into "Cache"; data to the requester: nothing
    gem5_line(4, "Cache", "SendSnpFwdedResp", "BUSY_BLKD", "BUSY_BLKD", A),  # snoop response to home 0, node 0: no crossing
    gem5_line(10, "Cache", "CompData_UD_PD", "BUSY_INTR", "BUSY_BLKD", A),  # data from the owner (DCT): names no second end
    gem5_line(10, "Cache", "SendCompAck", "BUSY_BLKD", "BUSY_BLKD", A),  # CompAck to home 0: 1 crossing
    gem5_line(0, "Cache", "ReadShared", "BUSY_BLKD", "BUSY_BLKD", A),  # parked while busy (:949): not a request
    gem5_line(0, "Cache", "ReadShared", "RU", "BUSY_BLKD", A),  # A: request 2 (the same ReadShared, served, :218)
    gem5_line(0, "Cache", "ReadShared", "RU", "BUSY_BLKD", A, "Resource Stall"),  # a stall: retried, counted when it runs
    gem5_line(7, "Cache", "SnpUnique", "SC", "BUSY_BLKD", A),  # A: invalidation 1 at CPU 1's L2, node 0: no crossing
    gem5_line(13, "Cache", "SnpCleanInvalid", "SC", "BUSY_BLKD", A),  # A: invalidation 2 at CPU 3's L2, node 1: 1 crossing
    gem5_line(13, "Cache", "SendSnpIResp", "BUSY_BLKD", "BUSY_BLKD", A),  # its response to home 0: 1 crossing
    gem5_line(13, "Cache", "SnpUnique", "BUSY_BLKD", "BUSY_BLKD", A),  # parked (:978): not an invalidation (yet)
    gem5_line(7, "Cache", "SnpUnique", "UD_T", "UD_T", A),  # parked (:988): nothing
    gem5_line(1, "Cache", "CleanUnique", "RSC", "BUSY_BLKD", B),  # B: request 1 at home 1 (:344)
    gem5_line(4, "Cache", "SendCleanUnique", "BUSY_BLKD", "BUSY_INTR", B),  # CPU 0's L2 (node 0) -> home 1 (node 1): 1 crossing
    gem5_line(4, "Cache", "Comp_UC", "BUSY_INTR", "BUSY_BLKD", B),  # home 1's completion: 1 crossing
    gem5_line(1, "Cache", "ReadUnique_PoC", "BUSY_INTR", "BUSY_INTR", B),  # parked: not a request
    gem5_line(1, "Memory", "ReadNoSnp", "READY", "READING_MEM", B),  # home 1 -> its memory (CHI-mem.sm:710): same node
    gem5_line(14, "Cache", "SendReadOnce", "BUSY_BLKD", "BUSY_INTR", C),  # a DMA read to home 0, both node 0: no crossing
    gem5_line(0, "Cache", "ReadOnce", "I", "BUSY_BLKD", C),  # a non-caching read: not counted as a request
    gem5_line(10, "Cache", "SendWriteBackOrWriteEvict", "BUSY_BLKD", "BUSY_INTR", C),  # 25 characters; CPU 2's L2 -> home 0: 1 crossing
]
# line: (requests, invalidations, crossings)
CHI_COUNTS = {A: (2, 2, 4), B: (1, 0, 2), C: (0, 0, 1)}


def write_trace(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def chi_profile(trace: Path, cpu_to_node: tuple[int, ...] = (0, 0, 1, 1)) -> dict[int, tuple[int, int, int]]:
    rules = load_rules()
    protocol = rules.protocols["CHI"]
    topology = read_topology(CHI_RUN / "config.json", protocol, LINE_BYTES, cpu_to_node)
    counts = scan_trace(trace, chunk_bytes=300)
    (only,) = [roi_profile(roi, rules, protocol, topology) for roi in counts.rois]
    return {t.line: (t.requests, t.invalidations, t.crossings) for t in only.lines.values()}


def test_the_run_together_names_are_in_the_trace() -> None:
    assert any("CacheSendSnpUniqueFwdCompData" in line for line in CHI_TRACE)
    assert any("CacheSendWriteBackOrWriteEvict" in line for line in CHI_TRACE)


def test_the_hot_line_profile_counts_a_known_chi_trace(tmp_path: Path) -> None:
    assert chi_profile(write_trace(tmp_path / "roi.trace.gz", CHI_TRACE)) == CHI_COUNTS


def test_chi_topology_reads_homes_by_range_and_checks_cpu_to_node() -> None:
    protocol = load_rules().protocols["CHI"]
    topology = read_topology(CHI_RUN / "config.json", protocol, LINE_BYTES, (0, 0, 1, 1))
    assert (topology.home_bank(A), topology.home_bank(B), topology.home_node(B)) == (0, 1, 1)
    assert [topology.role("Cache", v) for v in (0, 3, 4, 14)] == ["home", "l1", "l2", "dma"]
    with pytest.raises(HotlinesError, match=r"Cache 8 is on node 1 by the network, but result.json's cpu_to_node puts CPU 2 on node 0"):
        read_topology(CHI_RUN / "config.json", protocol, LINE_BYTES, (0, 0, 0, 1))
    with pytest.raises(HotlinesError, match=r"no Cache home's addr_ranges hold line 0xc0000000"):
        topology.home_bank(0xC0000000)


def test_a_chi_controller_the_machine_lacks_is_named(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", [*CHI_TRACE, gem5_line(16, "Cache", "SnpUnique", "SC", "BUSY_BLKD", A)])
    with pytest.raises(UnreadableTransition, match=r"no Cache_Controller of version 16, which the trace names"):
        chi_profile(trace)


def test_per_lock_attribution_counts_a_known_chi_trace(tmp_path: Path) -> None:
    lock = TracedLock("bench:lock", A + 4, 4)
    trace = write_trace(tmp_path / "roi.trace.gz", CHI_TRACE)
    attribution = attribute_trace(trace, [lock], LINE_BYTES)
    by_event = attribution.events_by_lock()
    assert by_event[("bench:lock", "Cache", "SendSnpUniqueFwdCompData")] == 1  # split off "Cache" again
    assert attribution.requests == Counter({("bench:lock", A, "ST"): 1})
    job = TraceJob("chi", trace, (lock,), LINE_BYTES)
    _events, (summary,) = run_lock_tables(job, attribution, {}, read_config(CHI_RUN / "config.json"))
    # Each served transition once, as the hot-line profile counts (CHI_COUNTS[A]): ReadUnique_PoC RU and the
    # served ReadShared at home 0 (not the parked one, nor the stalled retry); SnpUnique SC and SnpCleanInvalid
    # SC at L2s (not the parked SnpUnique in BUSY_BLKD or UD_T; CPU 0's L1D's SnpUnique is inside the CPU);
    # SnpUniqueFwd at CPU 0's L2.
    assert (summary["home_requests"], summary["invalidations"], summary["forwards"]) == (2, 2, 1)
    assert summary["unserved_transitions"] == 4


def test_a_protocol_without_lock_event_rules_gives_nan_not_zero(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", CHI_TRACE)
    lock = TracedLock("bench:lock", A, 4)
    facts = dataclasses.replace(read_config(CHI_RUN / "config.json"), ruby_protocol="MOESI_hammer")
    _events, (summary,) = run_lock_tables(TraceJob("chi", trace, (lock,), LINE_BYTES), attribute_trace(trace, [lock], LINE_BYTES), {}, facts)
    assert all(math.isnan(summary[kind]) for kind in ("home_requests", "invalidations", "forwards"))


def test_absent_chi_controller_stats_read_as_zero_within_the_controller_count() -> None:
    run = chi_run()
    ruby = "board.cache_hierarchy.ruby_system"
    assert run.value(0, f"{ruby}.Cache_Controller.I.ReadShared", "4") == 7
    assert run.value(0, f"{ruby}.Cache_Controller.SD.SnpOnce", "15") == 0.0  # nozero: not printed
    assert run.value(0, f"{ruby}.Memory_Controller.ReadNoSnp", "total") == 0.0
    with pytest.raises(MissingStatError, match="element 16 of a vector over the 16 Cache_Controller object"):
        run.value(0, f"{ruby}.Cache_Controller.SD.SnpOnce", "16")


def test_a_chi_run_folder_analyses_end_to_end(tmp_path: Path) -> None:
    """The hand-made CHI config.json, stats.txt and trace with a real result.json (the MESI fixture's, its
    machine kind set to chi-numa): runs, metrics, per-lock summary and hot lines all read it."""
    if not (MESI_RUN / "result.json").is_file():
        pytest.skip("no real result.json to borrow")
    folder = tmp_path / "results" / "altix-numa-chi"
    folder.mkdir(parents=True)
    for name in ("config.json", "stats.txt"):
        (folder / name).write_bytes((CHI_RUN / name).read_bytes())
    result = json.loads((MESI_RUN / "result.json").read_text())
    result["provenance"]["machine"]["kind"] = "chi-numa"
    (folder / "result.json").write_text(json.dumps(result))
    write_trace(folder / "roi.trace.gz", CHI_TRACE)
    results, unreadable = load_results(folder.parent, None)
    assert not unreadable
    (row,) = metrics.run_rows(results.runs["altix-numa-chi"])
    assert (row["coherence_requests"], row["invalidations"], row["forwards"]) == (18, 4, 5)
    _events, summary = lock_tables(results, processes=1)
    bench = summary[summary["lock"] == "bench:lock"].iloc[0]
    assert (bench["home_requests"], bench["invalidations"], bench["forwards"]) == (2, 2, 1)
    rows = hotline_tables(results).rows
    assert rows["line"].tolist()[:2] == [f"0x{A:x}", f"0x{B:x}"]
    assert rows[["requests", "invalidations", "crossings"]].values.tolist()[:2] == [list(CHI_COUNTS[A]), list(CHI_COUNTS[B])]
