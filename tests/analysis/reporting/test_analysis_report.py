"""`run.sh report`: the real gem5 fixtures through metrics, bound, per-lock tables into a report."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis.statistics.claims import COLUMNS
from analysis_checks import FIXTURES
from lockstudy.campaign.loader import load_campaign
from lockstudy.paths import ROOT, cache_dir

CAMPAIGN = ROOT / "campaigns" / "machines.toml"
STALE_CHART = Path("handoffs") / "altix-numa-tas" / "bench_lock-handoff-1.svg"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not any(FIXTURES.glob("*/stats.txt")):
        pytest.skip("no real gem5 fixtures")
    out = tmp_path_factory.mktemp("report")
    # a chart an earlier report drew, of a hand-off this one does not draw
    (out / STALE_CHART).parent.mkdir(parents=True)
    (out / STALE_CHART).write_text("<svg/>")
    result = subprocess.run(
        [str(ROOT / "run.sh"), "report", str(CAMPAIGN), "--results", str(FIXTURES), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_report_files_are_written(report_dir: Path) -> None:
    for name in ("report.md", "report.html", "metrics.csv", "locks.csv", "claims.csv", "provenance.json"):
        assert (report_dir / name).is_file(), name
    markdown = (report_dir / "report.md").read_text()
    for title in ("Coherence messages per lock hand-off", "Node-local and crossing traffic", "Per-lock traffic", "Provenance"):
        assert f"## {title}" in markdown
    for link in re.findall(r"\]\((figures/[^)]+)\)", markdown):
        assert (report_dir / link).is_file(), link


def test_the_teaching_folder_holds_only_this_reports_charts(report_dir: Path) -> None:
    """A re-simulated run's median hand-off is another one: the chart an earlier report drew into
    handoffs/ must not stay beside the new one (the report owns the folder)."""
    assert not (report_dir / STALE_CHART).exists()
    markdown = (report_dir / "report.md").read_text()
    charts = sorted((report_dir / "handoffs").rglob("*.png"))
    assert charts, "the fixture's traced kbench run draws a chart"
    for chart in charts:
        assert f"]({chart.relative_to(report_dir)})" in markdown, chart


def test_tables_hold_the_fixtures_numbers(report_dir: Path) -> None:
    metrics = pd.read_csv(report_dir / "metrics.csv")
    assert set(metrics["machine"]) == {"piii-smp", "altix-numa"}
    locks = pd.read_csv(report_dir / "locks.csv")
    bench = locks[locks["lock"] == "bench:lock"].iloc[0]
    assert bench["shares_line_with"] == "bench:shared_noise" and bench["invalidations"] > 0
    assert set(metrics["trace"]) == {"protocol", "off"}  # the fixtures: one traced run, one not
    claims = pd.read_csv(report_dir / "claims.csv", dtype={"seed": str})
    assert tuple(claims.columns) == COLUMNS
    assert claims["verdict"].str.startswith("not run:").all()  # the fixtures are no seed's study


def test_published_report_names_no_path_of_this_machine(report_dir: Path) -> None:
    for path in report_dir.rglob("*"):
        if path.suffix in (".md", ".html", ".json", ".csv"):
            text = path.read_text()
            for leaked in (str(ROOT), str(cache_dir()), str(Path.home())):
                assert not re.search(re.escape(leaked) + r"(?![\w.+-])", text), (path.name, leaked)


def test_a_missing_results_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ROOT / "run.sh"), "report", str(CAMPAIGN), "--results", str(tmp_path / "none")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0 and "no results of campaign machines" in result.stderr


def report_with_discussion(tmp_path: Path, discussion: str) -> subprocess.CompletedProcess:
    campaign = tmp_path / "machines.toml"
    campaign.write_text(CAMPAIGN.read_text())
    (tmp_path / "machines.discussion.toml").write_text(discussion)
    return subprocess.run(
        [str(ROOT / "run.sh"), "report", str(campaign), "--results", str(FIXTURES), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_written_reading_is_shown_and_flagged_when_stale(tmp_path: Path) -> None:
    if not any(FIXTURES.glob("*/stats.txt")):
        pytest.skip("no real gem5 fixtures")
    result = report_with_discussion(tmp_path, (
        '[[reading]]\nabout = "004"\nwritten_for = 0\ntext = "The lockref line moved less."\n'
        '[[reading]]\nabout = "002"\nwritten_for = 5\ntext = "HBO kept the lock on its node."\n'
        '[[reading]]\nabout = "handoffs"\nwritten_for = 1\ntext = "One untraced kbench ROI, read as such."\n'
    ))  # fmt: skip
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "out" / "report.md").read_text()
    # The fixtures are a few runs, not the campaign's: the report says how much of it it reads.
    declared = len(load_campaign(CAMPAIGN).runs)
    assert re.search(rf"The campaign is not complete: the report reads \d+ of its {declared} run\(s\); a --dry-run of machines.toml lists what is left.", markdown)
    current = markdown.split("Seed 004: our reading", 1)[1]
    assert current.split("\n#", 1)[0].strip() == "The lockref line moved less."  # no run of lockref, written for none
    stale = markdown.split("Seed 002: our reading", 1)[1].split("\n#", 1)[0]
    assert "Written when 5 run(s) of these studies had finished; these results hold 0" in stale
    assert "HBO kept the lock on its node." in stale
    kbench = markdown.split("Hand-offs: our reading", 1)[1].split("\n#", 1)[0]
    # the fixtures' one untraced kbench run: current (the traced one serves the per-lock attribution only)
    assert kbench.strip() == "One untraced kbench ROI, read as such."


def test_a_broken_discussion_is_a_clear_error(tmp_path: Path) -> None:
    result = report_with_discussion(tmp_path, '[[reading]]\nabout = "042"\nwritten_for = 1\ntext = "x"\n')
    assert result.returncode != 0
    assert "machines.discussion.toml: reading[0].about: '042' is neither a seed" in result.stderr, result.stderr


def test_report_results_may_be_the_root_that_campaign_results_names(tmp_path: Path) -> None:
    """`campaign --results R` writes R/<name>/; `report --results R` finds it there, and a campaign folder stays itself."""
    from analysis.command import campaign_folder

    (tmp_path / "calibration" / "runs").mkdir(parents=True)
    assert campaign_folder(tmp_path, "calibration") == tmp_path / "calibration"
    assert campaign_folder(tmp_path / "calibration", "calibration") == tmp_path / "calibration"
    assert campaign_folder(tmp_path / "elsewhere", "calibration") == tmp_path / "elsewhere"


def test_a_throughput_line_never_joins_other_builds_or_thread_counts() -> None:
    """Seed 002's pft: 1 thread and 2 threads on a 2-CPU node, on two kernel builds, are four lines'
    points, not one mean per CPU count (the first rerun report averaged 47,000 and 77,000 into 62,000)."""
    from analysis.reporting.chart_points import throughput_series

    rows = pd.DataFrame({
        "boot_args": ["lockstudy.spinlock=tas"] * 4, "cpus": [2, 2, 2, 2], "copies": [1, 2, 1, 2],
        "kernel_build": ["smp-mm-ptlock", "smp-mm-ptlock", "smp", "smp"],
    })  # fmt: skip
    labels = throughput_series(rows, "boot_args").tolist()
    assert labels == [
        "lockstudy.spinlock=tas, smp-mm-ptlock, 1 thread(s)", "lockstudy.spinlock=tas, smp-mm-ptlock",
        "lockstudy.spinlock=tas, smp, 1 thread(s)", "lockstudy.spinlock=tas, smp",
    ]  # fmt: skip
    one_build = rows[rows["kernel_build"] == "smp"]
    assert throughput_series(one_build, "boot_args").tolist() == ["lockstudy.spinlock=tas, 1 thread(s)", "lockstudy.spinlock=tas"]


def test_a_throughput_legend_says_its_lines_differ_in_their_kernel_build(tmp_path: Path) -> None:
    """fsmix's chart titled its legend "boot_args" over "default boot, smp" and "default boot, smp-packed",
    whose difference is the kernel build, not a boot argument: where the lines carry their build, the
    legend's title (and the alt text) names it; over one build it stays the series column alone."""
    from matplotlib.figure import Figure as MplFigure

    from analysis.reporting import plots
    from analysis.reporting.report import throughput_figure

    rows = pd.DataFrame({
        "boot_args": [""] * 8, "cpus": [4, 4, 8, 8] * 2, "copies": [8.0] * 8, "ops_per_s": [65.0, 66.0, 86.0, 87.0, 65.0, 66.0, 77.0, 78.0],
        "kernel_build": ["smp"] * 4 + ["smp-packed"] * 4, "trace": ["off"] * 8,
    })  # fmt: skip
    titles: list[str] = []
    save = plots._save

    def keep_legend_title(figure: MplFigure, path_stem: Path | str, title: str, alt: str) -> plots.Figure:
        titles.extend(legend.get_title().get_text() for ax in figure.axes if (legend := ax.get_legend()) is not None)
        return save(figure, path_stem, title, alt)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "_save", keep_legend_title)
        both = throughput_figure(rows, "fsmix", "fsmix", tmp_path / "both", "ops_per_s", "ops_per_s")
        one = throughput_figure(rows[rows["kernel_build"] == "smp"], "fsmix", "fsmix", tmp_path / "one", "ops_per_s", "ops_per_s")
    assert titles == ["boot_args and kernel_build", "boot_args"]
    assert "one line per boot_args and kernel_build: default boot, smp, default boot, smp-packed" in both.alt
    assert "one line per boot_args: default boot." in one.alt


