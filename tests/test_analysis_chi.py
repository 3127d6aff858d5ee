"""CHI runs (altix-numa) read by the analysis: machine facts, metrics, per-lock attribution, hot lines.

No real CHI run exists yet: the inputs are tests/fixtures/chi/, made by
hand from gem5 v24.0.0.1's source (its README says from which lines) and
to be replaced by a real run's files. The MESI_Two_Level and classic
fixtures must read as before (the last tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.config_reader import ConfigError, machine_facts, read_config
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
