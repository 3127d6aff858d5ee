"""The report's plots: pandas tables in, PNG + SVG files and a `Figure` record out.

Each function takes a tidy table (one row per point), draws one matplotlib
figure on the Agg backend (no display needed) and saves it twice, as
`<path_stem>.png` and `<path_stem>.svg`. Output is deterministic: the SVG
ids come from a fixed hash salt and neither file carries a date, so running
the analysis again on the same table gives byte-identical files (for the
same matplotlib and font versions). `draw_*` return the matplotlib figure
unsaved, with its alt text (what the tests measure).

- `lines_vs_size`: a metric against machine size (CPUs or nodes), one line
  per variant, log2 x axis, optional dashed reference curves (the
  analytical bound: O(1) flat, O(N) linear);
- `stacked_bars`: one horizontal bar per category split by a second column
  (per-lock breakdown by event kind, node-local vs crossing nodes);
- `side_by_side`, `claim_ratios`: a seed's published numbers next to ours,
  as ratios, one row per configuration or claim holding two dots (published,
  ours), each on a stem from 1 (the same) (`side_by_side_ratios` gives the
  numbers behind it, for a table).

Readable at a glance, by the rules of `data/plots.toml` (`Readability`):
- a value axis is logarithmic when its values span `log_axis.min_span_ratio`
  or more (the axis label then ends in "(log scale)"; an interval's end at
  0 or below does not count, and its whisker runs to the axis' floor); stacked bars stay
  linear, since a segment's length on a log axis is no amount, and write
  each bar's total at its end instead;
- in `lines_vs_size`, series whose peak is `own_panel.min_peak_ratio` times
  every lower series' peak get a panel of their own (its title states the
  rule and the ratio), so that they do not flatten the others;
- constrained layout, legends outside the plotting area, categories
  down the side (wrapped, one row each), and axis labels and titles
  wrapped to the length of their axes: no text is clipped or overlaps.

A table without a needed column, with two rows for the same point, or with
a size that a log axis cannot show raises `PlotInputError` naming the plot,
the column and the value; a rules file that does not read raises
`PlotRulesError` naming the file and field.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before anything imports pyplot: no display, same output everywhere

import pandas as pd  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator  # noqa: E402

from lockstudy.files import read_toml, typed_field  # noqa: E402

RULES_FILE = Path(__file__).resolve().parents[1] / "data" / "plots.toml"

# --- style (presentation only; no result depends on these) -----------------
LINES_FIGURE_INCHES = (8.0, 4.2)  # one panel and the legend beside it
OWN_PANEL_EXTRA_INCHES = 3.0  # added width when a series gets a panel of its own
MAIN_TO_OWN_PANEL_WIDTH = (2, 1)  # the main panel keeps most of the width
CATEGORY_FIGURE_WIDTH_INCHES = 8.0
CATEGORY_FIGURE_FRAME_INCHES = 1.6  # title, legend row and value axis of a bar or ratio chart
CATEGORY_ROW_LINE_INCHES = 0.2  # per line of a category label (10 pt text and its leading)
CATEGORY_ROW_GAP_INCHES = 0.12  # between two categories' rows
MIN_CATEGORY_FIGURE_HEIGHT_INCHES = 3.2
TOTAL_LABEL_PADDING_POINTS = 3  # between a stacked bar's end and its total, and between the total and the frame
POINTS_PER_INCH = 72
CATEGORY_LABEL_CHARS = 40  # a category name longer than this wraps onto more lines
PNG_DPI = 150  # sharp on screens without large files
SIZE_LOG_BASE = 2  # machine sizes double: 1, 2, 4, 8 CPUs or nodes
MARKER = "o"
REFERENCE_LINESTYLE = "--"  # dashed = analytical, solid = measured
REFERENCE_COLOUR = "0.35"  # grey, for references that match no measured series
SERIES_COLOURS = [f"C{index}" for index in range(10)]  # matplotlib's default cycle, fixed per series
# Past ten series the colours come round again: each round its own marker, so no two lines look alike
# (seed 001's dd chart has 14: boot switches x CPU models).
SERIES_MARKERS = [MARKER, "s", "^", "D", "v"]
# A series of one point drawn under a later series' marker (the same value at the same size: seed
# 002's as-shipped HBO and test-and-set at 4 threads, both 118,300 faults/s) gets a ring of its own
# colour around it, one step wider per series hidden there, so that no series is in the legend alone.
HIDDEN_RING_SIZE = 13.0  # points: the innermost ring, twice a marker (matplotlib's lines.markersize 6)
HIDDEN_RING_STEP = 5.0  # points wider for each further hidden series
HIDDEN_RING_EDGE = 1.5  # points: the ring's line
BAR_WIDTH = 0.8  # fraction of the slot a category's bar (or bar group) takes
GRID_ALPHA = 0.3  # faint grid behind the data
LEGEND_BESIDE_PANEL = (1.02, 1.0)  # axes fraction: just right of the last panel, level with its top
BASELINE_WIDTH = 0.8  # the ratio = 1 line of the ratio charts
RATIO_BASELINE = 1.0  # ratio stems start here: a / b = 1 is "the same"
STEM_WIDTH = 2.0  # the line from 1 to a ratio's dot
INTERVAL_CAP = 5.0  # points: the caps of our ratio's interval whiskers
LOG_FLOOR_BELOW_LOWEST = 2.0  # a log panel with an open whisker ends this factor below its lowest value
LINEAR_TICK_GROUPING_FROM = 1000.0  # a linear axis writes ticks from here on as whole numbers with thousands commas
PUBLISHED_MARKER = "s"
OURS_MARKER = "o"
PUBLISHED_LABEL = "published"
OURS_LABEL = "ours (gem5)"
LOG_LABEL_SUFFIX = " (log scale)"
LOG_TICK_BASE = 10
DENSE_LOG_TICKS = (1.0, 2.0, 5.0)  # 1, 2, 5, 10, 20, 50, ... on a log axis of few decades
SPARSE_LOG_TICKS = (1.0,)  # decades only, on a log axis of many
DENSE_LOG_TICKS_UP_TO_DECADES = 3.0
FIT_ROUNDS = 4  # draw, measure, rewrap: labels settle in one or two rounds
FIT_MARGIN = 0.95  # a wrapped label keeps this fraction of its axis' length at most
WHOLE_TIMES_FROM = 10  # a ratio this large is written without decimals (45×, not 44.9×)
# Deterministic files: matplotlib's SVG ids hash this salt instead of a random
# one, and the date/software stamps are left out.
SVG_HASH_SALT = "lockstudy"
SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": None}
PNG_METADATA: dict[str, Any] = {"Software": None}
RC_DETERMINISTIC: dict[str, Any] = {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "path"}


class PlotInputError(ValueError):
    """A plot's table does not have what the plot needs."""


