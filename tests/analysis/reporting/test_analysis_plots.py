"""The figures' readability rules (analysis/data/plots.toml): when a value axis is logarithmic and when a
series gets a panel of its own, decided from the data and the rules file, never from a number in code."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.reporting import plots
from analysis.reporting.plots import PlotRulesError, Readability, load_readability, own_panel_series, uses_log_axis
from tests.plot_inputs import PlotInput, figure_inputs

RULES = Readability(log_span_ratio=10.0, own_panel_peak_ratio=10.0, fewest_other_series=2)


def rules_file(tmp_path: Path, *, span: str = "10.0", peak: str = "10.0", others: str = "2", width: str = "4.0") -> Path:
    path = tmp_path / "plots.toml"
    path.write_text(
        f"[log_axis]\nmin_span_ratio = {span}\n\n[own_panel]\nmin_peak_ratio = {peak}\nfewest_other_series = {others}\n"
        f"\n[layout]\nmin_axes_width_inches = {width}\n"
    )
    return path


def committed(stem: str) -> PlotInput:
    (found,) = [plot_input for plot_input in figure_inputs() if plot_input.stem == stem]
    return found


def sizes_table(values_by_variant: dict[str, list[float]]) -> pd.DataFrame:
    sizes = [2, 4, 8, 16]
    return pd.DataFrame(
        [{"variant": v, "cpus": s, "rate": value} for v, values in values_by_variant.items() for s, value in zip(sizes, values)]
    )


def value_scales(figure: plots.MplFigure) -> list[str]:
    return [ax.get_yscale() for ax in figure.axes]


# --- the rules file -----------------------------------------------------------------


def test_the_committed_rules_file_reads() -> None:
    rules = load_readability()
    assert rules.log_span_ratio > 1 and rules.own_panel_peak_ratio > 1 and rules.fewest_other_series >= 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"span": "1.0"}, r"plots.toml.log_axis.min_span_ratio: 1.0 is not a ratio above 1"),
        ({"peak": "0.5"}, r"plots.toml.own_panel.min_peak_ratio: 0.5 is not a ratio above 1"),
        ({"others": "0"}, r"plots.toml.own_panel.fewest_other_series: 0 is not a count >= 1"),
        ({"others": '"two"'}, r"plots.toml.own_panel.fewest_other_series: expected int, got 'two'"),
        ({"width": "0"}, r"plots.toml.layout.min_axes_width_inches: 0.0 is not a width above 0"),
    ],
)
def test_a_bad_rules_file_is_refused_naming_file_and_field(tmp_path: Path, fields: dict[str, str], message: str) -> None:
    with pytest.raises(PlotRulesError, match=message):
        load_readability(rules_file(tmp_path, **fields))


def test_a_rules_file_without_a_field_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plots.toml"
    path.write_text("[log_axis]\nmin_span_ratio = 10.0\n")
    with pytest.raises(PlotRulesError, match=r"plots.toml.own_panel.min_peak_ratio: missing"):
        load_readability(path)


# --- log axes ---------------------------------------------------------------------------


def test_log_axis_exactly_from_the_rules_ratio() -> None:
    assert uses_log_axis([1.0, 10.0], RULES)
    assert uses_log_axis([2.0, 50.0, 7.0], RULES)
    assert not uses_log_axis([1.0, 9.99], RULES)
    assert not uses_log_axis([0.0, 100.0], RULES), "a log axis cannot show 0"
    assert not uses_log_axis([-1.0, 100.0], RULES)
    assert not uses_log_axis([float("nan"), 5.0, 6.0], RULES)


def test_lines_turn_logarithmic_above_the_span_and_stay_linear_below() -> None:
    wide = sizes_table({"a": [3000.0, 900.0, 300.0, 150.0], "b": [2800.0, 800.0, 250.0, 120.0], "c": [2500.0, 1000.0, 400.0, 200.0]})
    narrow = sizes_table({"a": [300.0, 290.0, 280.0, 270.0], "b": [250.0, 240.0, 230.0, 220.0], "c": [200.0, 190.0, 180.0, 170.0]})
    figure, alt = plots.draw_lines_vs_size(wide, y="rate", title="t", ylabel="ops per s", rules=RULES)
    assert value_scales(figure) == ["log"] and "(log scale)" in figure.axes[0].get_ylabel() and "logarithmic" in alt
    figure, alt = plots.draw_lines_vs_size(narrow, y="rate", title="t", ylabel="ops per s", rules=RULES)
    assert value_scales(figure) == ["linear"] and "log" not in figure.axes[0].get_ylabel() and "logarithmic" not in alt


def test_a_points_interval_is_drawn_as_whiskers_and_a_point_without_one_has_none() -> None:
    from matplotlib.container import ErrorbarContainer

    table = sizes_table({"a": [300.0, 290.0, 280.0, 270.0], "b": [250.0, 240.0, 230.0, 220.0]})
    table = table.assign(low=table["rate"] - 5.0, high=table["rate"] + 5.0)
    table.loc[table.index[0], ["low", "high"]] = float("nan")  # one run: no interval
    figure, alt = plots.draw_lines_vs_size(table, y="rate", title="t", ylabel="ops per s", rules=RULES, interval=("low", "high"))
    bars = [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2 and sum(len(c.lines[2][0].get_segments()) for c in bars) == len(table) - 1
    assert "Whiskers" in alt
    assert figure.axes[0].yaxis.get_major_formatter()(1200000.0) == "1,200,000"  # no "1e6" offset
    _, plain = plots.draw_lines_vs_size(table, y="rate", title="t", ylabel="ops per s", rules=RULES)
    assert "Whiskers" not in plain


def test_an_interval_reaching_below_zero_does_not_keep_a_wide_span_linear() -> None:
    """altix-numa-interleaved's hand-offs: test-and-set 6 to 312 requests, HBO at 16 CPUs 40.6 [-38.3, 120] (n=2)."""
    from matplotlib.container import ErrorbarContainer

    table = sizes_table({"tas": [6.2, 28.0, 95.8, 311.9], "hbo": [6.1, 12.3, 18.4, 40.6], "cna": [6.8, 21.4, 21.7, 23.3]})
    table = table.assign(low=table["rate"] * 0.9, high=table["rate"] * 1.1)
    hbo_16 = (table["variant"] == "hbo") & (table["cpus"] == 16)
    table.loc[hbo_16, ["low", "high"]] = [-38.3, 119.5]
    figure, alt = plots.draw_lines_vs_size(table, y="rate", title="t", ylabel="requests", rules=RULES, interval=("low", "high"))
    assert value_scales(figure) == ["log"] and "logarithmic" in alt
    bottom = figure.axes[0].get_ylim()[0]
    assert 0 < bottom < 6.1 * 0.9
    whisker_ends = [y for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)
                    for segment in c.lines[2][0].get_segments() for _, y in segment]  # fmt: skip
    assert min(whisker_ends) == pytest.approx(bottom) and max(whisker_ends) == pytest.approx(311.9 * 1.1)
    assert "runs to the bottom" in alt
    _, closed = plots.draw_lines_vs_size(table[~hbo_16], y="rate", title="t", ylabel="requests", rules=RULES, interval=("low", "high"))
    assert "runs to the bottom" not in closed


