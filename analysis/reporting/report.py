"""`run.sh report CAMPAIGN`: a campaign's results as tables, plots and a report.

Reads the campaign's results folder (every finished run; failed runs are
listed, never counted), computes the coherence metrics, the hand-off
bound table and, for traced runs, the per-lock tables, then writes into
the output folder:

  metrics.csv, handoff_bound.csv, locks.csv, hotlines.csv (small tidy tables)
  claims.csv (every seed claim judged once on our repeats: n, ratio, interval, verdict)
  configurations.csv (each configuration's rate over its repeats: mean, n, interval)
  figures/*.png, figures/*.svg
  report.md and report.html (one self-contained page)
  provenance.json (gem5 version, kernel build ids, image and machine
  file hashes, commands of every run)

Sections appear only for data the results hold: a campaign without kbench
runs has no hand-off section, and the report says so.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.calibration.measured import TESTCASE_PREFIX as CALIBRATION_PREFIX
from analysis.calibration.measured import CalibrationError
from analysis.calibration.published import PublishedError
from analysis.calibration.section import calibration_section
from analysis.command import RUNS_FOLDER
from analysis.gem5_output.run_provenance import RunProvenance
from analysis.gem5_output.runs import Results, load_results
from analysis.handoff_chart.teaching import FOLDER as TEACHING_FOLDER
from analysis.handoff_chart.teaching import teaching_section
from analysis.hotlines.claim_lines import with_top_lines
from analysis.hotlines.section import hotlines_section
from analysis.hotlines.table import HotlineTables, hotline_tables
from analysis.input_errors import INPUT_ERRORS, messages
from analysis.lock_budget.rules import load_budget
from analysis.lock_budget.section import budget_section
from analysis.model_comparison.section import model_comparison_section
from analysis.reporting import discussion, plots
from analysis.reporting.chart_points import (
    DOTS, SIZE_AXES, chart_kind, dot_labels, kbench_parts, mean_and_interval_by, mean_by, spinlock_bench_rows, throughput_legend,
    throughput_series, throughput_x,
)
from analysis.reporting.report_render import Report, Section, Table, write_html, write_markdown
from analysis.seed_curve.section import curve_section
from analysis.seed_verdicts import at_a_glance, seed_comparison, seed_evidence, seeds, upstream_moves
from analysis.statistics.claims import COLUMNS as CLAIMS_CSV_COLUMNS
from analysis.statistics.claims import claims_table
from analysis.statistics.configurations import GUEST_WINDOW, TRACED_NOTE, configurations_table, key_text, rate_of
from analysis.statistics.planned_runs import NOT_PLANNED, TO_COME, planned_rows
from analysis.statistics.pooling import check_groups, split_traced
from analysis.statistics.rules import load_rules
from analysis.statistics.verdicts import AGREES, DISAGREES, INCONCLUSIVE, SINGLE_RUN
from analysis.traffic import handoffs
from analysis.traffic.locks import lock_tables
from analysis.traffic.metrics import metrics_table
from lockstudy import publish
from lockstudy.campaign.loader import CampaignError, load_campaign
from lockstudy.console import timed_step

KBENCH = "kbench"
FIGURES = "figures"
BENCH_LOCK = "bench:lock"  # the kernel lock bench's lock in the registry
LOCK_LINE_METRIC = "home_requests_per_handoff"  # analysis/traffic/locks.py: requests for the lock's line at its home bank
TOP_LOCKS = 10  # lock lines in the per-lock figure
CHECKPOINTS = "checkpoints"  # a campaign's boot checkpoints (lockstudy/campaign/gem5_backend.py)
WORKER_RECORD = "result.json"  # runs/<id>/result.json: the campaign worker's record of a run (its costs among them)
MACHINE_TITLES = {
    "classic-smp": "bus (snooping, classic caches)",
    "ruby-numa": "NUMA (line-interleaved homes, Ruby MESI_Two_Level)",
    "chi-numa": "NUMA (node-local homes, Ruby CHI)",
}
NUMA_KINDS = ("ruby-numa", "chi-numa")  # gem5-configs/machine.py: the NUMA machines' kinds


def kbench_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The runs that measure hand-offs (analysis/traffic/handoffs.py handoff_runs: no placement=... experiment)."""
    return handoffs.handoff_runs(table)