class PlotRulesError(ValueError):
    """data/plots.toml is missing a field or has one of the wrong type or range; the message names both."""


@dataclass(frozen=True)
class Figure:
    """A saved plot: what the report shows and where its files are."""

    title: str
    png: Path
    svg: Path
    alt: str


@dataclass(frozen=True)
class Readability:
    """data/plots.toml: when a value axis is logarithmic, when a series gets its own panel."""

    log_span_ratio: float
    own_panel_peak_ratio: float
    fewest_other_series: int
    min_axes_width_inches: float = 4.0  # [layout]: a line chart's plotting area at least this wide


def load_readability(path: Path = RULES_FILE) -> Readability:
    data = read_toml(path, PlotRulesError)
    where = str(path)
    rules = Readability(
        log_span_ratio=float(typed_field(data, "log_axis.min_span_ratio", (int, float), where, error=PlotRulesError)),
        own_panel_peak_ratio=float(typed_field(data, "own_panel.min_peak_ratio", (int, float), where, error=PlotRulesError)),
        fewest_other_series=typed_field(data, "own_panel.fewest_other_series", int, where, error=PlotRulesError),
        min_axes_width_inches=float(typed_field(data, "layout.min_axes_width_inches", (int, float), where, error=PlotRulesError)),
    )
    if not rules.min_axes_width_inches > 0:
        raise PlotRulesError(f"{where}.layout.min_axes_width_inches: {rules.min_axes_width_inches!r} is not a width above 0")
    for key, ratio in (("log_axis.min_span_ratio", rules.log_span_ratio), ("own_panel.min_peak_ratio", rules.own_panel_peak_ratio)):
        if not ratio > 1:
            raise PlotRulesError(f"{where}.{key}: {ratio!r} is not a ratio above 1")
    if rules.fewest_other_series < 1:
        raise PlotRulesError(f"{where}.own_panel.fewest_other_series: {rules.fewest_other_series!r} is not a count >= 1")
    return rules


@lru_cache(maxsize=1)
def default_readability() -> Readability:
    return load_readability()


# --- the rules ------------------------------------------------------------------


def value_span(values: Iterable[float]) -> float:
    """Largest over smallest of the finite values; NaN when one is 0 or below (no log axis shows it) or none is finite."""
    finite = [float(v) for v in values if math.isfinite(float(v))]
    if not finite or min(finite) <= 0:
        return math.nan
    return max(finite) / min(finite)


def uses_log_axis(values: Iterable[float], rules: Readability) -> bool:
    """The rule of data/plots.toml [log_axis]: the values span `min_span_ratio` or more, all of them above 0."""
    span = value_span(values)
    return not math.isnan(span) and span >= rules.log_span_ratio


def own_panel_series(peaks: Mapping[str, float], rules: Readability) -> list[str]:
    """The series drawn apart by data/plots.toml [own_panel], highest first; [] when none.

    Ranked by peak, the first neighbours whose peaks differ by `min_peak_ratio`
    or more split the series: those above go to their own panel, provided at
    least `fewest_other_series` stay below."""
    ranked = sorted(((peak, name) for name, peak in peaks.items() if math.isfinite(peak)), key=lambda item: -item[0])
    for index in range(len(ranked) - 1):
        higher, lower = ranked[index][0], ranked[index + 1][0]
        if lower > 0 and higher / lower >= rules.own_panel_peak_ratio:
            stay = len(ranked) - index - 1
            return [name for _, name in ranked[: index + 1]] if stay >= rules.fewest_other_series else []
    return []


# --- table checks -----------------------------------------------------------------


