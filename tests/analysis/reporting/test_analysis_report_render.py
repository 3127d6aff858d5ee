"""The report renderer: plots (PNG+SVG, deterministic), Markdown, and a self-contained HTML page
checked in a real headless browser on the DOM it built."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis.reporting import plots
from analysis.reporting.plots import Figure, PlotInputError
from analysis.reporting.report_render import (
    Report,
    ReportInputError,
    Section,
    Table,
    figure_count,
    inline_html,
    inline_markdown,
    table_count,
    write_html,
    write_markdown,
)
from tests.report_dom import BROWSER_TIMEOUT_SECONDS, BROWSERS, DomCensus, find_browser

VARIANTS = ["test-and-set", "ticket", "qspinlock"]
SIZES = [2, 4, 8]


def metrics() -> pd.DataFrame:
    """Synthetic messages per hand-off: queue lock flat, the others linear in the waiters."""
    rows = []
    for variant in VARIANTS:
        for cpus in SIZES:
            per_handoff = 3.0 if variant == "qspinlock" else 2.5 * (cpus - 1) + (1 if variant == "ticket" else 0)
            rows.append({"variant": variant, "cpus": cpus, "msgs_per_handoff": per_handoff, "ops": 1000 * cpus})
    return pd.DataFrame(rows)


def per_lock() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "lock": ["dcache_lock", "dcache_lock", "files_lock | fd", "files_lock | fd"],
            "event": ["Inv", "Fwd_GETX", "Inv", "Fwd_GETX"],
            "count": [120, 40, 30, 5],
        }
    )


def build_report(out: Path) -> Report:
    df = metrics()
    figure_dir = out / "figures"
    lines = plots.lines_vs_size(
        df,
        y="msgs_per_handoff",
        title="Messages per contended hand-off",
        ylabel="coherence messages per hand-off",
        path_stem=figure_dir / "handoff",
        reference={"O(1) bound": [(2, 3), (8, 3)], "O(N) bound": [(s, 2.5 * (s - 1)) for s in SIZES]},
    )
    bars = plots.stacked_bars(
        per_lock(), category="lock", stack="event", value="count", title="Per-lock events", ylabel="events", path_stem=figure_dir / "locks"
    )
    published = pd.DataFrame({"cpus": [2, 4, 8], "throughput": [100.0, 180.0, 300.0]})
    ours = pd.DataFrame({"cpus": [2, 4, 8], "throughput": [50.0, 95.0, 120.0]})
    seed = plots.side_by_side(published, ours, key="cpus", value="throughput", title="Seed 004: published vs ours", path_stem=figure_dir / "seed")
    wide = df.pivot(index="cpus", columns="variant", values="msgs_per_handoff")
    return Report(
        title="Lock study: **synthetic** results",
        intro=["Made from `synthetic` tables; <script>alert(1)</script> is text & stays text."],
        sections=[
            Section(
                title="Hand-offs vs the bound",
                paragraphs=["Queue locks stay **flat**; `ticket` grows with N."],
                tables=[Table("Messages per hand-off (ticket & TAS < 10?)", wide, note="Synthetic **numbers**.")],
                figures=[lines],
                subsections=[
                    Section(
                        title="Per lock",
                        tables=[Table("Events per lock | event", per_lock())],
                        figures=[bars],
                    )
                ],
            ),
            Section(
                title="Seeds",
                tables=[Table("Seed 004 `samefile` ratios", plots.side_by_side_ratios(published, ours, "cpus", "throughput"))],
                figures=[seed],
            ),
        ],
        provenance={"command": "run.sh report seeds", "gem5": "24.0.0.1", "runs": 9, "kernels": {"smp": "abc123"}},
    )


def all_tables(report: Report) -> list[Table]:
    def walk(sections: list[Section]) -> list[Table]:
        return [t for s in sections for t in s.tables + walk(s.subsections)]

    return walk(report.sections)


def all_figures(report: Report) -> list[Figure]:
    def walk(sections: list[Section]) -> list[Figure]:
        return [f for s in sections for f in s.figures + walk(s.subsections)]

    return walk(report.sections)


def caption_text(text: str) -> str:
    """What a caption reads as once rendered: the markup characters gone."""
    return text.replace("**", "").replace("`", "")


@pytest.fixture
def rendered(tmp_path: Path) -> tuple[Report, Path, Path]:
    report = build_report(tmp_path)
    return report, write_markdown(report, tmp_path / "report.md"), write_html(report, tmp_path / "report.html")


def test_markdown_has_every_caption_and_figure_link(rendered: tuple[Report, Path, Path]) -> None:
    report, markdown_path, _ = rendered
    markdown = markdown_path.read_text()
    for number, table in enumerate(all_tables(report), start=1):
        assert f"**Table {number}.** {inline_markdown(table.caption)}" in markdown
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert len(links) == len(all_figures(report)) == figure_count(report)
    for number, (figure, link) in enumerate(zip(all_figures(report), links), start=1):
        assert not Path(link).is_absolute() and link == f"figures/{figure.png.name}"
        assert (markdown_path.parent / link).is_file()
        assert f"**Figure {number}.** {inline_markdown(figure.title)} ([SVG](figures/{figure.svg.name}))" in markdown
    # GFM tables: numeric columns right-aligned, a pipe in a cell escaped, NaN never shown as 0
    assert "| cpus | qspinlock | test\\-and\\-set | ticket |" not in markdown  # '-' is not escaped in cells
    assert "| cpus | qspinlock | test-and-set | ticket |" in markdown
    assert "| ---: | ---: | ---: | ---: |" in markdown
    assert "files\\_lock \\| fd" in markdown
    assert markdown.rstrip().split("\n## ")[-1].startswith("Provenance")
    assert "*Note:* Synthetic **numbers**." in markdown
    assert "- kernels:\n  - smp: `abc123`" in markdown
    assert "**synthetic**" in markdown and "`ticket`" in markdown
    assert "\\<script\\>" in markdown


def test_html_loads_nothing_from_outside(rendered: tuple[Report, Path, Path]) -> None:
    _, _, html_path = rendered
    page = html_path.read_text()
    references = re.findall(r"""\b(?:src|href|xlink:href|action|poster|data|srcset)\s*=\s*["']([^"']*)["']""", page)
    assert references, "expected at least the in-page table of contents links"
    assert all(ref.startswith("#") for ref in references), [r for r in references if not r.startswith("#")]
    assert not re.search(r"url\(\s*['\"]?(?!#)", page)
    assert not re.search(r"https?://[^\s\"']*\.(?:js|css|woff2?|ttf|png|svg|jpe?g)\b", page)
    assert not re.search(r"<(?:script|link|img|iframe|object|embed)\b", page, re.IGNORECASE)
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page and "<metadata>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<strong>flat</strong>" in page and "<code>ticket</code>" in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids inside the inlined SVGs must not clash"


def test_browser_dom_has_every_figure_and_table(rendered: tuple[Report, Path, Path], tmp_path: Path) -> None:
    browser = find_browser()
    if browser is None:
        pytest.skip(f"no headless browser: none of {', '.join(BROWSERS)} on PATH (Debian package `chromium`, installed by ./run.sh setup)")
    report, _, html_path = rendered
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={tmp_path / 'browser-profile'}",
        "--dump-dom",
        html_path.resolve().as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_SECONDS)
    assert result.returncode == 0, f"{browser} exited {result.returncode}: {result.stderr[-2000:]}"
    census = DomCensus()
    census.feed(result.stdout)
    census.close()

    tables = all_tables(report)
    figures = all_figures(report)
    assert census.tables == [f"tbl-{n}" for n in range(1, len(tables) + 1)] and len(tables) == table_count(report)
    assert census.figure_svgs == [f"fig-{n}" for n in range(1, len(figures) + 1)]
    for number in range(1, len(figures) + 1):
        assert census.svg_children.get(f"fig-{number}", 0) > 0, f"fig-{number}: the browser's SVG is empty"
    for number, table in enumerate(tables, start=1):
        assert census.body_rows[f"tbl-{number}"] == len(table.frame)
    expected = [f"Table {n}. {caption_text(t.caption)}" for n, t in enumerate(tables, start=1)]
    expected += [f"Figure {n}. {caption_text(f.title)}" for n, f in enumerate(figures, start=1)]
    assert sorted(census.captions) == sorted(expected)
    assert census.body.get("data-tables") == str(len(tables)) and census.body.get("data-figures") == str(len(figures))
    assert census.scripts == 0, "the escaped <script> in the intro must stay text"


def test_plots_are_deterministic_and_complete(tmp_path: Path) -> None:
    first = build_report(tmp_path / "a")
    second = build_report(tmp_path / "b")
    for one, two in zip(all_figures(first), all_figures(second)):
        assert one.png.read_bytes() == two.png.read_bytes(), one.png.name
        assert one.svg.read_bytes() == two.svg.read_bytes(), one.svg.name
        assert one.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert one.alt and one.title
    # the figures' folders differ; the pages (relative links, inlined SVGs) must not
    for write, name in ((write_markdown, "report.md"), (write_html, "report.html")):
        assert write(first, tmp_path / "a" / name).read_bytes() == write(second, tmp_path / "b" / name).read_bytes(), name
    alt = all_figures(first)[0].alt
    assert all(variant in alt for variant in VARIANTS) and "2, 4, 8" in alt and "O(N) bound" in alt


def test_side_by_side_ratios_keep_missing_points_missing() -> None:
    published = pd.DataFrame({"nodes": [1, 2, 4], "t": [10.0, 18.0, 30.0]})
    ours = pd.DataFrame({"nodes": [1, 2, 4, 8], "t": [5.0, 9.0, 16.0, 20.0]})
    ratios = plots.side_by_side_ratios(published, ours, "nodes", "t")
    assert list(ratios["nodes"]) == [1, 2, 4, 8]
    assert list(ratios["ours_ratio"]) == [1.0, 1.8, 3.2, 4.0]
    assert ratios["published_ratio"].iloc[:3].tolist() == [1.0, 1.8, 3.0] and pd.isna(ratios["published_ratio"].iloc[3])


def test_bad_plot_input_names_plot_column_and_value(tmp_path: Path) -> None:
    df = metrics()
    with pytest.raises(PlotInputError, match=r"lines_vs_size\('t'\).*'throughput'.*not in the table"):
        plots.lines_vs_size(df, y="throughput", title="t", ylabel="y", path_stem=tmp_path / "x")
    with pytest.raises(PlotInputError, match=r"more than one row for variant='ticket', cpus=2"):
        plots.lines_vs_size(pd.concat([df, df.iloc[[3]]]), y="ops", title="t", ylabel="y", path_stem=tmp_path / "x")
    with pytest.raises(PlotInputError, match=r"'cpus' has the value 0"):
        plots.lines_vs_size(df.assign(cpus=df["cpus"] - 2), y="ops", title="t", ylabel="y", path_stem=tmp_path / "x")
    zero = pd.DataFrame({"cpus": [1, 2], "t": [0.0, 1.0]})
    with pytest.raises(PlotInputError, match=r"\(published\): the first configuration cpus=1 has t=0"):
        plots.side_by_side(zero, zero, key="cpus", value="t", title="t", path_stem=tmp_path / "x")


def test_bad_report_input_names_section_and_item(tmp_path: Path) -> None:
    ghost = Figure("ghost", tmp_path / "ghost.png", tmp_path / "ghost.svg", "nothing")
    report = Report("r", [], [Section("Seeds", figures=[ghost])])
    with pytest.raises(ReportInputError, match=r"section 'Seeds' \(sec-1\): figure\[0\] 'ghost': svg file .*ghost.svg does not exist"):
        write_html(report, tmp_path / "r.html")
    report = Report("r", [], [Section("Seeds", tables=[Table("t", [1, 2])])])  # type: ignore[arg-type]
    with pytest.raises(ReportInputError, match=r"table\[0\] 't': frame is list"):
        write_markdown(report, tmp_path / "r.md")


def test_inline_markup() -> None:
    assert inline_html("a **b** `c<d>` e & f") == "a <strong>b</strong> <code>c&lt;d&gt;</code> e &amp; f"
    assert inline_html("2 ** 3 is `2**3`") == "2 ** 3 is <code>2**3</code>"
    assert inline_markdown("x_y **z** `a|b`") == "x\\_y **z** `a|b`"
    assert inline_markdown("- not a list") == "\\- not a list"
    assert inline_markdown("`a`b`") == "`a`b\\`"


def test_claim_ratios_draw_published_next_to_ours(tmp_path: Path) -> None:
    claims = pd.DataFrame({"case": ["000-peak-8cpus* fsmix", "000-peak-4cpus fsmix"], "published_ratio": [1.165, 1.037], "ours_ratio": [1.02, float("nan")]})
    figure = plots.claim_ratios(claims, key="case", title="Seed 000", path_stem=tmp_path / "seed-000")
    assert figure.png.is_file() and figure.svg.is_file()
    assert "No dot where a side has no number: 000-peak-4cpus fsmix (ours)" in figure.alt
    with pytest.raises(plots.PlotInputError, match="ours_ratio"):
        plots.claim_ratios(claims.drop(columns=["ours_ratio"]), key="case", title="Seed 000", path_stem=tmp_path / "bad")
