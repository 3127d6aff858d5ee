"""Every value of a machine file says where it comes from (issue 16: sourced, set from the calibration, or why not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lockstudy.paths import ROOT

MACHINES = ROOT / "gem5-configs" / "machines"
# The kept first NUMA model (altix-numa-interleaved) keeps its first guesses, so that old and new compare.
CALIBRATED_MACHINES = ("piii-smp", "altix-numa")
# gem5-configs/README.md, "Machines as data": a [source] tag, or one of these words.
WHERE_FROM = re.compile(r"\[[\w§ .-]+\]|calibrated:|checked:|no verdict depends on it:|not sourced:")
# What names a machine rather than costing anything.
NAMING = {("machine", "name"), ("machine", "description"), ("machine", "kind")}
KEY = re.compile(r"^(\w+)\s*=")
TABLE = re.compile(r"^\[([\w.]+)\]")


def unexplained(path: Path) -> list[str]:
    """The `table.key` of every value whose line, or the comment block right above it, says nowhere it comes from."""
    missing, table, block = [], "", []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            block.append(stripped)
            continue
        if match := TABLE.match(stripped):
            table, block = match.group(1), []
            continue
        if (match := KEY.match(stripped)) and (table, match.group(1)) not in NAMING:
            comment = line.partition("#")[2] if "#" in line else ""
            if not WHERE_FROM.search(comment) and not any(WHERE_FROM.search(text) for text in block):
                missing.append(f"{path.name}:{number}: {table}.{match.group(1)}")
        block = []
    return missing


@pytest.mark.parametrize("name", CALIBRATED_MACHINES)
def test_every_value_says_where_it_comes_from(name: str) -> None:
    assert unexplained(MACHINES / f"{name}.toml") == []


def test_an_unexplained_value_is_named(tmp_path: Path) -> None:
    machine = tmp_path / "m.toml"
    machine.write_text('[l1d]\n# a block that says nothing\nsize = "16KiB"   # [design] 16 KB\nassoc = 4   # four ways\n')
    assert unexplained(machine) == ["m.toml:4: l1d.assoc"]
