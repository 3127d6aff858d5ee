"""A streaming reader of gem5's stats.txt (text format of gem5 v24.0.0.1).

What gem5 writes (src/base/stats/text.cc, gem5 v24.0.0.1):
- each dump is a block between a blank line + `---------- Begin Simulation
  Statistics ----------` (Text::begin, text.cc:130-133) and a blank line +
  `---------- End Simulation Statistics   ----------` (Text::end,
  text.cc:135-140). run.py dumps once per region of interest (ROI), so
  dump index = ROI index.
- a stat line is `name value [pdf cdf] [# desc] [(Unit)]`
  (ScalarPrint::operator(), text.cc:278-311): the name padded to 40
  columns, the value right-aligned in 12, pdf and cdf as `12.34%` only for
  vector elements and buckets, ` # desc` when descriptions are on and the
  unit as ` (Unit)` (printUnits, text.cc:230-236; units are on whenever
  descriptions are, text.cc:811-812). A Rate unit prints as
  `((Tick/Second))` (units.hh Rate::toString); we store `Tick/Second`.
- values (ValueToString, text.cc:180-199): fixed notation, no decimals for
  whole numbers, `nan` for NaN; +-inf print as `inf`/`-inf`.
- vectors: `name::sub` per element (subname, or the index when the vector
  has no subnames) and `name::total` with the `total` flag
  (VectorPrint, text.cc:336-406). A vector of size 1 prints as a bare
  `name value` (text.cc:358-367).
- 2-D vectors print `name_<x>::<y>` per row, and `name::total`
  (Text::visit(Vector2dInfo), text.cc:638-705): the row name is part of the
  stat here, e.g. `pktCount_<cpu-side port>` with sub `<mem-side port>`.
- distributions (DistPrint, text.cc:456-584): `::samples ::mean [::gmean]
  ::stdev [::underflows] ::<lo>-<hi>|::<lo> ... [::overflows]
  [::min_value ::max_value] ::total`; bucket bounds print with C++'s
  default double format (`1e+06`). A vector of distributions prints as
  `name_<sub>::...` (text.cc:427-440). Sparse histograms: `::samples`
  then `::<value>` (text.cc:767-791).
- `oneline` stats (used by Ruby's event/transition vectors and latency
  histograms) print all elements on one line: `name |v pdf cdf |v pdf cdf
  ... # desc (Unit)` (text.cc:370-394, 532-558). Element names are not
  printed: for vectors we name them by index (Ruby's controller vectors
  have no subnames, so index = controller number,
  src/mem/slicc/symbols/StateMachine.py:937-947); for histograms we rebuild
  the bucket names from the `::bucket_size ::min_bucket ::max_bucket`
  lines gem5 prints just before (text.cc:472-484).
- `nozero` stats are not printed when zero, `nonan` ones when NaN
  (text.cc:281-283), and a stat whose prereq is zero is not printed at all
  (Text::noOutput, text.cc:168-178). Absent is therefore not an error in
  the file; analysis/gem5_output/stat_rules.py says which absent stats are zeros.

Names hold no spaces (gem5 object, port and requestor names have none), so
the first whitespace ends the name.

Every line is interned: a dump holds integer codes into a `Vocabulary`
shared by all files read in a process, plus the values. Reading a
thousand runs of one machine costs one parse per distinct name.
"""

from __future__ import annotations

import gc
from array import array
from contextlib import contextmanager
from operator import itemgetter, methodcaller
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from analysis.gem5_output.stat_rules import Renamer, load_rules

BEGIN_MARKER = "---------- Begin Simulation Statistics ----------"
END_MARKER = "---------- End Simulation Statistics   ----------"
SEPARATOR = "::"
# A dump's first few lookups search its codes; more build an index of them
# (a search costs about 1/50 of building the index, measured on a dump of
# 12,000 stats).
UNINDEXED_LOOKUPS = 8
ONELINE_BAR = "|"
DIST_BUCKET_FIELDS = ("bucket_size", "min_bucket", "max_bucket")


