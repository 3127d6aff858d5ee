"""The front door: usage errors, help, doctor and set-up behaviour."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lockstudy import gem5 as gem5_finder
from lockstudy.cli import COMMAND_MODULES, build_parser
from lockstudy.paths import ROOT

RUN_SH = ROOT / "run.sh"


def run_sh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUN_SH), *args], capture_output=True, text=True, env=env, timeout=600)


def env_without_gem5() -> dict[str, str]:
    """The environment with no gem5 named: neither GEM5 nor any GEM5_<protocol>."""
    env = dict(os.environ)
    for protocol in (None, *gem5_finder.RUBY_PROTOCOLS):
        env.pop(gem5_finder.variable_for(protocol), None)
    return env


def command_names() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if a.dest == "command"]
    return sorted(actions[0].choices)


def test_unknown_command_is_a_usage_error() -> None:
    result = run_sh("no-such-command")
    assert result.returncode == 2
    assert "usage: run.sh" in result.stderr
    assert "no-such-command" in result.stderr


def test_unknown_option_is_a_usage_error() -> None:
    result = run_sh("doctor", "--no-such-option")
    assert result.returncode == 2
    assert "unrecognized arguments: --no-such-option" in result.stderr


def test_no_command_is_a_usage_error() -> None:
    result = run_sh()
    assert result.returncode == 2
    assert "name a command" in result.stderr


def test_a_reader_that_goes_away_is_not_a_traceback() -> None:
    """`run.sh campaign ... --dry-run | head -1`: the pipe closes while we still print. `true` reads
    nothing and exits at once, long before Python has started, so every write meets a closed pipe."""
    pipeline = subprocess.run(
        ["bash", "-c", f'"{RUN_SH}" campaign "{ROOT}/campaigns/seeds.toml" --dry-run | true; echo "status=${{PIPESTATUS[0]}}"'],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert pipeline.stdout == "status=141\n", pipeline.stdout
    assert "Traceback" not in pipeline.stderr and "BrokenPipe" not in pipeline.stderr, pipeline.stderr


def test_help_lists_every_command() -> None:
    result = run_sh("--help")
    assert result.returncode == 0
    # every module registers at least one command (analysis.command: analyze and report)
    assert len(command_names()) >= len(COMMAND_MODULES)
    assert {"analyze", "report", "demo", "publish", "bench"} <= set(command_names())
    for name in command_names():
        assert name in result.stdout


@pytest.mark.parametrize("command", ["setup", "doctor"])
def test_setup_and_doctor_start_on_the_standard_library_alone(command: str) -> None:
    """On a clean clone there is no .venv yet: run.sh starts set-up and doctor on the system's python3,
    so nothing the command line imports may need a package that set-up has still to install.
    `-S` leaves out every site-packages directory (the .venv's too), whatever this python3 has installed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-S", "-m", "lockstudy", command, "--help"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert f"usage: run.sh {command}" in result.stdout


@pytest.mark.parametrize("command", command_names())
def test_every_command_has_help(command: str) -> None:
    result = run_sh(command, "--help")
    assert result.returncode == 0, result.stderr
    assert f"usage: run.sh {command}" in result.stdout
    # A help text that explains: a description beyond the usage line.
    assert len(result.stdout.splitlines()) > 4


def test_doctor_for_campaign_without_gem5_fails_and_says_how_to_fix() -> None:
    result = run_sh("doctor", "--for", "campaign", env=env_without_gem5())
    assert result.returncode == 1
    gem5_lines = [line for line in result.stdout.splitlines() if "gem5 at $GEM5" in line]
    assert gem5_lines and gem5_lines[0].startswith("✗"), result.stdout
    assert "GEM5 is not set" in result.stdout
    assert gem5_finder.BUILD_DOCS in result.stdout


def test_doctor_without_gem5_tells_how_to_build_the_one_the_study_needs() -> None:
    """A user with no gem5 is told to build CHI with our extra (not gem5's default build, which runs
    none of the CHI machines), and, machine by machine, which protocol each needs."""
    from lockstudy.campaign.machines import machine_module

    result = run_sh("doctor", "--for", "campaign", env=env_without_gem5())
    first = gem5_finder.FIRST_BUILD_PROTOCOL
    extra = gem5_finder.EXTRAS_DIR / gem5_finder.REQUIRED_EXTRAS[first].name
    fix = result.stdout.split("gem5 at $GEM5", 1)[1].split("\n")[1]
    assert f"RUBY_PROTOCOL_{first}=y" in fix and f"EXTRAS={extra}" in fix, fix
    assert f"export GEM5=/path/to/build/X86_{first}/gem5.opt" in fix, fix
    per_machine = {  # "✗ gem5 for a, b  needs Ruby protocol P: ..." -> {a: line, b: line}
        name.strip(): line
        for line in result.stdout.splitlines()
        if line[2:].startswith("gem5 for ")
        for name in line[2:].split("  ")[0].removeprefix("gem5 for ").split(",")
    }
    module = machine_module()
    for path in module.machine_files():
        machine = module.load_machine(path)
        if machine.ruby_protocol:
            assert f"needs Ruby protocol {machine.ruby_protocol}" in per_machine.get(machine.name, ""), result.stdout


def test_doctor_for_test_passes_after_setup_without_gem5() -> None:
    result = run_sh("doctor", "--for", "test", env=env_without_gem5())
    assert result.returncode == 0, result.stdout
    assert "✗" not in result.stdout
    # gem5 is reported as missing but not needed for the tests.
    assert "- gem5 at $GEM5" in result.stdout


def fake_binary(tmp_path: Path, output: str) -> Path:
    """A stand-in executable that prints `output` whatever it is asked.

    It exercises only our detection of what a binary reports about itself;
    no test uses it in place of a gem5 simulation.
    """
    path = tmp_path / "gem5.opt"
    path.write_text("#!/bin/sh\ncat <<'EOF'\n" + output + "\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def probe_output(version: str, extras: dict[str, int] | None = None, **build: str) -> str:
    """What gem5_finder.PROBE prints (gem5 v24.0.0.1 printed this, with more options)."""
    options = {"PROTOCOL": "MESI_Two_Level", "USE_X86_ISA": "True", **build}
    report = {"version": version, "build": options, "extras": extras or {}}
    return "info: Standard input is not a terminal, disabling listeners.\n" + gem5_finder.PROBE_MARK + json.dumps(report)


CHI_EXTRA = {"chi-x86-locked-rmw": 1}


def test_gem5_self_description_is_parsed() -> None:
    version, options, extras = gem5_finder.parse_probe(probe_output("24.0.0.1", extras=CHI_EXTRA))
    assert version == "24.0.0.1"
    assert options["PROTOCOL"] == "MESI_Two_Level"
    assert options["USE_X86_ISA"] == "True"
    assert extras == CHI_EXTRA


def test_a_chi_build_without_our_extra_is_refused(tmp_path: Path) -> None:
    """Stock CHI loses contended x86 locked RMWs: the machine that needs CHI refuses it, saying how to build."""
    stock = fake_binary(tmp_path, probe_output("24.0.0.1", PROTOCOL="CHI"))
    with pytest.raises(gem5_finder.Gem5Unavailable, match=r"without lockstudy's chi-x86-locked-rmw extra .*EXTRAS=.*gem5-extras/chi-x86-locked-rmw"):
        gem5_finder.find_gem5({"GEM5_CHI": str(stock)}, protocol="CHI")
    # Asked for explicitly (to show the stock build's behaviour), it is found, and it says what it lacks.
    info = gem5_finder.find_gem5({"GEM5_CHI": str(stock)}, protocol="CHI", require_extras=False)
    assert info.missing_extra() == "chi-x86-locked-rmw"
    assert info.as_provenance()["extras"] == ""
    # piii-smp's classic caches do not care: a machine without a protocol takes it.
    assert gem5_finder.find_gem5({"GEM5_CHI": str(stock)}).path == stock.resolve()


def test_a_chi_build_with_our_extra_is_taken_and_recorded(tmp_path: Path) -> None:
    built = fake_binary(tmp_path, probe_output("24.0.0.1", extras=CHI_EXTRA, PROTOCOL="CHI"))
    info = gem5_finder.find_gem5({"GEM5_CHI": str(built)}, protocol="CHI")
    assert info.missing_extra() is None
    assert info.as_provenance()["extras"] == "chi-x86-locked-rmw@1"


def test_gem5_too_old_is_rejected(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, probe_output("23.1.0.0"))
    with pytest.raises(gem5_finder.Gem5Unavailable, match="23.1.0.0; lockstudy needs v24.0"):
        gem5_finder.find_gem5({"GEM5": str(binary)})


def test_gem5_without_x86_is_rejected(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, probe_output("24.0.0.1", USE_X86_ISA="False", USE_ARM_ISA="True"))
    with pytest.raises(gem5_finder.Gem5Unavailable, match="without the X86 ISA"):
        gem5_finder.find_gem5({"GEM5": str(binary)})


def test_gem5_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(gem5_finder.Gem5Unavailable, match="no such file"):
        gem5_finder.find_gem5({"GEM5": str(tmp_path / "nothing")})


def test_not_a_gem5_binary_is_rejected(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, "hello\n")
    with pytest.raises(gem5_finder.Gem5Unavailable, match="is it a gem5 binary"):
        gem5_finder.find_gem5({"GEM5": str(binary)})


def test_a_machine_gets_the_gem5_of_its_protocol(tmp_path: Path) -> None:
    """GEM5_<PROTOCOL> serves the machines of that protocol; GEM5 all others."""
    (tmp_path / "mesi").mkdir()
    (tmp_path / "chi").mkdir()
    mesi = fake_binary(tmp_path / "mesi", probe_output("24.0.0.1"))
    chi = fake_binary(tmp_path / "chi", probe_output("24.0.0.1", extras=CHI_EXTRA, PROTOCOL="CHI"))
    environ = {"GEM5": str(mesi), "GEM5_CHI": str(chi)}
    assert gem5_finder.find_gem5(environ).path == mesi.resolve()
    assert gem5_finder.find_gem5(environ, protocol="CHI").path == chi.resolve()
    assert gem5_finder.find_gem5(environ, protocol="MESI_Two_Level").path == mesi.resolve()
    # Without GEM5_CHI the default binary is tried, and its protocol refused with the build steps.
    with pytest.raises(gem5_finder.Gem5Unavailable, match=r"GEM5=.*Ruby protocol MESI_Two_Level, and this machine needs CHI: .*RUBY_PROTOCOL_CHI=y.*export GEM5_CHI="):
        gem5_finder.find_gem5({"GEM5": str(mesi)}, protocol="CHI")
    with pytest.raises(gem5_finder.Gem5Unavailable, match="neither GEM5_MESI_TWO_LEVEL nor GEM5 is set"):
        gem5_finder.find_gem5({"GEM5_CHI": str(chi)}, protocol="MESI_Two_Level")


def test_every_refusal_carries_its_cause_and_fix_apart(tmp_path: Path) -> None:
    """doctor shows a refusal's cause and its fix in their own columns: the
    exception carries them separately, and its message is the two joined."""
    (tmp_path / "mesi").mkdir()
    (tmp_path / "chi").mkdir()
    mesi = fake_binary(tmp_path / "mesi", probe_output("24.0.0.1"))
    stock_chi = fake_binary(tmp_path / "chi", probe_output("24.0.0.1", PROTOCOL="CHI"))
    refusals = [
        ({}, None),
        ({"GEM5": str(tmp_path / "nothing")}, None),
        ({"GEM5": str(fake_binary(tmp_path, "hello\n"))}, None),
        ({"GEM5": str(mesi)}, "CHI"),
        ({"GEM5": str(stock_chi)}, "CHI"),
    ]
    for environ, protocol in refusals:
        with pytest.raises(gem5_finder.Gem5Unavailable) as refused:
            gem5_finder.find_gem5(environ, protocol=protocol)
        cause, fix = refused.value.cause, refused.value.fix
        assert cause and fix, (environ, protocol)
        assert str(refused.value).startswith(cause) and str(refused.value).endswith(fix)
        assert "in gem5's source tree" not in cause and "export GEM5" not in cause, cause
    assert "chi-x86-locked-rmw" in cause and "EXTRAS=" in fix


def test_second_setup_does_no_work() -> None:
    """Set-up is idempotent: when nothing changed it runs no command."""
    result = run_sh("setup")
    assert result.returncode == 0, result.stdout + result.stderr
    commands_run = [line for line in result.stdout.splitlines() if line.startswith("    $ ")]
    assert commands_run == [], commands_run


def test_data_file_fields_are_typed_and_named(tmp_path) -> None:
    import pytest

    from lockstudy import qemu
    from lockstudy.files import DataFileError, typed_field

    table = {"cpus": 4, "flag": True, "kvm": {"cpu": "host"}}
    assert typed_field(table, "kvm.cpu", str, "f.toml") == "host"
    assert typed_field(table, "kvm.missing", str, "f.toml", default="x") == "x"
    with pytest.raises(DataFileError, match=r"^f\.toml\.kvm\.model: missing$"):
        typed_field(table, "kvm.model", str, "f.toml")
    with pytest.raises(DataFileError, match=r"f\.toml\.flag: expected int, got True"):
        typed_field(table, "flag", int, "f.toml")  # a bool is no count
    settings = tmp_path / "qemu.toml"
    settings.write_text(qemu.SETTINGS_FILE.read_text().replace('cpu = "host"', "cpu = 3"))
    with pytest.raises(qemu.QemuError, match=r"qemu\.toml\.kvm\.cpu: expected str, got 3"):
        qemu.load_settings(settings)


def test_data_files_that_are_not_toml_are_named(tmp_path) -> None:
    from analysis.traffic.handoffs import BoundsError, load_bounds
    from analysis.traffic.locks import StaticLocksError, load_static_locks
    from lockstudy.files import DataFileError, read_toml

    broken = tmp_path / "broken.toml"
    broken.write_text("[agreement\nmetric = 1\n")
    with pytest.raises(DataFileError, match=rf"^{broken}: not valid TOML: "):
        read_toml(broken)
    with pytest.raises(DataFileError, match=rf"^{tmp_path / 'none.toml'}: cannot read: No such file"):
        read_toml(tmp_path / "none.toml")
    with pytest.raises(BoundsError, match=rf"^{broken}: not valid TOML"):
        load_bounds(broken)
    with pytest.raises(StaticLocksError, match=rf"^{broken}: not valid TOML"):
        load_static_locks(broken)
    good = tmp_path / "good.toml"
    good.write_text("[a]\nb = 2\n")
    assert read_toml(good) == {"a": {"b": 2}}


def test_a_machine_without_a_protocol_runs_on_any_gem5_named(tmp_path: Path) -> None:
    """piii-smp (classic caches) needs no protocol: with only GEM5_<P> set, it runs on that binary."""
    chi = fake_binary(tmp_path, probe_output("24.0.0.1", PROTOCOL="CHI"))
    assert gem5_finder.find_gem5({"GEM5_CHI": str(chi)}).path == chi.resolve()
    assert gem5_finder.variable_used({"GEM5_CHI": str(chi)}, None) == "GEM5_CHI"
    assert gem5_finder.variable_used({"GEM5_CHI": str(chi), "GEM5": "x"}, None) == "GEM5"
    # A variable that names no Ruby protocol is not taken for one.
    with pytest.raises(gem5_finder.Gem5Unavailable, match="GEM5 is not set"):
        gem5_finder.find_gem5({"GEM5_HOME": str(chi)})


def test_setup_builds_on_the_venv_python_when_started_on_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean clone's set-up starts on the system's python3; its build steps need .venv's packages,
    so once the environment exists set-up goes on in .venv's python."""
    from lockstudy.commands import setup as setup_command

    calls: list[list[str]] = []

    def fake_run_in_venv(module: str, argv: list[str]) -> int:
        calls.append([module, *argv])
        return 0

    monkeypatch.setattr(setup_command, "install_debian_packages", lambda: None)
    monkeypatch.setattr(setup_command, "create_python_env", lambda: None)
    monkeypatch.setattr(setup_command, "run_in_venv", fake_run_in_venv)
    monkeypatch.setattr(setup_command, "build_steps", lambda: pytest.fail("built on the system's python3"))
    monkeypatch.setattr(setup_command.sys, "prefix", "/usr")
    args = build_parser().parse_args(["setup", "--jobs", "3"])
    assert setup_command.run_setup(args) == 0
    assert calls == [["lockstudy", "setup", "--jobs", "3"]]

    # --no-build needs nothing from .venv: it finishes where it started.
    calls.clear()
    assert setup_command.run_setup(build_parser().parse_args(["setup", "--no-build"])) == 0
    assert calls == []
