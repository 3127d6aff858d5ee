"""Fuzzing machine files: each loads into machines every size of which derives, or ends in MachineError.

gem5-configs/machine.py is what run.py and the campaign loader read a
machine file with; a file it accepts must give, for every size it lists,
the memory ranges, CPU->node map, distances and boot parameter the
components and the kernel need, without an error of its own.
"""

from __future__ import annotations

import copy
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import budget, toml_text, toml_values
from lockstudy.paths import ROOT

sys.path.insert(0, str(ROOT / "gem5-configs"))
import machine  # noqa: E402

pytestmark = pytest.mark.fuzz

ORIGINALS = {path.stem: tomllib.loads(path.read_text()) for path in machine.machine_files()}
DOMAIN_VALUES = st.one_of(
    st.sampled_from(["16KiB", "1MiB", "3GiB", "4GiB", "0B", "700MHz", "0Hz", "90ns", "800MB/s", "line", "classic-smp", "ruby-numa", "x"]),
    st.integers(-1, 300),
    st.sampled_from([2**k for k in range(12)]),
    st.lists(st.sampled_from([0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 255]), max_size=5),
    st.lists(st.sampled_from(["tsc=reliable", "lockstudy.x=1", "a b"]), max_size=2),
)


@st.composite
def machine_files(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(ORIGINALS[draw(st.sampled_from(sorted(ORIGINALS)))])
    for _ in range(draw(st.integers(0, 4))):
        table = draw(st.sampled_from(sorted(data)))
        if not isinstance(data[table], dict):
            continue
        key = draw(st.sampled_from(sorted(data[table]) + ["extra"]))
        if draw(st.integers(0, 4)) == 0:
            data[table].pop(key, None)
        else:
            data[table][key] = draw(st.one_of(DOMAIN_VALUES, toml_values))
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(sorted(data) + ["extra"]))] = draw(toml_values)
    return data


def check_outcome(path: Path) -> None:
    try:
        loaded = machine.load_machine(path)
    except machine.MachineError as exc:
        assert all(line.startswith(f"{path}: ") for line in str(exc).splitlines()), str(exc)
        return
    for count in loaded.counts:
        instance = loaded.instance(count)
        assert len(instance.cpu_to_node()) == instance.num_cpus
        instance.summary()
        if loaded.is_numa:
            assert instance.numa_boot_parameter().startswith("lockstudy.numa=")
            assert all(len(row) == instance.num_nodes for row in instance.distances())


@budget()
@given(machine_files())
def test_a_machine_file_gives_every_size_it_lists_or_names_its_problems(tmp_path: Path, data: dict[str, Any]) -> None:
    name = data.get("machine", {}).get("name") if isinstance(data.get("machine"), dict) else None
    stem = name if isinstance(name, str) and name.isidentifier() else "fuzz"
    path = tmp_path / f"{stem}.toml"
    path.write_text(toml_text(data))
    check_outcome(path)


@budget()
@given(st.sampled_from(sorted(ORIGINALS)), st.binary(max_size=200), st.integers(0, 4000))
def test_any_bytes_in_a_machine_file_end_in_machine_error_or_a_machine(tmp_path: Path, name: str, junk: bytes, at: int) -> None:
    original = (machine.MACHINES_DIR / f"{name}.toml").read_bytes()
    path = tmp_path / f"{name}.toml"
    path.write_bytes(original[:at] + junk + original[at:])
    check_outcome(path)