class StatsFileError(ValueError):
    """A stats.txt that cannot be read as gem5 wrote it: names file and line."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


def bucket_field_of(name: str) -> tuple[str, str] | None:
    """(histogram, field) when `name` is one of a histogram's bucket fields (`h::bucket_size`), else None."""
    stat, separator, sub = name.rpartition(SEPARATOR)
    return (stat, sub) if separator and sub in DIST_BUCKET_FIELDS else None


@dataclass
class Layout:
    """The plain (not `|`) lines of a block: names in order and their codes."""

    names: list[str]
    codes: array
    _bucket_fields: dict[str, dict[str, int]] | None = None

    def bucket_fields(self) -> dict[str, dict[str, int]]:
        """Where each histogram's bucket fields are: stat -> field -> position."""
        if self._bucket_fields is None:
            found: dict[str, dict[str, int]] = {}
            for position, name in enumerate(self.names):
                owner = bucket_field_of(name)
                if owner is not None:
                    found.setdefault(owner[0], {})[owner[1]] = position
            self._bucket_fields = found
        return self._bucket_fields


@dataclass
class Vocabulary:
    """Interned stat names, each with its unit and description.

    A name's unit and description are read the first time the name is
    seen; later lines of that name are not re-parsed past their value
    (they are the same text: gem5 prints a stat's desc and unit from its
    declaration).
    """

    renamer: Renamer
    names: list[tuple[str, str, str]] = field(default_factory=list)  # (stat, sub, renamed_from)
    keys: list[tuple[str, str]] = field(default_factory=list)  # (stat, sub) of each name
    codes_of: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (stat, sub) -> its printed names' codes
    full_names: list[str] = field(default_factory=list)  # each name as printed
    name_metas: list[int] = field(default_factory=list)  # meta code of each name
    name_codes: dict[str, int] = field(default_factory=dict)
    metas: list[tuple[str, str]] = field(default_factory=list)  # (unit, description)
    meta_codes: dict[tuple[str, str], int] = field(default_factory=dict)
    # blocks of one machine print the same names in the same order: the
    # last such list of names seen with each length
    layouts: dict[int, Layout] = field(default_factory=dict)
    # (name, element count, histogram bucket fields) -> codes of a `|` line's elements
    oneline_codes: dict[tuple[str, int, tuple[float, ...]], list[int]] = field(default_factory=dict)

    def intern(self, full_name: str, meta: int) -> int:
        code = self.name_codes.get(full_name)
        if code is None:
            stat, _, sub = full_name.partition(SEPARATOR)
            stat, renamed_from = self.renamer.normalise(stat)
            code = len(self.names)
            self.names.append((stat, sub, renamed_from))
            self.keys.append((stat, sub))
            self.codes_of.setdefault((stat, sub), []).append(code)
            self.full_names.append(full_name)
            self.name_metas.append(meta)
            self.name_codes[full_name] = code
        return code

    def meta_code(self, unit: str, description: str) -> int:
        key = (unit, description)
        code = self.meta_codes.get(key)
        if code is None:
            code = len(self.metas)
            self.metas.append(key)
            self.meta_codes[key] = code
        return code


_default_vocabulary: Vocabulary | None = None


def default_vocabulary() -> Vocabulary:
    global _default_vocabulary
    if _default_vocabulary is None:
        _default_vocabulary = Vocabulary(load_rules()[0])
    return _default_vocabulary


