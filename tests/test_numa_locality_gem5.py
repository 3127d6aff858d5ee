"""altix-numa keeps node-local traffic on its node: measured in gem5's router statistics.

One boot of altix-numa with 4 nodes (8 CPUs; nodes 0-1 share a first-level
router, nodes 0 and 2 are 3 routers apart), then calibration ROIs in pairs
that differ only in how many transfers they time. The difference of a
pair's NUMAlink-router traversals (messages sent by the router tree's
routers, network.numalink_routers*) divided by the difference of its
transfers is what one transfer costs in router crossings, the ROI's
background (timer ticks, thread start-up) cancelling out:

- a dirty line passed between the two CPUs of node 0, homed on node 0: 0;
- the same line read by a CPU of node 1 (1 router): > 0;
- by a CPU of node 2 (3 routers): 3 times the node-1 figure (every
  message that crosses crosses all routers of the path);
- a chase through node 0's own memory from CPU 0: 0 per miss.

Needs a CHI gem5 (GEM5_CHI or GEM5; skipped with the reason otherwise) and
LOCKSTUDY_SLOW_GEM5=1 (a boot and ROIs: tens of host minutes).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_machines_gem5 import built, run_gem5  # noqa: F401 (built is a fixture)

pytestmark = [pytest.mark.gem5, pytest.mark.kernel]

MACHINE = "altix-numa"
NODES = 4
FEW, MANY = 16, 144  # timed transfers of the two ROIs of a pair
LATENCY_STEPS = (1024, 5120)  # timed loads of the memory chase's two ROIs
ROUTER_MESSAGES = re.compile(r"^board\.cache_hierarchy\.ruby_system\.network\.numalink_routers\d+\.throttle\d+\.msg_count\.\S+\s+(\d+)", re.M)
STATS_BLOCK = "---------- Begin Simulation Statistics ----------"
SAME_NODE_BOUND = 0.05  # router traversals per transfer that count as none (background noise)
HOPS_RATIO_TOLERANCE = 0.15


def c2c(reader: int, iterations: int) -> str:
    return f"cal_c2c:threads=2,owner=0,reader={reader},state=dirty,iterations={iterations}"


def chase(steps: int) -> str:
    return f"cal_latency:kib=8192,iterations=1,warmup=0,steps={steps},node=0"


SPECS = {
    "same node": [c2c(1, FEW), c2c(1, MANY)],
    "1 router": [c2c(2, FEW), c2c(2, MANY)],
    "3 routers": [c2c(4, FEW), c2c(4, MANY)],
    "local memory": [chase(steps) for steps in LATENCY_STEPS],
}


def router_traversals(outdir: Path) -> list[int]:
    """Messages sent by the router tree's routers, per ROI (one stats block each)."""
    blocks = (outdir / "stats.txt").read_text().split(STATS_BLOCK)[1:]
    return [sum(int(count) for count in ROUTER_MESSAGES.findall(block)) for block in blocks]


def test_node_local_traffic_crosses_no_router(gem5_chi, built, tmp_path: Path) -> None:  # noqa: F811
    kernel, image = built
    common = ("--machine", MACHINE, "--nodes", str(NODES), "--kernel", str(kernel), "--image", str(image))
    checkpoint = tmp_path / "checkpoint"
    boot = run_gem5(gem5_chi, tmp_path / "boot", *common, "--checkpoint-out", str(checkpoint))
    assert boot["status"] == "ok", boot["reason"]
    per_unit: dict[str, float] = {}
    for case, (few, many) in SPECS.items():
        outdir = tmp_path / case.replace(" ", "-")
        result = run_gem5(gem5_chi, outdir, *common, "--checkpoint-in", str(checkpoint), "--run", f"{few}+{many}")
        assert result["status"] == "ok", f"{case}: {result['reason']}"
        traversals = router_traversals(outdir)
        assert len(traversals) == 2, f"{case}: {len(traversals)} ROIs"
        if case == "local memory":
            units = LATENCY_STEPS[1] - LATENCY_STEPS[0]
            nodes = {entry["result"]["metrics"]["mem_node"] for entry in result["guest"]["results"]}
            assert nodes == {0}, f"the chase's memory is on node(s) {nodes}, not node 0"
        else:
            units = MANY - FEW
        per_unit[case] = (traversals[1] - traversals[0]) / units
    print(f"router traversals per transfer or miss: {per_unit}")
    assert abs(per_unit["same node"]) <= SAME_NODE_BOUND, per_unit
    assert abs(per_unit["local memory"]) <= SAME_NODE_BOUND, per_unit
    assert per_unit["1 router"] >= 1, per_unit
    assert per_unit["3 routers"] == pytest.approx(3 * per_unit["1 router"], rel=HOPS_RATIO_TOLERANCE), per_unit
