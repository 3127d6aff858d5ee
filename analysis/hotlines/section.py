"""The report's "Hot lines": the top lines of each traced study, and what has no per-line trace."""

from __future__ import annotations

import pandas as pd

from analysis.hotlines.rules import load_rules
from analysis.hotlines.table import HotlineTables, study_lines, study_objects, traced_groups
from analysis.reporting.report_render import Section, Table

OUTSIDE_CAMPAIGN = "runs outside a campaign"
CLASSIC = "classic"
FIELDS_SHOWN = 160  # characters of a line's fields in the report's table; hotlines.csv has them all


def shortened(fields: str, limit: int = FIELDS_SHOWN) -> str:
    """The fields cut after the last whole name that fits the limit, with " ..." when any were left out."""
    if len(fields) <= limit:
        return fields
    cut = max(fields.rfind(", ", 0, limit), fields.rfind("; ", 0, limit))
    return (fields[:cut] if cut > 0 else fields[:limit]) + " ..."


def _frame(lines: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame(lines)
    frame.insert(0, "rank", range(1, len(frame) + 1))
    frame["line"] = frame["line"].map(lambda line: f"0x{line:x}")
    frame["share"] = frame["share"].map(lambda share: f"{share:.1%}")
    frame["per_op"] = frame["per_op"].map(lambda value: "" if pd.isna(value) else f"{value:.3g}")
    frame["offset"] = frame["offset"].map(lambda offset: "" if offset is None or pd.isna(offset) else f"{int(offset):+#x}")
    frame["fields"] = frame["fields"].map(shortened)
    return frame


def hotlines_section(tables: HotlineTables, hierarchies: pd.Series) -> Section:
    """The section from the profiles; `hierarchies` is each finished run's cache hierarchy (classic or ruby)."""
    top = load_rules().report_top_lines
    section = Section("Hot lines")
    section.paragraphs.append(
        "Like `perf c2c`, but every coherence message of the ROI rather than samples: the cache lines of each traced "
        "study's ROIs by `requests` (coherence requests the line's home served, each once: MESI_Two_Level's L2 bank, "
        "CHI's home node), with the `invalidations` the CPUs' caches received for it from the home (MESI_Two_Level's "
        "L1s, CHI's private L2s) and its node `crossings` (messages between a controller and the line's home on another "
        "node; only messages one trace line names both ends of, so a lower bound: analysis/data/hotlines.toml). One "
        "table per study and configuration (a packed and a padded kernel, or two placements, are never summed): "
        "`share` is the line's part of all that configuration's traced requests, and a line's counts are summed over "
        "its traced ROIs (repeats restore one boot checkpoint, so an address is the same object in each); `per_op` "
        "is the line's requests per operation of the guest over those ROIs (kbench: per acquisition of the bench "
        "lock), which compares configurations whose traced windows did different amounts of work. `symbol` is System.map's symbol (`offset`: the line's first byte from its start), the "
        "guest's registered locks on the line, and what the guest's memory map says the memory is (`slab:<cache>`, "
        "offset into the object, and in `fields` the members of the object the line holds, from the run's kernel build's "
        "struct layouts: a member wholly on the line is named whole, one the line cuts is opened or marked (part), "
        "`next object:` when the line reaches into the next object; the table shows the first of them, hotlines.csv all; `table:<hash>`; `stack:<task>`; `percpu:<symbol> [cpu N]`; user, page-cache, "
        "reserved or free pages; `io:local APIC [cpu N]` and the other `io:` spaces are gem5 X86's device addresses, not memory, with the registers on the line in `fields`); `unknown (heap)` is memory nothing describes, and every run-time line of a run "
        "whose kernel printed no map. hotlines.csv has each ROI's own top lines. A second table per study sums "
        "the lines by object: one slab cache, hash table, per-CPU symbol or task's stack, whichever instance."
    )
    groups = traced_groups(tables)
    for group in groups:
        study, config = group
        where = f"{study or OUTSIDE_CAMPAIGN} ({config})"
        lines, rois = study_lines(tables, group, top)
        if lines:
            section.tables.append(Table(f"{where}: the top {len(lines)} lines over {rois} traced ROI(s)", _frame(lines)))
            objects = pd.DataFrame(study_objects(tables, group, top))
            objects["share"] = objects["share"].map(lambda share: f"{share:.1%}")
            section.tables.append(Table(f"{where}: the top {len(objects)} objects, their lines summed", objects))
    if not groups:
        section.paragraphs.append("No run of these results is traced (`trace = \"protocol\"` or `\"classic\"`): no hot-line profile.")
    classic = int((hierarchies == CLASSIC).sum())
    if classic:
        section.paragraphs.append(
            f"The bus machine's {classic} run(s) (classic caches) are profiled where they were traced (`trace = \"classic\"`, "
            "gem5's cache and bus debug lines): `requests` are the coherence requests the front-side bus accepted for the "
            "line (writebacks and evictions left out; their sum over a run's lines is checked against the bus's transDist), "
            "`invalidations` the bus snoops that took a CPU's copy to I, and there are no `crossings` (one node). gem5 hangs the "
            "local APICs on that bus (a P6's is on the die), so a CPU's uncacheable write of its APIC's EOI or interrupt command "
            "register is a bus request too, counted as transDist counts it: the `io:local APIC` lines."
        )
    section.paragraphs.extend(tables.notes)
    return section
