"""The hot-line profile (analysis/hotlines/): exact counts of a known trace, names, the real trace, bad input.

Trace lines are written here with gem5's printf format as spelled in the
gem5 v24.0.0.1 source (StateMachine.py:1653: "%15d %3s %10s%20s %6s>%-6s
%#x %s", the address printed as "[0x<addr>, line 0x<line>]"), not with
the profile's code. The machine is the real 2-node fixture's config.json
(tests/fixtures/gem5/altix-numa-2-kbench): L1Cache 0-1, L2Cache 0 and
Directory 0 on node 0, L1Cache 2-3, L2Cache 1 and Directory 1 on node 1,
and a line's home bank is bit 6 of its address (l2_select_num_bits = 1).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from analysis.gem5_output.runs import load_results
from analysis.gem5_output.trace_chunks import TraceFormatError
from analysis.hotlines import scan, table
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.profile import roi_profile
from analysis.hotlines.rules import RULES_FILE, load_rules
from analysis.hotlines.scan import scan_trace
from analysis.hotlines.table import COLUMNS, hotline_tables
from analysis.hotlines.topology import read_topology
from analysis.traffic.locks import lock_tables
from analysis_checks import FIXTURES
from lockstudy.paths import ROOT

GEM5_FORMAT = "%15d %3s %10s%20s %6s>%-6s %s %s"
NUMA_RUN = FIXTURES / "altix-numa-2-kbench"
LINE_BYTES = 64
ROI_START = 1435400733000  # the fixture's roi_ticks[0][0]
# Homes: bit 6 of the address. A and C on bank 0 (node 0), B on bank 1 (node 1).
A, B, C = 0x1D08100, 0x1D08140, 0x2000000


def gem5_line(version: int, machine: str, event: str, state: str, next_state: str, line: int, comment: str = "", tick: int = ROI_START + 1000) -> str:
    return GEM5_FORMAT % (tick, version, machine, event, state, next_state, f"[0x{line + 4:x}, line 0x{line:x}]", comment)


# (trace line, what it counts for) -- expected counts below are the sums of the right-hand comments
KNOWN_TRACE = [
    gem5_line(2, "Seq", "Begin", "", "", A, "Locked_RMW_Read"),  # a CPU access: nothing
    gem5_line(2, "L1Cache", "Store", "I", "IM", A),  # GETX from node 1 to A's home on node 0: 1 crossing
    gem5_line(0, "L2Cache", "L1_GETX", "MT", "MT_MB", A),  # A: request 1
    gem5_line(0, "L1Cache", "Fwd_GETX", "M", "I", A),  # from A's home, on node 0: no crossing
    gem5_line(0, "L2Cache", "L1_GETS", "MT_MB", "MT_MB", A),  # set aside while the line is busy: not a request
    gem5_line(0, "L2Cache", "L1_GETS", "MT", "MT_IIB", A),  # A: request 2 (the same GETS, served)
    gem5_line(0, "L2Cache", "L1_GETS", "MT", "MT_IIB", A, "Resource Stall"),  # a stall: retried, counted when it runs
    gem5_line(1, "L1Cache", "Inv", "S", "I", A),  # A: invalidation 1, on node 0: no crossing
    gem5_line(3, "L1Cache", "Inv", "M", "I", A),  # A: invalidation 2, Inv + data back from node 1: 2 crossings
    gem5_line(3, "L1Cache", "Load", "M", "M", A),  # a hit: nothing
    gem5_line(1, "L2Cache", "L1_UPGRADE", "SS", "SS_MB", B),  # B: request 1
    gem5_line(0, "L1Cache", "Store", "S", "SM", B),  # UPGRADE from node 0 to B's home on node 1: 1 crossing
    gem5_line(2, "L1Cache", "Ack_all", "SM", "M", B),  # exclusive unblock from node 1 to node 1: no crossing
    gem5_line(1, "Directory", "Fetch", "I", "IM", C),  # C's home bank 0 (node 0) to directory 1: 1 crossing
    gem5_line(1, "Directory", "Memory_Data", "IM", "M", C),  # and the data back: 1 crossing
    gem5_line(0, "L2Cache", "L2_Replacement_clean", "SS", "I", C),  # 20 characters: runs into "L2Cache"; nothing
]
# line: (requests, invalidations, crossings)
KNOWN_COUNTS = {A: (2, 2, 3), B: (1, 0, 1), C: (0, 0, 2)}


def write_trace(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(cache))
    return cache


def numa_run_with(tmp_path: Path, lines: list[str]) -> Path:
    """The real NUMA fixture's run folder with `lines` as its ROI trace."""
    if not NUMA_RUN.is_dir():
        pytest.skip("no real gem5 fixture of the NUMA machine")
    folder = tmp_path / "results" / NUMA_RUN.name
    shutil.copytree(NUMA_RUN, folder, ignore=shutil.ignore_patterns("roi.trace.gz"))
    write_trace(folder / "roi.trace.gz", lines)
    return folder.parent


