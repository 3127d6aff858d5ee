"""The report's plots: pandas tables in, PNG + SVG files and a `Figure` record out.

Each function takes a tidy table (one row per point), draws one matplotlib
figure on the Agg backend (no display needed) and saves it twice, as
`<path_stem>.png` and `<path_stem>.svg`. Output is deterministic: the SVG
ids come from a fixed hash salt and neither file carries a date, so running
the analysis again on the same table gives byte-identical files (for the
same matplotlib and font versions).

- `lines_vs_size`: a metric against machine size (CPUs or nodes), one line
  per variant, log2 x axis, optional dashed reference curves (the
  analytical bound: O(1) flat, O(N) linear);
- `stacked_bars`: one bar per category split by a second column
  (per-lock breakdown by event kind, node-local vs crossing nodes);
- `side_by_side`: a seed's published numbers next to ours, each side
  divided by its own first configuration (`side_by_side_ratios` gives the
  numbers behind it, for a table).

A table without a needed column, with two rows for the same point, or with
a size that a log axis cannot show raises `PlotInputError` naming the plot,
the column and the value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before anything imports pyplot: no display, same output everywhere

import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

# --- style (presentation only; no result depends on these) -----------------
FIGURE_SIZE_INCHES = (6.4, 4.0)  # fits a report column; matplotlib's default width
PNG_DPI = 150  # sharp on screens without large files
LOG_BASE = 2  # machine sizes double: 1, 2, 4, 8 CPUs or nodes
MARKER = "o"
REFERENCE_LINESTYLE = "--"  # dashed = analytical, solid = measured
REFERENCE_COLOUR = "0.35"  # grey, for references that match no measured series
BAR_WIDTH = 0.8  # fraction of the slot a category's bar (or bar group) takes
ROTATE_LABELS_LONGER_THAN = 8  # characters; longer category names are drawn slanted
SLANT_DEGREES = 30
GRID_ALPHA = 0.3  # faint grid behind the data
BASELINE_WIDTH = 0.8  # the ratio = 1 line of side_by_side
PUBLISHED_LABEL = "published"
OURS_LABEL = "ours (gem5)"
# Deterministic files: matplotlib's SVG ids hash this salt instead of a random
# one, and the date/software stamps are left out.
SVG_HASH_SALT = "lockstudy"
SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": None}
PNG_METADATA: dict[str, Any] = {"Software": None}
RC_DETERMINISTIC: dict[str, Any] = {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "path"}


class PlotInputError(ValueError):
    """A plot's table does not have what the plot needs."""


@dataclass(frozen=True)
class Figure:
    """A saved plot: what the report shows and where its files are."""

    title: str
    png: Path
    svg: Path
    alt: str


# --- helpers ------------------------------------------------------------------


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


def _new_figure() -> tuple[MplFigure, Axes]:
    figure = MplFigure(figsize=FIGURE_SIZE_INCHES)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _slant_if_long(ax: Axes, labels: Sequence[str]) -> None:
    if any(len(label) > ROTATE_LABELS_LONGER_THAN for label in labels):
        for tick in ax.get_xticklabels():
            tick.set_rotation(SLANT_DEGREES)
            tick.set_horizontalalignment("right")


def _label_bar_axes(ax: Axes, positions: list[int], labels: list[str], *, xlabel: str, ylabel: str, title: str) -> None:
    """A bar chart's category ticks (slanted when long), axis labels, title and value grid."""
    ax.set_xticks(positions, labels)
    _slant_if_long(ax, labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=GRID_ALPHA)


def _save(figure: MplFigure, path_stem: Path | str, title: str, alt: str) -> Figure:
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    png = stem.parent / f"{stem.name}.png"
    svg = stem.parent / f"{stem.name}.svg"
    figure.tight_layout()
    with matplotlib.rc_context(RC_DETERMINISTIC):
        figure.savefig(png, format="png", dpi=PNG_DPI, metadata=PNG_METADATA)
        figure.savefig(svg, format="svg", metadata=SVG_METADATA)
    return Figure(title=title, png=png, svg=svg, alt=alt)