def test_a_throughput_chart_of_configurations_mostly_at_one_size_is_a_dot_chart() -> None:
    """dd1b's rerun: twelve fd-lock configurations on one CPU and one of them on two as well drew one short
    line and eleven dots stacked at x = 1, named only in the legend. Lines are drawn when at least half
    the series have two sizes; otherwise a dot per configuration, named by its series and size."""
    from analysis.reporting.chart_points import DOTS, LINES, chart_kind, dot_labels

    one_cpu = [f"lockstudy.fdlock={lock}, roi_cpu={cpu}" for lock in ("none", "rwlock", "spinlock") for cpu in ("o3", "timing")]
    points = pd.DataFrame({"boot_args": one_cpu + [one_cpu[1]], "cpus": [1] * len(one_cpu) + [2], "ops": range(len(one_cpu) + 1)})
    assert chart_kind(points, "boot_args", "cpus") == DOTS
    assert chart_kind(points[points["cpus"] == 1], "boot_args", "cpus") is None  # no series at two sizes: no chart
    assert dot_labels(points, "boot_args", "cpus")[-2:] == ["lockstudy.fdlock=spinlock, roi_cpu=timing, 1 CPU(s)", "lockstudy.fdlock=none, roi_cpu=timing, 2 CPU(s)"]
    half = pd.concat([points, points.iloc[[0, 2]].assign(cpus=2)], ignore_index=True)  # 3 of 6 series at two sizes
    assert chart_kind(half, "boot_args", "cpus") == LINES
    threads = pd.DataFrame({"variant": ["tas", "tas", "hbo"], "copies": [1.0, 2.0, 2.0]})
    assert chart_kind(threads, "variant", "copies") == LINES and dot_labels(threads, "variant", "copies")[0] == "tas, 1 copies"