def test_the_known_trace_gives_the_exact_table(tmp_path: Path) -> None:
    results, errors = load_results(numa_run_with(tmp_path, KNOWN_TRACE), None)
    assert not errors
    rows = hotline_tables(results).rows
    assert list(rows.columns) == COLUMNS
    ops = json.loads((NUMA_RUN / "result.json").read_text())["guest"]["results"][0]["result"]["ops"]  # kbench: acquisitions
    expected = pd.DataFrame(
        [
            {"study": "", "config": "altix-numa 4 CPUs, qspinlock, kbench:duration_ms=1, kernel smp, run altix-numa-2-kbench", "rank": 1, "line": "0x1d08100",
             "symbol": "bench:lock | bench:shared_noise", "offset": 0, "fields": "", "requests": 2, "invalidations": 2, "crossings": 3, "share": 2 / 3, "requests_per_op": 2 / ops},
            {"study": "", "config": "altix-numa 4 CPUs, qspinlock, kbench:duration_ms=1, kernel smp, run altix-numa-2-kbench", "rank": 2, "line": "0x1d08140",
             "symbol": "bench:guarded_data", "offset": 0, "fields": "", "requests": 1, "invalidations": 0, "crossings": 1, "share": 1 / 3, "requests_per_op": 1 / ops},
            {"study": "", "config": "altix-numa 4 CPUs, qspinlock, kbench:duration_ms=1, kernel smp, run altix-numa-2-kbench", "rank": 3, "line": "0x2000000",
             "symbol": "unknown (no System.map)", "offset": None, "fields": "", "requests": 0, "invalidations": 0, "crossings": 2, "share": 0.0, "requests_per_op": 0.0},
        ],
        columns=COLUMNS,
    ).astype({"offset": "Int64", "fields": rows["fields"].dtype})  # fmt: skip
    pd.testing.assert_frame_equal(rows.reset_index(drop=True), expected)


