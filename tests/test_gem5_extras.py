"""gem5-extras/chi-x86-locked-rmw: the CHI protocol files it generates from a gem5 tree.

The transform is plain Python (no gem5 needed): tested on a small CHI-like
ports file made here, and on gem5's own CHI files when a gem5 source tree
is found (GEM5_SRC, or the tree a GEM5_CHI/GEM5 binary was built in).
Whether the built protocol keeps locked RMWs atomic is a gem5 run:
tests/test_machines_gem5.py.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from lockstudy import gem5 as gem5_finder
from lockstudy.paths import ROOT

EXTRA_DIR = ROOT / "gem5-extras" / "chi-x86-locked-rmw"


def _load_transform():
    spec = importlib.util.spec_from_file_location("chi_locked_rmw", EXTRA_DIR / "chi_locked_rmw.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


chi_locked_rmw = _load_transform()

# The shape of gem5 v24.0's two snoop in_ports (CHI-cache-ports.sm), written
# here to test the transform without gem5's file; other ports must not change.
PORTS_SHAPE = """\
in_port(snpRdyPort, CHIRequestMsg, snpRdy, rank=8,
        rsc_stall_handler=snpRdyPort_rsc_stall_handler) {
  if (snpRdyPort.isReady(clockEdge())) {
    peek(snpRdyPort, CHIRequestMsg) {
      trigger(Event:SnpX, in_msg.addr, getCacheEntry(in_msg.addr), getCurrentActiveTBE(in_msg.addr));
    }
  }
}
in_port(snpInPort, CHIRequestMsg, snpIn, rank=7) {
  if (snpInPort.isReady(clockEdge())) {
    peek(snpInPort, CHIRequestMsg) {
      trigger(Event:AllocSnoop, in_msg.addr, getCacheEntry(in_msg.addr), getCurrentActiveTBE(in_msg.addr));
    }
  }
}
in_port(reqInPort, CHIRequestMsg, reqIn, rank=2) {
  if (reqInPort.isReady(clockEdge())) {
    peek(reqInPort, CHIRequestMsg) {
      trigger(Event:AllocRequest, in_msg.addr, getCacheEntry(in_msg.addr), getCurrentActiveTBE(in_msg.addr));
    }
  }
}
"""


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    pairs = list(zip(before.splitlines(), after.splitlines(), strict=True))
    return [(old, new) for old, new in pairs if old != new]


def test_both_snoop_ports_block_on_the_line_and_nothing_else_changes() -> None:
    after = chi_locked_rmw.block_snoops_on_locked_lines(PORTS_SHAPE)
    assert changed_lines(PORTS_SHAPE, after) == [
        ("    peek(snpRdyPort, CHIRequestMsg) {", '    peek(snpRdyPort, CHIRequestMsg, block_on="addr") {'),
        ("    peek(snpInPort, CHIRequestMsg) {", '    peek(snpInPort, CHIRequestMsg, block_on="addr") {'),
    ]
    # Applied twice it changes nothing more (a tree that already has it builds the same).
    assert chi_locked_rmw.block_snoops_on_locked_lines(after) == after


def test_an_unexpected_layout_is_named_not_guessed() -> None:
    without_ready_port = PORTS_SHAPE.replace("peek(snpRdyPort, CHIRequestMsg)", "peek(otherPort, CHIRequestMsg)")
    with pytest.raises(chi_locked_rmw.ProtocolLayoutError, match=r"ports\.sm: expected exactly one `peek\(snpRdyPort, CHIRequestMsg\)`, found 0"):
        chi_locked_rmw.block_snoops_on_locked_lines(without_ready_port, "ports.sm")
    twice = PORTS_SHAPE + PORTS_SHAPE
    with pytest.raises(chi_locked_rmw.ProtocolLayoutError, match="found 2"):
        chi_locked_rmw.block_snoops_on_locked_lines(twice)
    other_field = PORTS_SHAPE.replace("peek(snpInPort, CHIRequestMsg)", 'peek(snpInPort, CHIRequestMsg, block_on="txnId")')
    with pytest.raises(chi_locked_rmw.ProtocolLayoutError, match="already blocks on another field"):
        chi_locked_rmw.block_snoops_on_locked_lines(other_field)


def make_chi_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "CHI.slicc").write_text('protocol "CHI";\ninclude "CHI-cache.sm";\n')
    (folder / "CHI-cache.sm").write_text('include "CHI-cache-ports.sm";\n')
    (folder / "CHI-cache-ports.sm").write_text(PORTS_SHAPE)
    (folder / "SConsopts").write_text("# not a protocol file\n")
    return folder


def test_the_generated_folder_holds_the_protocol_with_the_change_and_is_rewritten_only_on_change(tmp_path: Path) -> None:
    chi = make_chi_folder(tmp_path / "chi")
    out = tmp_path / "generated"
    (out).mkdir()
    (out / "CHI-gone.sm").write_text("a file the tree no longer has\n")
    assert chi_locked_rmw.write_protocol(chi, out) == ["CHI-cache-ports.sm", "CHI-cache.sm", "CHI.slicc"]
    assert sorted(p.name for p in out.iterdir()) == ["CHI-cache-ports.sm", "CHI-cache.sm", "CHI.slicc"]
    assert 'peek(snpInPort, CHIRequestMsg, block_on="addr")' in (out / "CHI-cache-ports.sm").read_text()
    assert (out / "CHI-cache.sm").read_text() == (chi / "CHI-cache.sm").read_text()
    # scons rebuilds what changed: a second generation from the same tree touches no file.
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    os.utime(chi / "CHI-cache.sm")
    assert chi_locked_rmw.write_protocol(chi, out) == []
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps


def test_a_folder_that_is_not_chi_is_refused(tmp_path: Path) -> None:
    with pytest.raises(chi_locked_rmw.ProtocolLayoutError, match="not gem5's CHI protocol folder"):
        chi_locked_rmw.protocol_files(tmp_path)


def gem5_source_tree() -> Path | None:
    """A gem5 source tree: GEM5_SRC, or the tree a GEM5_CHI/GEM5 binary sits in (<tree>/build/<dir>/gem5.opt)."""
    candidates = [Path(os.environ["GEM5_SRC"])] if os.environ.get("GEM5_SRC") else []
    for variable in ("GEM5_CHI", "GEM5"):
        parents = Path(os.environ.get(variable, "/")).resolve().parents
        if len(parents) > 2:
            candidates.append(parents[2])
    return next((tree for tree in candidates if (tree / "src/mem/ruby/protocol/chi").is_dir()), None)


def test_gem5s_own_chi_files_take_the_change_in_exactly_two_lines() -> None:
    tree = gem5_source_tree()
    if tree is None:
        pytest.skip("needs a gem5 source tree: set GEM5_SRC (or GEM5_CHI to a binary inside its tree)")
    chi = tree / "src/mem/ruby/protocol/chi"
    files = chi_locked_rmw.protocol_files(chi)
    original = (chi / "CHI-cache-ports.sm").read_text()
    changes = changed_lines(original, files["CHI-cache-ports.sm"])
    assert [new.strip() for _, new in changes] == [
        'peek(snpRdyPort, CHIRequestMsg, block_on="addr") {',
        'peek(snpInPort, CHIRequestMsg, block_on="addr") {',
    ]
    assert {name for name in files} >= {"CHI.slicc", "CHI-cache.sm", "CHI-msg.sm", "CHI-mem.sm"}
    assert all(files[name] == (chi / name).read_text() for name in files if name != "CHI-cache-ports.sm")


def test_the_marker_module_names_the_extra_that_the_finder_requires() -> None:
    spec = importlib.util.spec_from_file_location("marker", EXTRA_DIR / "lockstudy_chi_x86_locked_rmw.py")
    assert spec is not None and spec.loader is not None
    marker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(marker)
    assert marker.NAME == chi_locked_rmw.EXTRA_NAME == gem5_finder.REQUIRED_EXTRAS["CHI"].name
    assert gem5_finder.REQUIRED_EXTRAS["CHI"].marker_module == "lockstudy_chi_x86_locked_rmw"
    assert "lockstudy_chi_x86_locked_rmw" in gem5_finder.EXTRA_MODULES
    assert (EXTRA_DIR / "SConscript").read_text().count("lockstudy_chi_x86_locked_rmw.py") == 1