def test_pfts_throughput_is_drawn_against_its_threads_one_line_per_variant_and_build() -> None:
    """pft's threads are its size (1 and 2 threads on one 2-CPU node, then one node per 2 threads): its chart
    goes against the threads, one line per boot and build. Against CPUs, its run-spec threads told runs
    apart at 2 CPUs, so every point became a line of its own ("tas, smp-mm-ptlock, threads=16")."""
    from analysis.reporting.chart_points import throughput_series, throughput_x

    threads = [1, 2, 4, 16, 4, 16]
    rows = pd.DataFrame({
        "boot_args": ["lockstudy.spinlock=tas"] * 4 + ["lockstudy.spinlock=hbo"] * 2,
        "cpus": [2, 2, 4, 16, 4, 16], "copies": [float(t) for t in threads], "kernel_build": ["smp-mm-ptlock"] * 6,
        "run_spec": [f"pft:threads={t},mb=16" for t in threads],
    })  # fmt: skip
    assert throughput_x(rows) == "copies"
    assert throughput_series(rows, "boot_args", "copies").tolist() == ["lockstudy.spinlock=tas"] * 4 + ["lockstudy.spinlock=hbo"] * 2
    # one thread count on two machine sizes: two lines, each named by its CPUs
    wider = pd.concat([rows, rows.iloc[[2]].assign(cpus=8)], ignore_index=True)
    assert throughput_series(wider, "boot_args", "copies").tolist()[2::4] == ["lockstudy.spinlock=tas, 4 CPUs", "lockstudy.spinlock=tas, 8 CPUs"]
    # fsmix's fixed 8 threads on 1 to 8 CPUs, and kbench's copies that follow the CPUs, stay against CPUs
    fixed = pd.DataFrame({"boot_args": [""] * 4, "cpus": [1, 2, 4, 8], "copies": [8.0] * 4})
    assert throughput_x(fixed) == "cpus" and throughput_x(fixed.assign(copies=[1.0, 2.0, 4.0, 8.0])) == "cpus"
    assert throughput_x(fixed.assign(copies=[1.0, float("nan"), 4.0, 8.0])) == "cpus"