def _require_columns(plot: str, df: pd.DataFrame, columns: Iterable[str]) -> None:
    if not isinstance(df, pd.DataFrame):
        raise PlotInputError(f"{plot}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise PlotInputError(f"{plot}: column(s) {missing} not in the table (columns: {list(df.columns)})")
    if df.empty:
        raise PlotInputError(f"{plot}: the table has no rows")


def _require_unique(plot: str, df: pd.DataFrame, keys: list[str]) -> None:
    duplicated = df.duplicated(subset=keys, keep=False)
    if duplicated.any():
        first = df.loc[duplicated, keys].iloc[0]
        where = ", ".join(f"{k}={_show(first[k])}" for k in keys)
        raise PlotInputError(f"{plot}: more than one row for {where}; aggregate the table first")


def _require_numeric(plot: str, df: pd.DataFrame, column: str) -> pd.Series:
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna() & df[column].notna()
    if bad.any():
        raise PlotInputError(f"{plot}: column {column!r} has a non-numeric value {_show(df.loc[bad, column].iloc[0])}")
    return values.astype(float)


def _show(value: Any) -> str:
    """repr of a cell as Python writes it (numpy scalars as plain numbers)."""
    return repr(value.item() if hasattr(value, "item") else value)


def _in_order(values: Iterable[Any]) -> list[Any]:
    """Distinct values in order of first appearance (the table's order is the legend's)."""
    return list(dict.fromkeys(values))


def _label(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _times(ratio: float) -> str:
    """A ratio as the figures write it: 45×, 10×, 4.4×."""
    return f"{ratio:.0f}×" if ratio >= WHOLE_TIMES_FROM else f"{ratio:.1f}×"


# --- layout helpers ------------------------------------------------------------------


def _new_figure(width_inches: float, height_inches: float) -> MplFigure:
    figure = MplFigure(figsize=(width_inches, height_inches), dpi=PNG_DPI, layout="constrained")  # measured as saved
    FigureCanvasAgg(figure)
    return figure


def _plain_number(value: float, _position: int | None = None) -> str:
    """A number as a reader writes it (log-axis ticks, bar totals): 0.5, 2, 50, 2,000, 1,000,000."""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:g}"


def _linear_tick(value: float, _position: int | None = None) -> str:
    """A linear axis's tick as a reader writes it: 1,200,000 rather than 1.2 under a "1e6" offset; 6.5 as 6.5."""
    return f"{value:,.0f}" if abs(value) >= LINEAR_TICK_GROUPING_FROM else f"{value:g}"


def _set_log_scale(ax: Axes, axis: str, values: Sequence[float]) -> None:
    """A log10 value axis with plain-number ticks: 1-2-5 steps over few decades, decades over many."""
    finite = [v for v in values if math.isfinite(v) and v > 0]
    decades = math.log10(max(finite) / min(finite))
    subs = DENSE_LOG_TICKS if decades <= DENSE_LOG_TICKS_UP_TO_DECADES else SPARSE_LOG_TICKS
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=LOG_TICK_BASE)
    target.set_major_locator(LogLocator(base=LOG_TICK_BASE, subs=subs))
    target.set_major_formatter(FuncFormatter(_plain_number))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())


def _value_label(label: str, log: bool) -> str:
    return label + LOG_LABEL_SUFFIX if log else label


def _wrap_category(label: str) -> str:
    """Wrapped between words only: a hyphenated word ("as-shipped", a claim id) stays on one line while it fits."""
    return textwrap.fill(label, CATEGORY_LABEL_CHARS, break_on_hyphens=False)


def _text_length(text: Text, along_height: bool, renderer: Any) -> float:
    box = text.get_window_extent(renderer)
    return box.height if along_height else box.width


def _rewrap(text: Text, room: float, along_height: bool, renderer: Any) -> bool:
    """Wrap `text` onto more lines when it is longer than `room` pixels; True when it changed."""
    if not text.get_text() or room <= 0:
        return False
    length = _text_length(text, along_height, renderer)
    if length <= room:
        return False
    flat = " ".join(text.get_text().split())
    longest = max(len(line) for line in text.get_text().splitlines())
    chars = max(1, int(longest * FIT_MARGIN * room / length))
    if chars >= longest:
        chars = longest - 1
    text.set_text(textwrap.fill(flat, chars))
    return True


def _keep_axes_width(figure: MplFigure, ax: Axes, inches: float) -> None:
    """Widen the figure until `ax` is at least `inches` wide (a long legend beside it takes the rest)."""
    for _ in range(FIT_ROUNDS):
        figure.canvas.draw()
        width = ax.get_window_extent(figure.canvas.get_renderer()).width / figure.dpi
        if width >= inches:
            return
        figure.set_figwidth(figure.get_figwidth() + inches - width)


def _fit_texts(figure: MplFigure, title: Text) -> None:
    """Axis labels and panel titles wrapped to the length of their axes, the figure's `title` to its width.

    Constrained layout keeps every text inside the figure but cannot shorten
    one: a y label longer than its axis would run past the figure's edge."""
    for _ in range(FIT_ROUNDS):
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        changed = False
        for ax in figure.axes:
            box = ax.get_window_extent(renderer)
            changed |= _rewrap(ax.yaxis.label, box.height, True, renderer)
            changed |= _rewrap(ax.xaxis.label, box.width, False, renderer)
            changed |= _rewrap(ax.title, box.width, False, renderer)
        changed |= _rewrap(title, figure.bbox.width, False, renderer)
        if not changed:
            return


