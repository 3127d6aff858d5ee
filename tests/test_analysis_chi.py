"""CHI runs (altix-numa) read by the analysis: machine facts, metrics, per-lock attribution, hot lines.

No real CHI run exists yet: the inputs are tests/fixtures/chi/, made by
hand from gem5 v24.0.0.1's source (its README says from which lines) and
to be replaced by a real run's files. The MESI_Two_Level and classic
fixtures must read as before (the last tests).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from analysis import metrics
from analysis.config_reader import ConfigError, machine_facts, read_config
from analysis.runs import RunStats
from analysis.stats_reader import read_dumps
from analysis_checks import FIXTURES

CHI_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "chi"
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
    return RunStats(info=None, stats_path=stats, dumps=read_dumps(stats), machine=read_config(CHI_RUN / "config.json"))  # type: ignore[arg-type]


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