def test_the_kbench_chart_of_spinlock_variants_leaves_the_rwsem_bench_out() -> None:
    """kbench lock=rwsem runs the boot variant's wait_lock: on the variants' chart it was a line named
    "qspinlock, ..., lock=rwsem, ..." whose legend squeezed the plot to nothing."""
    from analysis.reporting.chart_points import spinlock_bench_rows

    rows = pd.DataFrame({"run_spec": ["kbench:variant=cna,duration_ms=10", "kbench:lock=rwsem,writers=4,duration_ms=10",
                                      "kbench:lock=spinlock,variant=tas"], "roi": [0, 0, 0]})  # fmt: skip
    assert spinlock_bench_rows(rows).index.tolist() == [0, 2]


def test_a_kbench_chart_gets_one_part_per_kernel_build_the_most_run_first() -> None:
    """The lock pair's build (smp-bench-pair) added four lines to the bus sweep's chart, thirteen in all:
    each build's runs get a chart of their own, the sweep's build first (it keeps the chart's name)."""
    from analysis.reporting.chart_points import kbench_parts

    rows = pd.DataFrame({"kernel_build": ["smp", "smp-bench-pair", "smp", "smp"], "cpus": [2, 2, 4, 8]})
    parts = kbench_parts(rows)
    assert [(build, part.index.tolist()) for build, part in parts] == [("smp", [0, 2, 3]), ("smp-bench-pair", [1])]
    ((build, part),) = kbench_parts(rows[rows["kernel_build"] == "smp"])  # one build: one chart, its plain name
    assert build is None and part.index.tolist() == [0, 2, 3]


def test_the_rates_table_tells_configurations_on_as_many_cpus_apart_by_their_copies() -> None:
    """pft with 1 and with 2 threads on one 2-CPU node are two configurations: the rates table shows the
    threads beside the CPUs (the rerun report listed them as two rows of one configuration, 47 k and 78 k)."""
    from analysis.reporting import report

    configurations = pd.DataFrame({
        "machine": ["altix-numa"] * 2, "testcase": ["pft"] * 2, "cpus": [2, 2], "copies": [2.0, 1.0],
        "variant": ["tas"] * 2, "boot_args": ["lockstudy.spinlock=tas"] * 2, "kernel_build": ["smp-mm-ptlock"] * 2,
        "window": ["mb=16,iterations=2"] * 2, "mean": [77581.0, 47099.0], "n": [1, 1], "note": ["", ""],
    })  # fmt: skip
    table = report.rates_table(configurations).frame
    assert table.columns.tolist().index("copies") == table.columns.tolist().index("cpus") + 1
    assert table[["copies", "mean"]].values.tolist() == [[1.0, 47099.0], [2.0, 77581.0]]


def test_a_spec_with_more_copies_than_the_smaller_sizes_cpus_is_one_line() -> None:
    """fsmix runs 8 threads on 1, 2, 4 and 8 CPUs: one line per kernel build, not one for 1-4 CPUs
    ("8 thread(s)") and another for 8 (the first v5 report drew four lines for two builds)."""
    from analysis.reporting.chart_points import throughput_series

    rows = pd.DataFrame({"boot_args": [""] * 4, "cpus": [1, 2, 4, 8], "copies": [8.0] * 4, "kernel_build": ["smp"] * 4})
    assert throughput_series(rows, "boot_args").nunique() == 1