def _save(figure: MplFigure, path_stem: Path | str, title: str, alt: str) -> Figure:
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    png = stem.parent / f"{stem.name}.png"
    svg = stem.parent / f"{stem.name}.svg"
    with matplotlib.rc_context(RC_DETERMINISTIC):
        figure.savefig(png, format="png", dpi=PNG_DPI, metadata=PNG_METADATA)
        figure.savefig(svg, format="svg", metadata=SVG_METADATA)
    return Figure(title=title, png=png, svg=svg, alt=alt)


def _legend_handles(figure: MplFigure, order: Sequence[str] = ()) -> tuple[list[Artist], list[str]]:
    """Every labelled artist of the figure's panels, once per label: the labels of `order` first, in
    that order (series keep the table's order across panels), then the others in drawing order."""
    handles: dict[str, Artist] = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    labels = [label for label in order if label in handles] + [label for label in handles if label not in order]
    return [handles[label] for label in labels], labels


# --- lines against machine size ----------------------------------------------------


@dataclass(frozen=True)
class _Line:
    label: str
    points: list[tuple[float, float]]
    colour: str
    dashed: bool
    whiskers: list[tuple[float, float, float]] = field(default_factory=list)  # (x, low, high): an interval per point
    marker: str = MARKER


def series_style(index: int) -> tuple[str, str]:
    """The colour and marker of the index-th series: unique pairs for len(colours) x len(markers) series."""
    colours, markers = len(SERIES_COLOURS), len(SERIES_MARKERS)
    return SERIES_COLOURS[index % colours], SERIES_MARKERS[(index // colours) % markers]


def _series_lines(
    df: pd.DataFrame, xs: pd.Series, ys: pd.Series, series: str, names: list[Any], interval: tuple[str, str] | None = None
) -> list[_Line]:
    lines = []
    for index, name in enumerate(names):
        rows = (df[series] == name).to_numpy()
        points = sorted(zip(xs[rows].tolist(), ys[rows].tolist()))
        whiskers = []
        if interval is not None:
            lows, highs = (df[column].astype(float)[rows].tolist() for column in interval)
            whiskers = sorted((x, lo, hi) for x, lo, hi in zip(xs[rows].tolist(), lows, highs) if math.isfinite(lo) and math.isfinite(hi))
        colour, marker = series_style(index)
        lines.append(_Line(str(name), points, colour, dashed=False, whiskers=whiskers, marker=marker))
    return lines


def _reference_lines(reference: Mapping[str, Sequence[tuple[float, float]]], colours: Mapping[str, str]) -> list[_Line]:
    return [
        _Line(
            label,
            sorted((float(px), float(py)) for px, py in points),
            colours.get(label, REFERENCE_COLOUR),
            dashed=True,
        )
        for label, points in reference.items()
    ]


def _draw_lines_panel(
    ax: Axes, lines: list[_Line], measured: set[str], sizes: list[float], rules: Readability, ylabel: str, reference_name: str
) -> tuple[bool, bool]:
    """One panel of lines; (its value axis is logarithmic, a whisker was cut at the log axis' floor).

    A mean's t interval can reach 0 or below for a quantity that cannot (two
    runs of a count far apart). Such a whisker end does not keep the axis
    linear: the axis follows the points and the whisker ends above 0, and on
    a log axis the whisker runs down to the panel's floor, open-ended."""
    points = [y for line in lines for _, y in line.points]
    ends = [v for line in lines for _, low, high in line.whiskers for v in (low, high)]
    log = uses_log_axis(points + [v for v in ends if v > 0], rules)
    shown = [v for v in points + ends if math.isfinite(v) and v > 0]
    floor = min(shown) / LOG_FLOOR_BELOW_LOWEST if log else -math.inf
    cut = False
    for line in lines:
        xs = [p[0] for p in line.points]
        ys = [p[1] for p in line.points]
        if line.dashed:
            label = f"{line.label} ({reference_name})" if line.label in measured else line.label
            ax.plot(xs, ys, linestyle=REFERENCE_LINESTYLE, color=line.colour, label=label)
        else:
            ax.plot(xs, ys, marker=line.marker, color=line.colour, label=line.label)
        if line.whiskers:
            centres = dict(line.points)
            lows = [max(w[1], floor) for w in line.whiskers]
            cut = cut or any(w[1] < floor for w in line.whiskers)
            ax.errorbar([w[0] for w in line.whiskers], [centres[w[0]] for w in line.whiskers], fmt="none", ecolor=line.colour,
                        capsize=INTERVAL_CAP, yerr=[[centres[w[0]] - low for w, low in zip(line.whiskers, lows)],
                                                    [w[2] - centres[w[0]] for w in line.whiskers]])  # fmt: skip
    if log:
        _set_log_scale(ax, "y", shown)
        if cut:
            ax.set_ylim(bottom=floor)
    else:
        ax.yaxis.set_major_formatter(FuncFormatter(_linear_tick))
    ax.set_xscale("log", base=SIZE_LOG_BASE)
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: _label(float(value))))
    ax.set_ylabel(_value_label(ylabel, log))
    ax.grid(True, alpha=GRID_ALPHA)
    return log, cut


