"""What moved where: the coherence traffic behind each seed's claim, from our runs.

A seed's claim is about throughput; its explanation is in the traffic.
For each seed, analysis/data/seeds.toml names the metric columns that
carry the explanation (`evidence`, e.g. ownership requests per operation
for false sharing on a bus) and the registry's locks whose cache lines
matter (`locks`, name prefixes such as "dentry:"). This module turns our
runs of the seed's study into two tables:

- `configuration_table`: one row per configuration of the study (the
  seed's variant name, our kernel build and boot arguments, workload,
  size), with the number of runs, `ops_per_sim_s` and each evidence
  metric, the mean over repeats;
- `lock_table`: for traced runs, one row per configuration and lock line
  of the seed: invalidations, forwards and home-bank requests on the
  lock's line per operation of the workload, and the requests for other
  data on that line (false sharing).
"""

from __future__ import annotations

import pandas as pd

from analysis.seed_verdicts.seed_comparison import CPU_MODEL, OUR_METRIC, study_rows
from analysis.seed_verdicts.seeds import Seed
from analysis.statistics.pooling import window_of

NO_VARIANT = "-"  # a run of ours that stands for none of the seed's variants (an extra point)
# trace and the timed window are part of a configuration: traced runs and runs of other windows
# are never averaged with the others (analysis/statistics/pooling.py), they get rows of their own;
# so is the run spec, whose other parameters can tell apart two extra points of one build (kbench's
# placement, on a run standing for no variant).
CONFIGURATION = ["seed_variant", "condition", "kernel_build", "boot_args", "run_spec", "testcase", "cpus", "nodes", "copies", CPU_MODEL,
                 "trace", "window"]  # fmt: skip
UNKNOWN_TRACE = "unknown"  # a metrics table without the trace column (older than it)
LOCK_COUNTS = ["invalidations", "forwards", "home_requests"]


class EvidenceError(ValueError):
    """seeds.toml names evidence our metrics table does not have."""


def seed_variant(kernel_build: str, boot_args: str, seed: Seed, run_spec: str = "") -> str:
    """The seed's name for the configuration a run of ours stands for, or NO_VARIANT; `seed` as one
    condition sees it (Seed.under)."""
    for name, variant in seed.variants.items():
        if variant.selects and variant.stands_for(kernel_build, boot_args, run_spec):
            return name
    return NO_VARIANT


def _labelled(table: pd.DataFrame, seed: Seed) -> pd.DataFrame:
    """The runs of the seed's studies (each condition's), each with the variant it stands for and the
    condition(s) under which it does ("as-shipped, precondition" for a run both share, such as a UP
    kernel's); a run standing for none keeps NO_VARIANT and no condition."""
    labels: dict[object, tuple[str, list[str]]] = {}
    frames = []
    for condition in seed.declared_conditions():
        view = seed.under(condition)
        rows = study_rows(table, view)
        frames.append(rows)
        specs = rows["run_spec"].fillna("") if "run_spec" in rows else pd.Series("", index=rows.index)
        for index, build, boot, spec in zip(rows.index, rows["kernel_build"], rows["boot_args"].fillna(""), specs):
            name = seed_variant(str(build), str(boot), view, str(spec))
            known, under = labels.get(index, (NO_VARIANT, []))
            if name != NO_VARIANT and known in (NO_VARIANT, name):
                labels[index] = (name, under + [condition])
            elif index not in labels:
                labels[index] = (NO_VARIANT, [])
    rows = pd.concat(frames).loc[lambda frame: ~frame.index.duplicated()].copy() if frames else table.iloc[0:0].copy()
    rows["boot_args"] = rows["boot_args"].fillna("")
    rows["run_spec"] = rows["run_spec"].fillna("") if "run_spec" in rows else ""
    rows["seed_variant"] = [labels[index][0] for index in rows.index]
    rows["condition"] = [", ".join(labels[index][1]) for index in rows.index]
    rows["trace"] = rows["trace"].fillna("") if "trace" in rows else UNKNOWN_TRACE
    rows["window"] = [window_of(row) for _, row in rows.iterrows()] if not rows.empty else []
    return rows


def configuration_table(table: pd.DataFrame, seed: Seed) -> pd.DataFrame:
    """Per configuration of the seed's study: runs, throughput and the evidence metrics (means)."""
    missing = [name for name in seed.evidence if name not in table.columns]
    if missing and not table.empty:
        raise EvidenceError(
            f"analysis/data/seeds.toml: seed {seed.id}: evidence {missing} is not a column of the metrics table "
            "(analysis/data/metrics.toml names them; per-operation columns end in _per_op)"
        )
    rows = _labelled(table, seed)
    rates = list(dict.fromkeys([OUR_METRIC, *(w.rate for w in seed.workloads if w.rate in table.columns)]))
    columns = CONFIGURATION + ["runs", *rates, *seed.evidence]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    values = [*rates, *seed.evidence]
    grouped = rows.groupby(CONFIGURATION, dropna=False)
    out = grouped[values].mean().reset_index()
    out.insert(len(CONFIGURATION), "runs", grouped["run_id"].nunique().to_numpy())
    return out[columns].sort_values(["testcase", "cpus", "nodes", "seed_variant", "boot_args"]).reset_index(drop=True)


def lock_table(lock_summary: pd.DataFrame, table: pd.DataFrame, seed: Seed) -> pd.DataFrame:
    """Per configuration and lock of the seed (traced runs): traffic on the lock's line per operation."""
    columns = ["seed_variant", "condition", "boot_args", "run_spec", "testcase", "nodes", CPU_MODEL, "lock", "runs", *(f"{c}_per_op" for c in LOCK_COUNTS),
               "requests_other_on_line"]  # fmt: skip
    if not seed.locks or lock_summary.empty:
        return pd.DataFrame(columns=columns)
    rows = _labelled(table, seed)
    ops = rows.groupby("run_id", as_index=False).agg(ops=("ops", "sum"), seed_variant=("seed_variant", "first"), condition=("condition", "first"),
                                                     boot_args=("boot_args", "first"), run_spec=("run_spec", "first"), testcase=("testcase", "first"),
                                                     nodes=("nodes", "first"), **{CPU_MODEL: (CPU_MODEL, "first")})  # fmt: skip
    locks = lock_summary[lock_summary["lock"].str.startswith(seed.locks)][["run_id", "lock", *LOCK_COUNTS, "requests_other_on_line"]]
    joined = locks.merge(ops, on="run_id", how="inner")
    joined = joined[joined["ops"] > 0]
    if joined.empty:
        return pd.DataFrame(columns=columns)
    # Dynamic locks carry the process id in their name ("mm:171 mmap_lock"): one lock per run.
    joined["lock"] = joined["lock"].str.replace(r":\d+ ", ":<pid> ", regex=True)
    for count in LOCK_COUNTS:
        joined[f"{count}_per_op"] = joined[count] / joined["ops"]
    keys = ["seed_variant", "condition", "boot_args", "run_spec", "testcase", "nodes", CPU_MODEL, "lock"]
    grouped = joined.groupby(keys)
    out = grouped[[f"{c}_per_op" for c in LOCK_COUNTS] + ["requests_other_on_line"]].mean().reset_index()
    out.insert(len(keys), "runs", grouped["run_id"].nunique().to_numpy())
    return out[columns].sort_values(["testcase", "nodes", "lock", "seed_variant"]).reset_index(drop=True)