def test_the_seeds_figure_turns_both_sides_to_as_advantage() -> None:
    """Seed 001's published measure is dd's seconds (lower is better), ours a rate: "UP takes 0.55 of
    SMP's time" and "UP does 1.04x SMP's operations" both say UP is better, and both must sit right of 1."""
    from analysis.reporting import report
    from analysis.seed_verdicts.seeds import load_seeds

    seed = next(s for s in load_seeds() if s.id == "001")
    judged = pd.DataFrame([{
        "claim": "001-up-vs-smp-2.5", "condition": "as-shipped", "workload": "dd1b", "roi_cpu": "timing", "copies": float("nan"),
        "window": "", "published_ratio": 0.5513, "ratio": 1.04, "ci_low": 1.03, "ci_high": 1.05,
    }])  # fmt: skip
    shown = report.claim_advantages(judged, seed).iloc[0]
    assert shown["published_ratio"] == pytest.approx(1 / 0.5513) and shown["published_ratio"] > 1
    assert (shown["ours_ratio"], shown["ci_low"], shown["ci_high"]) == (1.04, 1.03, 1.05)


def test_the_seeds_figure_marks_a_ratio_drawn_without_an_interval() -> None:
    """Seed 000's dbench headline at 5 + 1 runs: its dot has no whiskers, which a reader would take for
    a tight interval unless its label says there is none."""
    from analysis.reporting import report
    from analysis.seed_verdicts.seeds import load_seeds

    seed = next(s for s in load_seeds() if s.id == "000")
    row = {"claim": "000-peak-8cpus (headline)", "condition": "as-shipped", "roi_cpu": "timing", "copies": 4.0,
           "window": "seconds=2", "published_ratio": 1.165, "ratio": 0.999, "n_a": 5, "n_b": 1}  # fmt: skip
    judged = pd.DataFrame([{**row, "workload": "dbench", "ci_low": float("nan"), "ci_high": float("nan")},
                           {**row, "workload": "fsmix", "ci_low": 1.06, "ci_high": 1.17, "n_b": 10}])  # fmt: skip
    cases = report.claim_advantages(judged, seed)["case"].tolist()
    assert cases == [f"000-peak-8cpus* dbench ({report.NO_INTERVAL_MARK})", "000-peak-8cpus* fsmix"]


def test_a_report_on_restored_runs_counts_their_boots_from_the_worker_records(tmp_path: Path) -> None:
    """The run archive keeps each run's worker record but no checkpoint: a boot's hours come from the
    checkpoint's result.json where it is here, else from the record of the run whose attempt built it;
    a boot is counted once (the first rerun report from restored runs said 0.00 hours booting)."""
    import json

    from analysis.reporting.report import boot_seconds

    here = tmp_path / "checkpoints" / "aaaa"
    here.mkdir(parents=True)
    (here / "result.json").write_text(json.dumps({"host_seconds": 100.0}))

    def record(run_id: str, checkpoint: str, built: dict | None) -> None:
        folder = tmp_path / "runs" / run_id
        folder.mkdir(parents=True)
        record = {"checkpoint": f"results/raw/x/checkpoints/{checkpoint}", "costs": {"checkpoint_built": built, "run": {}}}
        (folder / "result.json").write_text(json.dumps(record))

    record("r1", "aaaa", {"host_seconds": 90.0})  # built here: the checkpoint's own figure wins
    record("r2", "bbbb", {"host_seconds": 250.0})  # restored: its checkpoint is gone, its record kept the cost
    record("r3", "bbbb", None)  # reused the checkpoint r2 built
    (tmp_path / "runs" / "r4").mkdir()
    (tmp_path / "runs" / "r4" / "result.json").write_text("{ half-written")
    assert boot_seconds(tmp_path) == {"aaaa": 100.0, "bbbb": 250.0}


