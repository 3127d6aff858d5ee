"""A seed's own curve over threads beside ours, as shipped and under its precondition (seed 002)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.seed_curve.curve import PUBLISHED, curve_frame
from analysis.seed_curve.rules import SeedCurveError, load_curves
from analysis.seed_curve.section import curve_section
from analysis.statistics.pooling import PoolingError

RULE = next(rule for rule in load_curves() if rule.seed.id == "002")
RATE = "metrics.faults_per_wall_s"


def pft(condition_build: str, threads: int, repeat: int, rate: float, *, study: str = "", mb: int = 16, boot: str = "lockstudy.spinlock=tas") -> dict:
    prefix = "ptlock-spinlock" if condition_build == "smp-mm-ptlock" else "numa-spinlock"
    return {
        "run_id": f"{condition_build}-{threads}-{repeat}-{mb}-{boot}", "study": study or f"{prefix}-{max(threads // 2, 1)}nodes",
        "machine": "altix-numa", "kind": "chi-numa", "cpus": max(threads, 2), "nodes": max(threads // 2, 1),
        "kernel_build": condition_build, "boot_args": boot, "variant": "", "testcase": "pft", "copies": float(threads),
        "roi": 0, "roi_cpu": "timing", "run_spec": f"pft:threads={threads},mb={mb},iterations=2", "trace": "off",
        "perturb_ns": 4.0, "perturb_seed": float(repeat), RATE: rate,
    }  # fmt: skip


def runs() -> list[dict]:
    # the precondition peaks at 4 threads, then falls; as shipped, flat
    shaped = {1: 100.0, 2: 150.0, 4: 200.0, 8: 120.0, 16: 60.0}
    out = []
    for threads, rate in shaped.items():
        for repeat, wobble in enumerate((-1.0, 0.0, 1.0)):
            out.append(pft("smp-mm-ptlock", threads, repeat, rate + wobble))
            out.append(pft("smp", threads, repeat, 90.0 + wobble))
            out.append(pft("smp", threads, repeat, 1.0, boot="lockstudy.spinlock=hbo"))  # another variant: not on the curve
    return out


def test_the_seeds_curve_and_ours_are_each_relative_to_their_fewest_threads() -> None:
    frame = curve_frame(pd.DataFrame(runs()), RULE)
    published = frame[frame["condition"] == PUBLISHED].set_index("threads")
    assert list(published.index) == [1, 2, 4, 8, 16, 32, 58]
    assert published.loc[4, "relative"] == pytest.approx(210146.600 / 100006.622)
    pre = frame[frame["condition"] == "precondition"].set_index("threads")
    assert pre.loc[4, "relative"] == pytest.approx(2.0) and pre.loc[16, "relative"] == pytest.approx(0.6)
    assert pre.loc[4, "n"] == 3 and pre.loc[4, "ci_low"] < 200.0 < pre.loc[4, "ci_high"]
    shipped = frame[frame["condition"] == "as-shipped"].set_index("threads")
    assert shipped["relative"].tolist() == pytest.approx([1.0] * 5)
    assert "ptlock-spinlock" in pre["series"].iloc[0] and "numa-spinlock" in shipped["series"].iloc[0]


def test_runs_of_two_windows_at_one_thread_count_are_refused() -> None:
    mixed = runs() + [pft("smp-mm-ptlock", 4, 9, 10.0, mb=4)]
    with pytest.raises(PoolingError, match="window"):
        curve_frame(pd.DataFrame(mixed), RULE)


def test_the_section_draws_one_figure_per_curve_and_none_without_runs(tmp_path: Path) -> None:
    section, rows = curve_section(pd.DataFrame(runs()), tmp_path)
    assert section is not None and len(section.figures) == 1 and (tmp_path / "figures" / "seed-002-curve.png").is_file()
    assert set(rows["condition"]) == {PUBLISHED, "as-shipped", "precondition"}
    section, rows = curve_section(pd.DataFrame([dict(r, testcase="kbench") for r in runs()]), tmp_path)
    assert section is None and rows.empty


def test_a_curve_naming_what_the_seed_lacks_is_refused(tmp_path: Path) -> None:
    from analysis.seed_curve.rules import DATA_FILE

    text = DATA_FILE.read_text()
    for right, wrong, field in (
        ('column = "fault_per_wsec"', 'column = "faults"', "column"),
        ('variant = "tas"', 'variant = "mcs"', "variant"),
        ("rows = { gb = 1 }", "rows = { gbytes = 1 }", "rows"),
        ('seed = "002"', 'seed = "009"', "seed"),
    ):
        path = tmp_path / "curves.toml"
        path.write_text(text.replace(right, wrong))
        with pytest.raises(SeedCurveError, match=rf"curve\[0\]\.{field}"):
            load_curves.__wrapped__(path)
