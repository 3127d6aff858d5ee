"""The one reader of a run's provenance, used by the report and the hand-off charts."""

from __future__ import annotations

from analysis.gem5_output.run_provenance import RunProvenance
from analysis.handoff_chart.provenance import run_facts

RESULT = {
    "provenance": {
        "gem5_version": "24.0.0.1",
        "gem5_extras": {"chi-x86-locked-rmw": 1},
        "machine": {"name": "altix-numa", "file": "altix-numa.toml", "sha256": "ab", "cpus": 4, "nodes": 2},
        "kernel": {"sha256": "cd", "build_info": {"build_id": "ef"}},
        "image": {"sha256": "01"},
        "roi_cpu": "timing",
        "trace": "protocol",
        "run_spec": "kbench:variant=cna,duration_ms=1",
        "command": ["/x/gem5.opt", "run.py", "--nodes", 2],
    }
}


def test_every_fact_is_read_from_its_place() -> None:
    facts = RunProvenance.of(RESULT)
    assert (facts.gem5_version, facts.gem5_extras) == ("24.0.0.1", {"chi-x86-locked-rmw": 1})
    assert (facts.kernel_build_id, facts.kernel_sha256, facts.image_sha256) == ("ef", "cd", "01")
    assert facts.machine_label() == "altix-numa, 4 CPUs, 2 nodes"
    assert facts.machine_file_label() == "altix-numa.toml sha256 ab"
    assert facts.command == ("/x/gem5.opt", "run.py", "--nodes", "2")


def test_an_older_run_lacks_facts_instead_of_failing() -> None:
    facts = RunProvenance.of({"provenance": {"machine": {"name": "piii-smp", "cpus": 1}, "kernel": "?"}})
    assert facts.gem5_extras == {} and facts.kernel_build_id is None and facts.command == ()
    assert facts.machine_label() == "piii-smp, 1 CPUs"
    assert RunProvenance.of({}).gem5_version is None


def test_the_chart_provenance_publishes_the_shared_facts(tmp_path) -> None:
    facts = run_facts(tmp_path, "sha256-of-the-trace", RESULT)
    assert facts["gem5_extras"] == {"chi-x86-locked-rmw": 1}
    assert facts["machine"] == "altix-numa, 4 CPUs, 2 nodes"
    assert facts["kernel_build_id"] == "ef"
