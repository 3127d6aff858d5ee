"""lockstudy/venv.py: whether .venv is ready, and what a command says when it is not."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lockstudy import venv
from lockstudy.commands import test as test_command


def test_a_missing_venv_is_not_ready(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(venv, "venv_python", lambda: tmp_path / "no-venv" / "python")
    assert not venv.venv_has(("json",))


def test_ready_only_when_every_module_imports() -> None:
    assert venv.venv_has(("json", "pytest"))
    assert not venv.venv_has(("json", "lockstudy_no_such_module"))


def test_run_in_venv_names_the_missing_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(venv, "venv_python", lambda: tmp_path / "no-venv" / "python")
    assert venv.run_in_venv("analysis.analyze", []) == 1
    said = capsys.readouterr().err
    assert "numpy, pandas, pyarrow" in said and "./run.sh setup" in said


def test_the_test_command_without_pytest_says_run_setup(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(test_command, "TEST_MODULES", ("lockstudy_no_such_module",))
    assert test_command.run_tests(argparse.Namespace(fuzz=False, pytest_args=[])) == 1
    assert "./run.sh setup" in capsys.readouterr().err