@dataclass
class Dump:
    """One Begin..End block: the stats of one ROI."""

    path: Path
    index: int  # 0-based position in the file = ROI index
    begin_line: int
    end_line: int
    vocabulary: Vocabulary
    names: array = field(default_factory=lambda: array("i"))  # codes into vocabulary.names
    values: array = field(default_factory=lambda: array("d"))
    _index: dict[tuple[str, str], int] | None = None
    _lookups: int = 0  # lookups answered so far without the index
    _duplicates: set[tuple[str, str]] | None = None
    _objects: set[str] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def entries(self) -> Iterator[tuple[str, str, float, str, str]]:
        """(stat, sub, value, unit, description) per printed value."""
        names, metas, name_metas = self.vocabulary.names, self.vocabulary.metas, self.vocabulary.name_metas
        for name, value in zip(self.names, self.values):
            stat, sub, _ = names[name]
            unit, description = metas[name_metas[name]]
            yield stat, sub, value, unit, description

    def renamed(self) -> dict[str, str]:
        """Old name -> gem5 v24 name, for every renamed stat in this dump."""
        names = self.vocabulary.names
        return {names[c][2]: names[c][0] for c in set(self.names) if names[c][2]}

    def _build_index(self) -> None:
        keys = list(map(self.vocabulary.keys.__getitem__, self.names))
        index = dict(zip(keys, range(len(keys))))  # the last position of a repeated key
        duplicates: set[tuple[str, str]] = set()
        if len(index) < len(keys):
            seen: set[tuple[str, str]] = set()
            duplicates = {key for key in keys if key in seen or seen.add(key)}  # type: ignore[func-returns-value]
        self._index, self._duplicates = index, duplicates

    def lookup(self, stat: str, sub: str = "") -> float | None:
        """The printed value of (stat, sub), or None when gem5 did not print it."""
        if self._index is None:
            if self._lookups < UNINDEXED_LOOKUPS:
                self._lookups += 1
                return self._scan(stat, sub)
            self._build_index()
        assert self._index is not None and self._duplicates is not None
        key = (stat, sub)
        if key in self._duplicates:
            raise self._printed_twice(stat, sub)
        position = self._index.get(key)
        return None if position is None else self.values[position]

    def _printed_twice(self, stat: str, sub: str) -> StatsFileError:
        name = f"{stat}{SEPARATOR}{sub}" if sub else stat
        return StatsFileError(self.path, None, f"dump {self.index}: {name} is printed more than once")

    def _scan(self, stat: str, sub: str) -> float | None:
        """`lookup` without the index: a search of the codes (in C) for the name's codes."""
        codes = self.vocabulary.codes_of.get((stat, sub))
        if not codes or not self.names:
            return None
        positions = np.flatnonzero(np.isin(np.frombuffer(self.names, dtype=np.int32), codes))
        if len(positions) > 1:
            raise self._printed_twice(stat, sub)
        return self.values[positions[0]] if len(positions) else None

    def has_object(self, path: str) -> bool:
        """Whether any stat of this dump lives under the object `path`."""
        if self._objects is None:
            objects: set[str] = set()
            names = self.vocabulary.names
            for code in set(self.names):
                parts = names[code][0].split(".")
                for end in range(1, len(parts)):
                    objects.add(".".join(parts[:end]))
            self._objects = objects
        return path in self._objects


def _format_bound(value: float) -> str:
    """C++ ostream's default double format (%g, 6 digits), as gem5 prints bucket bounds."""
    return f"{value:g}"


def _bucket_names(size: float, low_bucket: float, high_bucket: float, count: int) -> list[str]:
    """Bucket names of a distribution as DistPrint names them (text.cc:536-546)."""
    names = []
    for i in range(count):
        low = i * size + low_bucket
        high = min(low + size - 1.0, high_bucket)
        names.append(_format_bound(low) + (f"-{_format_bound(high)}" if low < high else ""))
    return names


def _split_unit(text: str) -> tuple[str, str]:
    """('... # desc', unit) from the end of a line: the unit is the last balanced (...)."""
    stripped = text.rstrip()
    if not stripped.endswith(")"):
        return stripped, ""
    depth = 0
    for position in range(len(stripped) - 1, -1, -1):
        char = stripped[position]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                unit = stripped[position + 1 : -1]
                if unit.startswith("(") and unit.endswith(")"):
                    unit = unit[1:-1]  # a Rate prints as ((A/B))
                return stripped[:position].rstrip(), unit
    return stripped, ""


def _is_percentage(token: str) -> bool:
    if not token.endswith("%"):
        return False
    try:
        float(token[:-1])
    except ValueError:
        return False
    return True


class _LineError(Exception):
    pass


