"""The tidy table: one row per run x ROI x stat x sub, with provenance.

Columns:
  run_id, roi                 which run and which dump (dump index = ROI index)
  stat, sub, value, unit      as gem5 printed them (stat in gem5 v24 naming;
                              sub "" for a scalar, else the vector element,
                              2-D column, distribution field or bucket)
  renamed_from                the name in the file when it was an older
                              gem5's name, else ""
  roi_start_tick, roi_end_tick   from result.json's roi_ticks
  + provenance columns from result.json (PROVENANCE_COLUMNS) and the
    machine facts from config.json (MACHINE_COLUMNS).

Only printed values are rows: stats gem5 omitted as zero are not
invented here (Results.value() gives them as 0.0 by rule).
String columns are categorical, so a thousand runs stay small.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from analysis.gem5_output.runs import RunStats
from analysis.gem5_output.stats_reader import Vocabulary, default_vocabulary
from lockstudy.gem5 import extras_label


def _join(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _get(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)  # type: ignore[assignment]
    return data


# column -> how to read it from result.json (gem5-configs/run.py provenance()).
PROVENANCE_COLUMNS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "status": lambda r: r.get("status"),
    "gem5_version": lambda r: _get(r, "provenance", "gem5_version"),
    "gem5_extras": lambda r: extras_label(_get(r, "provenance", "gem5_extras") or {}),
    "machine": lambda r: _get(r, "provenance", "machine", "name"),
    "machine_kind": lambda r: _get(r, "provenance", "machine", "kind"),
    "machine_sha256": lambda r: _get(r, "provenance", "machine", "sha256"),
    "kernel_sha256": lambda r: _get(r, "provenance", "kernel", "sha256"),
    "boot_args": lambda r: _join(_get(r, "provenance", "boot_args")),
    "run_spec": lambda r: _get(r, "provenance", "run_spec"),
    "roi_cpu": lambda r: _get(r, "provenance", "roi_cpu"),
    "trace": lambda r: _get(r, "provenance", "trace"),
    "checkpoint_in": lambda r: _get(r, "provenance", "checkpoint_in"),
}
MACHINE_COLUMNS: dict[str, Callable[[RunStats], Any]] = {
    "cpus": lambda run: run.machine.num_cpus,
    "hierarchy": lambda run: run.machine.hierarchy,
    "ruby_protocol": lambda run: run.machine.ruby_protocol,
    "line_bytes": lambda run: run.machine.line_bytes,
}


def _categorical(codes: np.ndarray, categories: list[Any]) -> pd.Categorical:
    labels = ["" if c is None else str(c) for c in categories]
    unique: dict[str, int] = {}
    recode = np.empty(len(labels), dtype=np.int32)
    for i, label in enumerate(labels):
        recode[i] = unique.setdefault(label, len(unique))
    return pd.Categorical.from_codes(recode[codes] if len(codes) else codes, categories=list(unique))


def stats_table(runs: list[RunStats], vocabulary: Vocabulary | None = None) -> pd.DataFrame:
    vocabulary = vocabulary or default_vocabulary()
    names = vocabulary.names
    name_codes: list[np.ndarray] = []
    values: list[np.ndarray] = []
    run_of_row: list[np.ndarray] = []
    roi_of_row: list[np.ndarray] = []
    tick_rows: list[tuple[int, int]] = []
    for run_number, run in enumerate(runs):
        ticks = run.info.result.get("roi_ticks") or []
        for dump in run.dumps:
            count = len(dump)
            name_codes.append(np.frombuffer(dump.names, dtype=np.int32))
            values.append(np.frombuffer(dump.values, dtype=np.float64))
            run_of_row.append(np.full(count, run_number, dtype=np.int32))
            roi_of_row.append(np.full(count, dump.index, dtype=np.int32))
            start, end = (ticks[dump.index] if dump.index < len(ticks) else (-1, -1))
            tick_rows.append((int(start), int(end)))
    codes = np.concatenate(name_codes) if name_codes else np.empty(0, dtype=np.int32)
    run_index = np.concatenate(run_of_row) if run_of_row else np.empty(0, dtype=np.int32)
    dump_number = np.repeat(np.arange(len(tick_rows)), [len(v) for v in values]) if values else np.empty(0, dtype=np.int64)
    ticks_array = np.array(tick_rows, dtype=np.int64).reshape(-1, 2)

    units = [vocabulary.metas[m][0] for m in vocabulary.name_metas]
    columns: dict[str, Any] = {
        "run_id": _categorical(run_index, [run.info.run_id for run in runs]),
        "roi": np.concatenate(roi_of_row) if roi_of_row else np.empty(0, dtype=np.int32),
        "stat": _categorical(codes, [n[0] for n in names]),
        "sub": _categorical(codes, [n[1] for n in names]),
        "value": np.concatenate(values) if values else np.empty(0),
        "unit": _categorical(codes, units),
        "renamed_from": _categorical(codes, [n[2] for n in names]),
        "roi_start_tick": ticks_array[dump_number, 0] if len(codes) else np.empty(0, dtype=np.int64),
        "roi_end_tick": ticks_array[dump_number, 1] if len(codes) else np.empty(0, dtype=np.int64),
    }
    for column, read in PROVENANCE_COLUMNS.items():
        columns[column] = _categorical(run_index, [read(run.info.result) for run in runs])
    for column, read_machine in MACHINE_COLUMNS.items():
        per_run = [read_machine(run) for run in runs]
        if per_run and all(isinstance(v, int) for v in per_run):
            columns[column] = np.array(per_run, dtype=np.int64)[run_index]
        else:
            columns[column] = _categorical(run_index, per_run)
    return pd.DataFrame(columns)


def runs_table(runs: list[RunStats], excluded: list[Any], errors: list[tuple[Any, str]]) -> pd.DataFrame:
    """One row per run found: read, excluded (failed) or unreadable, with why."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        row = {"run_id": run.info.run_id, "state": "read", "reason": "", "dumps": len(run.dumps), "stats_file": str(run.stats_path)}
        row.update({c: read(run.info.result) for c, read in PROVENANCE_COLUMNS.items()})
        row["machine_facts"] = json.dumps(run.machine.summary(), sort_keys=True)
        rows.append(row)
    for info in excluded:
        rows.append({"run_id": info.run_id, "state": "excluded", "reason": f"status {info.status}: {info.reason}", "dumps": 0, "stats_file": ""})
    for info, message in errors:
        rows.append({"run_id": info.run_id, "state": "unreadable", "reason": message, "dumps": 0, "stats_file": ""})
    return pd.DataFrame(rows)


def write_table(frame: pd.DataFrame, folder: Path, stem: str) -> list[Path]:
    """<stem>.parquet and <stem>.csv in `folder`, each written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, write in ((".parquet", lambda f, p: f.to_parquet(p, index=False)), (".csv", lambda f, p: f.to_csv(p, index=False))):
        target = folder / f"{stem}{suffix}"
        partial = target.with_name(target.name + ".partial")
        write(frame, partial)
        partial.replace(target)
        written.append(target)
    return written