def test_counts_do_not_depend_on_how_the_trace_is_cut_into_chunks(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", KNOWN_TRACE)
    whole = scan_trace(trace).rois
    for chunk_bytes in (1, 100, 333):
        assert scan_trace(trace, chunk_bytes=chunk_bytes).rois == whole


def profile_of(trace: Path, roi_starts: tuple[int, ...] = ()) -> list[dict[int, tuple[int, int, int]]]:
    rules = load_rules()
    protocol = rules.protocols["MESI_Two_Level"]
    topology = read_topology(NUMA_RUN / "config.json", protocol, LINE_BYTES, (0, 0, 1, 1))
    counts = scan_trace(trace, roi_starts, chunk_bytes=200)
    profiles = [roi_profile(roi, rules, protocol, topology) for roi in counts.rois]
    return [{t.line: (t.requests, t.invalidations, t.crossings) for t in p.lines.values()} for p in profiles]


def test_lines_go_to_the_roi_their_tick_is_in(tmp_path: Path) -> None:
    second = ROI_START + 10**9
    moved = [text.replace(str(ROI_START + 1000), str(second + 5)) if "0x1d08140" in text else text for text in KNOWN_TRACE]
    ordered = [text for text in moved if "0x1d08140" not in text] + [text for text in moved if "0x1d08140" in text]
    first_roi, second_roi = profile_of(write_trace(tmp_path / "roi.trace.gz", ordered), (ROI_START, second))
    assert first_roi == {line: counts for line, counts in KNOWN_COUNTS.items() if line != B}
    assert second_roi == {B: KNOWN_COUNTS[B]}


def test_a_node_is_read_from_the_wiring_and_checked_against_cpu_to_node() -> None:
    protocol = load_rules().protocols["MESI_Two_Level"]
    topology = read_topology(NUMA_RUN / "config.json", protocol, LINE_BYTES, (0, 0, 1, 1))
    assert [topology.node("L1Cache", cpu) for cpu in range(4)] == [0, 0, 1, 1]
    assert (topology.home_node(A), topology.home_node(B)) == (0, 1)
    with pytest.raises(HotlinesError, match=r"L1Cache 1 is on node 0 by the network, but result.json's cpu_to_node puts CPU 1 on node 1"):
        read_topology(NUMA_RUN / "config.json", protocol, LINE_BYTES, (0, 1, 1, 1))


# -- the real trace -------------------------------------------------------------------------------------------------


def test_the_real_trace_has_the_bench_locks_line_on_top(tmp_path: Path) -> None:
    """Checked by hand first: in the fixture's 50,000 lines the lock's line 0x1d08100 has the most
    L1_GETS/L1_GETX/L1_UPGRADE at its home bank (72 with the set-aside ones, 53 served) and the most Inv (33)."""
    if not NUMA_RUN.is_dir():
        pytest.skip("no real gem5 fixture of the NUMA machine")
    results, _ = load_results(FIXTURES, None)
    rows = hotline_tables(results).rows
    top = rows.iloc[0]
    assert (top["rank"], top["line"], top["symbol"]) == (1, "0x1d08100", "bench:lock | bench:shared_noise")
    assert top["share"] == rows["share"].max() and top["invalidations"] == rows["invalidations"].max()
    # The requests, counted independently from the text as `awk` would: home-bank request events on the
    # line, less those in the states where MESI_Two_Level's L2 sets a request aside.
    waits = {"SS_MB", "MT_MB", "MT_IIB", "MT_IB", "MT_SB", "I_I", "S_I", "MT_I", "MCT_I", "M_I"}
    served = Counter()
    with gzip.open(NUMA_RUN / "roi.trace.gz", "rt") as handle:
        for text in handle:
            words = text.split()
            if words[2] == "L2Cache" and words[3] in ("L1_GETS", "L1_GETX", "L1_UPGRADE", "L1_GET_INSTR"):
                if words[4].split(">")[0] not in waits:
                    served[words[-1].rstrip("]")] += 1
    assert top["requests"] == served["0x1d08100"] == 53
    assert top["share"] == pytest.approx(53 / sum(served.values()))
    # the per-lock table counts the same invalidations and home requests on that line: each request
    # once, not again for the transition that set it aside (72 transitions, 53 requests served)
    _events, locks = lock_tables(results)
    bench = locks[locks["lock"] == "bench:lock"].iloc[0]
    assert bench["invalidations"] == top["invalidations"]
    assert bench["home_requests"] == top["requests"] == 53
    assert bench["unserved_transitions"] == 72 - 53


def test_a_second_report_reads_no_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, _ = load_results(numa_run_with(tmp_path, KNOWN_TRACE), None)
    first = hotline_tables(results).rows

    def no_reading(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the trace was read again")

    monkeypatch.setattr(scan, "chunk_counts", no_reading)
    pd.testing.assert_frame_equal(hotline_tables(results).rows, first)


def test_a_changed_trace_is_read_again(tmp_path: Path) -> None:
    folder = numa_run_with(tmp_path, KNOWN_TRACE)
    results, _ = load_results(folder, None)
    hotline_tables(results)
    write_trace(folder / NUMA_RUN.name / "roi.trace.gz", KNOWN_TRACE[:3])
    again = hotline_tables(load_results(folder, None)[0]).rows
    assert again["requests"].tolist() == [1]


# -- bad input: one line naming the file and the line ----------------------------------------------------------------


def test_a_junk_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "roi.trace.gz", [*KNOWN_TRACE[:5], "this is not gem5", *KNOWN_TRACE[5:]])
    for chunk_bytes in (100, 1 << 20):
        with pytest.raises(TraceFormatError) as caught:
            scan_trace(trace, chunk_bytes=chunk_bytes)
        assert str(caught.value) == f"{trace}:6: not a ProtocolTrace line: b'this is not gem5'"


def test_a_cut_gzip_stream_is_named_by_file_and_line(tmp_path: Path) -> None:
    whole = write_trace(tmp_path / "whole.trace.gz", KNOWN_TRACE * 200).read_bytes()
    cut = tmp_path / "roi.trace.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(TraceFormatError) as caught:
        scan_trace(cut, chunk_bytes=256)
    message = str(caught.value)
    assert message.startswith(f"{cut}:") and "the trace ends here" in message and "\n" not in message
    line = int(message[len(f"{cut}:") :].split(":")[0])
    assert 1 < line <= len(KNOWN_TRACE) * 200


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (gem5_line(0, "Cache", "ReadShared", "I", "BUSY_BLKD", A), "'Cache ReadShared' is no machine of MESI_Two_Level"),
        (gem5_line(7, "L1Cache", "Store", "I", "IM", A), "no L1Cache_Controller of version 7, which the trace names"),
    ],
)
def test_a_controller_the_machine_does_not_have_is_named_by_file_and_line(tmp_path: Path, line: str, reason: str) -> None:
    folder = numa_run_with(tmp_path, [*KNOWN_TRACE, line, *KNOWN_TRACE])
    results, _ = load_results(folder, None)
    with pytest.raises(TraceFormatError) as caught:
        hotline_tables(results)
    trace = folder / NUMA_RUN.name / "roi.trace.gz"
    assert str(caught.value).startswith(f"{trace}:{len(KNOWN_TRACE) + 1}: ") and reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_bad_rules_file_names_the_field(tmp_path: Path) -> None:
    rules = tmp_path / "hotlines.toml"
    rules.write_text(RULES_FILE.read_text().replace("csv_top_lines = 20", "csv_top_lines = 0"))
    with pytest.raises(HotlinesError, match=r"hotlines.toml.csv_top_lines: 0 is below 1"):
        load_rules(rules)
    rules.write_text(RULES_FILE.read_text().replace('machine = "Directory"\nevents = ["Fetch"]', 'machine = "Dir"\nevents = ["Fetch"]'))
    with pytest.raises(HotlinesError, match=r"hotlines.toml: \[protocol.MESI_Two_Level\].message\[\d+\].machine: 'Dir' is not one of machines"):
        load_rules(rules)