def _ring_hidden_points(ax: Axes, lines: list[_Line]) -> int:
    """Ring the point of each one-point measured line that a later measured line's marker covers (their
    centres closer than a marker on the finished figure): a line of two or more points shows itself by
    its segments. The number of rings drawn. Call it once the layout is final: it reads where the
    points are on the page."""
    measured = [line for line in lines if not line.dashed]
    marker_pixels = matplotlib.rcParams["lines.markersize"] * ax.figure.dpi / POINTS_PER_INCH
    limits = ax.get_xlim(), ax.get_ylim()

    def finite(line: _Line) -> list[tuple[float, float]]:
        return [(px, py) for px, py in line.points if math.isfinite(px) and math.isfinite(py)]

    rings: dict[tuple[int, int], int] = {}  # a spot on the page -> the rings drawn there
    for index, line in enumerate(measured):
        points = finite(line)
        if len(points) != 1:
            continue
        here = ax.transData.transform(points[0])
        later = [ax.transData.transform(point) for other in measured[index + 1:] for point in finite(other)]
        if not any(math.dist(here, there) < marker_pixels for there in later):
            continue
        spot = (round(float(here[0])), round(float(here[1])))
        size = HIDDEN_RING_SIZE + HIDDEN_RING_STEP * rings.get(spot, 0)
        rings[spot] = rings.get(spot, 0) + 1
        ax.plot(*zip(points[0]), linestyle="none", marker=line.marker, markersize=size, markerfacecolor="none",
                markeredgecolor=line.colour, markeredgewidth=HIDDEN_RING_EDGE)  # fmt: skip
    ax.set_xlim(limits[0])
    ax.set_ylim(limits[1])
    return sum(rings.values())


def _peak(line: _Line) -> float:
    finite = [y for _, y in line.points if math.isfinite(y)]
    return max(finite) if finite else math.nan


def draw_lines_vs_size(
    df: pd.DataFrame,
    *,
    y: str,
    title: str,
    ylabel: str,
    x: str = "cpus",
    series: str = "variant",
    xlabel: str | None = None,
    reference: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    reference_name: str = "reference",
    rules: Readability | None = None,
    interval: tuple[str, str] | None = None,
) -> tuple[MplFigure, str]:
    """The figure of `lines_vs_size`, unsaved, and its alt text."""
    rules = rules or default_readability()
    plot = f"lines_vs_size({title!r})"
    _require_columns(plot, df, [x, y, series, *(interval or ())])
    _require_unique(plot, df, [series, x])
    xs = _require_numeric(plot, df, x)
    ys = _require_numeric(plot, df, y)
    reference = dict(reference or {})
    all_sizes = list(xs) + [float(px) for points in reference.values() for px, _ in points]
    not_positive = [s for s in all_sizes if not s > 0]
    if not_positive:
        raise PlotInputError(f"{plot}: column {x!r} has the value {_show(not_positive[0])}; a log axis needs sizes > 0")

    names = _in_order(df[series])
    measured = _series_lines(df, xs, ys, series, names, interval)
    colours = {line.label: line.colour for line in measured}
    references = _reference_lines(reference, colours)
    apart = own_panel_series({line.label: _peak(line) for line in measured}, rules)
    main = [line for line in measured + references if line.label not in apart]
    own = [line for line in measured + references if line.label in apart]

    sizes = sorted(set(all_sizes))
    width, height = LINES_FIGURE_INCHES
    figure = _new_figure(width + (OWN_PANEL_EXTRA_INCHES if own else 0.0), height)
    axes = figure.subplots(1, 2, width_ratios=MAIN_TO_OWN_PANEL_WIDTH) if own else [figure.subplots()]
    measured_names = set(colours)
    drawn = [_draw_lines_panel(axes[0], main, measured_names, sizes, rules, ylabel, reference_name)]
    if own:
        drawn.append(_draw_lines_panel(axes[1], own, measured_names, sizes, rules, ylabel, reference_name))
        axes[1].set_title(_own_panel_title(apart, measured, rules))
    logs = [log for log, _ in drawn]
    for ax in axes:
        ax.set_xlabel(xlabel or x)
    heading = figure.suptitle(title)
    handles, labels = _legend_handles(figure, order=[line.label for line in measured])
    # beside the last panel, from its top: under the figure's title (a figure legend would run into it)
    axes[-1].legend(handles, labels, title=series, loc="upper left", bbox_to_anchor=LEGEND_BESIDE_PANEL)
    _keep_axes_width(figure, axes[0], rules.min_axes_width_inches)
    _fit_texts(figure, heading)
    rings = sum(_ring_hidden_points(ax, panel) for ax, panel in zip(axes, [main, own]))

    alt = (
        f"Line plot: {ylabel} against {xlabel or x} ({', '.join(_label(s) for s in sizes)}, log2 axis), "
        f"one line per {series}: {', '.join(str(n) for n in names)}."
    )
    if reference:
        alt += f" Dashed {reference_name} lines: {', '.join(reference)}."
    if any(line.whiskers for line in measured):
        alt += " Whiskers: each point's confidence interval, where it has one (two or more runs)."
    if any(cut for _, cut in drawn):
        alt += " A whisker whose interval reaches 0 or below runs to the bottom of its logarithmic axis."
    if rings:
        alt += " A ring in a line's colour marks its one point where another line's point covers it (the same value)."
    alt += _lines_rules_alt(apart, measured, logs, rules)
    return figure, alt


def _own_panel_title(apart: list[str], measured: list[_Line], rules: Readability) -> str:
    ratio = _apart_ratio(apart, measured)
    return f"{', '.join(apart)}: peak {_times(ratio)} the others'\n(own panel from {_times(rules.own_panel_peak_ratio)})"


