"""The two altix-numa models side by side: node-local homes against line-interleaved ones."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.model_comparison.rules import ModelComparisonError, load_rules
from analysis.model_comparison.section import model_comparison_section, side_by_side
from analysis.model_comparison.table import comparison_table
from analysis.statistics.pooling import PoolingError

RULES = load_rules()
LOCAL_SHARE, REQUESTS, RATE, FAIRNESS = (metric.column for metric in RULES.metrics)


def kbench(machine: str, nodes: int, variant: str, repeat: int, share: float, requests: float, rate: float, *,
           trace: str = "off", duration_ms: int = 10, kernel_build: str = "smp") -> dict:  # fmt: skip
    """A metrics-table row of one kbench run of the sweep."""
    return {
        "run_id": f"{machine}-{nodes}-{variant}-{repeat}-{trace}-{duration_ms}-{kernel_build}", "study": "kbench-numa",
        "machine": machine, "kind": "ruby-numa", "cpus": 2 * nodes, "nodes": nodes, "kernel_build": kernel_build,
        "boot_args": "", "variant": variant, "testcase": "kbench", "copies": float(2 * nodes), "roi": 0,
        "roi_cpu": "timing", "run_spec": f"kbench:variant={variant},duration_ms={duration_ms}", "trace": trace,
        "perturb_ns": 4.0, "perturb_seed": float(repeat), LOCAL_SHARE: share, REQUESTS: requests, RATE: rate,
        FAIRNESS: 1.0 - share / 2,
    }  # fmt: skip


def sweep() -> list[dict]:
    rows = []
    for machine, local in ((RULES.node_local, 0.9), (RULES.interleaved, 0.5)):
        for nodes in (1, 2, 4):
            for variant in ("cna", "ticket"):
                for repeat, wobble in enumerate((-0.01, 0.0, 0.01)):
                    rows.append(kbench(machine, nodes, variant, repeat, local + wobble, 20.0 * nodes + wobble, 1e6 / nodes + 1e3 * wobble))
    return rows


def test_each_model_size_and_variant_is_its_repeats_mean_with_an_interval() -> None:
    table = comparison_table(pd.DataFrame(sweep()))
    assert set(table["machine"]) == set(RULES.machines)
    assert len(table) == 2 * 3 * 2 * len(RULES.metrics)
    row = table[(table["machine"] == RULES.node_local) & (table["nodes"] == 2) & (table["variant"] == "cna") & (table["metric"] == LOCAL_SHARE)].iloc[0]
    assert row["n"] == 3 and row["cpus"] == 4
    assert row["mean"] == pytest.approx(0.9)
    assert row["ci_low"] < 0.9 < row["ci_high"] and row["ci_method"] == "Student t"


def test_traced_runs_are_left_out() -> None:
    rows = sweep() + [kbench(RULES.node_local, 1, "cna", 9, 0.1, 1.0, 1.0, trace="protocol", duration_ms=1)]
    table = comparison_table(pd.DataFrame(rows))
    assert table["n"].max() == 3


def test_runs_of_another_window_are_refused_not_averaged() -> None:
    rows = sweep() + [kbench(RULES.node_local, 1, "cna", 9, 0.1, 1.0, 1.0, duration_ms=20)]
    with pytest.raises(PoolingError, match="window"):
        comparison_table(pd.DataFrame(rows))


def test_two_configurations_of_one_size_are_refused() -> None:
    rows = sweep() + [kbench(RULES.node_local, 1, "cna", 9, 0.1, 1.0, 1.0, kernel_build="smp-packed")]
    with pytest.raises(ModelComparisonError, match="2 configurations"):
        comparison_table(pd.DataFrame(rows))


def test_another_experiments_kbench_runs_are_not_the_sweeps() -> None:
    """Seed 003's rwsem bench (lock=rwsem, writers=4) ran on altix-numa at 4 nodes with the boot variant,
    qspinlock: the report refused the whole comparison as two configurations of one size."""
    other = dict(kbench(RULES.node_local, 2, "cna", 9, 0.1, 1.0, 1.0, kernel_build="smp-rwsem-bench"),
                 run_spec="kbench:lock=rwsem,writers=4,duration_ms=10,hold_loops=10,think_loops=10")  # fmt: skip
    table = comparison_table(pd.DataFrame(sweep() + [other]))
    assert table["n"].max() == 3 and len(table) == 2 * 3 * 2 * len(RULES.metrics)


def test_the_two_models_stand_in_one_row_per_size_and_variant() -> None:
    wide = side_by_side(comparison_table(pd.DataFrame(sweep())), LOCAL_SHARE, RULES)
    assert list(wide.columns) == ["nodes", "cpus", "variant", *RULES.machines]
    cell = wide[(wide["nodes"] == 4) & (wide["variant"] == "ticket")][RULES.interleaved].iloc[0]
    assert cell.startswith("0.5 [") and cell.endswith("n=3")


def test_the_section_draws_each_metric_and_names_a_missing_model(tmp_path: Path) -> None:
    section, rows = model_comparison_section(pd.DataFrame(sweep()), tmp_path)
    assert section is not None and len(section.figures) == len(RULES.metrics)
    assert all((tmp_path / "figures" / f"models-{m.column.replace('.', '-')}.png").is_file() for m in RULES.metrics)
    only_new = [row for row in sweep() if row["machine"] == RULES.node_local]
    section, _ = model_comparison_section(pd.DataFrame(only_new), tmp_path)
    assert section is not None and any(RULES.interleaved in p and "MESI_Two_Level" in p for p in section.paragraphs)


def test_without_either_model_there_is_no_section(tmp_path: Path) -> None:
    other = [dict(row, machine="piii-smp", kind="classic-smp") for row in sweep()]
    section, rows = model_comparison_section(pd.DataFrame(other), tmp_path)
    assert section is None and rows.empty


def test_a_broken_rules_file_names_its_field(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('[models]\nnode_local = "a"\ninterleaved = "a"\ntestcase = "kbench"\n[[metric]]\ncolumn = "x"\nlabel = "x"\nsource = "y"\n')
    with pytest.raises(ModelComparisonError, match="node_local and interleaved are both 'a'"):
        load_rules(path)
    path.write_text('[models]\nnode_local = "a"\ninterleaved = "b"\ntestcase = "kbench"\n[[metric]]\ncolumn = ""\n')
    with pytest.raises(ModelComparisonError, match=r"metric\[0\]\.column"):
        load_rules(path)
    path.write_text('[models]\nnode_local = "a"\ninterleaved = "b"\ntestcase = "kbench"\n[[metric]]\ncolumn = "x"\nlabel = "x"\nsource = "y"\nrange = [1, 0]\n')
    with pytest.raises(ModelComparisonError, match=r"metric\[0\]\.range: \[1, 0\]: expected \[low, high\]"):
        load_rules(path)


def test_a_shares_interval_stays_between_0_and_1() -> None:
    # Five repeats of a share near 0, spread as ticket's 2-node hand-offs were (0.00-0.25): a t
    # interval reaches below 0, which no share can be.
    rows = [kbench(RULES.node_local, 2, "ticket", repeat, share, 13.0, 6e5) for repeat, share in enumerate((0.0, 0.01, 0.02, 0.25, 0.24))]
    table = comparison_table(pd.DataFrame(rows))
    share = table[table["metric"] == LOCAL_SHARE].iloc[0]
    assert share["ci_low"] == 0.0 and share["ci_high"] < 1.0
    assert share["ci_method"] == "Student t, clipped to [0, 1]"
    requests = table[table["metric"] == REQUESTS].iloc[0]
    assert requests["ci_method"] == "Student t"


def test_the_numa_section_reads_both_models_and_keeps_them_apart(tmp_path: Path) -> None:
    """Node-local homes are a CHI machine (kind chi-numa): its hand-offs are NUMA hand-offs too."""
    from analysis.reporting.report import numa_section

    rows = [dict(row, kind="chi-numa" if row["machine"] == RULES.node_local else "ruby-numa", handoffs=100.0,
                 handoffs_local=100.0 * row[LOCAL_SHARE], handoffs_remote=100.0 * (1 - row[LOCAL_SHARE]),
                 inter_node_messages=1.0, network_messages=2.0) for row in sweep()]  # fmt: skip
    section = numa_section(pd.DataFrame(rows), tmp_path)
    summary = section.tables[0].frame
    assert set(summary["machine"]) == set(RULES.machines)
    local = summary.set_index(["machine", "variant", "nodes"])["local"]
    assert local[(RULES.node_local, "cna", 2)] == pytest.approx(0.9)
    assert local[(RULES.interleaved, "cna", 2)] == pytest.approx(0.5)
