"""Make a build's struct-layouts.json, or say why it is not made; never touches the build's own outputs."""

from __future__ import annotations

import json
from pathlib import Path

from lockstudy.console import info
from lockstudy.kernel.layout.members import Member
from lockstudy.kernel.layout.probe import ProbeUnit, compile_probe, kernel_variable_name, probe_units, variable_name
from lockstudy.kernel.layout.requests import REQUESTS_FILE, LayoutError, load_requests, load_variable_requests, requests_digest
from lockstudy.kernel.layout.store import LAYOUT_FILE, LAYOUT_RECIPE, CacheLayout, StructLayouts, VariableLayout, write_layouts


def is_current(out_dir: Path, build_id: str, requests_file: Path = REQUESTS_FILE) -> bool:
    """True when the build's layout file is for this build id, data file and recipe."""
    try:
        data = json.loads((out_dir / LAYOUT_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and (data.get("build_id"), data.get("requests_sha256"), data.get("recipe")) == (
        build_id,
        requests_digest(requests_file),
        LAYOUT_RECIPE,
    )


def make_layouts(
    name: str,
    build_id: str,
    out_dir: Path,
    source_tree: Path,
    object_dir: Path,
    make_variables: list[str],
    env: dict[str, str],
    requests_file: Path = REQUESTS_FILE,
) -> Path:
    """Compile the probe against the build's object tree and write out_dir/struct-layouts.json; LayoutError if it cannot."""
    # pyelftools is a .venv dependency; set-up and doctor run on the system's python3 with the
    # standard library only, and they import this module through kernel.build.
    from lockstudy.kernel.layout.dwarf import read_variables

    requests = load_requests(requests_file)
    variables = load_variable_requests(requests_file)
    # A variable whose file this build does not compile (another config: qspinlock.c in a UP build) is not in its vmlinux.
    compiled = [variable for variable in variables if (object_dir / variable.object_file).is_file()]

    def read(unit: ProbeUnit, probe: Path) -> dict[str, Member]:
        return read_variables(probe, list(unit.variables))

    units = probe_units(requests, compiled, source_tree)
    found: dict[str, Member] = {}
    for members in compile_probe(units, source_tree, object_dir, make_variables, env, read).values():
        found.update(members)
    layouts = StructLayouts(
        build_id,
        requests_digest(requests_file),
        LAYOUT_RECIPE,
        {request.cache: CacheLayout(request.cache, request.type_name, found[variable_name(index)]) for index, request in enumerate(requests)},
        {v.symbol: VariableLayout(v.symbol, v.defined_in, found[kernel_variable_name(v.symbol)]) for v in compiled},
    )
    path = write_layouts(out_dir, layouts)
    left_out = f" (not in this build: {', '.join(v.symbol for v in variables if v not in compiled)})" if len(compiled) < len(variables) else ""
    info(f"[{name}] struct layouts of {len(requests)} slab cache(s) and {len(compiled)} variable(s){left_out}: {path.name}")
    return path