def handoff_section(table: pd.DataFrame, bound: pd.DataFrame, out: Path, written: discussion.Discussion | None = None) -> Section:
    section = Section("Coherence messages per lock hand-off")
    rows = kbench_rows(table)
    if rows.empty:
        section.paragraphs.append("These results hold no kbench run with contended hand-offs.")
        return section
    bounds = handoffs.load_bounds()
    section.paragraphs.append(
        f"`{bounds.metric}`: requests for a line that reached the point of coherence (the bus, or the "
        "line's home: MESI_Two_Level's L2 bank, CHI's home node) during the ROI, divided by the bench lock's hand-offs (the guest's count). "
        "Dashed: the analytical order drawn through each variant's smallest size (analysis/data/bounds.toml, "
        "with sources). A variant agrees when the measured slope against the waiters, between the "
        f"{bounds.asymptotic_sizes} largest sizes (the orders are asymptotic), shows the same order: "
        f"O(N) when the slope's 95 % interval (`slope_ci_low`, `slope_ci_high`: Student t over the sizes' "
        f"repeats, `runs` of them, analysis/traffic/handoffs.py) lies at {bounds.slope_per_waiter} request per "
        "extra waiter or more, O(1) when it lies below; an interval across that line, or one run at a size, "
        "reads inconclusive. "
        "`handoffs_per_acquisition` is the share of acquisitions that passed the lock to another CPU: where "
        "it is small the releasing CPU mostly took the lock again, and the few hand-offs carry all the "
        "waiters' traffic, so the per-hand-off count grows without the protocol costing more per hand-off."
    )
    for machine, group in rows.groupby("machine"):
        points = mean_and_interval_by(group, ["variant", "cpus"], bounds.metric)
        figure = plots.lines_vs_size(
            points, y=bounds.metric, x="cpus", series="variant",
            title=f"{machine}: coherence requests per hand-off", ylabel="requests per hand-off",
            path_stem=out / FIGURES / f"handoff-{machine}", xlabel="CPUs",
            reference=handoffs.reference_lines(handoffs.contended(group, bounds), bounds), interval=("ci_low", "ci_high"),
        )  # fmt: skip
        section.figures.append(figure)
    section.tables.append(Table("Measured order against the bound, per machine and variant", bound))
    reading = reading_section("Hand-offs: our reading", written, rows["run_id"].nunique())
    if reading is not None:
        section.subsections.append(reading)
    return section


def throughput_section(table: pd.DataFrame, out: Path) -> Section:
    section = Section("Throughput against CPUs")
    section.paragraphs.append(
        "Each workload's rate over its own timed window, as the guest reports it (analysis/data/statistics.toml: "
        "kbench's acquisitions over the kernel's elapsed time, a harness testcase's over its measured window); "
        "a workload that times no window of its own is shown per simulated second of the ROI (`ops_per_sim_s`), "
        "and its y axis says so. Untraced runs only (traced runs serve the per-lock attribution), the mean of "
        "each size's runs, with its confidence interval as whiskers where there are two or more runs (Student t; "
        "the rates table below gives n and the interval). The x axis is the CPUs, or the workload's copies where "
        "those are its size and the machine is sized to them (pft's threads, as in the seed's curve). Where fewer "
        "than half the configurations ran at two sizes or more, a dot per configuration and size, with its "
        "interval, replaces the lines."
    )
    for (machine, testcase), group in table.groupby(["machine", "testcase"]):
        if str(testcase).startswith(CALIBRATION_PREFIX):
            continue  # a calibration ROI's ops are repetitions of one measurement: its table is the calibration section
        rate, source = rate_of(str(testcase))
        if rate not in group or group[rate].isna().all():
            continue
        parts: list[tuple[str | None, pd.DataFrame]] = [(None, group)]
        if testcase == KBENCH:
            parts = kbench_parts(spinlock_bench_rows(group))
        for index, (build, part) in enumerate(parts):
            if part.empty:
                continue
            # the first part keeps the chart's plain name; another build's gets its own
            name = f"{machine}-{testcase}" + (f"-{build}" if index and build else "")
            title = f"{machine}, {testcase}" + (f" ({build} build)" if build else "") + ": throughput"
            figure = throughput_figure(part, str(testcase), title, out / FIGURES / f"throughput-{name}", f"{rate} ({source})", rate)
            if figure is not None:
                section.figures.append(figure)
    if not section.figures:
        section.paragraphs.append("No workload ran at two or more sizes.")
    return section


def throughput_figure(group: pd.DataFrame, testcase: str, title: str, path_stem: Path, ylabel: str, rate: str) -> Any:
    """One throughput chart of `group`'s runs against their size (lines, or dots where few ran at two
    sizes); None when nothing can be drawn."""
    column = "variant" if testcase == KBENCH else "boot_args"
    labelled = group.assign(boot_args=group["boot_args"].fillna("").replace("", "default boot"))
    size = throughput_x(labelled)
    # the lines' names, under a title that says what they carry (the legend's and the alt text's)
    series = throughput_legend(labelled, column)
    labelled = labelled.assign(**{series: throughput_series(labelled, column, size)})
    points = mean_and_interval_by(labelled, [series, size], rate)
    kind = chart_kind(points, series, size)
    if kind is None:
        return None
    if kind == DOTS:
        dots = points.assign(configuration=dot_labels(points, series, size))
        return plots.interval_dots(dots, category="configuration", value=rate, title=title, xlabel=ylabel, path_stem=path_stem)
    return plots.lines_vs_size(
        points, y=rate, x=size, series=series, title=title, ylabel=ylabel,
        path_stem=path_stem, xlabel=SIZE_AXES[size], interval=("ci_low", "ci_high"),
    )  # fmt: skip


# copies: the testcase's threads, clients or processes; two configurations on as many CPUs differ there (pft's
# 1 and 2 threads on one 2-CPU node), and a table without it shows them as one configuration with two rates
# run_spec: two configurations of one testcase, build and boot can differ in its other parameters alone (kbench's
# placement), and a table without it shows them as one configuration with two rates
RATE_COLUMNS = ["machine", "testcase", "cpus", "copies", "variant", "boot_args", "kernel_build", "run_spec", "roi_cpu", "window", "rate",
                "rate_source", "n", "mean", "ci_low", "ci_high", "ci_method", "half_width", "note"]  # fmt: skip