def test_the_span_ratio_comes_from_the_rules_file(tmp_path: Path) -> None:
    """NUMA kbench throughput spans about 17 times (2 to 16 CPUs): log at 10, linear when the file says 20."""
    throughput = committed("throughput-altix-numa-kbench")
    figure, _ = throughput.draw(load_readability(rules_file(tmp_path, span="10.0")))
    assert value_scales(figure) == ["log"]
    figure, _ = throughput.draw(load_readability(rules_file(tmp_path, span="20.0")))
    assert value_scales(figure) == ["linear"]


def test_bus_kbench_throughput_stays_linear() -> None:
    figure, _ = committed("throughput-piii-smp-kbench").draw()
    assert value_scales(figure) == ["linear"]


def test_ratio_dots_turn_logarithmic_with_the_span_of_the_ratios() -> None:
    """Seed 004: published up to 6.5, ours down to 0.45 (the scaling claims)."""
    claims = pd.DataFrame({"case": ["x", "y", "z"], "published_ratio": [6.46, 1.6, 1.0], "ours_ratio": [0.99, 0.45, 1.0]})
    figure, alt = plots.draw_claim_ratios(claims, key="case", title="t", rules=RULES)
    assert figure.axes[0].get_xscale() == "log" and "logarithmic" in alt
    close = claims.assign(published_ratio=[3.1, 1.6, 1.0], ours_ratio=[0.99, 0.9, 1.0])
    figure, alt = plots.draw_claim_ratios(close, key="case", title="t", rules=RULES)
    assert figure.axes[0].get_xscale() == "linear" and "logarithmic" not in alt


