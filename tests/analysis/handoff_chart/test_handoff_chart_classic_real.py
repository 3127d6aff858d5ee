"""The hand-off chart on a real classic trace (piii-smp, 4 CPUs, test-and-set): what gem5 really prints.

The fixture (tests/fixtures/classic-trace/README.md)
is an excerpt of a real `--trace classic` run. What the hand-written
traces of test_handoff_chart_classic.py did not have, and this one does:
- multi-line messages (an MSHR's target list, indented, with no tick);
- an L2 that passes a snoop up to its L1d before it prints its own, so the
  L1d's snoop comes first in the file at the same tick;
- an L1d that defers a snoop while its own miss is in service, and
  handles it at a later tick.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from analysis.handoff_chart.draw import chart_for
from lockstudy.paths import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "classic-trace"
LOCK_NAME = "bench:lock"
# The whole trace's median hand-off, read from the trace by hand (the excerpt keeps it whole).
RELEASE_TICK = 869654087981
ACQUIRE_TICK = 869654236597
MESSAGES = 49  # the locked write's own LockedRMWWriteResp is no message (classic_trace.py)
# Its first messages, in order: CPU0's release store misses (the waiters' reads
# took the line) and goes down as ReadExReq; the bus snoops each other CPU's L2,
# and each L2 passes the snoop up to its L1d.
FIRST_MESSAGES = [
    ("ReadExReq", "CPU0 L1d", "CPU0 L2"),
    ("ReadExReq", "CPU0 L2", "bus (FSB)"),
    ("snoop ReadExReq", "bus (FSB)", "CPU1 L2"),
    ("snoop ReadExReq", "CPU1 L2", "CPU1 L1d"),
    ("snoop ReadExReq", "bus (FSB)", "CPU2 L2"),
    ("snoop ReadExReq", "CPU2 L2", "CPU2 L1d"),
    ("snoop ReadExReq", "bus (FSB)", "CPU3 L2"),
    ("snoop ReadExReq", "CPU3 L2", "CPU3 L1d"),
]


def test_the_fixture_has_what_this_test_is_about() -> None:
    with gzip.open(FIXTURE / "roi.trace.gz", "rt") as handle:
        text = handle.read()
    assert "\n      Targets:" in text  # a multi-line message
    assert "Deferring snoop on in-service MSHR to blk 0x1d0c100 " in text


def test_the_median_handoff_of_a_real_classic_trace() -> None:
    chart, handoff, count, how = chart_for(FIXTURE, LOCK_NAME)
    assert (count, handoff.index, how) == (7, 3, "median by message count")
    assert (handoff.releaser, handoff.acquirer, handoff.acquire.kind) == (0, 1, "rmw")
    assert (handoff.start, handoff.end) == (RELEASE_TICK, ACQUIRE_TICK)
    assert len(chart.arrows) == MESSAGES
    assert chart.message_list()[: len(FIRST_MESSAGES)] == FIRST_MESSAGES


def test_every_snoop_to_an_l1d_comes_from_its_own_l2_no_later_than_it_arrives() -> None:
    chart, *_ = chart_for(FIXTURE, LOCK_NAME)
    to_l1d = [a for a in chart.arrows if a.label.startswith("snoop") and chart.lanes[a.receiver].label.endswith("L1d")]
    assert len(to_l1d) >= 9
    for arrow in to_l1d:
        cpu = chart.lanes[arrow.receiver].cpu
        assert arrow.sender is not None and chart.lanes[arrow.sender].label == f"CPU{cpu} L2"
        assert arrow.send_tick is not None and RELEASE_TICK <= arrow.send_tick <= arrow.tick
        assert arrow.sender_states, "the L2's own snoop is the send: it has a state change"
    # All arrive in the tick their L2 passed them up but four deferred ones: CPU0's
    # three (its release's ReadExReq in service) and CPU1's last (its locked RMW in service).
    assert sum(arrow.send_tick == arrow.tick for arrow in to_l1d) == len(to_l1d) - 4


def test_a_deferred_snoop_is_sent_by_the_l2_snoop_of_the_tick_it_was_deferred() -> None:
    """CPU0's L1d defers the three readers' snoops while its ReadExReq is served, then handles them at once."""
    chart, *_ = chart_for(FIXTURE, LOCK_NAME)
    deferred = [a for a in chart.arrows if a.label == "snoop ReadSharedReq" and chart.lanes[a.receiver].label == "CPU0 L1d"]
    assert [a.receiver_states for a in deferred] == ["M>O", "O>O", "O>O"]
    l2_snoops = [a for a in chart.arrows if a.label == "snoop ReadSharedReq" and chart.lanes[a.receiver].label == "CPU0 L2"]
    assert [a.send_tick for a in deferred] == [a.tick for a in l2_snoops]
    assert all(d.tick > d.send_tick for d in deferred)  # handled later than deferred


def test_the_chart_folder_gets_the_runs_provenance(tmp_path: Path) -> None:
    from analysis.handoff_chart.draw import draw

    drawn = draw(FIXTURE, LOCK_NAME, out=tmp_path / "charts")
    record = json.loads((tmp_path / "charts" / "provenance.json").read_text())
    run = record["run"]
    assert run["gem5"] == "24.0.0.1" and run["machine_file"] == "piii-smp.toml" and run["trace"] == "classic"
    assert all(run[key] for key in ("kernel_build_id", "image_sha256", "machine_sha256", "roi.trace.gz sha256", "command"))
    chart = record["charts"][f"bench_lock-handoff-{drawn.facts.handoff}"]
    assert (chart["handoff"], chart["handoffs"], chart["messages"]) == (3, 7, MESSAGES)
    assert chart["drawn_with"].startswith("./run.sh handoff tests/fixtures/classic-trace --lock bench:lock --index 3 --out <out>")
    assert "/work" not in json.dumps(record) and str(tmp_path) not in json.dumps(record)


def test_a_run_that_printed_no_registry_gets_the_bench_lock_from_system_map(tmp_path: Path) -> None:
    """Runs stopped before the guest printed any registry line (altix-numa tas and hbo): the bench lock is
    bench_area's physical address (System.map less the image base), the placement every registry is checked against."""
    from analysis.handoff_chart.run_input import bench_lock_from_system_map

    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(b"")
    (tmp_path / "System.map").write_text("ffffffff81000000 T _text\nffffffff81d0c100 b bench_area\n")
    result = {"provenance": {"kernel": {"path": str(kernel)}}}
    [lock] = bench_lock_from_system_map(result)
    assert (lock.name, lock.physical, lock.size) == ("bench:lock", 0x1D0C100, 4)
    assert bench_lock_from_system_map({"provenance": {"kernel": {"path": str(tmp_path / "gone" / "vmlinux")}}}) == []