def rates_table(configurations: pd.DataFrame) -> Table:
    """Each untraced configuration's rate: mean, n and interval (configurations.csv has every key)."""
    level = load_rules().level
    untraced = configurations[configurations["note"] != TRACED_NOTE]
    rows = untraced[[column for column in RATE_COLUMNS if column in untraced]]
    rows = rows[~rows["testcase"].astype(str).str.startswith(CALIBRATION_PREFIX)]
    return Table(
        f"Each configuration's rate over its repeats: mean, n and {level:.0%} interval (untraced runs)",
        rows.sort_values([c for c in ["machine", "testcase", "cpus", "copies", "variant", "boot_args"] if c in rows]).reset_index(drop=True),
    )


def sizing_paragraph(configurations: pd.DataFrame) -> str | None:
    """Whether the workloads are long enough: the untraced configurations with an interval against the
    rules' half-width target (issue 17: at most +-5 % of the mean), naming those that miss it."""
    if configurations.empty or "half_width" not in configurations:
        return None
    target = load_rules().target_half_width
    rows = configurations[(configurations["note"] != TRACED_NOTE) & configurations["half_width"].notna()]
    rows = rows[~rows["testcase"].astype(str).str.startswith(CALIBRATION_PREFIX)]
    if rows.empty:
        return None
    wide = rows[rows["half_width"] > target]
    text = f"Sizing: {len(rows) - len(wide)} of {len(rows)} configurations with two or more runs have an interval within +-{target:.0%} of their mean"
    if wide.empty:
        return text + "."
    named = "; ".join(
        f"{row.machine} {row.testcase} at {key_text(row.cpus)} CPUs, {row.variant or row.boot_args or row.kernel_build} (+-{row.half_width:.1%}, n={row.n}; "
        + (f"about {row.runs_for_target:.0f} runs would reach it)" if row.runs_for_target == row.runs_for_target else "a longer window is needed)")
        for row in wide.sort_values("half_width", ascending=False).itertuples(index=False)
    )
    return f"{text}; wider: {named}."


def numa_section(table: pd.DataFrame, out: Path) -> Section:
    section = Section("Node-local and crossing traffic on the NUMA machine")
    numa = kbench_rows(table[table["kind"].isin(NUMA_KINDS)])
    if numa.empty:
        section.paragraphs.append("These results hold no kbench run on a NUMA machine.")
        return section
    section.paragraphs.append(
        "Hand-offs between CPUs of the same node against hand-offs to another node (the guest's counts), and "
        "the share of network transmissions on router-to-router links, which are all off-node "
        "(`inter_node_messages` / `network_messages`)."
    )
    # one machine's runs per mean: the two NUMA models are compared side by side, never averaged
    keys = ["machine", "variant", "nodes"]
    check_groups(numa, keys, what="NUMA hand-off shares")
    shares = numa.assign(
        local=numa["handoffs_local"] / numa["handoffs"],
        crossing_links=numa["inter_node_messages"] / numa["network_messages"],
    )
    summary = shares.groupby(keys, as_index=False)[["local", "crossing_links"]].mean()
    section.tables.append(Table("Node-local share of hand-offs and crossing share of network transmissions", summary))
    stacked = shares.groupby(keys, as_index=False)[["handoffs_local", "handoffs_remote"]].mean()
    long = stacked.melt(id_vars=keys, value_vars=["handoffs_local", "handoffs_remote"], var_name="hand-off", value_name="count")
    several = long["machine"].nunique() > 1
    machine_label = long["machine"] + ", " if several else ""
    long["case"] = machine_label + long["variant"] + " / " + long["nodes"].astype(str) + " nodes"
    title = "Hand-offs on the node and to another node" + ("" if several else f" ({long['machine'].iloc[0]})")
    section.figures.append(
        plots.stacked_bars(long, category="case", stack="hand-off", value="count",
                           title=title, ylabel="hand-offs per ROI",
                           path_stem=out / FIGURES / "numa-handoffs")  # fmt: skip
    )
    return section