def _apart_ratio(apart: list[str], measured: list[_Line]) -> float:
    """The lowest peak drawn apart over the highest peak kept on the main panel."""
    lowest_apart = min(_peak(line) for line in measured if line.label in apart)
    highest_kept = max(_peak(line) for line in measured if line.label not in apart and math.isfinite(_peak(line)))
    return lowest_apart / highest_kept


def _lines_rules_alt(apart: list[str], measured: list[_Line], logs: list[bool], rules: Readability) -> str:
    text = ""
    if apart:
        text += (
            f" {', '.join(apart)} on a panel of its own: its peak is {_times(_apart_ratio(apart, measured))} the highest "
            f"of the others (the rule: {_times(rules.own_panel_peak_ratio)} or more)."
        )
    panels = ["the main panel", "the second panel"] if apart else ["the y axis"]
    for name, log in zip(panels, logs):
        if log:
            text += f" {name[0].upper()}{name[1:]} is logarithmic (values spanning {_times(rules.log_span_ratio)} or more)."
    return text


def lines_vs_size(
    df: pd.DataFrame,
    *,
    y: str,
    title: str,
    ylabel: str,
    path_stem: Path | str,
    x: str = "cpus",
    series: str = "variant",
    xlabel: str | None = None,
    reference: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    reference_name: str = "reference",
    rules: Readability | None = None,
    interval: tuple[str, str] | None = None,
) -> Figure:
    """`y` against machine size `x`, one solid line with markers per value of `series`.

    The x axis is log2 with the sizes themselves as ticks. `reference` maps a
    label to (x, y) points drawn dashed: a label equal to a series value takes
    that series' colour (and its panel), others are grey; the legend calls
    them `reference_name`. The value axis and the panels follow `rules`
    (data/plots.toml by default). `interval` names the (low, high) columns
    of each point's confidence interval, drawn as whiskers where finite.
    """
    figure, alt = draw_lines_vs_size(
        df, y=y, title=title, ylabel=ylabel, x=x, series=series, xlabel=xlabel, reference=reference,
        reference_name=reference_name, rules=rules, interval=interval,
    )  # fmt: skip
    return _save(figure, path_stem, title, alt)


# --- bar and ratio charts, one row per category -------------------------------------


def _category_figure(labels: list[str]) -> tuple[MplFigure, Axes, list[int]]:
    """A bar or ratio chart's figure, tall enough for one row per category, categories listed top to bottom
    down the side (so that long names never collide, as slanted names under the bars did)."""
    wrapped = [_wrap_category(label) for label in labels]
    lines_per_row = max(label.count("\n") + 1 for label in wrapped)
    row_inches = lines_per_row * CATEGORY_ROW_LINE_INCHES + CATEGORY_ROW_GAP_INCHES
    height = max(MIN_CATEGORY_FIGURE_HEIGHT_INCHES, CATEGORY_FIGURE_FRAME_INCHES + row_inches * len(labels))
    figure = _new_figure(CATEGORY_FIGURE_WIDTH_INCHES, height)
    ax = figure.subplots()
    positions = list(range(len(labels)))
    ax.set_yticks(positions, wrapped)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # the table's first category on top
    return figure, ax, positions


def _finish_category_chart(figure: MplFigure, ax: Axes, *, category: str, value_label: str, title: str, legend_title: str | None) -> None:
    ax.set_ylabel(category)
    ax.set_xlabel(value_label)
    heading = figure.suptitle(title)
    ax.grid(True, axis="x", alpha=GRID_ALPHA)
    handles, labels = _legend_handles(figure)
    figure.legend(handles, labels, title=legend_title, loc="outside lower center", ncols=len(labels))
    _fit_texts(figure, heading)


def _room_for_totals(figure: MplFigure, ax: Axes) -> None:
    """Widen the value axis until every total written past a bar's end lies inside the frame, clear of it
    by the same padding as from its bar."""
    padding = TOTAL_LABEL_PADDING_POINTS * figure.dpi / POINTS_PER_INCH
    for _ in range(FIT_ROUNDS):
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        frame = ax.get_window_extent(renderer)
        overflow = max(text.get_window_extent(renderer).x1 for text in ax.texts) + padding - frame.x1
        if overflow <= 0:
            return
        low, high = ax.get_xlim()
        ax.set_xlim(low, high + (high - low) * (overflow + padding) / frame.width)


def draw_stacked_bars(
    df: pd.DataFrame,
    *,
    category: str,
    stack: str,
    value: str,
    title: str,
    ylabel: str,
) -> tuple[MplFigure, str]:
    """The figure of `stacked_bars`, unsaved, and its alt text."""
    plot = f"stacked_bars({title!r})"
    _require_columns(plot, df, [category, stack, value])
    _require_unique(plot, df, [category, stack])
    values = _require_numeric(plot, df, value)
    categories = _in_order(df[category])
    stacks = _in_order(df[stack])
    table = (
        pd.DataFrame({"c": df[category].to_numpy(), "s": df[stack].to_numpy(), "v": values.to_numpy()})
        .pivot(index="c", columns="s", values="v")
        .reindex(index=categories, columns=stacks)
        .fillna(0.0)
    )

    labels = [str(c) for c in categories]
    figure, ax, positions = _category_figure(labels)
    left = [0.0] * len(categories)
    for part in stacks:
        widths = [float(w) for w in table[part]]
        last = ax.barh(positions, widths, BAR_WIDTH, left=left, label=str(part))
        left = [start + w for start, w in zip(left, widths)]
    # each bar's total at its end: a bar a hundredth of the longest is still read (tas on 4 nodes: 73 hand-offs)
    ax.bar_label(last, labels=[_plain_number(total) for total in left], padding=TOTAL_LABEL_PADDING_POINTS)
    _room_for_totals(figure, ax)
    # each segment's start is a sticky edge: the longest bar would end on the frame, without the usual margin
    ax.use_sticky_edges = False
    ax.autoscale_view()
    ax.set_xlim(left=0.0)
    _finish_category_chart(figure, ax, category=category, value_label=ylabel, title=title, legend_title=stack)

    alt = (
        f"Stacked bar chart: {ylabel} per {category} ({', '.join(labels)}), "
        f"split by {stack} ({', '.join(str(s) for s in stacks)})."
    )
    return figure, alt


