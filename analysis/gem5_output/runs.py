"""Runs of a results folder, their stats, and the one way metrics read a value.

Layouts (found by their result.json files):
- run folders as gem5-configs/run.py writes them: `<dir>/stats.txt`,
  `config.json`, `result.json` (run.py writes result.json with
  `provenance` from the start and status "failed" until it finishes);
- a campaign (lockstudy/campaign/store.py): `runs/<run-id>/result.json`
  (the worker's: run_id, status, reason) with run.py's outputs in
  `runs/<run-id>/out/`. The run id is then the worker's run_id, and the
  run counts only when both result.json files say "ok". A run the
  campaign sees as running, or whose worker died without a result, is
  reported so (run.py's "failed until it finishes" would otherwise stand
  for both).
A boot to a checkpoint (run.py --checkpoint-out, e.g. a campaign's
`checkpoints/<key>/`) has no ROI and is not a run of the results.

`Results.value(run_id, roi, stat, sub)` is the metrics' accessor: the
printed value; 0.0 when gem5 left the stat out because it was zero (only
for the families listed in analysis/data/gem5_stats.toml, and only when
the owning object exists in that dump); otherwise MissingStatError naming
the file, the dump and the stat.
"""

from __future__ import annotations

import json
import os
from array import array
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from analysis.gem5_output import result_schema
from analysis.gem5_output.config_reader import ConfigError, MachineFacts, read_config
from analysis.gem5_output.stat_rules import load_rules
from analysis.gem5_output.stats_reader import SEPARATOR, Dump, StatsFileError, StatsReader, Vocabulary, default_vocabulary
from lockstudy.campaign.store import WORKER_DIED, RunDir, State

STATS_FILE = "stats.txt"
CONFIG_FILE = "config.json"
RESULT_FILE = "result.json"
CAMPAIGN_OUT = "out"  # lockstudy/campaign/store.py: runs/<run-id>/out/
CAMPAIGN_SPEC = "spec.json"  # every campaign run folder has one
ANALYSIS_DIR = "analysis"
OK = "ok"
SINGLE_ELEMENT_SUBS = ("0", "total")
TICK_RATE_STAT = "simFreq"


class MissingStatError(LookupError):
    """A requested stat that is not in the dump and is not a known omitted zero."""


class RunLayoutError(ValueError):
    """A results folder whose runs cannot be found or read."""