def locks_section(results: Results, table: pd.DataFrame, out: Path) -> tuple[Section, pd.DataFrame]:
    section = Section("Per-lock traffic (ROI traces)")
    left_out: list[str] = []
    _events, summary = lock_tables(results, notes=left_out)
    section.paragraphs += [f"Left out: {note}." for note in left_out]
    if summary.empty:
        section.paragraphs.append("No run of these results was traced (`trace = \"protocol\"`): no per-lock attribution.")
        return section, summary
    # trace and run_spec: the per-lock means below are of traced runs of one window (mean_by checks)
    identity = table[["run_id", "study", "machine", "kernel_build", "cpus", "nodes", "variant", "boot_args", "testcase", "trace", "run_spec"]].drop_duplicates("run_id")
    summary = summary.merge(identity, on="run_id", how="left")
    section.paragraphs.append(
        "Each registered lock's cache line in the ROI's Ruby ProtocolTrace: invalidations and forwards the CPUs' "
        "caches received from the home (MESI_Two_Level's L1s, CHI's L2s), requests its home received (L2 bank, CHI "
        "home node; analysis/data/lock_events.toml), and the CPUs' requests on the lock's own bytes against "
        "requests for other data on the same line (false sharing). Locks without any traffic are left out. "
        "On the bus machine (classic caches, `trace = \"classic\"`) a lock's home requests are the requests the "
        "front-side bus accepted for its line and its invalidations the copies the bus's snoops took; that trace "
        "has no forwards and does not split a line's requests by byte, so those columns are empty there."
    )
    # the sweep's runs only: a placement= run is seed 000's experiment (handoffs.handoff_runs)
    bench = handoffs.handoff_runs(summary[summary["lock"] == BENCH_LOCK])
    if not bench.empty:
        columns = ["machine", "variant", "nodes", "cpus", "handoffs", "invalidations_per_handoff", "forwards_per_handoff", "home_requests_per_handoff", "requests_other_on_line"]
        section.tables.append(Table("The bench lock's own line, per hand-off (kbench, traced)", bench[columns].sort_values(["machine", "variant", "cpus"]).reset_index(drop=True)))
        line_bound = handoffs.bound_table(bench, metric=LOCK_LINE_METRIC)
        if not line_bound.empty:
            section.paragraphs.append(
                f"The same judgement as the hand-off table's, on the bench lock's own line alone: `{LOCK_LINE_METRIC}` "
                "against the waiters, over the traced sizes. The whole-ROI count holds every other line the CPUs "
                "touched; this one holds only the lock's."
            )
            section.tables.append(Table("The bench lock's line against the bound (traced sizes)", line_bound))
        for machine, group in bench.groupby("machine"):
            points = mean_by(group, ["variant", "cpus"], "home_requests_per_handoff")
            if points["cpus"].nunique() >= 2:
                section.figures.append(
                    plots.lines_vs_size(points, y="home_requests_per_handoff", x="cpus", series="variant",
                                        title=f"{machine}: requests for the lock's line per hand-off (trace)",
                                        ylabel="home-bank requests per hand-off", xlabel="CPUs",
                                        path_stem=out / FIGURES / f"lockline-{machine}")  # fmt: skip
                )
    others = seed_lock_rows(summary)
    if not others.empty:
        columns = ["study", "kernel_build", "boot_args", "cpus", "nodes", "lock", "shares_line_with", "invalidations", "forwards", "home_requests", "requests_own", "requests_other_on_line"]
        order = ["study", "kernel_build", "boot_args", "cpus", "lock"]
        section.tables.append(Table("The seeds' locks: traffic on each lock's line in the ROI", others[columns].sort_values(order).reset_index(drop=True)))
        busiest = busiest_lock_lines(others)
        section.figures.append(
            plots.stacked_bars(busiest, category="case", stack="event", value="count",
                               title=f"The {busiest['case'].nunique()} busiest lock lines of the seeds' traced runs (mean over a configuration's runs)",
                               ylabel="events in the ROI", path_stem=out / FIGURES / "locks")  # fmt: skip
        )
    return section, summary


def seed_lock_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The registered locks' lines outside the lock bench that saw traffic, each with its `activity`: controller
    events, or on a classic-caches run (which has none) the bus's requests for the line."""
    rated = summary.assign(activity=summary["controller_events"].fillna(summary["home_requests"]))
    return rated[(rated["testcase"] != KBENCH) & (rated["activity"] > 0)]


def lock_case(row: pd.Series) -> str:
    """A lock's line in one configuration: the lock, then the study, kernel build, size and boot arguments,
    so that a packed and a padded kernel (or two sizes) are two cases, never one."""
    boot = "" if pd.isna(row["boot_args"]) else str(row["boot_args"]).strip()  # a CSV's empty cell reads as NaN
    return f"{row['lock']} / {row['study']}, {row['kernel_build']}, {row['cpus']} CPUs" + (f", {boot}" if boot else "")


def locks_label(names: list[str]) -> str:
    """The locks on one line, as one label: "mm:168 mmap_lock, page_table_lock" where they are fields of one
    object, else joined by " + "."""
    names = sorted(names)
    objects = {name.partition(" ")[0] for name in names}
    if len(names) > 1 and len(objects) == 1 and all(" " in name for name in names):
        return f"{objects.pop()} " + ", ".join(name.partition(" ")[2] for name in names)
    return " + ".join(names)


def one_row_per_line(locks: pd.DataFrame) -> pd.DataFrame:
    """A run's locks that share a cache line as one row, named by all of them: the line's traffic is counted
    per line (locks.csv gives it again for each lock on it), so that three locks of one mm_struct line are one
    bar, not three. Rows without a line address stay one per lock."""
    if "line" not in locks or "run_id" not in locks:
        return locks
    keys = ["run_id", "line"]
    grouped = locks.groupby(keys, as_index=False, sort=False, dropna=False)
    names = grouped["lock"].agg(lambda names: locks_label(list(names)))
    return grouped.first().drop(columns="lock").merge(names, on=keys)


