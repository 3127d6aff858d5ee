"""The report model and its two renderings: Markdown and one self-contained HTML page.

Model: a `Report` has a title, intro paragraphs, `Section`s (paragraphs, then
`Table`s, then `Figure`s from analysis.reporting.plots, then subsections) and provenance
(name -> value: text, number, list or nested mapping), shown as the last section.

Text (titles, paragraphs, captions, notes) may use two bits of Markdown:
`**bold**` and `` `code` ``; both renderings show them, everything else is
literal text (escaped in HTML, backslash-escaped in Markdown where it would
be markup). Table cells are always literal.

Numbering runs through the whole report in reading order: tables `tbl-1`,
`tbl-2`, ..., figures `fig-1`, ... In HTML each table is
`<table id="tbl-N" data-table="N" data-rows="R">` with a `<caption>`, each
figure `<figure id="fig-N" data-figure="N">` holding the inlined SVG and a
`<figcaption>`; `<body>` carries `data-tables` and `data-figures` (the
counts). The page loads nothing: no scripts, no fonts, no images by URL;
its Content-Security-Policy forbids any load, so a stray reference would
fail visibly rather than fetch.

- `write_markdown(report, path)`: GitHub-flavoured tables, figures as links to
  their PNG relative to the Markdown file (and the SVG next to it);
- `write_html(report, path)`: SVGs inlined (XML prolog, DOCTYPE and metadata
  dropped, ids prefixed with the figure's id so figures cannot clash).

A figure whose SVG/PNG file is missing, a table that is not a DataFrame or has
no columns raise `ReportInputError` naming the section, the item and the value.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.reporting.plots import Figure

PROVENANCE_TITLE = "Provenance"
MAX_HEADING_LEVEL = 6  # HTML and Markdown have six heading levels
SIGNIFICANT_DIGITS = 4  # table cells: non-integral floats, enough to compare ratios
MISSING_CELL = "—"  # a NaN/None cell: shown as absent, never as 0
MARKDOWN_LITERAL = re.compile(r"([\\`*_\[\]<>|])")  # characters that would be markup in a GFM table cell
BLOCK_START = re.compile(r"[#+=~-]")  # would start a heading, list, rule or fence at a line's start
NUMBERED_START = re.compile(r"(\d+)[.)]")  # would start a numbered list
INLINE_TOKEN = re.compile(r"(`+)(.+?)\1|\*\*")  # a code span, or a bold marker

STYLE = """
body { font-family: system-ui, sans-serif; line-height: 1.5; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1, h2, h3, h4 { line-height: 1.25; }
code { font-family: ui-monospace, monospace; background: #f3f3f3; padding: 0 0.2em; border-radius: 3px; }
nav.toc { border-left: 3px solid #ddd; padding-left: 1rem; }
figure { margin: 1.5rem 0; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption, caption { font-size: 0.95em; color: #444; text-align: left; padding: 0.3rem 0; }
.table-wrap { overflow-x: auto; margin: 1.5rem 0; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; }
th { background: #f6f6f6; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { font-size: 0.9em; color: #555; margin-top: 0.2rem; }
"""
# Nothing may be loaded: inline styles only (the SVGs carry a <style> too).
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


class ReportInputError(ValueError):
    """The report model holds something that cannot be rendered."""


@dataclass
class Table:
    caption: str
    frame: pd.DataFrame
    note: str = ""


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    subsections: list[Section] = field(default_factory=list)


@dataclass
class Report:
    title: str
    intro: list[str]
    sections: list[Section]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.intro, str):
            self.intro = [self.intro]


# --- walking the model --------------------------------------------------------


@dataclass(frozen=True)
class _Placed:
    """A section with its heading level, its anchor and the numbers of its tables and figures."""

    section: Section
    depth: int  # 2 for a top section, 3 for its subsections, ...
    level: int  # the heading level: depth, at most MAX_HEADING_LEVEL
    anchor: str
    table_numbers: list[int]
    figure_numbers: list[int]


def _place(report: Report) -> list[_Placed]:
    placed: list[_Placed] = []
    counters = {"table": 0, "figure": 0}

    def walk(sections: list[Section], level: int, prefix: str) -> None:
        for index, section in enumerate(sections, start=1):
            anchor = f"{prefix}-{index}"
            _check_section(section, anchor)
            tables = list(range(counters["table"] + 1, counters["table"] + 1 + len(section.tables)))
            figures = list(range(counters["figure"] + 1, counters["figure"] + 1 + len(section.figures)))
            counters["table"] += len(section.tables)
            counters["figure"] += len(section.figures)
            placed.append(_Placed(section, level, min(level, MAX_HEADING_LEVEL), anchor, tables, figures))
            walk(section.subsections, level + 1, anchor)

    walk(report.sections, 2, "sec")
    return placed


def _check_section(section: Section, anchor: str) -> None:
    where = f"section {section.title!r} ({anchor})"
    for index, table in enumerate(section.tables):
        if not isinstance(table.frame, pd.DataFrame):
            raise ReportInputError(f"{where}: table[{index}] {table.caption!r}: frame is {type(table.frame).__name__}, not a DataFrame")
        if len(table.frame.columns) == 0:
            raise ReportInputError(f"{where}: table[{index}] {table.caption!r}: the frame has no columns")
    for index, figure in enumerate(section.figures):
        for kind in ("svg", "png"):
            path = Path(getattr(figure, kind))
            if not path.is_file():
                raise ReportInputError(f"{where}: figure[{index}] {figure.title!r}: {kind} file {path} does not exist")


def table_count(report: Report) -> int:
    return sum(len(p.section.tables) for p in _place(report))


def figure_count(report: Report) -> int:
    return sum(len(p.section.figures) for p in _place(report))


# --- table cells ----------------------------------------------------------------


def _displayed(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as shown: a meaningful index becomes columns, MultiIndex headers are joined."""
    index_is_plain = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
    shown = frame if index_is_plain else frame.reset_index()
    if isinstance(shown.columns, pd.MultiIndex):
        shown = shown.copy()
        shown.columns = [" / ".join(str(part) for part in column if str(part)) for column in shown.columns]
    return shown


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def format_cell(value: Any) -> str:
    """How a table cell reads: integers in full, other floats to SIGNIFICANT_DIGITS, absent as MISSING_CELL."""
    if _is_missing(value):
        return MISSING_CELL
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) or hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f":
        number = float(value)
        if math.isinf(number):
            return "∞" if number > 0 else "−∞"
        if number.is_integer() and abs(number) < 10 ** 15:
            return str(int(number))
        if abs(number) >= 10 ** SIGNIFICANT_DIGITS:
            return str(round(number))
        return f"{number:.{SIGNIFICANT_DIGITS}g}"
    return str(value)


def _numeric_columns(frame: pd.DataFrame) -> list[bool]:
    return [pd.api.types.is_numeric_dtype(frame.iloc[:, i]) and not pd.api.types.is_bool_dtype(frame.iloc[:, i]) for i in range(frame.shape[1])]


# --- inline markup ----------------------------------------------------------------


def _inline_tokens(text: str) -> Iterator[tuple[str, str]]:
    """("text"|"code"|"bold", content) pieces; an unpaired ** is text."""
    pieces: list[tuple[str, str]] = []
    position = 0
    for match in INLINE_TOKEN.finditer(text):
        if match.start() > position:
            pieces.append(("text", text[position : match.start()]))
        if match.group(0) == "**":
            pieces.append(("bold", "**"))
        else:
            pieces.append(("code", match.group(2)))
        position = match.end()
    if position < len(text):
        pieces.append(("text", text[position:]))
    markers = [i for i, (kind, _) in enumerate(pieces) if kind == "bold"]
    if len(markers) % 2:
        pieces[markers[-1]] = ("text", "**")
    return iter(pieces)


def inline_html(text: str) -> str:
    """Escaped HTML of text with **bold** and `code`."""
    out: list[str] = []
    bold = False
    for kind, content in _inline_tokens(text):
        if kind == "bold":
            out.append("</strong>" if bold else "<strong>")
            bold = not bold
        elif kind == "code":
            out.append(_code_html(content))
        else:
            out.append(html.escape(content))
    return "".join(out)


def inline_markdown(text: str) -> str:
    """Markdown of text with **bold** and `code` kept as markup and other markup characters escaped."""
    out: list[str] = []
    for kind, content in _inline_tokens(text):
        if kind == "bold":
            out.append("**")
        elif kind == "code":
            out.append(_code_markdown(content))
        else:
            out.append(MARKDOWN_LITERAL.sub(r"\\\1", content))
    return _block_safe("".join(out).replace("\n", " "))


def _code_markdown(content: str) -> str:
    fence = "`" * (_longest_backtick_run(content) + 1)
    pad = " " if content.startswith("`") or content.endswith("`") else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def _code_html(content: str) -> str:
    return f"<code>{html.escape(content)}</code>"


def _block_safe(line: str) -> str:
    """Text that starts a Markdown line without becoming a heading, list, rule or quote."""
    if BLOCK_START.match(line):
        return "\\" + line
    numbered = NUMBERED_START.match(line)
    if numbered:
        return f"{numbered.group(1)}\\{line[len(numbered.group(1)):]}"
    return line


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _markdown_cell(value: Any) -> str:
    return MARKDOWN_LITERAL.sub(r"\\\1", format_cell(value)).replace("\n", "<br>")


# --- Markdown -----------------------------------------------------------------------


def _markdown_link_target(path: Path, base: Path) -> str:
    relative = Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()
    return f"<{relative}>" if any(c in relative for c in " ()<>") else relative


def _markdown_table(table: Table, number: int) -> list[str]:
    frame = _displayed(table.frame)
    numeric = _numeric_columns(frame)
    header = "| " + " | ".join(_markdown_cell(c) for c in frame.columns) + " |"
    rule = "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"
    rows = ["| " + " | ".join(_markdown_cell(v) for v in row) + " |" for row in frame.itertuples(index=False, name=None)]
    lines = [f"**Table {number}.** {inline_markdown(table.caption)}", "", header, rule, *rows, ""]
    if table.note:
        lines += [f"*Note:* {inline_markdown(table.note)}", ""]
    return lines


def _markdown_figure(figure: Figure, number: int, base: Path) -> list[str]:
    alt = MARKDOWN_LITERAL.sub(r"\\\1", figure.alt).replace("\n", " ")
    png = _markdown_link_target(figure.png, base)
    svg = _markdown_link_target(figure.svg, base)
    return [f"![{alt}]({png})", "", f"**Figure {number}.** {inline_markdown(figure.title)} ([SVG]({svg}))", ""]


def _markdown_provenance(value: Any, depth: int) -> list[str]:
    indent = "  " * depth
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, Mapping):
            lines.append(f"{indent}- {inline_markdown(str(key))}:")
            lines += _markdown_provenance(item, depth + 1)
        else:
            lines.append(f"{indent}- {inline_markdown(str(key))}: {_provenance_text(item, _code_markdown)}")
    return lines


def _provenance_text(item: Any, code: Callable[[str], str]) -> str:
    """A provenance value as code: lists item by item, booleans/None as JSON, "" as (empty)."""
    items = item if isinstance(item, (list, tuple)) else [item]
    return ", ".join(code(_plain(v)) if _plain(v) else "(empty)" for v in items) or "(empty)"


def _plain(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (bool, type(None))) else str(value)


def render_markdown(report: Report, base: Path) -> str:
    """The Markdown text; figure links are relative to the folder `base`."""
    lines = [f"# {inline_markdown(report.title)}", ""]
    for paragraph in report.intro:
        lines += [inline_markdown(paragraph), ""]
    for placed in _place(report):
        section = placed.section
        lines += [f"{'#' * placed.level} {inline_markdown(section.title)}", ""]
        for paragraph in section.paragraphs:
            lines += [inline_markdown(paragraph), ""]
        for table, number in zip(section.tables, placed.table_numbers):
            lines += _markdown_table(table, number)
        for figure, number in zip(section.figures, placed.figure_numbers):
            lines += _markdown_figure(figure, number, base)
    if report.provenance:
        lines += [f"## {PROVENANCE_TITLE}", "", *_markdown_provenance(report.provenance, 0), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_markdown(report: Report, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(report, path.parent), encoding="utf-8")
    return path


# --- HTML -------------------------------------------------------------------------------

_SVG_PROLOG = re.compile(r"\A\s*(?:<\?xml[^>]*\?>\s*)?(?:<!DOCTYPE[^>]*>\s*)?", re.DOTALL)
_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_SVG_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SVG_ID = re.compile(r'\bid="([^"]+)"')
_SVG_LOCAL_HREF = re.compile(r'\b((?:xlink:)?href)="#([^"]+)"')
_SVG_LOCAL_URL = re.compile(r"url\(#([^)]+)\)")
_SVG_ROOT = re.compile(r"<svg\b")
_SVG_ANY_HREF = re.compile(r'\b(?:xlink:)?href="([^"#][^"]*)"')


def inline_svg(svg_text: str, prefix: str, label: str, source: Path) -> str:
    """The SVG as an element for an HTML page: no prolog/metadata/comments, ids prefixed, labelled."""
    body = _SVG_PROLOG.sub("", svg_text, count=1)
    body = _SVG_COMMENT.sub("", _SVG_METADATA.sub("", body))
    if not body.startswith("<svg"):
        raise ReportInputError(f"{source}: not an SVG document (starts with {body[:40]!r})")
    outside = _SVG_ANY_HREF.search(body)
    if outside:
        raise ReportInputError(f"{source}: links to {outside.group(1)!r}; the page must not load anything")
    body = _SVG_ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', body)
    body = _SVG_LOCAL_HREF.sub(lambda m: f'{m.group(1)}="#{prefix}-{m.group(2)}"', body)
    body = _SVG_LOCAL_URL.sub(lambda m: f"url(#{prefix}-{m.group(1)})", body)
    attributes = f'<svg role="img" aria-label="{html.escape(label)}" class="plot"'
    return _SVG_ROOT.sub(attributes, body, count=1).strip()


def _html_table(table: Table, number: int) -> list[str]:
    frame = _displayed(table.frame)
    numeric = _numeric_columns(frame)

    def cls(i: int) -> str:
        return ' class="num"' if numeric[i] else ""

    head = "".join(f'<th scope="col"{cls(i)}>{html.escape(format_cell(c))}</th>' for i, c in enumerate(frame.columns))
    out = [
        '<div class="table-wrap">',
        f'<table id="tbl-{number}" data-table="{number}" data-rows="{len(frame)}">',
        f"<caption>Table {number}. {inline_html(table.caption)}</caption>",
        f"<thead><tr>{head}</tr></thead>",
        "<tbody>",
    ]
    for row in frame.itertuples(index=False, name=None):
        out.append("<tr>" + "".join(f"<td{cls(i)}>{html.escape(format_cell(v))}</td>" for i, v in enumerate(row)) + "</tr>")
    out += ["</tbody>", "</table>"]
    if table.note:
        out.append(f'<p class="note">{inline_html(table.note)}</p>')
    out.append("</div>")
    return out


def _html_figure(figure: Figure, number: int) -> list[str]:
    source = Path(figure.svg)
    svg = inline_svg(source.read_text(encoding="utf-8"), f"fig-{number}", figure.alt, source)
    return [
        f'<figure id="fig-{number}" data-figure="{number}">',
        svg,
        f"<figcaption>Figure {number}. {inline_html(figure.title)}</figcaption>",
        "</figure>",
    ]


def _html_provenance(value: Mapping[str, Any]) -> list[str]:
    out = ["<ul>"]
    for key, item in value.items():
        if isinstance(item, Mapping):
            out += [f"<li>{html.escape(str(key))}:", *_html_provenance(item), "</li>"]
        else:
            out.append(f"<li>{html.escape(str(key))}: {_provenance_text(item, _code_html)}</li>")
    out.append("</ul>")
    return out


def render_html(report: Report) -> str:
    placed = _place(report)
    tables = sum(len(p.section.tables) for p in placed)
    figures = sum(len(p.section.figures) for p in placed)
    title = html.escape(re.sub(r"\*\*|`", "", report.title))
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        f'<body data-tables="{tables}" data-figures="{figures}">',
        "<main>",
        f"<h1>{inline_html(report.title)}</h1>",
    ]
    out += [f"<p>{inline_html(p)}</p>" for p in report.intro]
    out.append('<nav class="toc"><ul>')
    out += [
        f'<li><a href="#{p.anchor}">{inline_html(p.section.title)}</a></li>' for p in placed if p.level == 2
    ]
    if report.provenance:
        out.append(f'<li><a href="#provenance">{PROVENANCE_TITLE}</a></li>')
    out.append("</ul></nav>")

    open_levels: list[int] = []
    for p in placed:
        while open_levels and open_levels[-1] >= p.depth:
            out.append("</section>")
            open_levels.pop()
        out.append(f'<section id="{p.anchor}">')
        open_levels.append(p.depth)
        out.append(f"<h{p.level}>{inline_html(p.section.title)}</h{p.level}>")
        out += [f"<p>{inline_html(text)}</p>" for text in p.section.paragraphs]
        for table, number in zip(p.section.tables, p.table_numbers):
            out += _html_table(table, number)
        for figure, number in zip(p.section.figures, p.figure_numbers):
            out += _html_figure(figure, number)
    out += ["</section>"] * len(open_levels)
    if report.provenance:
        out += ['<section id="provenance">', f"<h2>{PROVENANCE_TITLE}</h2>", *_html_provenance(report.provenance), "</section>"]
    out += ["</main>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


def write_html(report: Report, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path
