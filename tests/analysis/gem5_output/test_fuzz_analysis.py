"""Fuzzing what `analyze` reads: stats.txt, result.json and ROI traces.

Each input starts as a real gem5 run (tests/fixtures/gem5/) and is broken
on purpose: truncated, lines reordered or repeated, stat names of another
gem5 version, binary junk, JSON fields replaced. Whatever it becomes,
`analyze` must end in one of two ways: status 0 with a whole analysis/
folder whose stats agree with the untouched run's, or a non-zero status
with its reasons on stderr and no analysis/ folder at all. Another
exception, a hang or a half-written folder fails the test.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis import analyze
from analysis.gem5_output.runs import ANALYSIS_DIR
from fuzzing import budget, toml_values
from lockstudy.paths import ROOT

pytestmark = pytest.mark.fuzz

FIXTURES = ROOT / "tests" / "fixtures" / "gem5"
TRACED_RUN = "altix-numa-2-kbench"
BUS_RUN = "piii-smp-2-kbench"
TABLES = ("stats", "runs", "metrics", "handoff_bound")
KEY = ["run_id", "roi", "stat", "sub"]
# Stat names of gem5 20.0 and earlier, which the reader renames (analysis/data/gem5_stats.toml).
OLD_NAMES = {"simSeconds": "sim_seconds", "simTicks": "sim_ticks"}
STDERR_PREFIXES = ("analyze: ", "unreadable: ")


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trace attributions of broken traces go to a cache of the test's own."""
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path_factory.mktemp("cache")))