def busiest_lock_lines(locks: pd.DataFrame) -> pd.DataFrame:
    """The TOP_LOCKS busiest lock lines as the figure's long table (case, event, count): each case is one
    configuration's lock line (every lock on it named), its counts the mean over that configuration's traced
    runs (never a sum of runs), the busiest first. Busiest by the events the figure draws: a line whose
    controllers only served hits has none, and is left out."""
    events = ["invalidations", "forwards", "home_requests"]
    if locks.empty:
        return pd.DataFrame(columns=["case", "event", "count"])
    lines = one_row_per_line(locks)
    cases = lines.assign(case=lines.apply(lock_case, axis=1)).groupby("case", as_index=False)[events].mean()
    cases = cases.assign(drawn=cases[events].fillna(0).sum(axis=1))
    top = cases[cases["drawn"] > 0].nlargest(TOP_LOCKS, "drawn").assign(rank=lambda frame: range(len(frame)))
    long = top.melt(id_vars=["case", "rank"], value_vars=events, var_name="event", value_name="count")
    # the busiest first: the figure draws its bars in the table's order, top down
    return long.sort_values(["rank", "event"]).drop(columns="rank").reset_index(drop=True)


def portable_command(run: Any, results_dir: Path) -> str:
    """The run's gem5 command with this machine's paths replaced (lockstudy/publish.py's placeholders)."""
    command = " ".join(RunProvenance.of(run.info.result).command)
    pairs = [*publish.placeholders(run.info.gem5_dir, run.info.result), (str(results_dir.resolve()), "<results>")]
    return publish.replace_paths(command, pairs)


def evidence_section(table: pd.DataFrame, lock_summary: pd.DataFrame, seed: seeds.Seed) -> Section | None:
    """The traffic behind a seed's claim: our study per configuration, and its locks' lines when traced."""
    configurations = seed_evidence.configuration_table(table, seed)
    if configurations.empty:
        return None
    section = Section(f"Seed {seed.id}: the traffic behind it")
    section.paragraphs.append(
        f"Our runs of `{seed.study}`, per configuration (`seed_variant` is the seed's name for it, `-` when it is "
        f"an extra point of ours), the mean over runs: throughput and the coherence metrics that carry the claim "
        f"({', '.join(f'`{name}`' for name in seed.evidence)}; analysis/data/seeds.toml `evidence`)."
    )
    section.tables.append(Table(f"Seed {seed.id}: our configurations and their traffic per operation", configurations))
    locks = seed_evidence.lock_table(lock_summary, table, seed)
    if not locks.empty:
        section.paragraphs.append(
            f"Traced runs: the lines of the seed's locks ({', '.join(f'`{prefix}`' for prefix in seed.locks)}) in the "
            "ROI's ProtocolTrace, per operation of the workload; `requests_other_on_line` counts the CPUs' requests "
            "for other data on a lock's line (false sharing)."
        )
        section.tables.append(Table(f"Seed {seed.id}: traffic on the seed's lock lines per operation (traced runs)", locks))
    return section


def reading_section(title: str, written: discussion.Discussion | None, finished_runs: int) -> Section | None:
    """Our written reading (<campaign>.discussion.toml), flagged when written for other results."""
    if written is None:
        return None
    stale = written.staleness(finished_runs)
    return Section(title, [f"**{stale}**"] * bool(stale) + list(written.paragraphs))


# The claims table as the report shows it; claims.csv adds the means and the runs behind each judgement.
CLAIM_COLUMNS = [
    "claim", "condition", "workload", seed_comparison.CPU_MODEL, seed_comparison.COPIES, "window", "rate", "rate_source",
    "n_a", "n_b", "ratio", "ci_low", "ci_high", "published", "published_ratio", "ours", "verdict", "merged_claims",
    "traced_left_out", "top_line_a", "top_line_b",
]  # fmt: skip


NO_INTERVAL_MARK = at_a_glance.NO_INTERVAL  # a dot without whiskers is not a tight interval


def claim_advantages(judged: pd.DataFrame, seed: seeds.Seed) -> pd.DataFrame:
    """The seed's figure: each judged claim's case, and a's advantage over b on both sides.

    A claim's ratio is a / b of its measure: the seed's may be a time (lower is better: dd's
    seconds), ours is a rate. Drawn as they are, "UP is 1.8x faster" would sit left of 1 and
    ours right of it for the same verdict. So each side is turned to a's advantage: a / b of a
    higher-is-better measure, b / a of a lower-is-better one, and our interval with it."""
    claim_of = {claim.id: claim for claim in seed.claims}
    better_of = {workload.name: workload.better for workload in seed.workloads}
    published_lower = [
        seeds.published_comparison(seed, claim_of[name.replace(" (headline)", "")]).better == "lower" for name in judged["claim"]
    ]
    ours_lower = [better_of.get(name, "higher") == "lower" for name in judged["workload"]]
    ratio, low, high = (judged[column].astype(float) if column in judged else judged["ratio"] * float("nan")
                        for column in ("ratio", "ci_low", "ci_high"))  # fmt: skip
    no_interval = (low.isna() | high.isna()) & ratio.notna()
    case = claim_cases(judged)
    return judged.assign(
        case=case.where(~no_interval, case + f" ({NO_INTERVAL_MARK})"),
        published_ratio=[1 / r if lower else r for r, lower in zip(judged["published_ratio"].astype(float), published_lower)],
        ours_ratio=[1 / r if lower else r for r, lower in zip(ratio, ours_lower)],
        ci_low=[1 / h if lower else lo for lo, h, lower in zip(low, high, ours_lower)],
        ci_high=[1 / lo if lower else h for lo, h, lower in zip(low, high, ours_lower)],
    )


