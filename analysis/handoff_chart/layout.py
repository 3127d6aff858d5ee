"""Where everything of a chart goes, in pixels: one layout, painted as SVG (svg_chart.py) or PNG (png_chart.py).

The chart is a message sequence chart with one row per time: lanes are
vertical lifelines, grouped by NUMA node on a shaded band; each message
is a horizontal arrow at its arrival's row, from its sender's lane to its
receiver's, its type above the line and the line's state change at each
end below it; the send's time is under the arrival's in the time column.
Every row holds one arrow or one mark, so no two rows' texts meet;
within a row, the lane spacing leaves room for the longest label and
two state changes side by side (the tests check that no two texts overlap).

All text is monospace (DejaVu Sans Mono, which matplotlib ships), so a
text's width is its length times CHAR_WIDTH_EM of its size, in both painters.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from analysis.handoff_chart.chart import Arrow, Chart, Mark

# Layout constants, in pixels unless said otherwise.
FONT_FAMILY = "DejaVu Sans Mono"
CHAR_WIDTH_EM = 0.602  # DejaVu Sans Mono's advance width per em
TITLE_SIZE = 15
FACT_SIZE = 12
LANE_SIZE = 12
LABEL_SIZE = 11
STATE_SIZE = 9
TIME_SIZE = 11
NOTE_SIZE = 11
MARGIN = 20
LINE_GAP = 6  # between lines of a block of text
LANE_SPACING = 170  # room for "EXCLUSIVE_UNBLOCK" and two state changes of 12 characters
TIME_COLUMN = 250  # a tick of 15 digits (gem5 prints %15d), then "since release"
TICK_RIGHT = MARGIN + 110  # where the ticks end (right-aligned)
NS_RIGHT = MARGIN + TIME_COLUMN - 20  # where the ns end, and "sent at" under them
HEADER_HEIGHT = 64  # node name, then the lane's name and CPU
ROW_HEIGHT = 34
ARROW_HEAD = 7
MARK_RADIUS = 4
CROSSING_RADIUS = 3.5
CROSSING_DROP = 6  # the crossing's dot sits this far under the arrow's line
TEXT_PAD = 3  # between a line and the text beside it
LABEL_LIFT = 6  # an arrow's label sits this far above it: its background box clears the line
NOTE_WRAP_MIN_CHARS = 100  # a chart of few lanes still gets readable notes

INK = "#222222"
MUTED = "#777777"
LIFELINE = "#bbbbbb"
NODE_FILLS = ("#eef3fb", "#fbf1e8", "#eef8ee", "#f6eef8")
LOCAL = "#1f4e9c"
CROSSING = "#c0282d"
MARK_INK = "#2b7a2b"
BACKGROUND = "#ffffff"


@dataclass(frozen=True)
class Text:
    x: float
    y: float  # baseline
    text: str
    size: int
    anchor: str = "start"  # start | middle | end
    color: str = INK
    bold: bool = False
    boxed: bool = False  # on a background box: it may lie across lifelines

    @property
    def width(self) -> float:
        return len(self.text) * self.size * CHAR_WIDTH_EM

    def box(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom) of the text's ink, for overlap checks."""
        left = self.x - {"start": 0.0, "middle": self.width / 2, "end": self.width}[self.anchor]
        return left, self.y - self.size * 0.8, left + self.width, self.y + self.size * 0.25


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    color: str
    width: float = 1.0
    dashed: bool = False
    head: bool = False  # an arrowhead at (x2, y2)


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float
    fill: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    radius: float
    color: str


@dataclass(frozen=True)
class Layout:
    width: int
    height: int
    boxes: tuple[Box, ...]
    lines: tuple[Line, ...]
    dots: tuple[Dot, ...]
    texts: tuple[Text, ...]


