"""A chart's layout painted with matplotlib into a PNG, pixel for pixel the SVG's layout."""

from __future__ import annotations

from pathlib import Path

from analysis.handoff_chart.chart import Chart
from analysis.handoff_chart.layout import ARROW_HEAD, BACKGROUND, FONT_FAMILY, Layout, layout_chart

DPI = 100  # one layout pixel is one image pixel
POINTS_PER_INCH = 72
TEXT_BOX_PAD_POINTS = 1.5
# Paint in the SVG's document order (matplotlib would put lines over patches): bands, lines, dots, texts.
Z_BOX, Z_LINE, Z_DOT, Z_TEXT = 0, 1, 2, 3


def _points(pixels: float) -> float:
    """matplotlib sizes fonts and line widths in points."""
    return pixels * POINTS_PER_INCH / DPI


def paint(layout: Layout, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    figure = plt.figure(figsize=(layout.width / DPI, layout.height / DPI), dpi=DPI)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, layout.width)
    axes.set_ylim(layout.height, 0)  # y grows downwards, as in SVG
    axes.axis("off")
    figure.patch.set_facecolor(BACKGROUND)
    for box in layout.boxes:
        axes.add_patch(Rectangle((box.x, box.y), box.width, box.height, facecolor=box.fill, edgecolor="none", zorder=Z_BOX))
    for line in layout.lines:
        style = "--" if line.dashed else "-"
        if line.head:
            axes.add_patch(FancyArrowPatch(
                (line.x1, line.y1), (line.x2, line.y2), arrowstyle=f"-|>,head_length={_points(ARROW_HEAD) / 2},head_width={_points(ARROW_HEAD) / 4}",
                color=line.color, linewidth=_points(line.width), linestyle=style, shrinkA=0, shrinkB=0, mutation_scale=2, zorder=Z_LINE,
            ))  # fmt: skip
        else:
            axes.plot([line.x1, line.x2], [line.y1, line.y2], color=line.color, linewidth=_points(line.width), linestyle=style, zorder=Z_LINE)
    for dot in layout.dots:
        axes.add_patch(Circle((dot.x, dot.y), dot.radius, color=dot.color, zorder=Z_DOT))
    for text in layout.texts:
        box = {"facecolor": BACKGROUND, "edgecolor": "none", "alpha": 0.9, "pad": TEXT_BOX_PAD_POINTS} if text.boxed else None
        axes.text(text.x, text.y, text.text, fontsize=_points(text.size), family=FONT_FAMILY, color=text.color, ha={"start": "left", "middle": "center", "end": "right"}[text.anchor],
                  va="baseline", fontweight="bold" if text.bold else "normal", bbox=box, zorder=Z_TEXT)  # fmt: skip
    figure.savefig(path, dpi=DPI, facecolor=BACKGROUND)
    plt.close(figure)


def render_png(chart: Chart, path: Path) -> None:
    paint(layout_chart(chart), path)
