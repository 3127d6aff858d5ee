"""The cost section of `run.sh campaign FILE --dry-run`: per run, per checkpoint, totals, notes.

Each rule or reason behind a figure is printed once, as a numbered note,
and the lines cite it: a campaign of a hundred runs has a handful of
groups, and the reader sees which figures share a rule.
"""

from __future__ import annotations

from collections import Counter

from lockstudy.costmodel.model import Estimate, NoPrediction, Prediction
from lockstudy.costmodel.plan import MIB_PER_GIB, SECONDS_PER_HOUR, CampaignCost, CheckpointCost, StudyCost
from lockstudy.costmodel.settings import CostSettings
from lockstudy.costmodel.table import CostRow

MINUTES_PER_HOUR = 60.0


class Notes:
    def __init__(self) -> None:
        self.texts: dict[str, int] = {}

    def cite(self, *predictions: Prediction) -> str:
        numbers = []
        for prediction in predictions:
            text = prediction.rule if isinstance(prediction, Estimate) else prediction.reason
            if text not in self.texts:
                self.texts[text] = len(self.texts) + 1
            if self.texts[text] not in numbers:
                numbers.append(self.texts[text])
        return "".join(f"[{n}]" for n in numbers)

    def lines(self) -> list[str]:
        return [f"  [{number}] {text}" for text, number in self.texts.items()]


def hours(prediction: Prediction) -> str:
    return f"{prediction.value / SECONDS_PER_HOUR:.2f}" if isinstance(prediction, Estimate) else "-"


def gib(prediction: Prediction) -> str:
    return f"{prediction.value / MIB_PER_GIB:.2f}" if isinstance(prediction, Estimate) else "-"


def milliseconds(prediction: Prediction) -> str:
    return f"{prediction.value:.1f}" if isinstance(prediction, Estimate) else "-"


def checkpoint_line(checkpoint: CheckpointCost, notes: Notes) -> str:
    boot = " ".join(checkpoint.boot) or "(default boot)"
    where = f"{checkpoint.machine} {checkpoint.size} {checkpoint.size_unit}, {checkpoint.kernel_build}, {boot}: {len(checkpoint.run_ids)} run(s)"
    if checkpoint.paid:
        return f"  {where}; boot paid (one of its runs is done)"
    if isinstance(checkpoint.host_seconds, NoPrediction):
        return f"  {where}; boot: no prediction {notes.cite(checkpoint.host_seconds)}"
    peak = f"peak {gib(checkpoint.peak_mib)} GiB" if isinstance(checkpoint.peak_mib, Estimate) else "peak memory not predicted"
    return f"  {where}; boot {hours(checkpoint.host_seconds)} host h, {peak} {notes.cite(checkpoint.host_seconds, checkpoint.peak_mib)}"


def study_line(study: StudyCost) -> str:
    where = f"  {study.study}: {study.left} of {study.runs} run(s) left"
    if not study.left:
        return where
    text = f"{where}, {study.run_seconds / SECONDS_PER_HOUR:.2f} core-h of runs + {study.boot_seconds / SECONDS_PER_HOUR:.2f} of boots"
    if study.unpredicted or study.unpredicted_boots:
        text += f"; no prediction for {study.unpredicted} run(s) and {study.unpredicted_boots} boot(s)"
    if study.traced_left:
        predicted = study.traced_left - study.unpredicted_traces
        if predicted:
            text += f"; traced: up to {study.largest_trace_mib / MIB_PER_GIB:.1f} GiB of trace a run"
        if study.unpredicted_traces:
            text += f"; no trace size predicted for {study.unpredicted_traces} traced run(s)"
    return text


def cost_lines(cost: CampaignCost, settings: CostSettings, rows: list[CostRow], slurm: bool) -> list[str]:
    notes = Notes()
    sources = Counter(row.source for row in rows)
    counted = ", ".join(f"{count} {source}" for source, count in sorted(sources.items())) or "none"
    lines = [
        "",
        f"Predicted costs: the cost model fitted now on {settings.table.name} ({len(rows)} row(s): {counted}); [n] are the notes below.",
    ]
    header = f"{'run id':<17} {'cpus':>4} {'ROI ms':>8} {'host h':>7} {'peak GiB':>8} {'trace GiB':>9}"
    if slurm:
        header += f"  {'sbatch':<22}"
    lines.append(header + "  notes")
    for run in cost.runs:
        if run.done:
            lines.append(f"{run.spec.run_id:<17} {run.cpus:>4} {'':>8} {'done':>7} {'':>8} {'':>9}  (not counted)")
            continue
        trace = "" if run.trace_mib is None else gib(run.trace_mib)
        line = f"{run.spec.run_id:<17} {run.cpus:>4} {milliseconds(run.roi_ms):>8} {hours(run.host_seconds):>7} {gib(run.peak_mib):>8} {trace:>9}"
        if slurm:
            request = run.slurm
            mark = "" if request.time_from_model and request.memory_from_model else "*"
            line += f"  {f'--time={request.time_minutes} --mem={request.memory_gb}G{mark}':<22}"
        cited = (run.roi_ms, run.host_seconds, run.peak_mib) + (() if run.trace_mib is None else (run.trace_mib,))
        lines.append(f"{line}  {notes.cite(*cited)}")
    lines.append("")
    lines.append("Boots to a checkpoint, each counted once:")
    lines.extend(checkpoint_line(checkpoint, notes) for checkpoint in cost.checkpoints)
    to_do, unpaid = cost.to_do(), cost.unpaid_checkpoints()
    missing_runs, missing_boots = cost.unpredicted_runs(), cost.unpredicted_checkpoints()
    lines += [
        "",
        f"Total of what is left ({len(to_do)} of {len(cost.runs)} run(s) not done, {len(unpaid)} of {len(cost.checkpoints)} boot(s) not paid):",
        f"  predicted host hours {cost.host_seconds() / SECONDS_PER_HOUR:.2f}, core-hours {cost.core_seconds() / SECONDS_PER_HOUR:.2f}"
        + (" (of the runs and boots predicted)" if missing_runs or missing_boots else ""),
    ]
    if missing_runs or missing_boots:
        limit_hours = sum(r.spec.resources.time_minutes for r in missing_runs) / MINUTES_PER_HOUR
        lines.append(
            f"  no prediction for {len(missing_runs)} run(s) and {len(missing_boots)} boot(s), not in the totals; "
            f"their campaign limits (time_minutes) allow {limit_hours:.1f} host h for those runs"
        )
    lines += ["", "By study, in the campaign's order (a chunk for --only-study; a boot counts with the first study that needs it):"]
    lines.extend(study_line(study) for study in cost.by_study())
    if slurm:
        fallback = [r for r in to_do if not (r.slurm.time_from_model and r.slurm.memory_from_model)]
        lines += [
            "",
            f"Slurm: each array task asks for {settings.margin.describe()} (lockstudy/data/costmodel.toml [slurm]);",
            "  a task's time covers its checkpoint's boot too (the first task of a checkpoint builds it, the others wait).",
        ]
        reserved = sum(r.slurm.time_minutes * r.slurm.host_cpus for r in to_do) / MINUTES_PER_HOUR
        lines.append(f"  the {len(to_do)} task(s) reserve at most {reserved:.1f} core-hours in all (--time x --cpus-per-task)")
        if fallback:
            lines.append(
                f"  * {len(fallback)} task(s) use the campaign file's explicit limits (time_minutes, memory_gb) where the model cannot predict: see their notes"
            )
    lines += ["", "Notes:", *notes.lines()]
    return lines
