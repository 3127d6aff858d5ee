"""What one point of a report chart is: the mean of one configuration's repeats, and the line it is on.

A chart point is a mean over runs; it must be of one configuration's
repeats (analysis/statistics/pooling.py check_groups refuses anything
else, naming the keys the runs differ in). A chart line is named by what
tells its runs apart at one size: the kernel build, a boot switch or the
CPU model, a run-spec parameter (kbench's placement=shared|padded), the
thread count where it is not the CPUs'. A chart's x axis is the CPUs,
or the workload's copies where those, not the machine, are its size
(`throughput_x`).
"""

from __future__ import annotations

import pandas as pd

from analysis.statistics.intervals import mean_interval
from analysis.statistics.pooling import check_groups, key_text, row_parameters

# Configuration columns that may tell runs of one chart line at one size apart; each is shown in the
# line's name only where it does (the kernel build and the thread count have forms of their own).
TELLING_COLUMNS = ["variant", "boot_args", "roi_cpu", "perturb_ns", "perturb_start_us"]


def mean_by(frame: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """The mean of `value` per group of `keys`; PoolingError when a group mixes traced with untraced
    runs or timed windows (analysis/statistics/pooling.py)."""
    check_groups(frame, keys, what=f"mean of {value}")
    return frame.groupby(keys, as_index=False)[value].mean()


def mean_and_interval_by(frame: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """`mean_by` with each group's confidence interval of the mean (ci_low, ci_high; NaN for one run)."""
    check_groups(frame, keys, what=f"mean of {value}")
    rows = []
    for group_keys, group in frame.groupby(keys):
        values = group[value].dropna().astype(float).tolist()
        if not values:
            continue
        interval = mean_interval(values, what=f"{value} at {dict(zip(keys, group_keys))}")
        rows.append({**dict(zip(keys, group_keys)), value: interval.estimate, "ci_low": interval.low, "ci_high": interval.high})
    return pd.DataFrame(rows, columns=[*keys, value, "ci_low", "ci_high"])


# The kernel build a run booted: runs of several builds are never one throughput line.
BUILD_COLUMN = "kernel_build"

# A throughput chart's x axis: the column that is the size, and how the axis names it.
SIZE_AXES = {"cpus": "CPUs", "copies": "copies (the workload's threads, clients or processes)"}
SIZE_UNITS = {"cpus": "CPU(s)", "copies": "copies"}  # a size written after its number, in a dot chart's row


LINES, DOTS = "lines", "dots"


def chart_kind(points: pd.DataFrame, series: str, x: str) -> str | None:
    """How a chart of `points` against size `x` reads: None when no series has two sizes (the rates table
    says all such a chart would); LINES when at least half its series have two sizes or more; else DOTS,
    since most lines would be one dot each, stacked at one x and named only in the legend (dd1b's twelve
    fd-lock configurations on one CPU, one line at two)."""
    sizes = points.groupby(series)[x].nunique()
    if sizes.max() < 2:
        return None
    return LINES if (sizes >= 2).sum() * 2 >= len(sizes) else DOTS


def dot_labels(points: pd.DataFrame, series: str, x: str) -> list[str]:
    """Each point's row in a dot chart: its series and its size ("lockstudy.fdlock=none, smp, 2 CPU(s)")."""
    return [f"{name}, {key_text(at)} {SIZE_UNITS[x]}" for name, at in zip(points[series], points[x])]


# kbench's lock= (lockstudy-bench-rwsem.patch): a chart of the spinlock variants leaves the rwsem's runs out
KBENCH_LOCK, KBENCH_SPINLOCK = "lock", "spinlock"


def spinlock_bench_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The kbench rows that bench a spinlock variant: not the bench's rwsem (kbench lock=rwsem, seed 003's
    wakers), whose series would be named by a spinlock variant it does not run (its wait_lock's, the boot
    one). Its runs are judged in its seed's section."""
    return rows[[params.get(KBENCH_LOCK, KBENCH_SPINLOCK) == KBENCH_SPINLOCK for params in row_parameters(rows)]]


def kbench_parts(rows: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame]]:
    """A kbench chart's runs, one part per kernel build, the build with the most runs first (None: all of
    one build). A build with a bench patch of its own (the lock pair's smp-bench-pair) runs configurations
    the others cannot, and four more lines on the sweep's chart left it too crowded to read."""
    if not builds_vary(rows):
        return [(None, rows)]
    counts = rows[BUILD_COLUMN].value_counts(dropna=False)
    return [(str(build), rows[rows[BUILD_COLUMN] == build]) for build in counts.index]