def lane_spacing(chart: Chart) -> float:
    """LANE_SPACING, or wider when an arrow between neighbours needs it: its label, or its two state changes side by side."""
    need = [LANE_SPACING]
    for arrow in chart.arrows:
        states = len(arrow.sender_states) + len(arrow.receiver_states)
        need.append(states * STATE_SIZE * CHAR_WIDTH_EM + 2 * (ARROW_HEAD + 2 * TEXT_PAD))
        need.append(len(arrow.label) * LABEL_SIZE * CHAR_WIDTH_EM + 4 * TEXT_PAD)
    need += [len(lane.label) * LANE_SIZE * CHAR_WIDTH_EM + 2 * TEXT_PAD for lane in chart.lanes]
    return max(need)


def _lane_x(lane: int, spacing: float = LANE_SPACING) -> float:
    return MARGIN + TIME_COLUMN + spacing / 2 + lane * spacing


def _arrow(chart: Chart, row: Arrow, y: float, out: dict[str, list], spacing: float) -> None:
    head_x = _lane_x(row.receiver, spacing)
    color = CROSSING if row.crosses_nodes else LOCAL
    width = 2.0 if row.kind == "data" else 1.2
    if row.sender is None:
        out["dots"].append(Dot(head_x, y, MARK_RADIUS, color))
        out["texts"].append(Text(head_x + MARK_RADIUS + TEXT_PAD, y - TEXT_PAD, f"{row.label} (sender before the trace)", LABEL_SIZE, color=color, boxed=True))
        out["texts"].append(Text(head_x + MARK_RADIUS + TEXT_PAD, y + STATE_SIZE + TEXT_PAD, row.receiver_states, STATE_SIZE, color=MUTED))
        return
    tail_x = _lane_x(row.sender, spacing)
    rightward = head_x > tail_x
    out["lines"].append(Line(tail_x, y, head_x, y, color, width, dashed=row.waited, head=True))
    out["dots"].append(Dot(tail_x, y, MARK_RADIUS / 2, color))
    out["texts"].append(Text((tail_x + head_x) / 2, y - LABEL_LIFT, row.label, LABEL_SIZE, "middle", color, bold=True, boxed=True))
    below = y + STATE_SIZE + TEXT_PAD
    toward = 1 if rightward else -1
    out["texts"].append(Text(tail_x + toward * TEXT_PAD, below, row.sender_states, STATE_SIZE, "start" if rightward else "end", MUTED))
    out["texts"].append(Text(head_x - toward * (ARROW_HEAD + TEXT_PAD), below, row.receiver_states, STATE_SIZE, "end" if rightward else "start", MUTED))
    if row.crosses_nodes:
        # On the node boundary the arrow crosses (half-way between the two lanes that meet
        # there), under the line: the label is above it, the state changes are at the ends.
        for n in range(min(row.sender, row.receiver), max(row.sender, row.receiver)):
            if chart.lanes[n].node != chart.lanes[n + 1].node:
                out["dots"].append(Dot((_lane_x(n, spacing) + _lane_x(n + 1, spacing)) / 2, y + CROSSING_DROP, CROSSING_RADIUS, CROSSING))


def legend_text(chart: Chart) -> str:
    """What the colours and strokes mean, for those the chart uses."""
    arrows = chart.arrows
    parts = ["blue: a message within a node" if chart.nodes > 1 else "blue: a message"]
    if any(a.crosses_nodes for a in arrows):
        parts.append("red: between nodes (red dot: where it crosses)")
    if any(a.waited for a in arrows):
        parts.append("dashed: the request waits at a busy bank")
    if any(a.kind == "data" for a in arrows):
        parts.append("thick: data")
    parts.append("green: a CPU's own event")
    return "; ".join(parts)