def test_our_ratio_carries_its_interval_as_whiskers() -> None:
    """Seed 002 at 32 threads: HBO / test-and-set 1.89 with its interval 1.76-2.04; a claim without one has none."""
    claims = pd.DataFrame({"case": ["x", "y"], "published_ratio": [1.45, 1.24], "ours_ratio": [1.89, 1.0],
                           "ci_low": [1.76, float("nan")], "ci_high": [2.04, float("nan")]})  # fmt: skip
    figure, alt = plots.draw_claim_ratios(claims, key="case", title="t", rules=RULES)
    whiskers = [c for c in figure.axes[0].collections if c.get_segments() and len(c.get_segments()[0]) == 2
                and c.get_segments()[0][0][1] == c.get_segments()[0][1][1] and c.get_segments()[0][0][0] != 1.0]  # fmt: skip
    spans = sorted(tuple(sorted((round(seg[0][0], 2), round(seg[1][0], 2)))) for c in whiskers for seg in c.get_segments())
    assert (1.76, 2.04) in spans
    assert "Whiskers on our dots" in alt
    plain, alt = plots.draw_claim_ratios(claims.drop(columns=["ci_low", "ci_high"]), key="case", title="t", rules=RULES)
    assert "Whiskers" not in alt


def test_stacked_bars_stay_linear_and_write_each_total() -> None:
    """NUMA hand-offs span 73 (tas on 4 nodes) to 56,359: linear, and the 73 written at its bar."""
    figure, _ = committed("numa-handoffs").draw()
    ax = figure.axes[0]
    assert ax.get_xscale() == "linear"
    totals = [text.get_text() for text in ax.texts]
    assert len(totals) == 20 and "73" in totals
    longest = max(patch.get_x() + patch.get_width() for patch in ax.patches)
    assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] > longest, "the longest bar ends before the frame"


# --- a panel of its own -------------------------------------------------------------------


def test_own_panel_rule_splits_at_the_first_gap_of_the_ratio() -> None:
    assert own_panel_series({"cna": 22.4, "hbo": 31.2, "qspinlock": 28.3, "tas": 4075.6, "ticket": 91.3}, RULES) == ["tas"]
    assert own_panel_series({"a": 900.0, "b": 800.0, "c": 30.0, "d": 20.0}, RULES) == ["a", "b"]
    assert own_panel_series({"a": 90.0, "b": 80.0, "c": 30.0}, RULES) == []
    assert own_panel_series({"a": 900.0, "b": 20.0}, RULES) == [], "one other series is no 'others'"
    assert own_panel_series({"a": 900.0, "b": 20.0}, Readability(10.0, 10.0, 1)) == ["a"]


def test_starved_tas_on_numa_gets_its_own_panel() -> None:
    figure, alt = committed("handoff-altix-numa").draw()
    main, own = figure.axes
    assert {line.get_label() for line in own.get_lines()} == {"tas", "tas (reference)"}
    assert "tas" not in {line.get_label() for line in main.get_lines()}
    assert "peak 45× the others' (own panel from 10×)" in " ".join(own.get_title().split())
    assert "tas on a panel of its own" in alt and "45×" in alt


def test_the_lock_line_figure_splits_tas_off_too() -> None:
    figure, _ = committed("lockline-altix-numa").draw()
    assert len(figure.axes) == 2
    assert {line.get_label() for line in figure.axes[1].get_lines()} == {"tas"}