def test_the_report_writes_hotlines_csv_and_its_section(tmp_path: Path) -> None:
    from analysis.reporting import report

    folder = numa_run_with(tmp_path, KNOWN_TRACE)
    out = tmp_path / "out"
    assert report.main([str(ROOT / "campaigns" / "machines.toml"), "--results", str(folder), "--out", str(out)]) == 0
    assert pd.read_csv(out / "hotlines.csv")["line"].tolist() == ["0x1d08100", "0x1d08140", "0x2000000"]
    assert (out / "metrics.csv").is_file()
    markdown = (out / "report.md").read_text()
    assert "## Hot lines" in markdown and "| 1 | 0x1d08100 | bench:lock \\| bench:shared\\_noise | +0x0 |  | 2 | 2 | 3 | 66.7% | 0.00234 | 1 |" in markdown
    # the same lines by object: bench:guarded_data's line and the unnamed one are objects of their own
    assert "the top 3 objects, their lines summed" in markdown and "| bench:guarded\\_data | 1 | 1 | 0 | 1 | 33.3% |" in markdown


def test_a_damaged_trace_ends_the_report_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.reporting import report

    folder = numa_run_with(tmp_path, [*KNOWN_TRACE[:2], "junk"])
    code = report.main([str(ROOT / "campaigns" / "machines.toml"), "--results", str(folder), "--out", str(tmp_path / "out")])
    assert code == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("report: ")]
    assert errors == [f"report: {folder / NUMA_RUN.name / 'roi.trace.gz'}:3: not a ProtocolTrace line: b'junk'"]



