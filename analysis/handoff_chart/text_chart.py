"""The chart as plain text: a grid of lanes for terminals, one detail column for diffs.

Each row is one time: its tick and ns since the release began, a mark in
the lanes (`o---GETX-->` from sender to receiver, `*` for a CPU's own
event), and the row's details in words (the states at both ends, `x-node`
for a crossing between nodes).
"""

from __future__ import annotations

from analysis.handoff_chart.chart import Arrow, Chart, Mark

LANE_MIN_WIDTH = 11  # room for an arrow's label between two neighbouring lanes
LANE_GAP = 2
TICK_WIDTH = 15  # gem5 prints ticks %15d
NS_WIDTH = 9
NODE_BORDER = "|"
SENDER_END, LINE, HEADS = "o", "-", (">", "<")
MARK = "*"
CROSSING = "x-node"
UNKNOWN_SENDER = "?"


def _columns(chart: Chart) -> tuple[list[int], int]:
    """Each lane's centre column in the grid, and the grid's width."""
    width = max([LANE_MIN_WIDTH] + [len(lane.label) for lane in chart.lanes]) + LANE_GAP
    centres = [n * width + width // 2 for n in range(len(chart.lanes))]
    return centres, width * len(chart.lanes)


def _blank(chart: Chart, centres: list[int], grid_width: int) -> list[str]:
    cells = [" "] * grid_width
    for n, lane in enumerate(chart.lanes[1:], 1):
        if lane.node != chart.lanes[n - 1].node:
            cells[(centres[n - 1] + centres[n]) // 2] = NODE_BORDER
    return cells


def _arrow_cells(cells: list[str], arrow: Arrow, centres: list[int]) -> None:
    head = centres[arrow.receiver]
    tail = centres[arrow.sender] if arrow.sender is not None else None
    if tail is None or tail == head:
        cells[head] = MARK
        return
    left, right = sorted((tail, head))
    for column in range(left, right + 1):
        cells[column] = LINE
    cells[tail] = SENDER_END
    cells[head] = HEADS[0] if head > tail else HEADS[1]
    label = arrow.label[: max(right - left - 3, 0)]
    start = left + 2
    cells[start : start + len(label)] = list(label)


def _details(chart: Chart, row: Arrow | Mark) -> str:
    if isinstance(row, Mark):
        return f"{chart.lanes[row.lane].label}: {row.text}"
    if row.sender is None:
        sender = [UNKNOWN_SENDER, "(sent before the trace)"]
    else:
        sender = [chart.lanes[row.sender].label, row.sender_states, f"at {chart.ns(row.send_tick or row.tick):+.1f} ns"]
    words = [f"{row.label}:", *sender, "->", chart.lanes[row.receiver].label, row.receiver_states]
    words += [CROSSING] if row.crosses_nodes else []
    words += ["(waits: bank busy)"] if row.waited else []
    return " ".join(word for word in words if word)


def render_text(chart: Chart) -> str:
    centres, grid_width = _columns(chart)
    prefix = " " * (TICK_WIDTH + NS_WIDTH + 2)
    out = [chart.title, *chart.facts, ""]
    if chart.nodes > 1:
        header = [" "] * grid_width
        for node in sorted({lane.node for lane in chart.lanes}):
            members = [n for n, lane in enumerate(chart.lanes) if lane.node == node]
            text = f"node {node}"
            at = (centres[members[0]] + centres[members[-1]]) // 2 - len(text) // 2
            header[at : at + len(text)] = list(text)
        out.append(prefix + "".join(header).rstrip())
    labels = [" "] * grid_width
    for centre, lane in zip(centres, chart.lanes):
        at = centre - len(lane.label) // 2
        labels[at : at + len(lane.label)] = list(lane.label)
    out.append(f"{'tick':>{TICK_WIDTH}} {'ns':>{NS_WIDTH}} " + "".join(labels).rstrip())
    for row in chart.rows:
        cells = _blank(chart, centres, grid_width)
        if isinstance(row, Mark):
            cells[centres[row.lane]] = MARK
        else:
            _arrow_cells(cells, row, centres)
        out.append(f"{row.tick:>{TICK_WIDTH}} {chart.ns(row.tick):>+{NS_WIDTH}.1f} {''.join(cells)}  {_details(chart, row)}")
    out.append("")
    out.extend(f"note: {note}" for note in chart.notes)
    return "\n".join(out) + "\n"