# --- the plots ----------------------------------------------------------------


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
) -> Figure:
    """`y` against machine size `x`, one solid line with markers per value of `series`.

    The x axis is log2 with the sizes themselves as ticks. `reference` maps a
    label to (x, y) points drawn dashed: a label equal to a series value takes
    that series' colour, others are grey.
    """
    plot = f"lines_vs_size({title!r})"
    _require_columns(plot, df, [x, y, series])
    _require_unique(plot, df, [series, x])
    xs = _require_numeric(plot, df, x)
    ys = _require_numeric(plot, df, y)
    reference = dict(reference or {})
    all_sizes = list(xs) + [float(px) for points in reference.values() for px, _ in points]
    not_positive = [s for s in all_sizes if not s > 0]
    if not_positive:
        raise PlotInputError(f"{plot}: column {x!r} has the value {_show(not_positive[0])}; a log axis needs sizes > 0")

    figure, ax = _new_figure()
    colours: dict[str, Any] = {}
    names = _in_order(df[series])
    for name in names:
        rows = (df[series] == name).to_numpy()
        points = sorted(zip(xs[rows], ys[rows]))
        (line,) = ax.plot([p[0] for p in points], [p[1] for p in points], marker=MARKER, label=str(name))
        colours[str(name)] = line.get_color()
    for label, points in reference.items():
        ordered = sorted((float(px), float(py)) for px, py in points)
        ax.plot(
            [p[0] for p in ordered],
            [p[1] for p in ordered],
            linestyle=REFERENCE_LINESTYLE,
            color=colours.get(label, REFERENCE_COLOUR),
            label=f"{label} (reference)" if label in colours else label,
        )

    sizes = sorted(set(all_sizes))
    ax.set_xscale("log", base=LOG_BASE)
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([_label(s) for s in sizes])
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=GRID_ALPHA)
    ax.legend(title=series)

    alt = (
        f"Line plot: {ylabel} against {xlabel or x} ({', '.join(_label(s) for s in sizes)}, log2 axis), "
        f"one line per {series}: {', '.join(str(n) for n in names)}."
    )
    if reference:
        alt += f" Dashed reference lines: {', '.join(reference)}."
    return _save(figure, path_stem, title, alt)


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
    """One bar per `category` value, split into segments per `stack` value, heights from `value`.

    A (category, stack) pair without a row draws no segment (height 0).
    """
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

    figure, ax = _new_figure()
    positions = list(range(len(categories)))
    bottom = [0.0] * len(categories)
    for part in stacks:
        heights = [float(h) for h in table[part]]
        ax.bar(positions, heights, BAR_WIDTH, bottom=bottom, label=str(part))
        bottom = [b + h for b, h in zip(bottom, heights)]
    labels = [str(c) for c in categories]
    _label_bar_axes(ax, positions, labels, xlabel=category, ylabel=ylabel, title=title)
    ax.legend(title=stack)

    alt = (
        f"Stacked bar chart: {ylabel} per {category} ({', '.join(labels)}), "
        f"split by {stack} ({', '.join(str(s) for s in stacks)})."
    )
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
) -> Figure:
    """Grouped bars per `key`: published vs ours, each relative to its side's first configuration."""
    ratios = side_by_side_ratios(published, ours, key, value)
    base_published = _label(published[key].iloc[0])
    base_ours = _label(ours[key].iloc[0])
    base = base_published if base_published == base_ours else f"{base_published} (published), {base_ours} (ours)"
    return _ratio_bars(ratios, key, f"{value} relative to {key}={base}", title, path_stem)


def claim_ratios(claims: pd.DataFrame, *, key: str, title: str, path_stem: Path | str) -> Figure:
    """Grouped bars per claim: the published ratio a/b next to ours (columns published_ratio, ours_ratio)."""
    plot = f"claim_ratios({title!r})"
    _require_columns(plot, claims, [key, "published_ratio", "ours_ratio"])
    _require_unique(plot, claims, [key])
    return _ratio_bars(claims, key, "a / b (1 = the same; above 1: a is higher)", title, path_stem)


def _ratio_bars(ratios: pd.DataFrame, key: str, ylabel: str, title: str, path_stem: Path | str) -> Figure:
    figure, ax = _new_figure()
    positions = list(range(len(ratios)))
    width = BAR_WIDTH / 2
    for offset, column, label in ((-width / 2, "published_ratio", PUBLISHED_LABEL), (width / 2, "ours_ratio", OURS_LABEL)):
        heights = [float(h) for h in ratios[column]]  # NaN (a side lacks the key) draws no bar
        ax.bar([p + offset for p in positions], heights, width, label=label)
    labels = [_label(k) for k in ratios[key]]
    ax.axhline(1.0, color=REFERENCE_COLOUR, linewidth=BASELINE_WIDTH, linestyle=REFERENCE_LINESTYLE)
    _label_bar_axes(ax, positions, labels, xlabel=key, ylabel=ylabel, title=title)
    ax.legend()

    alt = f"Grouped bar chart: {ylabel}, published next to ours, for {key} {', '.join(labels)}."
    missing = [
        f"{_label(k)} ({'published' if pd.isna(p) else 'ours'})"
        for k, p, o in zip(ratios[key], ratios["published_ratio"], ratios["ours_ratio"])
        if pd.isna(p) or pd.isna(o)
    ]
    if missing:
        alt += f" No bar where a side has no number: {', '.join(missing)}."
    return _save(figure, path_stem, title, alt)