def stacked_bars(
    df: pd.DataFrame,
    *,
    category: str,
    stack: str,
    value: str,
    title: str,
    ylabel: str,
    path_stem: Path | str,
) -> Figure:
    """One horizontal bar per `category` value, split into segments per `stack` value, lengths from `value`.

    A (category, stack) pair without a row draws no segment (length 0). The
    value axis is linear whatever the span: on a log axis a stacked
    segment's length is no amount. Each bar's total is written at its end,
    so that a bar too short to see still reads.
    """
    figure, alt = draw_stacked_bars(df, category=category, stack=stack, value=value, title=title, ylabel=ylabel)
    return _save(figure, path_stem, title, alt)


def side_by_side_ratios(published: pd.DataFrame, ours: pd.DataFrame, key: str, value: str) -> pd.DataFrame:
    """Published and our `value` per `key`, each divided by its own first row's value.

    Columns: key, published, ours, published_ratio, ours_ratio, in the published
    table's order of keys, then keys only we have. A key one side lacks is NaN
    there (never 0).
    """
    plot = "side_by_side"
    for side, frame in (("published", published), ("ours", ours)):
        _require_columns(f"{plot} ({side})", frame, [key, value])
        _require_unique(f"{plot} ({side})", frame, [key])
    columns: dict[str, pd.Series] = {}
    for side, frame in (("published", published), ("ours", ours)):
        numbers = _require_numeric(f"{plot} ({side})", frame, value)
        base = numbers.iloc[0]
        if not base or pd.isna(base):
            raise PlotInputError(
                f"{plot} ({side}): the first configuration {key}={_show(frame[key].iloc[0])} has {value}={_show(base)}; "
                "cannot normalise to it"
            )
        columns[side] = pd.Series(numbers.to_numpy(), index=frame[key].to_numpy())
        columns[f"{side}_ratio"] = columns[side] / base
    keys = _in_order(list(published[key]) + list(ours[key]))
    result = pd.DataFrame({name: series.reindex(keys) for name, series in columns.items()})
    result.index.name = key
    return result.reset_index()[[key, "published", "ours", "published_ratio", "ours_ratio"]]


def side_by_side(
    published: pd.DataFrame,
    ours: pd.DataFrame,
    *,
    key: str,
    value: str,
    title: str,
    path_stem: Path | str,
    rules: Readability | None = None,
) -> Figure:
    """Published vs ours per `key`, two dots a row, each relative to its side's first configuration."""
    ratios = side_by_side_ratios(published, ours, key, value)
    base_published = _label(published[key].iloc[0])
    base_ours = _label(ours[key].iloc[0])
    base = base_published if base_published == base_ours else f"{base_published} (published), {base_ours} (ours)"
    figure, alt = draw_ratio_dots(ratios, key, f"{value} relative to {key}={base}", title, rules)
    return _save(figure, path_stem, title, alt)


CLAIM_RATIO_LABEL = "a's advantage over b (a / b of a rate, b / a of a time; right of 1: a is better)"


def draw_claim_ratios(claims: pd.DataFrame, *, key: str, title: str, rules: Readability | None = None) -> tuple[MplFigure, str]:
    """The figure of `claim_ratios`, unsaved, and its alt text."""
    plot = f"claim_ratios({title!r})"
    _require_columns(plot, claims, [key, "published_ratio", "ours_ratio"])
    _require_unique(plot, claims, [key])
    return draw_ratio_dots(claims, key, CLAIM_RATIO_LABEL, title, rules)


def claim_ratios(claims: pd.DataFrame, *, key: str, title: str, path_stem: Path | str, rules: Readability | None = None) -> Figure:
    """Per claim, two dots a row: the published ratio a/b next to ours (columns published_ratio, ours_ratio)."""
    figure, alt = draw_claim_ratios(claims, key=key, title=title, rules=rules)
    return _save(figure, path_stem, title, alt)


def _horizontal_whiskers(ax: Axes, values: list[float], rows: list[float], lows: list[float], highs: list[float], colour: str) -> list[float]:
    """An interval's whiskers on each dot at (value, row) whose low and high are finite (NaN: no whisker);
    the whiskers' ends, for the axis' span."""
    whiskers = [(v, r, lo, hi) for v, r, lo, hi in zip(values, rows, lows, highs) if math.isfinite(lo) and math.isfinite(hi)]
    if whiskers:
        ax.errorbar([w[0] for w in whiskers], [w[1] for w in whiskers], fmt="none", ecolor=colour, capsize=INTERVAL_CAP,
                    xerr=[[w[0] - w[2] for w in whiskers], [w[3] - w[0] for w in whiskers]])  # fmt: skip
    return [w[2] for w in whiskers] + [w[3] for w in whiskers]