def claim_cases(judged: pd.DataFrame) -> pd.Series:
    """Each judged claim's name in the seed's figure: its claim (`*` for the headline) and workload, then
    the CPU model, copies and window only where the seed's judgements differ in them."""
    case = judged["claim"].str.replace(" (headline)", "*", regex=False) + " " + judged["workload"]
    if "condition" in judged and judged["condition"].nunique() > 1:
        case += " [" + judged["condition"] + "]"
    if judged[seed_comparison.CPU_MODEL].nunique() > 1:
        case += " (" + judged[seed_comparison.CPU_MODEL] + ")"
    if judged.groupby(["claim", "workload", seed_comparison.CPU_MODEL])[seed_comparison.COPIES].nunique().max() > 1:
        case += judged[seed_comparison.COPIES].map(lambda n: "" if pd.isna(n) else f", {n:g} copies")
    if judged.groupby(["claim", "workload", seed_comparison.CPU_MODEL, seed_comparison.COPIES], dropna=False)["window"].nunique().max() > 1:
        case += ", " + judged["window"]
    return case


def seeds_section(table: pd.DataFrame, lock_summary: pd.DataFrame, out: Path, discussions: dict[str, discussion.Discussion],
                  hot: HotlineTables, planned: pd.DataFrame | None = None) -> tuple[Section, pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """The seeds' claims against our runs, the claims table (one judgement per row) for claims.csv and
    the seeds at a glance (at_a_glance.py); a claim not run says whether the campaign's `planned` runs
    (planned_runs.planned_rows) will judge it."""
    section = Section("The seeds: published claims against our runs")
    seed_file = seeds.load_seed_file()
    tolerance = seed_file.agreement.relative_tolerance
    level = load_rules().level
    section.paragraphs.append(
        f"For each claim of a seed (configuration a against b), our runs of the seed's study: each workload's rate over "
        f"its own timed window where the guest reports one (`rate_source` \"{GUEST_WINDOW}\", "
        f"analysis/data/statistics.toml), else `{seed_comparison.OUR_METRIC}` over the whole ROI (flagged). Traced runs "
        f"are left out (they serve the per-lock attribution only), runs of different timed windows are never averaged, "
        f"and each side of a claim is one configuration whose runs are its repeats, each perturbed in memory latency and in "
        f"the start of its ROI (campaigns/README.md, \"Repeats are perturbed\"). `ratio` is mean(a) / mean(b) with "
        f"its {level:.0%} interval (`ci_low`, `ci_high`: Fieller's, analysis/statistics/intervals.py). Our direction "
        f"is `same` when the whole interval lies within {tolerance:.0%} of 1 (analysis/data/seeds.toml [agreement]), "
        f"a or b better when it lies wholly beyond; a claim `{AGREES}` or `{DISAGREES}` only then, and is "
        f"`{INCONCLUSIVE}` otherwise, `{SINGLE_RUN}` when a side has one run. Rows resting on the same runs are one "
        "judgement (`merged_claims` names the others). A claim is about which configuration is better; the seeds "
        "measured throughput, time or jobs per minute, so ratios are shown side by side but only directions are judged. "
        "`top_line_a` and `top_line_b` are the measured top line of each traced ROI standing for a or b (the "
        "traced runs left out of the rate), with its share of the ROI's coherence requests (analysis/README.md, "
        "\"Hot lines\"): a reading names a bottleneck only from these. A claim without runs to judge on reads "
        f"\"not run\", then, in a report of its campaign, either `{TO_COME}`: the runs of the campaign not made yet that "
        f"will judge it, or `{NOT_PLANNED}`: no run of the campaign matches that side (the first key none matches)."
    )
    frames = []
    moves = upstream_moves.load_moves()
    for seed in seed_file.seeds:
        sub = Section(f"Seed {seed.id}: {seed.title}")
        sub.paragraphs.append(f"Our study: `{seed.study}`. {seed.note}")
        if seed.precondition is not None:
            sub.paragraphs.append(
                f"Its precondition (claims with `condition` precondition): study `{seed.precondition.study}`, which "
                f"restores {seed.precondition.restores}"
            )
        if seed.compare_on:
            sizes = ", ".join(f"{key} = {value}" for key, value in seed.compare_on.items())
            sub.paragraphs.append(f"The claims are compared on our runs with {sizes} only (seeds.toml `compare_on`: the seed's own setting).")
        claims = with_top_lines(claims_table(table, seed, tolerance, planned=planned), hot)
        frames.append(claims)
        sub.tables.append(Table(f"Seed {seed.id}: claims, published and ours (n, mean ratio and its interval)", claims[CLAIM_COLUMNS]))
        judged = claims[claims["ratio"].notna()]
        if not judged.empty:
            sub.figures.append(
                plots.claim_ratios(claim_advantages(judged, seed), key="case", title=f"Seed {seed.id}: a's advantage over b, published and ours",
                                   path_stem=out / FIGURES / f"seed-{seed.id}")  # fmt: skip
            )
        for published in seed.tables:
            frame = seeds.published_frame(seed, published.name)
            sub.tables.append(Table(f"Seed {seed.id}, published: {published.caption} (seed lines {published.lines[0]}-{published.lines[1]})", frame))
        finished = len(seed_comparison.seed_run_ids(table, seed))
        reading = reading_section(f"Seed {seed.id}: our reading", discussions.get(seed.id), finished)
        moved = upstream_moves.moved_section(moves[seed.id]) if seed.id in moves else None
        budget = budget_section(table) if seed.id == load_budget().seed.id else None
        sub.subsections += filter(None, [evidence_section(table, lock_summary, seed), budget, moved, reading])
        section.subsections.append(sub)
    claims_frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(CLAIMS_CSV_COLUMNS))
    glance = at_a_glance.glance_table(claims_frame, seed_file, moves)
    section.tables.insert(0, Table(at_a_glance.caption(), glance))
    return section, claims_frame, glance