def copy_run(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "results"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(FIXTURES / name, root / name)
    return root


def baseline(tmp_path_factory: pytest.TempPathFactory, name: str) -> pd.DataFrame:
    root = copy_run(tmp_path_factory.mktemp("baseline"), name)
    assert analyze.main([str(root), "--jobs", "1"]) == 0
    return pd.read_parquet(root / ANALYSIS_DIR / "stats.parquet")


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    return {name: baseline(tmp_path_factory, name) for name in (TRACED_RUN, BUS_RUN)}


def check_outcome(root: Path, untouched: pd.DataFrame, capsys: pytest.CaptureFixture[str]) -> None:
    status = analyze.main([str(root), "--jobs", "1"])
    err = capsys.readouterr().err
    leftovers = [p.name for p in root.iterdir() if p.name.startswith(f".{ANALYSIS_DIR}.")]
    assert not leftovers, leftovers
    if status != 0:
        assert not (root / ANALYSIS_DIR).exists(), "a failed analysis left a folder"
        assert "Traceback" not in err and any(line.startswith(STDERR_PREFIXES) for line in err.splitlines()), err
        return
    for table in TABLES:
        assert (root / ANALYSIS_DIR / f"{table}.parquet").is_file() and (root / ANALYSIS_DIR / f"{table}.csv").is_file()
    assert (root / ANALYSIS_DIR / "provenance.json").is_file()
    read = pd.read_parquet(root / ANALYSIS_DIR / "stats.parquet")
    both = read.merge(untouched, on=KEY, suffixes=("", "_untouched"))
    wrong = both[(both["value"] != both["value_untouched"]) & ~(both["value"].isna() & both["value_untouched"].isna())]
    assert wrong.empty, wrong[KEY + ["value", "value_untouched"]].head()


def analyze_broken(tmp_path: Path, name: str, file: str, breaking: Callable[[bytes], bytes], untouched: pd.DataFrame,
                   capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of the run `name` with `file` broken by `breaking`, analysed and its outcome checked."""
    root = copy_run(tmp_path, name)
    target = root / name / file
    target.write_bytes(breaking(target.read_bytes()))
    check_outcome(root, untouched, capsys)


# --- stats.txt

@st.composite
def broken_stats(draw: st.DrawFn, text: bytes) -> bytes:
    lines = text.split(b"\n")
    kind = draw(st.sampled_from(["truncate", "reorder", "repeat", "old names", "renamed", "junk", "marker"]))
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    at = draw(st.integers(0, len(lines) - 1))
    if kind == "reorder":
        other = draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
    elif kind == "repeat":
        lines.insert(at, lines[draw(st.integers(0, len(lines) - 1))])
    elif kind == "old names":
        for new, old in OLD_NAMES.items():
            lines = [line.replace(new.encode() + b" ", old.encode() + b" ") for line in lines]
    elif kind == "renamed":
        word = lines[at].split(b" ")[0]
        lines = [line.replace(word, draw(st.binary(min_size=1, max_size=8)), 1) if word and line.startswith(word) else line for line in lines]
    elif kind == "junk":
        lines.insert(at, draw(st.binary(max_size=60)))
    else:
        lines = [line.replace(b"Simulation Statistics", draw(st.binary(max_size=20))) for line in lines]
    return b"\n".join(lines)


@budget("analysis_examples")
@given(data=st.data(), name=st.sampled_from([TRACED_RUN, BUS_RUN]))
def test_a_broken_stats_file_ends_in_its_reason_or_the_same_numbers(tmp_path: Path, baselines: dict[str, pd.DataFrame],
                                                                     capsys: pytest.CaptureFixture[str], data: st.DataObject, name: str) -> None:
    def breaking(stats: bytes) -> bytes:
        return data.draw(broken_stats(stats))

    analyze_broken(tmp_path, name, "stats.txt", breaking, baselines[name], capsys)


# --- result.json

def replace_somewhere(value: Any, path: list[int], new: Any) -> Any:
    """`value` with the node that `path` (child indices, modulo each node's size) leads to replaced by `new`."""
    if not path or not isinstance(value, (dict, list)) or not value:
        return new
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    key = keys[path[0] % len(keys)]
    value[key] = replace_somewhere(value[key], path[1:], new)
    return value


@budget("analysis_examples")
@given(data=st.data(), name=st.sampled_from([TRACED_RUN, BUS_RUN]))
def test_a_broken_result_json_ends_in_its_reason_or_the_same_numbers(tmp_path: Path, baselines: dict[str, pd.DataFrame],
                                                                     capsys: pytest.CaptureFixture[str], data: st.DataObject, name: str) -> None:
    def breaking(text: bytes) -> bytes:
        kind = data.draw(st.sampled_from(["field", "truncate", "junk"]))
        if kind == "field":
            path = data.draw(st.lists(st.integers(0, 50), min_size=1, max_size=5))
            return json.dumps(replace_somewhere(json.loads(text), path, data.draw(toml_values))).encode()
        if kind == "truncate":
            return text[: data.draw(st.integers(0, len(text)))]
        at = data.draw(st.integers(0, len(text)))
        return text[:at] + data.draw(st.binary(max_size=40)) + text[at:]

    analyze_broken(tmp_path, name, "result.json", breaking, baselines[name], capsys)


# --- ROI traces

@budget("analysis_examples")
@given(data=st.data())
def test_a_broken_roi_trace_ends_in_its_reason_or_the_same_numbers(tmp_path: Path, baselines: dict[str, pd.DataFrame],
                                                                   capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    def breaking(packed: bytes) -> bytes:
        kind = data.draw(st.sampled_from(["cut gzip", "gzip junk", "truncate", "reorder", "junk line", "field"]))
        if kind == "cut gzip":
            return packed[: data.draw(st.integers(0, len(packed)))]
        if kind == "gzip junk":
            at = data.draw(st.integers(0, len(packed)))
            return packed[:at] + data.draw(st.binary(min_size=1, max_size=40)) + packed[at:]
        lines = gzip.decompress(packed).split(b"\n")
        at = data.draw(st.integers(0, len(lines) - 1))
        if kind == "truncate":
            lines = lines[:at] + [lines[at][: data.draw(st.integers(0, len(lines[at])))]]
        elif kind == "reorder":
            other = data.draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif kind == "junk line":
            lines.insert(at, data.draw(st.binary(max_size=80)))
        else:
            words = lines[at].split()
            if words:
                words[data.draw(st.integers(0, len(words) - 1))] = data.draw(st.binary(max_size=12))
            lines[at] = b" ".join(words)
        return gzip.compress(b"\n".join(lines), compresslevel=1)

    analyze_broken(tmp_path, TRACED_RUN, "roi.trace.gz", breaking, baselines[TRACED_RUN], capsys)
