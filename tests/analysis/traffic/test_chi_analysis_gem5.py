"""The first real CHI run against the analysis' CHI reading (analysis/README.md, "CHI runs").

The analysis learned CHI from gem5's source and hand-made fixtures
(tests/fixtures/chi/). This test makes the real thing: altix-numa with 2
nodes boots to a checkpoint, then one short kbench ROI of qspinlock runs
traced (Ruby ProtocolTrace). It then checks what the README lists:

- the run reads: config.json is recognised as CHI, every controller gets
  a role, and the metrics of the ROI are numbers (requests, invalidations);
- the hot-line profile reads the trace with the run's own CPU-to-node map
  (it stops on a disagreement), and the bench lock's line is among the
  hottest;
- the trace and the stats agree: the profile's requests and
  invalidations summed over every line equal the metrics' own, counted
  from stats.txt (a difference means a rule is wrong).

Needs a CHI gem5 (GEM5_CHI or GEM5; skipped with the reason otherwise) and
LOCKSTUDY_SLOW_GEM5=1 (a boot and a traced ROI: host minutes).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_machines_gem5 import built, run_gem5  # noqa: F401 (built is a fixture)

pytestmark = [pytest.mark.gem5, pytest.mark.kernel]

MACHINE = "altix-numa"
NODES = 2
RUN_SPEC = "kbench:variant=qspinlock,duration_ms=1"
BENCH_LOCK = "bench:lock"
# The bench lock's line must be among this many of the ROI's hottest.
TOP_LINES = 3


def test_a_real_chi_run_reads_and_its_trace_agrees_with_its_stats(gem5_chi, built, tmp_path: Path) -> None:  # noqa: F811
    from analysis.gem5_output.runs import load_results
    from analysis.hotlines.table import hotline_job
    from analysis.hotlines.traces import profile_job
    from analysis.traffic.metrics import metrics_table

    kernel, image = built
    common = ("--machine", MACHINE, "--nodes", str(NODES), "--kernel", str(kernel), "--image", str(image))
    checkpoint = tmp_path / "checkpoint"
    boot = run_gem5(gem5_chi, tmp_path / "boot", *common, "--checkpoint-out", str(checkpoint))
    assert boot["status"] == "ok", boot["reason"]
    results_dir = tmp_path / "results"
    run_dir = results_dir / "chi-kbench"
    result = run_gem5(gem5_chi, run_dir, *common, "--checkpoint-in", str(checkpoint), "--run", RUN_SPEC, "--trace", "protocol")
    assert result["status"] == "ok", result["reason"]
    shutil.rmtree(checkpoint)

    results, errors = load_results(results_dir)
    assert not errors, errors
    (run,) = results.runs.values()
    assert run.machine.hierarchy == "ruby" and run.machine.ruby_protocol == "CHI"
    (row,) = metrics_table(results).to_dict("records")
    for metric in ("coherence_requests", "invalidations", "inter_node_messages"):
        assert row[metric] == row[metric] and row[metric] > 0, f"{metric}: {row[metric]}"  # not NaN, not 0

    job = hotline_job(run)
    assert job is not None and not isinstance(job, str), job
    (profile,) = profile_job(job)
    assert profile.total_requests == row["coherence_requests"], (profile.total_requests, row["coherence_requests"])
    assert profile.total_invalidations == row["invalidations"], (profile.total_invalidations, row["invalidations"])
    (registry,) = [entry["locks"] for entry in result["guest"]["results"]]
    (lock,) = [entry for entry in registry if entry["name"] == BENCH_LOCK]
    lock_line = int(lock["physical"], 16) // run.machine.line_bytes * run.machine.line_bytes
    hottest = [traffic.line for traffic in profile.ranked()[:TOP_LINES]]
    assert lock_line in hottest, f"the bench lock's line 0x{lock_line:x} is not among the {TOP_LINES} hottest: {[hex(h) for h in hottest]}"