def test_the_bus_hand_off_figure_keeps_one_panel() -> None:
    figure, alt = committed("handoff-piii-smp").draw()
    assert len(figure.axes) == 1 and "own" not in alt


def test_the_peak_ratio_comes_from_the_rules_file(tmp_path: Path) -> None:
    figure, _ = committed("handoff-altix-numa").draw(load_readability(rules_file(tmp_path, peak="50.0")))
    assert len(figure.axes) == 1, "tas is 45 times ticket's peak: not apart at 50"


def test_a_series_apart_keeps_its_colour() -> None:
    figure, _ = committed("handoff-altix-numa").draw()
    colours = {line.get_label(): line.get_color() for ax in figure.axes for line in ax.get_lines()}
    assert colours["tas"] == colours["tas (reference)"] and colours["tas"] != colours["ticket"]


def test_past_ten_series_each_line_still_has_a_look_of_its_own() -> None:
    """Seed 001's dd chart draws 14 series; the colours come round after ten, the markers then tell them apart."""
    styles = [plots.series_style(index) for index in range(len(plots.SERIES_COLOURS) * len(plots.SERIES_MARKERS))]
    assert len(set(styles)) == len(styles)
    assert {marker for _, marker in styles[: len(plots.SERIES_COLOURS)]} == {plots.MARKER}  # ten or fewer: as before
    names = [f"s{index}" for index in range(14)]
    figure, _ = plots.draw_lines_vs_size(pd.DataFrame({"variant": names, "cpus": [1] * 14, "r": [float(i + 1) for i in range(14)]}),
                                         y="r", title="t", ylabel="r", rules=RULES)  # fmt: skip
    drawn = [(line.get_color(), line.get_marker()) for line in figure.axes[0].get_lines() if line.get_label() in names]
    assert len(set(drawn)) == 14


def test_a_one_point_line_under_another_lines_point_gets_a_ring_of_its_colour() -> None:
    """Seed 002's as-shipped HBO and test-and-set at 4 threads are both 118,300 faults/s: HBO's only point
    was drawn under test-and-set's, and HBO was in the legend with nothing to show for it."""
    table = pd.DataFrame({
        "variant": ["hbo", "tas", "tas-ptlock", "tas-ptlock", "tas-ptlock"], "cpus": [4, 4, 1, 4, 16],
        "rate": [118300.0, 118296.7, 47000.0, 109600.0, 79500.0],
    })  # fmt: skip
    figure, alt = plots.draw_lines_vs_size(table, y="rate", title="t", ylabel="faults per s", rules=RULES)
    rings = [line for line in figure.axes[0].get_lines() if line.get_markerfacecolor() == "none"]
    hbo = next(line for line in figure.axes[0].get_lines() if line.get_label() == "hbo")
    assert [(ring.get_markeredgecolor(), tuple(map(float, ring.get_xydata()[0]))) for ring in rings] == [(hbo.get_color(), (4.0, 118300.0))]
    assert rings[0].get_markersize() > plots.matplotlib.rcParams["lines.markersize"]
    assert "A ring" in alt
    # apart on the page, or a line of several points (its segments show it): no ring
    apart = table.assign(rate=[60000.0, 118296.7, 47000.0, 109600.0, 79500.0])
    _, plain = plots.draw_lines_vs_size(apart, y="rate", title="t", ylabel="faults per s", rules=RULES)
    under = pd.concat([table, pd.DataFrame({"variant": ["hbo"], "cpus": [16], "rate": [79500.0]})], ignore_index=True)
    figure, covered = plots.draw_lines_vs_size(under, y="rate", title="t", ylabel="faults per s", rules=RULES)
    assert "A ring" not in plain and "A ring" not in covered
    assert not [line for line in figure.axes[0].get_lines() if line.get_markerfacecolor() == "none"]


def test_a_category_label_wraps_between_words_not_inside_a_hyphenated_one() -> None:
    label = "003-wakeflag-ht-off* mmapsem [as-shipped], 4 copies"
    lines = plots._wrap_category(label).splitlines()
    assert len(lines) == 2 and "[as-shipped]," in lines[1]
    assert all(len(line) <= plots.CATEGORY_LABEL_CHARS for line in lines)
