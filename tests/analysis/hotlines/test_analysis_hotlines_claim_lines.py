"""A claim's top lines come from the profiles of the traced ROIs standing for its sides (analysis/hotlines/claim_lines.py)."""

from __future__ import annotations

import pandas as pd

from analysis.hotlines.claim_lines import NOT_PROFILED, top_line, with_top_lines
from analysis.hotlines.profile import LineTraffic, RoiProfile
from analysis.hotlines.table import HotlineTables


class Names:
    """A run's namer: what the run's System.map and memory map call each line, and the struct layouts its fields."""

    def __init__(self, names: dict[int, tuple[str, int | None]], fields: dict[int, str] | None = None) -> None:
        self.names = names
        self.held = fields or {}

    def name(self, line: int, roi: int) -> tuple[str, int | None]:
        return self.names[line]

    def fields(self, line: int, roi: int) -> str:
        return self.held.get(line, "")


def profile(requests: dict[int, int]) -> RoiProfile:
    lines = {line: LineTraffic(line, requests=count, invalidations=count // 2) for line, count in requests.items()}
    return RoiProfile(lines, sum(requests.values()), sum(requests.values()) // 2, 0)


def tables() -> HotlineTables:
    return HotlineTables(
        rows=pd.DataFrame(),
        profiles={("spin", 0): profile({0x1000: 300, 0x2000: 700}), ("cmpx", 0): profile({0x1000: 50, 0x3000: 150}), ("empty", 0): profile({}), ("rwsem", 0): profile({0x4000: 90, 0x1000: 10})},
        namers={
            "spin": Names({0x1000: ("rename_lock", 0), 0x2000: ("slab:dentry | dentry:/scratch/samefile.1/target d_lockref", 64)}),  # type: ignore[dict-item]
            "cmpx": Names({0x1000: ("rename_lock", 0), 0x3000: ("unknown (heap)", None)}),  # type: ignore[dict-item]
            "rwsem": Names({0x4000: ("slab:ext2_inode_cache", 288)}, {0x4000: "vfs_inode.i_rwsem.{owner, osq, wait_lock, wait_list}"}),  # type: ignore[dict-item]
        },
    )


def test_each_roi_s_top_line_is_named_with_its_share() -> None:
    assert top_line(tables(), "spin:0") == "slab:dentry | dentry:/scratch/samefile.1/target d_lockref +64 (70.0% of 1,000 requests)"
    # two ROIs: each its own top line, in the order listed (never summed across runs' layouts)
    assert top_line(tables(), "spin:0 cmpx:0") == (
        "slab:dentry | dentry:/scratch/samefile.1/target d_lockref +64 (70.0% of 1,000 requests); unknown (heap) (75.0% of 200 requests)"
    )
    assert top_line(tables(), "") == ""
    assert top_line(tables(), "gone:0 empty:0") == f"gone: {NOT_PROFILED}; empty: {NOT_PROFILED}"


def test_claims_get_a_top_line_per_side() -> None:
    claims = pd.DataFrame({"claim": ["x", "y"], "traced_a": ["cmpx:0", ""], "traced_b": ["spin:0", None]})
    filled = with_top_lines(claims, tables())
    assert filled["top_line_a"].tolist() == ["unknown (heap) (75.0% of 200 requests)", ""]
    assert filled["top_line_b"].tolist()[0].startswith("slab:dentry") and filled["top_line_b"].tolist()[1] == ""
    assert list(with_top_lines(claims.iloc[0:0], tables()).columns)[-2:] == ["top_line_a", "top_line_b"]


def test_a_slab_top_line_carries_the_fields_it_holds() -> None:
    assert top_line(tables(), "rwsem:0") == (
        "slab:ext2_inode_cache +288 [vfs_inode.i_rwsem.{owner, osq, wait_lock, wait_list}] (90.0% of 100 requests)"
    )