def layout_chart(chart: Chart) -> Layout:
    out: dict[str, list] = {"boxes": [], "lines": [], "dots": [], "texts": []}
    texts = out["texts"]
    spacing = lane_spacing(chart)
    y = MARGIN + TITLE_SIZE
    texts.append(Text(MARGIN, y, chart.title, TITLE_SIZE, bold=True))
    for fact in chart.facts:
        y += FACT_SIZE + LINE_GAP
        texts.append(Text(MARGIN, y, fact, FACT_SIZE, color=MUTED))
    header_top = y + LINE_GAP * 2
    rows_top = header_top + HEADER_HEIGHT + ROW_HEIGHT / 2
    rows_bottom = rows_top + max(len(chart.rows) - 1, 0) * ROW_HEIGHT
    lanes_right = _lane_x(len(chart.lanes) - 1, spacing) + spacing / 2
    nodes = sorted({lane.node for lane in chart.lanes})
    for node in nodes:
        members = [n for n, lane in enumerate(chart.lanes) if lane.node == node]
        left = _lane_x(members[0], spacing) - spacing / 2
        band_width = spacing * len(members)
        out["boxes"].append(Box(left, header_top, band_width, rows_bottom + ROW_HEIGHT / 2 - header_top, NODE_FILLS[node % len(NODE_FILLS)]))
        if len(nodes) > 1:
            texts.append(Text(left + band_width / 2, header_top + LANE_SIZE + LINE_GAP, f"node {node}", LANE_SIZE, "middle", MUTED, bold=True))
    for n, lane in enumerate(chart.lanes):
        x = _lane_x(n, spacing)
        texts.append(Text(x, header_top + HEADER_HEIGHT - LANE_SIZE - LINE_GAP, lane.label, LANE_SIZE, "middle", bold=True))
        out["lines"].append(Line(x, header_top + HEADER_HEIGHT - LANE_SIZE, x, rows_bottom + ROW_HEIGHT / 2, LIFELINE))
    header_y = header_top + HEADER_HEIGHT - LANE_SIZE - LINE_GAP
    texts.append(Text(TICK_RIGHT, header_y, "tick", TIME_SIZE, "end", MUTED, bold=True))
    texts.append(Text(NS_RIGHT, header_y, "since release", TIME_SIZE, "end", MUTED, bold=True))
    for number, row in enumerate(chart.rows):
        row_y = rows_top + number * ROW_HEIGHT
        texts.append(Text(TICK_RIGHT, row_y, str(row.tick), TIME_SIZE, "end"))
        texts.append(Text(NS_RIGHT, row_y, f"{chart.ns(row.tick):+.1f} ns", TIME_SIZE, "end"))
        if isinstance(row, Mark):
            x = _lane_x(row.lane, spacing)
            out["dots"].append(Dot(x, row_y, MARK_RADIUS, MARK_INK))
            texts.append(Text(x + MARK_RADIUS + 2 * TEXT_PAD, row_y + TIME_SIZE / 2 - 1, row.text, LABEL_SIZE, color=MARK_INK, boxed=True))
        else:
            if row.send_tick is not None:
                texts.append(Text(NS_RIGHT, row_y + STATE_SIZE + TEXT_PAD, f"sent at {chart.ns(row.send_tick):+.1f} ns", STATE_SIZE, "end", MUTED))
            _arrow(chart, row, row_y, out, spacing)
    y = rows_bottom + ROW_HEIGHT
    legend = legend_text(chart)
    wrap = max(NOTE_WRAP_MIN_CHARS, int((lanes_right - MARGIN) / (NOTE_SIZE * CHAR_WIDTH_EM)))  # as wide as the lanes
    for paragraph in (legend, *chart.notes):
        for line in textwrap.wrap(paragraph, wrap):
            y += NOTE_SIZE + LINE_GAP
            texts.append(Text(MARGIN, y, line, NOTE_SIZE, color=MUTED))
    widest = max(t.box()[2] for t in texts)
    width = int(max(lanes_right, widest) + MARGIN)
    return Layout(width, int(y + MARGIN), tuple(out["boxes"]), tuple(out["lines"]), tuple(out["dots"]), tuple(texts))
