"""Fuzzing the measurement table the cost model reads (results/costs/runs.csv).

Each input starts as a good table and is broken on purpose: a cell
replaced by any text, lines dropped, duplicated or cut, junk bytes added.
Reading it must end in one of two ways: rows the model fits, or a
CostTableError whose every line names the file (and, past the header, a
line and field). Any other exception fails the test.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodel_rows import power_law_rows
from fuzzing import budget
from lockstudy.costmodel.model import CostModel
from lockstudy.costmodel.settings import load_settings
from lockstudy.costmodel.table import COLUMNS, CostTableError, read_cost_table, write_cost_table

pytestmark = pytest.mark.fuzz

SETTINGS = load_settings()


def good_table_lines() -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "runs.csv"
        write_cost_table(path, power_law_rows("kbench:duration_ms=20"))
        return path.read_text().splitlines()


GOOD = good_table_lines()
cell_edits = st.lists(
    st.tuples(st.integers(1, len(GOOD) - 1), st.integers(0, len(COLUMNS) - 1), st.text(max_size=12)), max_size=4
)


@budget()
@given(edits=cell_edits, dropped=st.sets(st.integers(0, len(GOOD) - 1), max_size=2), tail=st.binary(max_size=20))
def test_a_broken_table_reads_or_is_refused_line_by_line(edits, dropped, tail) -> None:  # type: ignore[no-untyped-def]
    lines = [line.split(",") for line in GOOD]
    for line, column, text in edits:
        if column < len(lines[line]):
            lines[line][column] = text
    text = "\n".join(",".join(cells) for index, cells in enumerate(lines) if index not in dropped) + "\n"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "runs.csv"
        path.write_bytes(text.encode("utf-8", "surrogatepass") + tail)
        try:
            rows = read_cost_table(path)
        except CostTableError as refused:
            assert refused.lines and all(line.startswith(f"{path}:") for line in refused.lines)
            return
        CostModel.fit(rows, SETTINGS)  # what reads must fit without an error
