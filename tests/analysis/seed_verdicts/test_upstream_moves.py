"""What moved each seed's bottleneck before Linux 6.1 (analysis/data/upstream_moves.toml).

The file is research data for issue 18, written by hand; these tests keep
it complete and honest in form: one entry per seed, every field filled in,
commit ids only as full-looking hex (12+ digits) or left empty, and every
entry backed by at least one non-empty source.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from lockstudy.paths import ROOT

MOVES_FILE = ROOT / "analysis" / "data" / "upstream_moves.toml"
SEEDS = ("000", "001", "002", "003", "004")
FIELDS = (
    "seed",
    "bottleneck",
    "change",
    "commit",
    "release",
    "subsystem",
    "author",
    "rationale",
    "still_in_6_1",
    "precondition_hint",
    "sources",
)
# `commit` may be "" (change before the git history, or id not seen in a source).
MAY_BE_EMPTY = {"commit"}
RELATED_FIELDS = ("change", "commit", "release", "note")
COMMIT_ID = re.compile(r"[0-9a-f]{12,40}")
RELEASE = re.compile(r"\d+\.(\d+|x)\b")


def _commit_ok(commit: str) -> bool:
    return commit == "" or COMMIT_ID.fullmatch(commit) is not None


@pytest.fixture(scope="module")
def moves() -> list[dict]:
    with MOVES_FILE.open("rb") as f:
        data = tomllib.load(f)
    assert set(data) == {"move"}, f"unexpected top-level keys: {sorted(set(data) - {'move'})}"
    return data["move"]


def test_one_entry_per_seed(moves):
    seeds = [m.get("seed") for m in moves]
    assert sorted(seeds) == list(SEEDS), f"want exactly one entry for each of {SEEDS}, got {seeds}"


@pytest.mark.parametrize("field", FIELDS)
def test_every_field_present_and_filled(moves, field):
    for move in moves:
        assert field in move, f"seed {move.get('seed')}: no {field!r}"
        value = move[field]
        if field == "sources":
            continue  # checked in test_sources
        assert isinstance(value, str), f"seed {move['seed']}: {field} is not a string"
        if field not in MAY_BE_EMPTY:
            assert value.strip(), f"seed {move['seed']}: {field} is empty"


def test_no_unknown_fields(moves):
    for move in moves:
        extra = set(move) - set(FIELDS) - {"related"}
        assert not extra, f"seed {move['seed']}: unknown fields {sorted(extra)}"


def test_commit_ids_look_like_ids(moves):
    for move in moves:
        assert _commit_ok(move["commit"]), (
            f"seed {move['seed']}: commit {move['commit']!r} is neither empty nor 12+ lowercase hex digits"
        )


def test_sources(moves):
    for move in moves:
        sources = move["sources"]
        assert isinstance(sources, list) and sources, f"seed {move['seed']}: sources must be a non-empty list"
        for source in sources:
            assert isinstance(source, str) and source.strip(), f"seed {move['seed']}: empty source"


def test_related_steps(moves):
    for move in moves:
        for step in move.get("related", []):
            for field in RELATED_FIELDS:
                assert field in step, f"seed {move['seed']}: related step without {field!r}"
                assert isinstance(step[field], str), f"seed {move['seed']}: related {field} is not a string"
                if field != "commit":
                    assert step[field].strip(), f"seed {move['seed']}: related step with empty {field}"
            assert _commit_ok(step["commit"]), (
                f"seed {move['seed']}: related commit {step['commit']!r} is neither empty nor 12+ hex digits"
            )
            extra = set(step) - set(RELATED_FIELDS)
            assert not extra, f"seed {move['seed']}: related step has unknown fields {sorted(extra)}"


def test_every_release_starts_with_a_version(moves):
    """'2.6.15', '3.12 (inferred: ...)', '2.5.x (...)': a version first, how we know it after."""
    for move in moves:
        for release in [move["release"]] + [s["release"] for s in move.get("related", [])]:
            assert RELEASE.match(release), f"seed {move['seed']}: release {release!r} does not start with a version"


# --- the report's loader (analysis/seed_verdicts/upstream_moves.py) ------------------------


def test_the_loader_reads_every_seed_and_the_report_section_names_the_change() -> None:
    from analysis.seed_verdicts.upstream_moves import load_moves, moved_section

    moves = load_moves()
    assert sorted(moves) == list(SEEDS)
    section = moved_section(moves["002"])
    text = "\n".join(section.paragraphs)
    assert "4c21e2f2441d" in text and "split page table lock" in text
    assert "Sources: " in text


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('commit = "4c21e2f2441d', 'commit = "4C21'), r"move\[2\]\.commit: .* lowercase hex"),
        (('seed = "001"', 'seed = "000"'), r"move\[1\]\.seed: '000' has an entry already"),
        (('author = "Hugh Dickins"', 'author = ""'), r"move\[2\]\.author: empty"),
        (('author = "Hugh Dickins"', 'authors = "Hugh Dickins"'), r"move\[2\]: unknown field\(s\) authors"),
    ],
)
def test_the_loader_names_entry_and_field_of_a_bad_file(tmp_path, edit, message) -> None:
    from analysis.seed_verdicts.upstream_moves import UpstreamMovesError, load_moves

    old, new = edit
    text = MOVES_FILE.read_text()
    assert old in text, old
    bad = tmp_path / "moves.toml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(UpstreamMovesError, match=message):
        load_moves(bad)