def _parse_tail(tail: str) -> tuple[list[str], str, str]:
    """(pdf/cdf tokens, unit, description) of what follows the value."""
    body, unit = _split_unit(tail)
    head, hash_sign, description = body.partition("#")
    columns = head.split()
    for token in columns:
        if not _is_percentage(token):
            raise _LineError(f"unexpected {token!r} after the value (expected pdf/cdf like 12.34%, '# description' or '(Unit)')")
    if len(columns) > 2:
        raise _LineError(f"{len(columns)} percentage columns after the value (gem5 prints at most pdf and cdf)")
    return columns, unit, description.strip() if hash_sign else ""


def _parse_value(token: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise _LineError(f"value {token!r} is not a number") from None


_SPLIT_NAME_VALUE = methodcaller("split", None, 2)  # name, value, the rest
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a block is parsed.

    A block makes tens of thousands of small lists and strings, none of
    them in a reference cycle; every few hundred the collector would scan
    them all again (measured: it doubles the time of splitting a block).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _positions(items: list[str], wanted: str) -> list[int]:
    """Every index of `wanted` in `items` (the scanning is list.index's, in C)."""
    found: list[int] = []
    start = 0
    count = items.count(wanted)
    for _ in range(count):
        start = items.index(wanted, start)
        found.append(start)
        start += 1
    return found


def _without(items: list, positions: list[int]) -> list:  # noqa: ANN401 - any list
    """`items` less the sorted `positions`, copied slice by slice."""
    kept: list = []
    start = 0
    for position in positions:
        kept += items[start:position]
        start = position + 1
    kept += items[start:]
    return kept


READ_CHUNK = 1 << 22  # characters read at a time; a dump is cut out at its End marker


class StatsReader:
    """Reads one stats.txt into Dumps, one block at a time.

    The file is read in chunks and cut at the End markers, so memory holds
    one dump at a time. A block is parsed with builtins mapped over its
    lines (the common case: every line a plain stat or a `|` line), with
    the garbage collector paused; a block whose names are those of an
    earlier block (same machine) reuses that block's codes. If anything
    in it does not fit, the block is parsed again line by line, which
    names the offending line. `./run.sh bench analysis` times this.
    """

    def __init__(self, path: Path, vocabulary: Vocabulary | None = None) -> None:
        self.path = Path(path)
        self.vocabulary = vocabulary or default_vocabulary()

    def dumps(self) -> Iterator[Dump]:
        path = self.path
        try:
            handle = open(path, encoding="utf-8", errors="strict", newline="")
        except FileNotFoundError:
            raise StatsFileError(path, None, "no such file (gem5 writes stats.txt in its output directory)") from None
        except IsADirectoryError:
            raise StatsFileError(path, None, "is a directory, not a stats file") from None
        with handle:
            yield from self._blocks(handle)

    def _chunks(self, handle) -> Iterator[str]:  # noqa: ANN001 - a text file
        while True:
            try:
                chunk = handle.read(READ_CHUNK)
            except UnicodeDecodeError as exc:
                raise StatsFileError(self.path, None, f"not UTF-8 text ({exc.reason})") from None
            if not chunk:
                return
            yield chunk

    def _blocks(self, handle) -> Iterator[Dump]:  # noqa: ANN001 - a text file
        path = self.path
        buffer = ""
        line = 1  # number of the first line of `buffer`
        count = 0
        seen_any = False
        for chunk in self._chunks(handle):
            seen_any = True
            buffer += chunk
            while True:
                begin = buffer.find(BEGIN_MARKER)
                end = buffer.find(END_MARKER)
                if end < 0 and begin < 0:
                    break
                if begin < 0 or (0 <= end < begin):
                    # An End first: text before it is outside any block.
                    self._outside(buffer[:end], line)
                    number = line + buffer.count("\n", 0, end)
                    raise StatsFileError(path, number, "an End marker without a Begin before it")
                self._outside(buffer[:begin], line)
                begin_line = line + buffer.count("\n", 0, begin)
                body_start = buffer.find("\n", begin)
                if end < 0:
                    break  # the block continues in the next chunk
                next_begin = buffer.find(BEGIN_MARKER, begin + len(BEGIN_MARKER))
                if 0 <= next_begin < end:
                    number = line + buffer.count("\n", 0, next_begin)
                    raise StatsFileError(path, number, f"a Begin marker inside dump {count} (begun at line {begin_line}, no End before this)")
                if 0 <= body_start < end:
                    lines = buffer[body_start + 1 : end].split("\n")  # ends with the End marker's line: ""
                    end_line = begin_line + len(lines)
                else:  # the End marker on the Begin marker's line
                    lines, end_line = [], begin_line
                yield self._dump(lines, count, begin_line, end_line)
                count += 1
                cut = buffer.find("\n", end)
                if cut < 0:
                    cut, line = len(buffer), end_line
                else:
                    cut, line = cut + 1, end_line + 1
                buffer = buffer[cut:]
        if not seen_any:
            raise StatsFileError(path, None, "is empty: gem5 wrote no statistics (did the run reach its first dump?)")
        begin = buffer.find(BEGIN_MARKER)
        if begin >= 0:
            self._outside(buffer[:begin], line)
            begin_line = line + buffer.count("\n", 0, begin)
            last = line + buffer.count("\n") - (1 if buffer.endswith("\n") else 0)
            raise StatsFileError(path, begin_line, f"dump {count} begun here has no End marker: the file is truncated (it ends at line {last})")
        self._outside(buffer, line)

    def _outside(self, text: str, first_line: int) -> None:
        """Text between blocks must be blank."""
        if text.strip():
            for offset, content in enumerate(text.split("\n")):
                if content.strip():
                    raise StatsFileError(self.path, first_line + offset, f"text outside a Begin/End block: {content.strip()[:80]!r}")

    def _dump(self, lines: list[str], index: int, begin_line: int, end_line: int) -> Dump:
        dump = Dump(self.path, index, begin_line, end_line, self.vocabulary)
        try:
            with _collector_paused():
                if self._fast(lines, dump):
                    return dump
        except _LineError:
            pass
        dump = Dump(self.path, index, begin_line, end_line, self.vocabulary)
        self._exact(lines, begin_line + 1, dump)
        return dump

    def _fast(self, lines: list[str], dump: Dump) -> bool:
        """Parse a whole block with list comprehensions; False when some line needs the exact path."""
        rows = list(map(_SPLIT_NAME_VALUE, filter(None, lines)))
        try:
            tokens = list(map(_SECOND, rows))
        except IndexError:
            return False
        oneline: list[list[str]] = []
        if ONELINE_BAR in tokens:  # gem5 prints a `|` line as `name |  value pdf cdf |...`
            positions = _positions(tokens, ONELINE_BAR)
            oneline = [rows[i] for i in positions]
            rows = _without(rows, positions)
            tokens = _without(tokens, positions)
        try:
            values = list(map(float, tokens))
        except ValueError:
            return False
        vocabulary = self.vocabulary
        names = list(map(_FIRST, rows))
        layout = vocabulary.layouts.get(len(names))
        if layout is None or layout.names != names:  # not the same stats, in the same order, as a block before
            codes = list(map(vocabulary.name_codes.get, names))
            if None in codes:
                for i, code in enumerate(codes):
                    if code is None:
                        row = rows[i]
                        codes[i] = vocabulary.intern(row[0], self._tail_meta(row[2] if len(row) > 2 else ""))
            layout = vocabulary.layouts[len(names)] = Layout(names, array("i", codes))
        dump.names.extend(layout.codes)
        dump.values.extend(values)
        if oneline:
            fields = {
                name: {bucket_field: values[position] for bucket_field, position in found.items()}
                for name, found in layout.bucket_fields().items()
            }
            for row in oneline:
                self._oneline(row[0], " ".join(row[1:]), dump, fields)
        return True

    def _tail_meta(self, tail: str) -> int:
        _, unit, description = _parse_tail(tail)
        return self.vocabulary.meta_code(unit, description)

    def _exact(self, lines: list[str], first_line: int, dump: Dump) -> None:
        """Line by line: slower, and names the line that does not parse."""
        fields: dict[str, dict[str, float]] = {}
        vocabulary = self.vocabulary
        for offset, line in enumerate(lines):
            parts = line.split(None, 2)
            if not parts:
                continue
            number = first_line + offset
            try:
                if len(parts) < 2:
                    raise _LineError("a stat line without a value")
                name, token = parts[0], parts[1]
                if token[0] == ONELINE_BAR:
                    self._oneline(name, line.split(None, 1)[1], dump, fields)
                    continue
                value = _parse_value(token)
                meta = self._tail_meta(parts[2] if len(parts) == 3 else "")
            except _LineError as exc:
                raise StatsFileError(self.path, number, f"{exc}: {line.strip()[:160]!r}") from None
            dump.names.append(vocabulary.intern(name, meta))
            dump.values.append(value)
            owner = bucket_field_of(name)
            if owner is not None:
                fields.setdefault(owner[0], {})[owner[1]] = value

    def _oneline(self, name: str, body: str, dump: Dump, dist_fields: dict[str, dict[str, float]]) -> None:
        """`name |v pdf cdf |v pdf cdf ... # desc (Unit)` -> one entry per element."""
        pieces = body.split(ONELINE_BAR)
        if pieces[0].strip():
            raise _LineError(f"unexpected {pieces[0].strip()!r} before the first '|'")
        try:
            values = [float(piece.split(None, 1)[0]) for piece in pieces[1:]]
        except (IndexError, ValueError):
            values = self._oneline_parts(body)[0]  # raises the precise error
        fields = dist_fields.get(name)
        bounds = tuple(fields[f] for f in DIST_BUCKET_FIELDS) if fields and all(f in fields for f in DIST_BUCKET_FIELDS) else ()
        key = (name, len(values), bounds)
        codes = self.vocabulary.oneline_codes.get(key)
        if codes is None:
            _, unit, description = self._oneline_parts(body)
            meta = self.vocabulary.meta_code(unit, description)
            subs = _bucket_names(*bounds, len(values)) if bounds else [str(i) for i in range(len(values))]
            codes = [self.vocabulary.intern(f"{name}{SEPARATOR}{sub}", meta) for sub in subs]
            self.vocabulary.oneline_codes[key] = codes
        dump.names.extend(codes)
        dump.values.extend(values)

    @staticmethod
    def _oneline_parts(body: str) -> tuple[list[float], str, str]:
        text, unit = _split_unit(body)
        head, hash_sign, description = text.partition("#")
        pieces = head.split(ONELINE_BAR)
        if pieces[0].strip():
            raise _LineError(f"unexpected {pieces[0].strip()!r} before the first '|'")
        values: list[float] = []
        for piece in pieces[1:]:
            tokens = piece.split()
            if not tokens:
                raise _LineError("an empty '|' element")
            values.append(_parse_value(tokens[0]))
            for token in tokens[1:]:
                if token[-1] != "%":
                    raise _LineError(f"unexpected {token!r} in a '|' element (expected a value and pdf/cdf percentages)")
        return values, unit, description.strip() if hash_sign else ""


def read_dumps(path: Path, expected: int | None = None, vocabulary: Vocabulary | None = None) -> list[Dump]:
    """Every dump of a stats file; with `expected`, exactly that many (one per ROI) or an error."""
    try:
        dumps = list(StatsReader(path, vocabulary).dumps())
    except _LineError as exc:  # pragma: no cover - converted inside the reader
        raise StatsFileError(Path(path), None, str(exc)) from None
    if expected is not None and len(dumps) != expected:
        if not dumps:
            raise StatsFileError(Path(path), None, f"has no dumps, but {expected} ROI(s) were expected")
        raise StatsFileError(
            Path(path), None, f"has {len(dumps)} dump(s), but {expected} ROI(s) were expected (a missing or extra dump)"
        )
    return dumps
