"""`run.sh bench gem5 --only`: a chunk of the gem5 bench, checked before gem5 is looked for."""

from __future__ import annotations

import subprocess

import pytest

from lockstudy.bench_gem5 import compare_models, kept_from_earlier, select_machines
from lockstudy.paths import ROOT

MACHINES = [["piii-smp", 8], ["altix-numa-interleaved", 1], ["altix-numa", 1], ["altix-numa-interleaved", 2], ["altix-numa", 2]]


def test_only_keeps_the_named_sizes_in_the_files_order() -> None:
    assert select_machines(MACHINES, None) == MACHINES
    assert select_machines(MACHINES, ["altix-numa-2", "altix-numa-interleaved-2"]) == [["altix-numa-interleaved", 2], ["altix-numa", 2]]


def test_an_unknown_size_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"--only altix-numa-3: not a machine of .*known: piii-smp-8, altix-numa-interleaved-1"):
        select_machines(MACHINES, ["altix-numa-3"])


def test_a_chunk_compares_only_the_pairs_it_ran() -> None:
    config = {"machines": select_machines(MACHINES, ["altix-numa-interleaved-2", "altix-numa-2", "altix-numa-1"]), "compare": [["altix-numa-interleaved", "altix-numa"]]}
    figures = {
        "altix-numa-interleaved-2": {"host_s_per_simulated_ms": 4.0, "chunk": "c1"},
        "altix-numa-2": {"host_s_per_simulated_ms": 10.0, "chunk": "c1"},
        "altix-numa-1": {"host_s_per_simulated_ms": 3.0, "chunk": "c1"},
    }
    assert compare_models(config, figures) == [{"old": "altix-numa-interleaved", "new": "altix-numa", "size": 2, "ratio": 2.5, "chunk": "c1"}]


def test_a_ratio_pairs_only_two_sizes_measured_back_to_back() -> None:
    """The old model at 1 node from an earlier chunk, the new one now: other host loads, so no ratio."""
    config = {"machines": MACHINES, "compare": [["altix-numa-interleaved", "altix-numa"]]}
    figures = {
        "altix-numa-interleaved-1": {"host_s_per_simulated_ms": 1.0, "chunk": "earlier"},
        "altix-numa-1": {"host_s_per_simulated_ms": 2.0, "chunk": "now"},
        "altix-numa-interleaved-2": {"host_s_per_simulated_ms": 4.0, "chunk": "now"},
        "altix-numa-2": {"host_s_per_simulated_ms": 10.0, "chunk": "now"},
    }
    assert [row["size"] for row in compare_models(config, figures)] == [2]


def test_a_chunk_keeps_an_earlier_chunks_sizes_only_when_measured_on_todays_inputs() -> None:
    config = {"roi_spec": "kbench:duration_ms=20", "roi_cpu": "timing"}
    inputs = {"gem5": {"version": "24.0.0.1"}, "image_content_hash": "new"}
    today = {"altix-numa": inputs, "piii-smp": inputs}
    earlier = {
        **config,
        "sizes": {
            "altix-numa-1": {"machine": "altix-numa", "inputs": today["altix-numa"], "host_s_per_simulated_ms": 1.5},
            "altix-numa-8": {"machine": "altix-numa", "inputs": {**today["altix-numa"], "image_content_hash": "old"}},
            "piii-smp-8": {"machine": "piii-smp", "inputs": today["piii-smp"]},
            "altix-numa-16": {"machine": "altix-numa", "inputs": today["altix-numa"]},
        },
    }
    measured_now = {"altix-numa-16": {"machine": "altix-numa"}}
    assert sorted(kept_from_earlier(earlier, measured_now, today, config)) == ["altix-numa-1", "piii-smp-8"]
    assert sorted(kept_from_earlier(earlier, measured_now, {"altix-numa": today["altix-numa"]}, config)) == ["altix-numa-1"]  # no gem5 for piii-smp today
    assert kept_from_earlier(earlier, measured_now, today, {**config, "roi_spec": "kbench:duration_ms=40"}) == {}
    assert kept_from_earlier({}, measured_now, today, config) == {}


def test_the_command_refuses_an_unknown_size_before_looking_for_gem5() -> None:
    result = subprocess.run([str(ROOT / "run.sh"), "bench", "gem5", "--only", "nosuch-4"], capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode != 0
    assert "--only nosuch-4: not a machine of lockstudy/data/bench.toml [gem5]" in result.stdout + result.stderr
