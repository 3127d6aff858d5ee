"""Every figure kind, drawn from the study's committed tables (tests/plot_inputs.py), measured after
drawing: no text outside the figure (a cut y label), no two texts on top of each other (colliding
tick labels, a legend over the title), no legend over a plotting area."""

from __future__ import annotations

from itertools import combinations

import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure as MplFigure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from analysis.reporting import plots
from tests.plot_inputs import figure_inputs

INPUTS = {plot_input.stem: plot_input for plot_input in figure_inputs()}
TOUCH_PIXELS = 1.0  # boxes that share an edge within this do not overlap
RELATIVE_TOLERANCE = 1e-9  # a tick on the view limit is drawn


def drawn_tick_labels(axis: Axis) -> list[Text]:
    """The axis' tick labels that are drawn: visible, not empty, at a location inside the view."""
    low, high = sorted(axis.get_view_interval())
    slack = (high - low) * RELATIVE_TOLERANCE
    labels = []
    for location, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels()):
        if low - slack <= location <= high + slack and label.get_visible() and label.get_text().strip():
            labels.append(label)
    return labels


def legends(figure: MplFigure) -> list[Legend]:
    return list(figure.legends) + [legend for ax in figure.axes if (legend := ax.get_legend()) is not None]


def axes_texts(ax: Axes) -> list[Text]:
    return [
        ax.title, ax.xaxis.label, ax.yaxis.label,
        ax.xaxis.get_offset_text(), ax.yaxis.get_offset_text(),
        *drawn_tick_labels(ax.xaxis), *drawn_tick_labels(ax.yaxis), *ax.texts,
    ]  # fmt: skip


def every_text(figure: MplFigure) -> list[Text]:
    texts: list[Text] = list(figure.texts)  # the figure's title is one of them
    for ax in figure.axes:
        texts += axes_texts(ax)
    for legend in legends(figure):
        texts += [legend.get_title(), *legend.get_texts()]
    unique = list({id(text): text for text in texts}.values())
    return [text for text in unique if text.get_visible() and text.get_text().strip()]


def drawn(figure: MplFigure) -> MplFigure:
    figure.canvas.draw()
    return figure


def extent(text: Text | Legend | Axes, figure: MplFigure) -> Bbox:
    return text.get_window_extent(figure.canvas.get_renderer())


def overlap(one: Bbox, other: Bbox) -> bool:
    width = min(one.x1, other.x1) - max(one.x0, other.x0)
    height = min(one.y1, other.y1) - max(one.y0, other.y0)
    return width > TOUCH_PIXELS and height > TOUCH_PIXELS


def outside(box: Bbox, frame: Bbox) -> bool:
    return box.x0 < frame.x0 - TOUCH_PIXELS or box.y0 < frame.y0 - TOUCH_PIXELS or box.x1 > frame.x1 + TOUCH_PIXELS or box.y1 > frame.y1 + TOUCH_PIXELS


def describe(text: Text) -> str:
    return repr(" ".join(text.get_text().split()))


@pytest.mark.parametrize("stem", sorted(INPUTS))
def test_no_text_leaves_the_figure(stem: str) -> None:
    figure = drawn(INPUTS[stem].draw()[0])
    frame = figure.bbox
    cut = [f"{describe(text)} at {extent(text, figure).bounds}" for text in every_text(figure) if outside(extent(text, figure), frame)]
    assert not cut, f"{stem}: outside the figure {frame.bounds}: {cut}"


@pytest.mark.parametrize("stem", sorted(INPUTS))
def test_no_two_tick_labels_of_one_axis_overlap(stem: str) -> None:
    figure = drawn(INPUTS[stem].draw()[0])
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = drawn_tick_labels(axis)
            colliding = [
                (describe(a), describe(b)) for a, b in combinations(labels, 2) if overlap(extent(a, figure), extent(b, figure))
            ]
            assert not colliding, f"{stem}: {axis.axis_name} tick labels overlap: {colliding}"