def test_a_restored_run_whose_kept_results_are_stale_is_named_in_every_table_it_is_missing_from(tmp_path: Path) -> None:
    from analysis.reporting import report
    from analysis.traffic import trace_cache

    folder = numa_run_with(tmp_path, KNOWN_TRACE)
    trace = folder / NUMA_RUN.name / "roi.trace.gz"
    trace.unlink()  # restored from the run archive: no trace, and what was read from it made by older code
    stale = {"made_from": {"format": 1, "code_sha256": "older code"}}
    trace_cache.derived_file(trace).write_text(json.dumps({"readers": {"hotlines": stale, "trace-attribution": stale}}))
    results, _ = load_results(folder, None)
    profiled, attributed = trace_cache.left_out_note(NUMA_RUN.name, "profiled"), trace_cache.left_out_note(NUMA_RUN.name, "attributed")
    tables = hotline_tables(results)
    assert tables.rows.empty and tables.notes == [profiled]
    notes: list[str] = []
    _events, locks = lock_tables(results, notes=notes)
    assert locks.empty and notes == [attributed]
    out = tmp_path / "out"
    assert report.main([str(ROOT / "campaigns" / "machines.toml"), "--results", str(folder), "--out", str(out)]) == 0
    markdown = (out / "report.md").read_text()
    assert f"Left out: {attributed}." in markdown.replace("\\_", "_")


def test_a_protocol_without_rules_is_a_note_not_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, _ = load_results(numa_run_with(tmp_path, KNOWN_TRACE), None)
    rules = load_rules()
    monkeypatch.setattr(table, "load_rules", lambda: dataclasses.replace(rules, protocols={}))
    tables = hotline_tables(results)
    assert tables.rows.empty
    assert tables.notes == ["run altix-numa-2-kbench: Ruby protocol MESI_Two_Level has no hot-line rules yet (analysis/data/hotlines.toml has ): not profiled"]


def test_a_studys_configurations_are_profiled_apart_and_its_repeats_together() -> None:
    """padding-traced traces a packed and a padded kernel: one table each, never one sum (the difference
    between them is what the pair is for); two traced repeats of one configuration are summed."""
    from analysis.hotlines.profile import LineTraffic, RoiProfile
    from analysis.hotlines.table import HotlineTables, RunNamer, study_lines, traced_groups

    def profile(requests: int) -> RoiProfile:
        return RoiProfile.of_lines({0x1000: LineTraffic(0x1000, requests=requests)})

    tables = HotlineTables(pd.DataFrame())
    for run, config, requests in (("a1", "piii-smp 8 CPUs, qspinlock, fsmix, smp", 10), ("a2", "piii-smp 8 CPUs, qspinlock, fsmix, smp", 30),
                                  ("b1", "piii-smp 8 CPUs, qspinlock, fsmix, smp-packed", 7)):  # fmt: skip
        tables.profiles[(run, 0)] = profile(requests)
        tables.labels[(run, 0)] = ("padding-traced", f"{config}, run {run}ff")
        tables.namers[run] = RunNamer(64, None, ())
    groups = traced_groups(tables)
    assert groups == [("padding-traced", "piii-smp 8 CPUs, qspinlock, fsmix, smp"), ("padding-traced", "piii-smp 8 CPUs, qspinlock, fsmix, smp-packed")]
    (padded, rois), (packed, packed_rois) = (study_lines(tables, group, 10) for group in groups)
    assert (padded[0]["requests"], rois, padded[0]["share"]) == (40, 2, 1.0)
    assert (packed[0]["requests"], packed_rois) == (7, 1)


def test_a_rois_configuration_names_its_whole_run_spec_item() -> None:
    """kbench-false-sharing-traced's two placements were summed into one table while a ROI was named by
    its testcase alone; its run-spec item tells them apart."""
    from analysis.hotlines.table import _spec_items

    shared = _spec_items("kbench:variant=qspinlock,duration_ms=1,placement=shared")
    padded = _spec_items("kbench:variant=qspinlock,duration_ms=1,placement=padded")
    assert shared != padded and "placement=shared" in shared[0] and len(_spec_items("kbench+dd1b:count=20")) == 2
    assert _spec_items(None) == [] and _spec_items("not a spec!") == []
