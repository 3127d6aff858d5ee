"""Coherence metrics per run and ROI, normalised by the guest's own counts.

The metric definitions are data (analysis/data/metrics.toml: which gem5
stats each metric adds up, with their sources); this module reads them,
applies them to every dump of every run, pairs each ROI with the guest
result of the testcase that ran in it, and builds one table:

  run_id, study (a campaign run's), roi, machine, kind, cpus, nodes,
  line_bytes, kernel_build, boot_args, variant, testcase, copies,
  run_spec, roi_cpu, trace, perturb_ns, perturb_start_us, perturb_seed, start_perturbed,
  sim_seconds,
  ops, ops_per_s (the guest's clock), ops_per_sim_s (simulated ROI time),
  acquisitions, handoffs, handoffs_local, handoffs_remote,
  acquisition_fairness (kbench: Jain's index over the CPUs' acquisitions),
  <metric> ..., <metric>_per_op, _per_acquisition, _per_handoff, _per_sim_s,
  metrics.<name> (the testcase's own scalar measures),
  lockevent.<event> (the kernel's lock event counts over the testcase, where
  built in) and lockevent.<event>_per_op for metrics.toml's [lock_events]

A metric the machine's memory system or CPU model does not have is NaN (a
bus has no invalidation messages of its own; Ruby has no broadcast; the
timing CPU has no branch predictor). A denominator
of zero gives NaN, never infinity or zero.

A Ruby rule may name its `protocol` (MESI_Two_Level and CHI name the
same metric from different stats), a controller `role` (its stat is a
per-event vector with one element per controller version, and only the
versions of that role count: CHI's one Cache machine is every cache
level and the home) and `links = "inter_node"` (only stats of the
network links between switches of different nodes count). Roles,
versions and links come from config.json (config_reader.MachineFacts).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.gem5_output.config_reader import MachineFacts
from analysis.gem5_output.result_schema import is_count, is_number
from analysis.gem5_output.runs import CAMPAIGN_OUT, Results, RunStats
from lockstudy.files import read_toml, typed_field
from lockstudy.run_spec import RunSpecError, parse_run_spec

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "metrics.toml"
HIERARCHIES = ("classic", "ruby")
COMBINES = ("sum", "bucket_weighted")
LINK_SETS = ("inter_node",)  # MachineFacts.inter_node_links
STAT_PATH_SEPARATOR = "."
# config.json names a vector's children with their index zero-padded to the
# vector's width (src/python/m5/params.py:286-288: int_links00 of 12 links),
# stats.txt without padding (int_links0 in a real altix-numa run): compare
# paths with the padding taken off.
INDEX_PADDING = re.compile(r"(?<=[^\d.])0+(?=\d)")
TOTAL_SUB = "total"
SPINLOCK_SWITCH = "lockstudy.spinlock="
SPINLOCK_SETTING = "spinlock"  # /sys/kernel/lockstudy/spinlock, as the guest printed it
# What a kernel booted without lockstudy.spinlock= runs (kernel/variants.toml's default).
DEFAULT_VARIANT = "qspinlock"
NS_PER_SECOND = 1_000_000_000
CAMPAIGN_SPEC = "spec.json"  # lockstudy/campaign/store.py: runs/<id>/spec.json


class MetricsError(ValueError):
    """A metrics file or a run the metrics cannot be computed for; the message says where."""


@dataclass(frozen=True)
class MetricRule:
    name: str
    hierarchy: str
    stat: re.Pattern[str]
    sub: re.Pattern[str]
    combine: str
    required: bool
    description: str
    source: str
    protocol: str | None = None  # None: every protocol of the hierarchy
    role: str | None = None  # only the vector elements of these controllers' versions
    links: str | None = None  # only stats of these links (LINK_SETS)
    nan_when_absent: bool = False  # not required, and no stat matched: NaN (the CPU model has no such unit), not 0
    needs: str | None = None  # a flag result.json's provenance must set, else NaN (stats that older runs got wrong)

    def takes_bare_total(self) -> bool:
        return self.sub.fullmatch(TOTAL_SUB) is not None


@dataclass(frozen=True)
class CopiesArgument:
    """The run-spec argument that is a testcase's number of copies, when its JSON has none."""

    argument: str
    default: int


