"""provenance.json beside the charts of a run: where each chart came from, with no path of this machine.

Every chart folder says which gem5, kernel build, disk image and machine
file made the run, the run's spec and gem5 command (absolute paths as
lockstudy/publish.py's placeholders), the sha256 of the trace and
result.json the chart was read from, and for each chart the hand-off
drawn and the command that drew it. Drawing another chart into the same
folder adds to `charts`; a chart of another run there is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.gem5_output.run_provenance import RunProvenance
from analysis.handoff_chart.errors import HandoffInputError
from analysis.handoff_chart.run_input import RESULT_FILE
from lockstudy import publish
from lockstudy.files import file_sha256, write_json_atomically
from lockstudy.paths import ROOT

PROVENANCE_FILE = "provenance.json"


def run_facts(run_dir: Path, trace_sha256: str, result: dict[str, Any]) -> dict[str, Any]:
    """What made the run, portably; the trace's sha256 as the chart's drawer computed it."""
    facts = RunProvenance.of(result)
    pairs = publish.placeholders(run_dir, result)
    return {
        "gem5": facts.gem5_version,
        "gem5_extras": facts.gem5_extras,
        "kernel_build_id": facts.kernel_build_id,
        "kernel_sha256": facts.kernel_sha256,
        "image_sha256": facts.image_sha256,
        "machine_file": facts.machine_file,
        "machine_sha256": facts.machine_sha256,
        "machine": facts.machine_label(),
        "cpu_model": facts.roi_cpu,
        "trace": facts.trace,
        "run_spec": facts.run_spec,
        "command": publish.replace_paths(" ".join(facts.command), pairs),
        "roi.trace.gz sha256": trace_sha256,
        "result.json sha256": file_sha256(run_dir / RESULT_FILE) if (run_dir / RESULT_FILE).is_file() else None,
    }


def _shown(path: Path, placeholder: str) -> str:
    """A folder in the repository by its relative path; any other by `placeholder`."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else placeholder


def record_chart(out: Path, run_dir: Path, trace_sha256: str, result: dict[str, Any], stem: str, chart_facts: dict[str, Any]) -> Path:
    """Add one chart to `out`/provenance.json (written whole, atomically)."""
    facts = run_facts(run_dir, trace_sha256, result)
    path = out / PROVENANCE_FILE
    record: dict[str, Any] = {}
    if path.is_file():
        try:
            record = json.loads(path.read_text())
        except ValueError:
            record = {}
        if record.get("run", {}).get("roi.trace.gz sha256") not in (None, facts["roi.trace.gz sha256"]):
            raise HandoffInputError(f"{path}: holds the charts of another run; draw this one into another --out folder")
    record["run"] = facts
    record.setdefault("charts", {})[stem] = {**chart_facts, "drawn_with": f"./run.sh handoff {_shown(run_dir, '<run>')} --lock {chart_facts['lock']} --index {chart_facts['handoff']} --out {_shown(out, '<out>')}"}
    write_json_atomically(path, record)
    return path
