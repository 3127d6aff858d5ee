"""A chart's layout written as SVG text (no drawing library: the layout is already in pixels)."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from analysis.handoff_chart.chart import Chart
from analysis.handoff_chart.layout import ARROW_HEAD, BACKGROUND, FONT_FAMILY, Layout, Line, Text, layout_chart

TEXT_BOX_PAD = 2


def _line(line: Line) -> str:
    dash = ' stroke-dasharray="5,3"' if line.dashed else ""
    head = f' marker-end="url(#head-{line.color.lstrip("#")})"' if line.head else ""
    return (f'<line x1="{line.x1:.1f}" y1="{line.y1:.1f}" x2="{line.x2:.1f}" y2="{line.y2:.1f}" '
            f'stroke="{line.color}" stroke-width="{line.width}"{dash}{head}/>')  # fmt: skip


def _text(text: Text) -> str:
    parts = []
    if text.boxed:
        left, top, right, bottom = text.box()
        parts.append(f'<rect x="{left - TEXT_BOX_PAD:.1f}" y="{top - TEXT_BOX_PAD:.1f}" width="{right - left + 2 * TEXT_BOX_PAD:.1f}" '
                     f'height="{bottom - top + 2 * TEXT_BOX_PAD:.1f}" fill="{BACKGROUND}" fill-opacity="0.9"/>')  # fmt: skip
    weight = ' font-weight="bold"' if text.bold else ""
    parts.append(f'<text x="{text.x:.1f}" y="{text.y:.1f}" font-size="{text.size}" text-anchor="{text.anchor}" fill="{text.color}"{weight}>{escape(text.text)}</text>')
    return "".join(parts)


def svg_of(layout: Layout, title: str) -> str:
    colors = sorted({line.color for line in layout.lines if line.head})
    markers = "".join(
        f'<marker id="head-{color.lstrip("#")}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="{ARROW_HEAD}" '
        f'markerHeight="{ARROW_HEAD}" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker>'
        for color in colors
    )  # fmt: skip
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width}" height="{layout.height}" '
        f'viewBox="0 0 {layout.width} {layout.height}" font-family={quoteattr(FONT_FAMILY + ", monospace")}>',
        f"<title>{escape(title)}</title>",
        f"<defs>{markers}</defs>",
        f'<rect width="100%" height="100%" fill="{BACKGROUND}"/>',
    ]
    body += [f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.width:.1f}" height="{b.height:.1f}" fill="{b.fill}"/>' for b in layout.boxes]
    body += [_line(line) for line in layout.lines]
    body += [f'<circle cx="{d.x:.1f}" cy="{d.y:.1f}" r="{d.radius}" fill="{d.color}"/>' for d in layout.dots]
    body += [_text(text) for text in layout.texts]
    body.append("</svg>")
    return "\n".join(body) + "\n"


def render_svg(chart: Chart) -> str:
    return svg_of(layout_chart(chart), chart.title)
