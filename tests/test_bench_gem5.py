"""`run.sh bench gem5 --only`: a chunk of the gem5 bench, checked before gem5 is looked for."""

from __future__ import annotations

import subprocess

import pytest

from lockstudy.bench_gem5 import compare_models, select_machines
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
        "altix-numa-interleaved-2": {"host_s_per_simulated_ms": 4.0},
        "altix-numa-2": {"host_s_per_simulated_ms": 10.0},
        "altix-numa-1": {"host_s_per_simulated_ms": 3.0},
    }
    assert compare_models(config, figures) == [{"old": "altix-numa-interleaved", "new": "altix-numa", "size": 2, "ratio": 2.5}]


def test_the_command_refuses_an_unknown_size_before_looking_for_gem5() -> None:
    result = subprocess.run([str(ROOT / "run.sh"), "bench", "gem5", "--only", "nosuch-4"], capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode != 0
    assert "--only nosuch-4: not a machine of lockstudy/data/bench.toml [gem5]" in result.stdout + result.stderr