def test_the_busiest_lock_lines_keep_a_packed_and_a_padded_kernel_apart() -> None:
    """padding-traced traces the same lock under two kernel builds with the same boot arguments: the busiest-lock
    figure once labelled both by lock and boot arguments only and summed them into one bar. Each configuration is
    its own case, and repeats of one configuration are averaged, not summed."""
    from analysis.reporting.report import busiest_lock_lines

    def row(run: str, build: str, home: int) -> dict:
        return {"run_id": run, "study": "padding-traced", "kernel_build": build, "boot_args": "", "cpus": 8, "lock": "ext2:sda s_rsv_window_lock",
                "invalidations": home // 2, "forwards": 0, "home_requests": home, "activity": home}  # fmt: skip

    lines = busiest_lock_lines(pd.DataFrame([row("a", "smp", 100), row("b", "smp-packed", 300), row("c", "smp-packed", 500)]))
    assert busiest_lock_lines(pd.DataFrame([row("a", "smp", 100)]).iloc[0:0]).empty
    home = lines[lines["event"] == "home_requests"].set_index("case")["count"].to_dict()
    assert home == {
        "ext2:sda s_rsv_window_lock / padding-traced, smp, 8 CPUs": 100,
        "ext2:sda s_rsv_window_lock / padding-traced, smp-packed, 8 CPUs": 400,
    }


def test_the_busiest_lock_lines_are_ranked_by_what_the_figure_draws() -> None:
    """stat-lockref's traced runs put mount_lock and rename_lock among the ten busiest by controller events (hits
    served in the CPUs' own caches) with no invalidation, forward or home request: four empty bars. A line is
    ranked by the events drawn, and one with none is left out."""
    from analysis.reporting.report import busiest_lock_lines

    def row(lock: str, home: int, controller: int) -> dict:
        return {"run_id": lock, "study": "stat-lockref-4nodes-traced", "kernel_build": "smp", "boot_args": "", "cpus": 8,
                "lock": lock, "invalidations": home // 2, "forwards": home // 4, "home_requests": home, "activity": controller}  # fmt: skip

    lines = busiest_lock_lines(pd.DataFrame([row("static:mount_lock", 0, 9000), row("dentry d_lockref", 3000, 10),
                                             row("static:rename_lock", 40, 5000)]))  # fmt: skip
    cases = list(dict.fromkeys(lines["case"]))
    assert [case.split(" / ")[0] for case in cases] == ["dentry d_lockref", "static:rename_lock"]


def test_locks_sharing_a_line_are_one_bar_named_by_all_of_them() -> None:
    """seed 002's traced runs put page_table_lock, mmap_lock and its wait_lock on one mm_struct line: locks.csv
    gives the line's traffic once for each lock, and the figure drew the same line three times, taking six of
    its ten bars. A line is one case, named by its locks, its traffic counted once."""
    from analysis.reporting.report import busiest_lock_lines

    def row(run: str, lock: str, line: str, home: int) -> dict:
        return {"run_id": run, "study": "ptlock-spinlock-8nodes-traced", "kernel_build": "smp-mm-ptlock", "boot_args": "lockstudy.spinlock=tas",
                "cpus": 16, "lock": lock, "line": line, "invalidations": home // 2, "forwards": home // 4, "home_requests": home}  # fmt: skip

    rows = [row("a", "dentry:/scratch/f d_lockref", "0x2000", 50), row("a", "mm:168 page_table_lock", "0x1000", 900),
            row("a", "mm:168 mmap_lock", "0x1000", 900), row("a", "mm:168 mmap_lock.wait_lock", "0x1000", 900),
            row("b", "mm:168 page_table_lock", "0x1000", 700), row("b", "mm:168 mmap_lock", "0x1000", 700)]  # fmt: skip
    lines = busiest_lock_lines(pd.DataFrame(rows))
    home = lines[lines["event"] == "home_requests"].set_index("case")["count"].to_dict()
    config = " / ptlock-spinlock-8nodes-traced, smp-mm-ptlock, 16 CPUs, lockstudy.spinlock=tas"
    # the busiest first, the figure's top bar (the rows came in another order)
    assert [case.split(" / ")[0] for case in dict.fromkeys(lines["case"])] == [
        "mm:168 mmap_lock, mmap_lock.wait_lock, page_table_lock", "mm:168 mmap_lock, page_table_lock", "dentry:/scratch/f d_lockref"]
    assert home == {
        "mm:168 mmap_lock, mmap_lock.wait_lock, page_table_lock" + config: 900,
        "mm:168 mmap_lock, page_table_lock" + config: 700,
        "dentry:/scratch/f d_lockref" + config: 50,
    }