def boot_seconds(results_dir: Path) -> dict[str, float]:
    """Each boot checkpoint's host seconds, by checkpoint folder name: from the boot's own result.json where
    the checkpoint is on this machine, else from the worker record of the run whose attempt built it
    (runs/<id>/result.json `costs.checkpoint_built`). The run archive keeps the worker records but not the
    checkpoints (gigabytes), so a report on restored runs still counts the hours their boots took."""
    boots = {
        path.parent.name: float(json.loads(path.read_text()).get("host_seconds") or 0)
        for path in sorted(results_dir.glob(f"{CHECKPOINTS}/*/result.json"))
    }
    for record_path in sorted(results_dir.glob(f"{RUNS_FOLDER}/*/{WORKER_RECORD}")):
        try:
            record = json.loads(record_path.read_text())
        except (OSError, ValueError):
            continue  # a run the worker is still writing, or one the analysis reports as unreadable
        built = (record.get("costs") or {}).get("checkpoint_built") if isinstance(record, dict) else None
        checkpoint = record.get("checkpoint") if isinstance(record, dict) else None
        if isinstance(built, dict) and isinstance(checkpoint, str) and Path(checkpoint).name not in boots:
            boots[Path(checkpoint).name] = float(built.get("host_seconds") or 0)
    return boots


def provenance(results: Results, results_dir: Path) -> dict[str, Any]:
    runs = {}
    for run_id, run in sorted(results.runs.items()):
        facts = RunProvenance.of(run.info.result)
        runs[run_id] = {
            "gem5": facts.gem5_version,
            "gem5_extras": facts.gem5_extras,
            "machine": facts.machine_file_label(),
            "kernel_build_id": facts.kernel_build_id,
            "kernel_sha256": facts.kernel_sha256,  # the vmlinux booted: builds of two ids can make the same one
            "image_sha256": facts.image_sha256,
            "command": portable_command(run, results_dir),
        }
    run_seconds = sum(float(run.info.result.get("host_seconds") or 0) for run in results.runs.values())
    boots = boot_seconds(results_dir)
    return {
        "host hours": f"{(run_seconds + sum(boots.values())) / 3600:.2f} ({sum(boots.values()) / 3600:.2f} booting to "
        f"{len(boots)} checkpoint(s), {run_seconds / 3600:.2f} in restored runs)",
        "runs read": len(results.runs),
        "runs left out (failed, not finished, or not in the campaign)": {info.run_id: f"{info.status}: {info.reason}" for info in results.excluded}
        or "none",
        "runs": runs,
    }


def campaign_progress(campaign: Path, results: Results) -> str:
    """How much of the campaign the report reads: a report of a campaign still running says so."""
    declared = {spec.run_id for spec in load_campaign(campaign).runs}
    read = declared & set(results.runs)
    if read == declared:
        return f"The report reads every one of the campaign's {len(declared)} run(s)."
    return (
        f"The campaign is not complete: the report reads {len(read)} of its {len(declared)} run(s); "
        f"a --dry-run of {campaign.name} lists what is left."
    )