@dataclass(frozen=True)
class MetricRules:
    rules: tuple[MetricRule, ...]
    derived: dict[str, tuple[str, ...]]
    normalisers: dict[str, str]  # suffix ("per_op") -> guest count column ("ops")
    normalised: tuple[str, ...]
    copies_arguments: dict[str, CopiesArgument] = field(default_factory=dict)  # testcase -> its copies
    lock_events_per_op: tuple[str, ...] = ()  # lock events also given per operation of the whole testcase

    def of(self, hierarchy: str, protocol: str | None = None) -> list[MetricRule]:
        return [rule for rule in self.rules if rule.hierarchy == hierarchy and rule.protocol in (None, protocol)]

    def names(self) -> list[str]:
        seen = dict.fromkeys(rule.name for rule in self.rules)
        return [*seen, *self.derived]


def _field(entry: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return typed_field(entry, key, kind, where, error=MetricsError)


def _regex(text: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise MetricsError(f"{where}: {text!r} is not a regular expression: {exc}") from None


@lru_cache(maxsize=None)
def load_metric_rules(path: Path = DATA_FILE) -> MetricRules:
    data = read_toml(path, MetricsError)
    rules: list[MetricRule] = []
    for index, entry in enumerate(data.get("metric", [])):
        where = f"{path}: metric[{index}]"
        hierarchy = _field(entry, "hierarchy", str, where)
        if hierarchy not in HIERARCHIES:
            raise MetricsError(f"{where}.hierarchy: {hierarchy!r} is not one of {HIERARCHIES}")
        combine = _field(entry, "combine", str, where)
        if combine not in COMBINES:
            raise MetricsError(f"{where}.combine: {combine!r} is not one of {COMBINES}")
        links = entry.get("links")
        if links is not None and links not in LINK_SETS:
            raise MetricsError(f"{where}.links: {links!r} is not one of {LINK_SETS}")
        rules.append(
            MetricRule(
                protocol=_field(entry, "protocol", str, where) if "protocol" in entry else None,
                role=_field(entry, "role", str, where) if "role" in entry else None,
                links=links,
                name=_field(entry, "name", str, where),
                hierarchy=hierarchy,
                stat=_regex(_field(entry, "stat", str, where), f"{where}.stat"),
                sub=_regex(_field(entry, "sub", str, where), f"{where}.sub"),
                combine=combine,
                required=_field(entry, "required", bool, where),
                nan_when_absent=_field(entry, "nan_when_absent", bool, where) if "nan_when_absent" in entry else False,
                needs=_field(entry, "needs", str, where) if "needs" in entry else None,
                description=_field(entry, "description", str, where),
                source=_field(entry, "source", str, where),
            )
        )
    known = {rule.name for rule in rules}
    derived: dict[str, tuple[str, ...]] = {}
    for name, parts in data.get("derived", {}).items():
        missing = [part for part in parts if part not in known]
        if missing:
            raise MetricsError(f"{path}: derived.{name}: {missing} are not metrics of this file")
        derived[name] = tuple(parts)
    normalise = data.get("normalise", {})
    normalised = tuple(_field(normalise, "metrics", list, f"{path}: normalise"))
    unknown = [name for name in normalised if name not in known and name not in derived]
    if unknown:
        raise MetricsError(f"{path}: normalise.metrics: {unknown} are not metrics of this file")
    normalisers = {key: value for key, value in normalise.items() if key != "metrics"}
    copies_arguments = {}
    for testcase, entry in _field(data, "copies_argument", dict, str(path)).items():
        where = f"{path}: copies_argument.{testcase}"
        if not isinstance(entry, dict):
            raise MetricsError(f"{where}: expected a table {{ argument = ..., default = ... }}, got {entry!r}")
        copies_arguments[testcase] = CopiesArgument(_field(entry, "argument", str, where), _field(entry, "default", int, where))
    events = _field(data.get("lock_events", {"per_op": []}), "per_op", list, f"{path}: lock_events")
    bad = [name for name in events if not isinstance(name, str) or not LOCK_EVENT_NAME.fullmatch(name)]
    if bad:
        raise MetricsError(f"{path}: lock_events.per_op: {bad} are not lock event names (kernel/locking/lock_events_list.h)")
    return MetricRules(tuple(rules), derived, normalisers, normalised, copies_arguments, tuple(events))


def _by_stat(run: RunStats, roi: int) -> dict[str, dict[str, float]]:
    grouped: dict[str, dict[str, float]] = defaultdict(dict)
    for stat, sub, value, _unit, _description in run.dumps[roi].entries():
        grouped[stat][sub] = value
    return grouped


def unpadded(path: str) -> str:
    """A SimObject path as stats.txt spells it: vector indices without their zero padding."""
    return INDEX_PADDING.sub("", path)


def _owned_by(stat: str, owners: frozenset[str]) -> bool:
    """Whether the stat belongs to one of these SimObject paths (its name is `<path>.<...>`; indices unpadded)."""
    owners = frozenset(unpadded(owner) for owner in owners)
    head = unpadded(stat)
    while STAT_PATH_SEPARATOR in head:
        head = head.rpartition(STAT_PATH_SEPARATOR)[0]
        if head in owners:
            return True
    return False


def _apply(rule: MetricRule, grouped: dict[str, dict[str, float]], where: str, machine: MachineFacts) -> float:
    """The rule's sum over one dump; NaN when config.json cannot say which controllers or links it covers."""
    versions: frozenset[str] | None = None
    if rule.role is not None:
        found = machine.versions_of(rule.role)
        if not found:
            return math.nan
        versions = frozenset(str(version) for version in found)
    if rule.links is not None and machine.wiring_note:
        return math.nan
    matched = [stat for stat in grouped if rule.stat.fullmatch(stat)]
    if rule.links is not None:
        matched = [stat for stat in matched if _owned_by(stat, machine.inter_node_links)]
    if not matched and rule.required:
        raise MetricsError(f"{where}: metric {rule.name}: no stat matches {rule.stat.pattern!r} (required)")
    if not matched and rule.nan_when_absent:
        return math.nan
    total = 0.0
    for stat in matched:
        subs = grouped[stat]
        if rule.takes_bare_total() and TOTAL_SUB not in subs and "" in subs:
            total += subs[""]
            continue
        for sub, value in subs.items():
            if not rule.sub.fullmatch(sub) or math.isnan(value) or (versions is not None and sub not in versions):
                continue
            total += value * int(sub) if rule.combine == "bucket_weighted" else value
    return total


def roi_metrics(run: RunStats, roi: int, rules: MetricRules | None = None) -> dict[str, float]:
    """Every metric of the run's memory system for one ROI; the others are NaN."""
    rules = rules or load_metric_rules()
    grouped = _by_stat(run, roi)
    where = f"{run.stats_path}: dump {roi}"
    values = {name: math.nan for name in rules.names()}
    provenance = run.info.result.get("provenance", {}) if run.info is not None else {}
    mine = [rule for rule in rules.of(run.machine.hierarchy, run.machine.ruby_protocol) if rule.needs is None or provenance.get(rule.needs) is True]
    for name in dict.fromkeys(rule.name for rule in mine):
        values[name] = sum(_apply(rule, grouped, where, run.machine) for rule in mine if rule.name == name)
    present = {rule.name for rule in mine}
    for name, parts in rules.derived.items():
        if all(part in present for part in parts):
            values[name] = sum(values[part] for part in parts)
    return values


def variant_of(result: dict[str, Any], guest: dict[str, Any]) -> str:
    """The spinlock variant the ROI ran: kbench's own, else the kernel's boot choice."""
    params = guest.get("params", {})
    if isinstance(params, dict) and params.get("variant") not in (None, "", "boot"):
        return str(params["variant"])
    for arg in result.get("provenance", {}).get("boot_args", []) or []:
        if str(arg).startswith(SPINLOCK_SWITCH):
            return str(arg)[len(SPINLOCK_SWITCH) :]
    settings = result.get("guest", {}).get("boot_settings") or {}
    return str(settings.get(SPINLOCK_SETTING, DEFAULT_VARIANT))


def jain_fairness(shares: list[float]) -> float:
    """Jain's fairness index of what each party got: (sum x)^2 / (n sum x^2), 1 when all got the same,
    1/n when one got everything (Jain, Chiu & Hawe, DEC-TR-301, 1984). NaN when there is nothing to share."""
    squares = sum(x * x for x in shares)
    if not shares or squares == 0:
        return math.nan
    return sum(shares) ** 2 / (len(shares) * squares)


def acquisitions_by_cpu(runs: list[dict[str, Any]]) -> list[float]:
    """kbench's per-thread acquisitions of its bench lock, added up per CPU over its runs ([] without them)."""
    by_cpu: dict[int, float] = defaultdict(float)
    for run in runs:
        for thread in run.get("threads") or []:
            by_cpu[int(thread["cpu"])] += float(thread["acquisitions"])
    return [by_cpu[cpu] for cpu in sorted(by_cpu)]


def guest_counts(guest: dict[str, Any]) -> dict[str, float]:
    """The testcase's own counts: ops, and for kbench the bench lock's acquisitions and hand-offs,
    and how evenly its CPUs shared the acquisitions (a NUMA-aware lock may keep the lock on one node)."""
    counted = guest.get("ops_unit") != ""  # runtimed without ops= (dbench) prints ops 0 and no unit: no count
    counts = {
        "ops": float(guest.get("ops", math.nan)) if counted else math.nan,
        "ops_per_s": float(guest.get("ops_per_s", math.nan)) if counted else math.nan,
        "acquisitions": math.nan,
        "handoffs": math.nan,
        "handoffs_local": math.nan,
        "handoffs_remote": math.nan,
        "acquisition_fairness": math.nan,
    }
    runs = guest.get("metrics", {}).get("runs") if isinstance(guest.get("metrics"), dict) else None
    if guest.get("testcase") == "kbench" and isinstance(runs, list):
        counts["acquisitions"] = float(sum(run["acquisitions"] for run in runs))
        counts["acquisition_fairness"] = jain_fairness(acquisitions_by_cpu(runs))
        for key in ("handoffs", "handoffs_local", "handoffs_remote"):
            counts[key] = float(guest["counters"][key])
    return counts


GUEST_METRIC_PREFIX = "metrics."
LOCK_EVENT_PREFIX = "lockevent."  # the kernel's lock event counters (kernel/patches/README-switches.md)
LOCK_EVENT_NAME = re.compile(r"[a-z][a-z0-9_]*")


def guest_metrics(guest: dict[str, Any]) -> dict[str, float]:
    """The testcase's own scalar measures (its JSON's `metrics`), as `metrics.<name>` columns
    (dbench's throughput_mb_s: dbench counts no operations of ours)."""
    metrics = guest.get("metrics")
    if not isinstance(metrics, dict):
        return {}
    return {
        GUEST_METRIC_PREFIX + name: float(value)
        for name, value in metrics.items()
        if is_number(value)
    }


def lock_events_per_op(entry: dict[str, Any], guest: dict[str, Any], events: tuple[str, ...]) -> dict[str, float]:
    """The named lock events per operation of the whole testcase (metrics.toml [lock_events]): the count
    over ops x (warmup + iterations) / iterations, or over ops + warmup_ops where the testcase counts
    its warm-up's operations itself (kbench, whose warm-up is timed). NaN for a kernel without the
    counters, and for a testcase timed in seconds, whose warm-up's operations are not counted."""
    counts = entry.get("lock_event_counts")
    ops, warmup, iterations, warmup_ops = (guest.get(key) for key in ("ops", "warmup", "iterations", "warmup_ops"))
    if is_number(ops) and is_number(warmup_ops) and ops + warmup_ops:
        whole = float(ops + warmup_ops)
    elif all(is_number(value) for value in (ops, warmup, iterations)) and iterations and ops:
        whole = ops * (warmup + iterations) / iterations
    else:
        whole = math.nan
    rates = {}
    for name in events:
        count = counts.get(name) if isinstance(counts, dict) else None
        usable = is_count(count) and not math.isnan(whole)
        rates[f"{LOCK_EVENT_PREFIX}{name}_per_op"] = count / whole if usable else math.nan  # type: ignore[operator]
    return rates


def lock_event_columns(entry: dict[str, Any]) -> dict[str, float]:
    """The kernel's lock event counters over the testcase (smp-lockevents build, /init's
    LOCKSTUDY-LOCKEVENTS line), as `lockevent.<event>` columns; none for other kernels."""
    counts = entry.get("lock_event_counts")
    if not isinstance(counts, dict):
        return {}
    return {
        LOCK_EVENT_PREFIX + name: float(value)
        for name, value in counts.items()
        if is_count(value)
    }


def copies_of(guest: dict[str, Any], spec: str | None, roi: int, rules: MetricRules) -> float:
    """How many copies of the testcase ran: its JSON's, else its run-spec argument (dbench's clients)."""
    if "copies" in guest:
        return float(guest["copies"])
    copies = rules.copies_arguments.get(str(guest.get("testcase")))
    if copies is None or not spec:
        return math.nan
    try:
        items = parse_run_spec(spec)
    except RunSpecError as exc:
        raise MetricsError(f"run spec {spec!r}: {exc}") from None
    if roi >= len(items) or items[roi].testcase != guest.get("testcase"):
        raise MetricsError(
            f"run spec {spec!r}: ROI {roi} ran {guest.get('testcase')!r}, which is not the spec's item {roi}"
        )
    value = items[roi].params.get(copies.argument, copies.default)
    try:
        return float(value)
    except ValueError:
        raise MetricsError(f"run spec {spec!r}: {copies.argument}={value!r} is not a number of copies") from None


def _ratio(numerator: float, denominator: float) -> float:
    if math.isnan(numerator) or math.isnan(denominator) or denominator == 0:
        return math.nan
    return numerator / denominator


def study_of(run: RunStats) -> str:
    """The campaign study of a campaign run (runs/<id>/spec.json next to out/); "" otherwise."""
    if run.info.gem5_dir is None:
        return ""
    spec = run.info.gem5_dir.parent / CAMPAIGN_SPEC
    if run.info.gem5_dir.name != CAMPAIGN_OUT or not spec.is_file():
        return ""
    return str(json.loads(spec.read_text()).get("study", ""))


def perturbation_of(provenance: dict[str, Any]) -> tuple[float, float, float]:
    """(perturb_ns, perturb_start_us, perturb_seed) of a run: result.json's provenance.perturbation,
    (0, 0, NaN) when unperturbed. The sizes are part of a configuration; the seed tells its repeats apart."""
    perturbation = provenance.get("perturbation")
    if not isinstance(perturbation, dict):
        return 0.0, 0.0, math.nan
    values = {
        "memory_latency_var_ns": perturbation.get("memory_latency_var_ns", 0),
        "start_delay_max_us": perturbation.get("start_delay_max_us", 0),
        "seed": perturbation.get("seed", math.nan),
    }
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MetricsError(f"result.json provenance.perturbation.{name}: {value!r} is not a number")
    return float(values["memory_latency_var_ns"]), float(values["start_delay_max_us"]), float(values["seed"])


def start_perturbed(result: dict[str, Any]) -> float:
    """1.0 when a start-perturbed run's switch came its drawn delay after the guest asked, 0.0 when the
    ROI began first (the whole set-up ran on the fast-forward CPU: the start was not perturbed), NaN for
    a run without start perturbation."""
    delay_ns = (result.get("provenance", {}).get("perturbation") or {}).get("start_delay_ns")
    switched = result.get("switched_to_roi_cpu") or {}
    ticks_per_second = result.get("ticks_per_second")
    if delay_ns is None or "asked_tick" not in switched or not ticks_per_second:
        return math.nan
    delay_ticks = delay_ns * ticks_per_second // NS_PER_SECOND
    return 1.0 if switched["tick"] - switched["asked_tick"] >= delay_ticks else 0.0


def run_rows(run: RunStats, rules: MetricRules | None = None) -> list[dict[str, Any]]:
    """One row per ROI of a run: identity, guest counts, metrics, normalised metrics."""
    rules = rules or load_metric_rules()
    result = run.info.result
    provenance = result.get("provenance", {})
    machine = provenance.get("machine", {})
    entries = result.get("guest", {}).get("results", [])
    guests = [entry.get("result", {}) for entry in entries]
    if len(guests) != len(run.dumps):
        raise MetricsError(
            f"{run.info.gem5_dir}: {len(run.dumps)} ROI dump(s) in stats.txt but {len(guests)} testcase result(s) "
            "in result.json: each testcase is one ROI, so they must pair up"
        )
    study = study_of(run)
    perturb_ns, perturb_start_us, perturb_seed = perturbation_of(provenance)
    rows = []
    for roi, guest in enumerate(guests):
        row: dict[str, Any] = {
            "run_id": run.info.run_id,
            "study": study,
            "roi": roi,
            "machine": machine.get("name"),
            "kind": machine.get("kind"),
            "cpus": machine.get("cpus", run.machine.num_cpus),
            "nodes": machine.get("nodes", 1),
            "line_bytes": machine.get("line_bytes", run.machine.line_bytes),
            "kernel_build": provenance.get("kernel", {}).get("build_info", {}).get("build"),
            "boot_args": " ".join(provenance.get("boot_args", []) or []),
            "variant": variant_of(result, guest),
            "testcase": guest.get("testcase"),
            "copies": copies_of(guest, provenance.get("run_spec"), roi, rules),
            "run_spec": provenance.get("run_spec"),
            "roi_cpu": provenance.get("roi_cpu"),
            # traced runs serve attribution only (analysis/statistics/pooling.py)
            "trace": provenance.get("trace"),
            "perturb_ns": perturb_ns,
            "perturb_start_us": perturb_start_us,
            "start_perturbed": start_perturbed(result),
            "perturb_seed": perturb_seed,
            "sim_seconds": run.value(roi, "simSeconds"),
        }
        row.update(guest_counts(guest))
        row.update(guest_metrics(guest))
        row.update(lock_event_columns(entries[roi]))
        row.update(lock_events_per_op(entries[roi], guest, rules.lock_events_per_op))
        # Rates use gem5's simulated ROI time, whatever clock the guest had.
        row["ops_per_sim_s"] = _ratio(row["ops"], row["sim_seconds"])
        metrics = roi_metrics(run, roi, rules)
        row.update(metrics)
        for suffix, denominator in rules.normalisers.items():
            for name in rules.normalised:
                row[f"{name}_{suffix}"] = _ratio(metrics[name], row[denominator])
        rows.append(row)
    return rows


def metrics_table(results: Results, rules: MetricRules | None = None) -> pd.DataFrame:
    rows = [row for run_id in sorted(results.runs) for row in run_rows(results.runs[run_id], rules)]
    return pd.DataFrame(rows)
