"""A cached chart is keyed by the modules its drawing reaches, and by nothing else."""

from __future__ import annotations

from pathlib import Path

from analysis.handoff_chart import chart_cache
from analysis.handoff_chart.code_identity import reached_sources
from lockstudy.paths import ROOT


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_reached_sources_follow_imports_and_named_data_but_not_other_packages(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "__init__.py", "")
    entry = write(tmp_path / "pkg" / "entry.py", "from pkg import near\n\ndef late():\n    import pkg.deep.inner\n")
    near = write(tmp_path / "pkg" / "near.py", "import json\nimport other.module\nRULES = 'rules.toml'\n")
    write(tmp_path / "pkg" / "deep" / "__init__.py", "")
    inner = write(tmp_path / "pkg" / "deep" / "inner.py", "from pkg.near import RULES\nSHARED = 'shared.toml'\nGONE = 'absent.toml'\n")
    write(tmp_path / "pkg" / "unused.py", "")
    write(tmp_path / "other" / "module.py", "")
    rules = write(tmp_path / "pkg" / "data" / "rules.toml", "")
    shared = write(tmp_path / "shared" / "shared.toml", "")

    sources = reached_sources(entry, tmp_path, ("pkg",), tmp_path / "shared")

    expected = {entry, near, inner, rules, shared, tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "deep" / "__init__.py"}
    assert set(sources) == {path.resolve() for path in expected}
    assert list(sources) == sorted(sources)


def test_the_chart_key_leaves_out_the_teaching_page_and_the_metrics() -> None:
    sources = set(chart_cache.code_sources())
    handoff_chart = ROOT / "analysis" / "handoff_chart"
    traffic = ROOT / "analysis" / "traffic"
    for needed in (handoff_chart / "draw.py", handoff_chart / "messages.py", traffic / "protocol_trace.py",
                   traffic / "locks.py", ROOT / "analysis" / "data" / "static_locks.toml", handoff_chart / "data" / "CHI.toml"):
        assert str(needed) in sources, needed
    for unrelated in (handoff_chart / "teaching.py", traffic / "metrics.py", traffic / "handoffs.py",
                      ROOT / "analysis" / "data" / "handoff_teaching.toml", ROOT / "analysis" / "statistics" / "pooling.py"):
        assert str(unrelated) not in sources, unrelated