@dataclass
class RunInfo:
    run_id: str
    gem5_dir: Path | None  # where stats.txt, config.json and run.py's result.json are
    status: str
    reason: str
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except UnicodeDecodeError as exc:
        raise RunLayoutError(f"{path}: byte {exc.start}: not JSON: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise RunLayoutError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise RunLayoutError(f"{path}: expected a JSON object")
    return data


def _read_result(path: Path) -> dict[str, Any]:
    """A result.json, every field the analysis reads checked (RunLayoutError naming each problem)."""
    data = _read_json(path)
    wrong = result_schema.problems(path, data)
    if wrong:
        raise RunLayoutError("\n".join(wrong))
    return data


def discover_runs(results_dir: Path) -> list[RunInfo]:
    """Every run under `results_dir`, failed ones included (status says which)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise RunLayoutError(f"{results_dir}: not a folder")
    runs: dict[Path, RunInfo] = {}
    workers: dict[Path, dict[str, Any]] = {}
    for path in sorted(results_dir.rglob(RESULT_FILE)):
        relative = path.parent.relative_to(results_dir)
        if relative.parts and relative.parts[0] == ANALYSIS_DIR:
            continue
        data = _read_result(path)
        if "provenance" in data and data["provenance"].get("checkpoint_out"):
            continue  # a boot to a checkpoint (a campaign's checkpoints/ folder): no ROI, nothing to measure
        if "provenance" in data:
            runs[path.parent] = RunInfo(
                run_id=str(relative) if relative.parts else results_dir.name,
                gem5_dir=path.parent,
                status=str(data.get("status", "")),
                reason=str(data.get("reason", "")),
                result=data,
            )
        elif "run_id" in data:
            workers[path.parent] = data
    for folder, info in list(runs.items()):
        if folder.name == CAMPAIGN_OUT and (folder.parent / CAMPAIGN_SPEC).is_file():
            state = _unfinished_campaign_run(folder.parent)
            if state is not None:
                info.run_id = folder.parent.name
                info.status, info.reason = state
                workers.pop(folder.parent, None)  # an earlier attempt's result no longer says how the run stands
    for folder, worker in workers.items():
        inner = runs.get(folder / CAMPAIGN_OUT)
        run_id = str(worker["run_id"])
        if inner is None:
            runs[folder] = RunInfo(run_id, None, "failed" if worker.get("status") == OK else str(worker.get("status")),
                                   str(worker.get("reason") or "the worker's result.json has no gem5-configs/run.py result.json under out/ (gem5 never started, or not a gem5 run)"), {})
            continue
        inner.run_id = run_id
        if worker.get("status") != OK:  # the worker knows how the attempt ended (killed, timed out, failed)
            reasons = [str(worker.get("reason", ""))]
            if not inner.ok and inner.reason not in reasons[0]:
                reasons.append(f"run.py: {inner.reason}")
            inner.status, inner.reason = str(worker.get("status")), "; ".join(r for r in reasons if r)
    found = sorted(runs.values(), key=lambda r: r.run_id)
    if not found:
        raise RunLayoutError(f"{results_dir}: no run found (no {RESULT_FILE} written by gem5-configs/run.py or a campaign worker)")
    return found


def _unfinished_campaign_run(worker_dir: Path) -> tuple[str, str] | None:
    """(status, reason) of a campaign run that is running, or whose worker died, as the campaign
    itself sees it (lockstudy/campaign/store.py); None when its worker recorded how it ended."""
    run = RunDir(worker_dir.parent.parent, worker_dir.name)
    try:
        status = run.status(max_attempts=1)
    except OSError:  # a results copy we may not lock: no live worker there
        return None
    if status.state == State.RUNNING:
        return "running", status.reason
    if status.state == State.DEAD and status.reason.startswith(WORKER_DIED):
        return "dead", status.reason
    return None


@dataclass
class RunStats:
    info: RunInfo
    stats_path: Path
    dumps: list[Dump]
    machine: MachineFacts

    def value(self, roi: int, stat: str, sub: str = "") -> float:
        if not 0 <= roi < len(self.dumps):
            raise MissingStatError(f"{self.stats_path}: no dump {roi} (the file has {len(self.dumps)})")
        dump = self.dumps[roi]
        renamer, zero_rules = load_rules()
        stat, _ = renamer.normalise(stat)
        found = dump.lookup(stat, sub)
        if found is not None:
            return found
        if sub in SINGLE_ELEMENT_SUBS:
            # A vector of one element prints as a bare `name value`, without
            # `::0` or `::total` (text.cc:358-367), e.g. a Ruby controller
            # vector on a machine with one such controller.
            bare = dump.lookup(stat, "")
            if bare is not None:
                return bare
        name = f"{stat}{SEPARATOR}{sub}" if sub else stat
        rule = zero_rules.match(stat, sub)
        if rule is None:
            raise MissingStatError(
                f"{self.stats_path}: dump {roi} (lines {dump.begin_line}-{dump.end_line}): {name} is absent, "
                "and gem5 prints it even when zero (it is not an omitted-when-zero family of analysis/data/gem5_stats.toml)"
            )
        if rule.owner and not dump.has_object(rule.owner):
            raise MissingStatError(
                f"{self.stats_path}: dump {roi}: {name} is absent and so is every stat of {rule.owner}: "
                "no such object in this run (a misspelt name, or another machine)"
            )
        index_type = rule.rule.index_type
        if index_type and sub.isdigit():
            count = self.machine.objects_by_type.get(index_type, 0)
            if int(sub) >= count:
                raise MissingStatError(
                    f"{self.stats_path}: dump {roi}: {name} is absent: element {sub} of a vector over the "
                    f"{count} {index_type} object(s) in config.json"
                )
        return 0.0


@dataclass
class Results:
    runs: dict[str, RunStats]
    excluded: list[RunInfo]

    def value(self, run_id: str, roi: int, stat: str, sub: str = "") -> float:
        try:
            run = self.runs[run_id]
        except KeyError:
            raise MissingStatError(f"no run {run_id!r} among the runs read (excluded: {[r.run_id for r in self.excluded]})") from None
        return run.value(roi, stat, sub)


def read_run(info: RunInfo, vocabulary: Vocabulary | None = None) -> RunStats:
    """A finished run's dumps (one per ROI in result.json's roi_ticks) and machine facts."""
    if info.gem5_dir is None:
        raise RunLayoutError(f"run {info.run_id}: no gem5 output folder")
    stats_path = info.gem5_dir / STATS_FILE
    rois = info.result.get("roi_ticks")
    dumps = list(StatsReader(stats_path, vocabulary).dumps())
    if isinstance(rois, list) and len(dumps) != len(rois):
        kind = "no dumps" if not dumps else f"{len(dumps)} dump(s)"
        raise StatsFileError(stats_path, None, f"has {kind}, but result.json records {len(rois)} ROI(s) (a missing or extra dump)")
    if not dumps:
        raise StatsFileError(stats_path, None, "has no dumps: the run recorded no region of interest")
    # The tick rate as gem5 printed it (simFreq, src/sim/root.cc:68-70) beats the default.
    ticks_per_second = dumps[0].lookup(TICK_RATE_STAT)
    try:
        machine = read_config(info.gem5_dir / CONFIG_FILE, int(ticks_per_second) if ticks_per_second else None)
    except ConfigError as exc:
        raise RunLayoutError(str(exc)) from None
    return RunStats(info, stats_path, dumps, machine)


# --- parallel reading: each worker returns its vocabulary and compact arrays.

def _read_chunk(infos: list[RunInfo]) -> tuple[list[str], list[tuple[str, str]], list[int], list[Any]]:
    # The process's own vocabulary, kept from chunk to chunk: a worker
    # parses each distinct name once, however many chunks it is given.
    vocabulary = default_vocabulary()
    out: list[Any] = []
    for info in infos:
        try:
            run = read_run(info, vocabulary)
        except (StatsFileError, RunLayoutError) as exc:
            out.append((info, str(exc)))
            continue
        dumps = [(d.index, d.begin_line, d.end_line, d.names.tobytes(), d.values.tobytes()) for d in run.dumps]
        out.append((info, (run.machine, dumps)))
    return vocabulary.full_names, vocabulary.metas, vocabulary.name_metas, out


def _merge(vocabulary: Vocabulary, chunk: tuple[list[str], list[tuple[str, str]], list[int], list[Any]]) -> tuple[list[RunStats], list[tuple[RunInfo, str]]]:
    full_names, metas, name_metas, items = chunk
    remap = np.fromiter(
        (vocabulary.intern(name, vocabulary.meta_code(*metas[meta])) for name, meta in zip(full_names, name_metas)),
        dtype=np.int32,
        count=len(full_names),
    )
    runs: list[RunStats] = []
    errors: list[tuple[RunInfo, str]] = []
    for info, payload in items:
        if isinstance(payload, str):
            errors.append((info, payload))
            continue
        machine, dumps = payload
        stats_path = info.gem5_dir / STATS_FILE  # type: ignore[operator]
        read: list[Dump] = []
        for index, begin, end, names, values in dumps:
            dump = Dump(stats_path, index, begin, end, vocabulary)
            dump.names = array("i", remap[np.frombuffer(names, dtype=np.int32)].tobytes())
            dump.values.frombytes(values)
            read.append(dump)
        runs.append(RunStats(info, stats_path, read, machine))
    return runs, errors


def read_runs(infos: list[RunInfo], jobs: int | None = None) -> tuple[list[RunStats], list[tuple[RunInfo, str]]]:
    """Read finished runs, in `jobs` processes; returns (runs, [(run, error)])."""
    jobs = max(1, jobs or os.cpu_count() or 1)
    vocabulary = default_vocabulary()
    if jobs == 1 or len(infos) < 2 * jobs:
        return _merge(vocabulary, _read_chunk(infos))
    size = -(-len(infos) // (jobs * 4))
    chunks = [infos[i : i + size] for i in range(0, len(infos), size)]
    runs: list[RunStats] = []
    errors: list[tuple[RunInfo, str]] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for chunk in pool.map(_read_chunk, chunks):
            more, bad = _merge(vocabulary, chunk)
            runs += more
            errors += bad
    return runs, errors


NOT_DECLARED = "not in the campaign"


def undeclared(info: RunInfo, declared: set[str]) -> bool:
    """A finished campaign run (runs/<id>/out/ beside its spec.json) whose id `declared` lacks. A run
    folder of run.py's own, outside any campaign, is the user's to give and is read as it is."""
    in_campaign = info.gem5_dir is not None and info.gem5_dir.name == CAMPAIGN_OUT and (info.gem5_dir.parent / CAMPAIGN_SPEC).is_file()
    return info.ok and in_campaign and info.run_id not in declared


def load_results(results_dir: Path, jobs: int | None = None, declared: set[str] | None = None) -> tuple[Results, list[tuple[RunInfo, str]]]:
    """Every run of a results folder: failed runs excluded, unreadable ones returned as errors. With
    `declared` (a campaign's run ids), a finished run it does not name is excluded too, as NOT_DECLARED:
    a run of an earlier version of the campaign (another perturbation, a study since split) is another
    configuration and must not be pooled with the campaign's own."""
    infos = discover_runs(results_dir)
    if declared is not None:
        infos = [replace(i, status=NOT_DECLARED, reason="a run the campaign file no longer declares") if undeclared(i, declared) else i
                 for i in infos]  # fmt: skip
    finished = [i for i in infos if i.ok]
    runs, errors = read_runs(finished, jobs)
    return Results({r.info.run_id: r for r in runs}, [i for i in infos if not i.ok]), errors