def campaign_header(campaign: Path) -> list[str]:
    """The campaign file's leading comment, as paragraphs (how the study is scaled and why)."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in campaign.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if not text:
            if current:
                paragraphs.append(" ".join(current))
            current = []
        elif text.startswith(("./run.sh", "GEM5=")):
            continue  # the usage lines
        elif text.startswith("- "):
            if current:
                paragraphs.append(" ".join(current))
            current = [text[2:]]
        else:
            current.append(text)
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def build_report(results: Results, results_dir: Path, out: Path, title: str, campaign: Path | None = None) -> tuple[Report, dict[str, pd.DataFrame]]:
    with timed_step(f"metrics of {len(results.runs)} run(s)"):
        table = metrics_table(results)
        # Rates and per-hand-off traffic from untraced runs only: a traced run serves the per-lock
        # attribution (its window is another), and averaging it in moved the bound's verdicts (issue 17).
        rated, _traced = split_traced(table, what="report")
        check_groups(kbench_rows(rated), ["machine", "variant", "cpus"], what="hand-off bound")
        bound = handoffs.bound_table(rated)
        discussions = campaign_discussions(campaign) if campaign is not None else {}
        configurations = configurations_table(table)
    with timed_step("hand-off, throughput, NUMA and model figures"):
        throughput = throughput_section(rated, out)
        if not configurations.empty:
            throughput.tables.append(rates_table(configurations))
            sizing = sizing_paragraph(configurations)
            if sizing:
                throughput.paragraphs.append(sizing)
        sections = [handoff_section(rated, bound, out, discussions.get(discussion.HANDOFFS)), throughput, numa_section(rated, out)]
        models, model_rows = model_comparison_section(table, out)
        if models is not None:
            sections.append(models)
    with timed_step("per-lock traffic from the ROI traces (cached per trace)"):
        lock_section, lock_summary = locks_section(results, table, out)
        sections.append(lock_section)
    with timed_step("the teaching page: one hand-off of each lock, message by message"):
        # the folder is the page's alone: a chart an earlier report drew (another run's hand-off) is not left behind
        shutil.rmtree(out / TEACHING_FOLDER, ignore_errors=True)
        teaching = teaching_section(results, table, out)
        if teaching is not None:
            sections.append(teaching)
    with timed_step("hot-line profiles of the traced ROIs (cached per trace)"):
        hot = hotline_tables(results)
        hierarchies = pd.Series([run.machine.hierarchy for run in results.runs.values()], dtype=object)
        sections.append(hotlines_section(hot, hierarchies))
    with timed_step("seed claims, their intervals and curves"):
        planned = None if campaign is None else planned_rows(load_campaign(campaign).runs, set(table["run_id"].astype(str)))
        seeds_part, claims, glance = seeds_section(table, lock_summary, out, discussions, hot, planned)
        sections.append(seeds_part)
        curves, curve_rows = curve_section(table, out)
        if curves is not None:
            sections.append(curves)
    with timed_step("calibration"):
        calibration, calibration_tables = calibration_section(results, table)
        if calibration is not None:
            sections.insert(0, calibration)
    kinds = ", ".join(MACHINE_TITLES.get(k, k) for k in sorted(table["kind"].unique()))
    intro = [
        f"{len(results.runs)} finished run(s) on {kinds}; {len(results.excluded)} run(s) failed, not finished or not in the campaign, "
        "left out (listed under Provenance).",
        "Every number comes from gem5 runs of the lockstudy kernel; the metric definitions are analysis/data/metrics.toml.",
    ]
    if campaign is not None:
        intro.insert(1, campaign_progress(campaign, results))
        sections.insert(0, Section(f"The campaign ({campaign.name})", campaign_header(campaign)))
    # each machine's calibration table is <out>/<machine>.csv: results/calibration/<machine>.csv for its campaign
    tables = {
        "metrics": table,
        "handoff_bound": bound,
        "locks": lock_summary,
        "hotlines": hot.rows,
        "claims": claims,
        "seeds_at_a_glance": glance,
        "configurations": configurations,
        "model_comparison": model_rows,
        "seed_curves": curve_rows,
        **calibration_tables,
    }
    return Report(title, intro, sections, provenance(results, results_dir)), tables


def campaign_discussions(campaign: Path) -> dict[str, discussion.Discussion]:
    """The written reading next to the campaign file (<campaign>.discussion.toml), if any."""
    return discussion.load(discussion.path_for(campaign), {seed.id for seed in seeds.load_seed_file().seeds})


def campaign_name(path: Path) -> str:
    """The campaign's name, the file checked as a launch checks it (CampaignError naming every problem)."""
    return load_campaign(path).name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.sh report")
    parser.add_argument("campaign", type=Path)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        name = campaign_name(args.campaign)
        campaign_discussions(args.campaign)  # a broken discussion file fails before the runs are read
        # Only the runs the campaign declares: a run of an earlier version of it is another configuration.
        declared = {spec.run_id for spec in load_campaign(args.campaign).runs}
        with timed_step(f"reading the finished runs under {args.results}"):
            results, errors = load_results(args.results, None, declared)
        if errors:
            for info, message in errors:
                print(f"report: unreadable run {info.run_id}: {message}", file=sys.stderr)
            return 1
        if not results.runs:
            print(f"report: {args.results}: no finished run", file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        report, tables = build_report(results, args.results, args.out, f"lockstudy: campaign {name}", args.campaign)
    except INPUT_ERRORS + (CampaignError, plots.PlotInputError, plots.PlotRulesError, discussion.DiscussionError, seed_evidence.EvidenceError,
                           CalibrationError, PublishedError) as exc:  # fmt: skip
        for line in messages(exc):
            print(f"report: {line}", file=sys.stderr)
        return 1
    for stem, frame in tables.items():
        if not frame.empty:
            frame.to_csv(args.out / f"{stem}.csv", index=False)
    (args.out / "provenance.json").write_text(json.dumps(report.provenance, indent=2, sort_keys=True) + "\n")
    for path in (write_markdown(report, args.out / "report.md"), write_html(report, args.out / "report.html")):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