def throughput_x(rows: pd.DataFrame) -> str:
    """A throughput chart's size axis: "copies" where the workload's copies, not the machine, are its size
    (pft runs 1 and 2 threads on one 2-CPU node, and its threads, as the seed's, go 1, 2, 4 ... 32, the
    machine sized to them), else "cpus". Every row must give its copies; at one CPU count, some runs
    must run other copies than others. A workload whose copies follow the CPUs (kbench) or stay fixed
    while the CPUs grow (fsmix's 8 threads on 1 to 8 CPUs) keeps the CPUs."""
    if "copies" not in rows or rows["copies"].isna().any():
        return "cpus"
    return "copies" if bool((rows.groupby("cpus")["copies"].nunique() > 1).any()) else "cpus"


def throughput_series(rows: pd.DataFrame, series: str, x: str = "cpus") -> pd.Series:
    """Each run's line in a throughput chart against size `x` (`throughput_x`): its variant or boot, with
    its kernel build where the rows hold several, any TELLING_COLUMNS value or run-spec parameter that
    tells runs apart at one size ("cna, roi_cpu=o3", "qspinlock, placement=shared"), and the other size:
    against CPUs, the thread count where a run has fewer copies than CPUs (pft's 1-thread point on a
    2-CPU node); against copies, the CPUs where one copies count ran on several. Other
    configurations, never one mean."""
    builds = builds_vary(rows)
    parameters = row_parameters(rows)
    telling = telling_parameters(rows, series, parameters, x)
    columns = [column for column in TELLING_COLUMNS if column != series and column in rows and _varies_within(rows, series, column, x)]
    cpus_tell = x == "copies" and _varies_within(rows, series, "cpus", x)
    labels = []
    for row, params in zip(rows.itertuples(index=False), parameters):
        label = str(getattr(row, series))
        if builds:
            label += f", {row.kernel_build}"
        label += "".join(f", {column}={getattr(row, column)}" for column in columns)
        # only the parameters a run's spec gives: the sweep's "cna", not "cna, placement=-"
        label += "".join(f", {name}={params[name]}" for name in telling if name in params)
        copies = getattr(row, "copies", None)
        # fewer, not more: a spec that runs more copies than the smaller sizes' CPUs (fsmix's 8
        # threads from 1 to 8 CPUs) is one line, whose copies do not follow the size
        if x == "cpus" and copies is not None and pd.notna(copies) and float(copies) < float(row.cpus):
            label += f", {float(copies):g} thread(s)"
        if cpus_tell:
            label += f", {float(row.cpus):g} CPUs"
        labels.append(label)
    return pd.Series(labels, index=rows.index, dtype=object)


def builds_vary(rows: pd.DataFrame) -> bool:
    """Whether `rows` ran on more than one kernel build: then each throughput line's name carries its build."""
    return bool(rows[BUILD_COLUMN].nunique(dropna=False) > 1) if BUILD_COLUMN in rows else False


def throughput_legend(rows: pd.DataFrame, series: str) -> str:
    """The legend's title over `throughput_series` names: the series column, and the kernel build where the
    names carry it. fsmix's legend said "boot_args" over "default boot, smp" and "default boot,
    smp-packed", whose difference is the build, not a boot argument."""
    return f"{series} and {BUILD_COLUMN}" if builds_vary(rows) else series


def _varies_within(rows: pd.DataFrame, series: str, column: str, x: str) -> bool:
    return bool((rows.groupby([series, x])[column].nunique(dropna=False) > 1).any())


def telling_parameters(rows: pd.DataFrame, series: str, parameters: list[dict[str, str]], x: str = "cpus") -> list[str]:
    """The run-spec parameters that tell runs of one series value at one size `x` apart (kbench's
    placement=shared|padded): a chart line per value, never one mean over both. A parameter that only
    follows the size (pft's threads) or the series (kbench's variant) tells nothing and is left out."""
    names: set[str] = set()
    groups: dict[tuple[str, float], list[dict[str, str]]] = {}
    for value, size, params in zip(rows[series], rows[x], parameters):
        groups.setdefault((str(value), float(size)), []).append(params)
    for members in groups.values():
        for name in {name for params in members for name in params}:
            if len({params.get(name) for params in members}) > 1:
                names.add(name)
    return sorted(names)
