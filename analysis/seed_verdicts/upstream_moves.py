"""What moved each seed's bottleneck before Linux 6.1, for the report.

`analysis/data/upstream_moves.toml` is research written by hand (its header
gives the format and the rule for commit ids: only those seen in a listed
source). This module reads it once, checks it, and renders each seed's
entry as a report subsection "What moved it in 6.1": the change, its commit
or release, our paraphrase of why it was made, what of the seed's lock is
left in 6.1, and the configuration that brings the bottleneck back (the
seed's precondition study).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.reporting.report_render import Section, Table

MOVES_FILE = Path(__file__).resolve().parents[1] / "data" / "upstream_moves.toml"
TEXT_FIELDS = ("seed", "bottleneck", "change", "commit", "release", "subsystem", "author", "rationale", "still_in_6_1", "precondition_hint")
# `commit` is "" where the change predates the git history or its id was not seen in a source.
MAY_BE_EMPTY = frozenset({"commit"})
RELATED_FIELDS = ("change", "commit", "release", "note")
COMMIT_ID = re.compile(r"[0-9a-f]{12,40}")
# How many hex digits of a commit id the report shows (git's usual abbreviation).
SHORT_COMMIT = 12


class UpstreamMovesError(ValueError):
    """The data file is not what its header says: one line naming the file, entry and field."""


@dataclass(frozen=True)
class RelatedStep:
    change: str
    commit: str
    release: str
    note: str


@dataclass(frozen=True)
class Move:
    seed: str
    bottleneck: str
    change: str
    commit: str
    release: str
    subsystem: str
    author: str
    rationale: str
    still_in_6_1: str
    precondition_hint: str
    sources: tuple[str, ...]
    related: tuple[RelatedStep, ...]


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise UpstreamMovesError(f"{where}.{key}: {value!r}: must be a string")
    if key not in MAY_BE_EMPTY and not value.strip():
        raise UpstreamMovesError(f"{where}.{key}: empty")
    if key == "commit" and value and not COMMIT_ID.fullmatch(value):
        raise UpstreamMovesError(f"{where}.commit: {value!r}: must be \"\" or 12-40 lowercase hex digits")
    return value.strip()


def _move(entry: Any, where: str) -> Move:
    if not isinstance(entry, dict):
        raise UpstreamMovesError(f"{where}: must be a table")
    unknown = set(entry) - set(TEXT_FIELDS) - {"sources", "related"}
    if unknown:
        raise UpstreamMovesError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    texts = {key: _text(entry, key, where) for key in TEXT_FIELDS}
    sources = entry.get("sources")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s.strip() for s in sources):
        raise UpstreamMovesError(f"{where}.sources: must be a non-empty list of non-empty strings")
    related = []
    for index, step in enumerate(entry.get("related", [])):
        at = f"{where}.related[{index}]"
        if not isinstance(step, dict) or set(step) != set(RELATED_FIELDS):
            raise UpstreamMovesError(f"{at}: must have exactly the fields {', '.join(RELATED_FIELDS)}")
        related.append(RelatedStep(**{key: _text(step, key, at) for key in RELATED_FIELDS}))
    return Move(**texts, sources=tuple(s.strip() for s in sources), related=tuple(related))


def load_moves(path: Path = MOVES_FILE) -> dict[str, Move]:
    """Seed id -> its move; one line naming file and entry for anything malformed."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UpstreamMovesError(f"{path}: {exc}") from exc
    entries = data.get("move")
    if set(data) != {"move"} or not isinstance(entries, list):
        raise UpstreamMovesError(f"{path}: must hold only [[move]] tables")
    moves: dict[str, Move] = {}
    for index, entry in enumerate(entries):
        move = _move(entry, f"{path}: move[{index}]")
        if move.seed in moves:
            raise UpstreamMovesError(f"{path}: move[{index}].seed: {move.seed!r} has an entry already")
        moves[move.seed] = move
    return moves


def commit_text(commit: str) -> str:
    return f"`{commit[:SHORT_COMMIT]}`" if commit else "(before the git history, or not seen in a source)"


def moved_section(move: Move) -> Section:
    """A seed's "What moved it in 6.1" subsection."""
    section = Section("What moved it in 6.1")
    section.paragraphs += [
        f"The seed's bottleneck: {move.bottleneck}.",
        f"**{move.change}** ({move.author}; commit {commit_text(move.commit)}; release {move.release}; {move.subsystem}). "
        f"{move.rationale}",
        f"What is left of it in 6.1: {move.still_in_6_1}",
        f"What brings it back (our precondition): {move.precondition_hint}",
    ]
    if move.related:
        steps = pd.DataFrame(
            [{"change": s.change, "commit": s.commit[:SHORT_COMMIT], "release": s.release, "note": s.note} for s in move.related]
        )
        section.tables.append(Table(f"Seed {move.seed}: other steps of the same history", steps))
    section.paragraphs.append("Sources: " + "; ".join(move.sources) + " (analysis/data/upstream_moves.toml).")
    return section
