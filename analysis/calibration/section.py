"""The calibration section of the report: one table per machine, and the sources cited."""

from __future__ import annotations

import pandas as pd

from analysis.calibration.published import PublishedFile, load_published
from analysis.calibration.table import calibration_tables
from analysis.gem5_output.runs import Results
from analysis.reporting.report_render import Section, Table

TITLE = "Calibration: the machines against the hardware"


def sources_table(tables: dict[str, pd.DataFrame], published: PublishedFile) -> pd.DataFrame:
    """Every source a row cites, in its source column or by key in its note."""
    notes = " ".join(note for frame in tables.values() for note in frame["note"])
    cited = sorted({key for frame in tables.values() for key in frame["source"] if key} | {key for key in published.sources if key in notes})
    return pd.DataFrame({"source": cited, "citation": [published.sources[key] for key in cited]})


def calibration_section(results: Results, table: pd.DataFrame) -> tuple[Section | None, dict[str, pd.DataFrame]]:
    """The section and the tables to write (<machine>.csv), or (None, {}) without calibration runs."""
    published = load_published()
    tables = calibration_tables(results, table, published)
    if not tables:
        return None, {}
    section = Section(TITLE)
    section.paragraphs.append(
        "The calibration suite (workloads/README.md, campaigns/calibration.toml) measured on each machine size, "
        "next to the published figure of the hardware the machine imitates (analysis/calibration/published.toml, "
        "each figure with its source). Caches and locked instructions are in core cycles, memory, transfers and the "
        "contended line in ns at the machine's clock, bandwidth in MB/s; `ratio` is measured / published, and a row "
        f"outside ±{published.tolerance:.0%} says so first in its note. Where no figure was found the row says so "
        "instead of guessing one; where gem5 cannot model a cost the note says which seed verdicts it limits. "
        "`n` counts the runs behind a row; a measurement that moves with the interleaving (the contended line) "
        "runs perturbed repeats, and `ci_low`-`ci_high` is its mean's 95 % Student-t interval."
    )
    for machine, frame in tables.items():
        section.tables.append(Table(f"{machine}: calibration", frame))
    section.tables.append(Table("Sources of the published figures", sources_table(tables, published)))
    return section, tables