def draw_ratio_dots(
    ratios: pd.DataFrame, key: str, value_label: str, title: str, rules: Readability | None = None
) -> tuple[MplFigure, str]:
    """Published and our ratio per `key`: a dot at the ratio on a stem from 1 (a ratio of 1 stays visible,
    which a bar from 1 would not); a log axis when the ratios span the rule's."""
    rules = rules or default_readability()
    labels = [_label(k) for k in ratios[key]]
    figure, ax, positions = _category_figure(labels)
    offset = BAR_WIDTH / 4
    values: list[float] = []
    sides = ((-offset, "published_ratio", PUBLISHED_LABEL, PUBLISHED_MARKER), (offset, "ours_ratio", OURS_LABEL, OURS_MARKER))
    for index, (shift, column, label, marker) in enumerate(sides):
        ends = [float(v) for v in ratios[column]]  # NaN (a side lacks the key) draws nothing
        rows = [p + shift for p in positions]
        colour = SERIES_COLOURS[index]
        ax.hlines(rows, RATIO_BASELINE, ends, color=colour, linewidth=STEM_WIDTH)
        ax.plot(ends, rows, linestyle="none", marker=marker, color=colour, label=label)
        values += ends
        if column == "ours_ratio" and {"ci_low", "ci_high"} <= set(ratios.columns):
            lows, highs = ratios["ci_low"].astype(float).tolist(), ratios["ci_high"].astype(float).tolist()
            values += _horizontal_whiskers(ax, ends, rows, lows, highs, colour)
    shown = [v for v in values if math.isfinite(v)] + [RATIO_BASELINE]
    log = uses_log_axis(shown, rules)
    if log:
        _set_log_scale(ax, "x", shown)
    ax.axvline(RATIO_BASELINE, color=REFERENCE_COLOUR, linewidth=BASELINE_WIDTH, linestyle=REFERENCE_LINESTYLE)
    _finish_category_chart(figure, ax, category=key, value_label=_value_label(value_label, log), title=title, legend_title=None)

    alt = f"Dot chart: {value_label}, published next to ours, each a dot on a stem from 1, for {key} {', '.join(labels)}."
    if {"ci_low", "ci_high"} <= set(ratios.columns):
        alt += " Whiskers on our dots: the ratio's confidence interval, where it has one."
    if log:
        alt += f" The ratio axis is logarithmic (ratios spanning {_times(rules.log_span_ratio)} or more)."
    missing = [
        f"{_label(k)} ({'published' if pd.isna(p) else 'ours'})"
        for k, p, o in zip(ratios[key], ratios["published_ratio"], ratios["ours_ratio"])
        if pd.isna(p) or pd.isna(o)
    ]
    if missing:
        alt += f" No dot where a side has no number: {', '.join(missing)}."
    return figure, alt


def draw_interval_dots(
    df: pd.DataFrame, *, category: str, value: str, title: str, xlabel: str, interval: tuple[str, str], rules: Readability | None = None
) -> tuple[MplFigure, str]:
    """The figure of `interval_dots`, unsaved, and its alt text."""
    plot = f"interval_dots({title!r})"
    low_column, high_column = interval
    _require_columns(plot, df, [category, value, low_column, high_column])
    _require_unique(plot, df, [category])
    rules = rules or default_readability()
    labels = [_label(c) for c in df[category]]
    figure, ax, positions = _category_figure(labels)
    values = [float(v) for v in _require_numeric(plot, df, value)]
    lows, highs = df[low_column].astype(float).tolist(), df[high_column].astype(float).tolist()
    colour = SERIES_COLOURS[0]
    ax.plot(values, positions, linestyle="none", marker=OURS_MARKER, color=colour)
    whisker_ends = _horizontal_whiskers(ax, values, [float(p) for p in positions], lows, highs, colour)
    shown = [v for v in values + whisker_ends if math.isfinite(v)]
    log = uses_log_axis(shown, rules)
    if log:
        _set_log_scale(ax, "x", shown)
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(_linear_tick))
    ax.set_ylabel(category)
    ax.set_xlabel(_value_label(xlabel, log))
    ax.grid(True, axis="x", alpha=GRID_ALPHA)
    _fit_texts(figure, figure.suptitle(title))
    alt = f"Dot chart: {xlabel}, one dot per {category} ({', '.join(labels)})"
    alt += ", with its confidence interval as whiskers where it has one." if whisker_ends else "."
    if log:
        alt += f" The value axis is logarithmic (values spanning {_times(rules.log_span_ratio)} or more)."
    return figure, alt


def interval_dots(
    df: pd.DataFrame, *, category: str, value: str, title: str, xlabel: str, path_stem: Path | str, interval: tuple[str, str] = ("ci_low", "ci_high"),
    rules: Readability | None = None,
) -> Figure:
    """One row per `category` value, top to bottom in the frame's order: a dot at `value` with whiskers over
    `interval` (NaN: no whisker). For configurations that do not make lines: most measured at one size."""
    figure, alt = draw_interval_dots(df, category=category, value=value, title=title, xlabel=xlabel, interval=interval, rules=rules)
    return _save(figure, path_stem, title, alt)