@pytest.mark.parametrize("stem", sorted(INPUTS))
def test_no_two_texts_of_the_figure_overlap(stem: str) -> None:
    figure = drawn(INPUTS[stem].draw()[0])
    texts = every_text(figure)
    colliding = [(describe(a), describe(b)) for a, b in combinations(texts, 2) if overlap(extent(a, figure), extent(b, figure))]
    assert not colliding, f"{stem}: texts overlap: {colliding}"


@pytest.mark.parametrize("stem", sorted(INPUTS))
def test_no_text_runs_under_a_legend(stem: str) -> None:
    """A legend's frame over another text (the figure's title under a figure legend) hides part of it."""
    figure = drawn(INPUTS[stem].draw()[0])
    for legend in legends(figure):
        own = {id(text) for text in [legend.get_title(), *legend.get_texts()]}
        frame = extent(legend, figure)
        covered = [describe(text) for text in every_text(figure) if id(text) not in own and overlap(extent(text, figure), frame)]
        assert not covered, f"{stem}: under the legend: {covered}"


@pytest.mark.parametrize("stem", sorted(INPUTS))
def test_a_text_written_in_a_panel_stays_inside_its_frame(stem: str) -> None:
    """A bar's total past the longest bar would run over the panel's frame."""
    figure = drawn(INPUTS[stem].draw()[0])
    for index, ax in enumerate(figure.axes):
        frame = extent(ax, figure)
        crossing = [describe(text) for text in ax.texts if outside(extent(text, figure), frame)]
        assert not crossing, f"{stem}: panel {index}: over the frame: {crossing}"


@pytest.mark.parametrize("stem", sorted(INPUTS))
def test_no_legend_covers_a_plotting_area(stem: str) -> None:
    figure = drawn(INPUTS[stem].draw()[0])
    for legend in legends(figure):
        for index, ax in enumerate(figure.axes):
            assert not overlap(extent(legend, figure), extent(ax, figure)), f"{stem}: the legend covers panel {index}"


def test_the_committed_shapes_are_all_here() -> None:
    """Every figure kind of results/seeds-first-pass/figures, and the 15 long claim names that collided in seed-004.png."""
    kinds = {stem.rsplit("-", 1)[0] if stem.startswith("throughput") else stem.split("-")[0] for stem in INPUTS}
    assert {"handoff", "lockline", "locks", "numa", "seed"} <= kinds and any(s.startswith("throughput") for s in INPUTS)
    assert INPUTS["throughput-piii-smp-dd1b-dots"].kind == "dots"
    assert len(INPUTS["seed-004-as-committed"].table) == 15
    assert len(INPUTS["locks"].table["case"].unique()) == 10


def test_a_long_label_wraps_to_its_axis() -> None:
    """The y label that seed-004.png cut: on a short axis it wraps onto lines, each inside the figure."""
    figure, _ = plots.draw_lines_vs_size(
        pd.DataFrame({"variant": ["x", "x"], "cpus": [2, 4], "r": [1.0, 2.0]}),
        y="r", title="t", ylabel="a / b (1 = the same; above 1: a is higher) " * 3, rules=plots.load_readability(),
    )  # fmt: skip
    drawn(figure)
    label = figure.axes[0].yaxis.label
    assert "\n" in label.get_text()
    assert extent(label, figure).height <= extent(figure.axes[0], figure).height
    assert not outside(extent(label, figure), figure.bbox)


def test_a_long_legend_widens_the_figure_not_squeezes_the_lines() -> None:
    """kbench's "qspinlock, hold_loops=10, placement=padded, think_loops=100" beside the panel once left the
    lines a strip: the plotting area keeps plots.toml's minimum width and the figure grows instead."""
    rules = plots.load_readability()
    names = ["cna", "qspinlock, hold_loops=10, placement=padded, think_loops=100 and then some more words"]
    table = pd.DataFrame([{"variant": name, "cpus": cpus, "r": float(cpus)} for name in names for cpus in (1, 2, 4, 8)])
    figure, _ = plots.draw_lines_vs_size(table, y="r", title="t", ylabel="r", rules=rules)
    drawn(figure)
    assert extent(figure.axes[0], figure).width / figure.dpi >= rules.min_axes_width_inches * 0.99
    assert figure.get_figwidth() > plots.LINES_FIGURE_INCHES[0]
