"""`run.sh publish`: a run folder copied without the paths of the machine that ran it."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from lockstudy import publish
from lockstudy.paths import ROOT, cache_dir


def run_folder(tmp_path: Path, status: str = "ok") -> Path:
    run = tmp_path / "run"
    run.mkdir()
    gem5 = tmp_path / "gem5-build" / "gem5.opt"
    checkpoint = tmp_path / "checkpoints" / "c1"
    result = {
        "status": status,
        "reason": "" if status == "ok" else "the run ended with kernel panic",
        "gem5_outdir": str(run / "m5out"),
        "provenance": {
            "gem5_binary": str(gem5),
            "checkpoint_in": str(checkpoint),
            "command": [str(ROOT / "gem5-configs" / "run.py"), "--outdir", str(run)],
            "kernel": {"build_info": {"make_command": f"make -C {cache_dir()}/kernel/tree/src"}},
        },
    }
    (run / "result.json").write_text(json.dumps(result))
    (run / "config.json").write_text(json.dumps({"workload": {"object_file": str(ROOT / "build" / "vmlinux"), "disk": f"{Path.home()}fs.ext2"}}))
    (run / "stats.txt").write_text("simSeconds 0.1 # Number of seconds simulated (Second)\n")
    (run / "console.log").write_text("LOCKSTUDY-DONE status=ok\n")
    with gzip.open(run / "roi.trace.gz", "wt") as trace:
        trace.writelines(f"line {n}\n" for n in range(1, 101))
    return run


def test_published_files_name_no_absolute_path_of_this_machine(tmp_path: Path) -> None:
    run = run_folder(tmp_path)
    dest = tmp_path / "published"
    record = publish.publish(run, dest, (11, 20))
    texts = {name: (dest / name).read_text() for name in publish.RUN_FILES}
    for name, text in texts.items():
        for leaked in (str(ROOT), str(tmp_path), str(cache_dir()), str(Path.home())):
            assert not re.search(re.escape(leaked) + publish.PATH_END, text), (name, leaked)
    result = json.loads(texts["result.json"])
    assert result["provenance"]["gem5_binary"] == "$GEM5"
    assert result["provenance"]["checkpoint_in"] == "<checkpoint>"
    assert result["provenance"]["command"] == ["<repo>/gem5-configs/run.py", "--outdir", "<run>"]
    assert result["provenance"]["kernel"]["build_info"]["make_command"] == "make -C <cache>/kernel/tree/src"
    workload = json.loads(texts["config.json"])["workload"]
    assert workload["object_file"] == "<repo>/build/vmlinux"
    # a prefix is replaced only as a whole path component: the home folder's name inside another name stays
    assert workload["disk"] == f"{Path.home()}fs.ext2"
    with gzip.open(dest / "roi.trace.gz", "rt") as trace:
        assert trace.read().splitlines() == [f"line {n}" for n in range(11, 21)]
    assert record["trace_excerpt"]["lines"] == 10
    assert json.loads((dest / publish.RECORD).read_text())["source_sha256"]["stats.txt"]


def test_a_build_folder_outside_the_checkout_is_named_by_its_placeholder(tmp_path: Path) -> None:
    """LOCKSTUDY_BUILD elsewhere (a cluster's scratch): the run's kernel and image paths become <build>/...,
    and a run built in the checkout keeps <repo>/build/..."""
    run = run_folder(tmp_path)
    outside = tmp_path / "scratch" / "lockstudy-build"
    result = json.loads((run / "result.json").read_text())
    result["provenance"]["image"] = {"path": str(outside / "image" / "rootfs.ext2")}
    result["provenance"]["kernel"]["path"] = str(outside / "kernel" / "smp" / "vmlinux")
    (run / "result.json").write_text(json.dumps(result))
    publish.publish(run, tmp_path / "published", None)
    text = (tmp_path / "published" / "result.json").read_text()
    assert str(tmp_path) not in text
    provenance = json.loads(text)["provenance"]
    assert provenance["image"]["path"] == "<build>/image/rootfs.ext2"
    assert provenance["kernel"]["path"] == "<build>/kernel/smp/vmlinux"
    assert publish.build_folder({"provenance": {"image": {"path": str(ROOT / "build" / "image" / "rootfs.ext2")}}}) is None
    for shallow in ("rootfs.ext2", "/rootfs.ext2", "/image/rootfs.ext2"):
        assert publish.build_folder({"provenance": {"image": {"path": shallow}}}) is None
    assert publish.build_folder({"provenance": {"image": {"path": "/b/image/rootfs.ext2"}}}) == Path("/b")


def test_a_path_left_over_after_rewriting_stops_the_publication(tmp_path: Path) -> None:
    run = run_folder(tmp_path)
    # the folder holding the checkpoint, named on its own, is not a placeholder's prefix
    (run / "console.log").write_text(f"see {tmp_path / 'checkpoints'}/other\n")
    with pytest.raises(publish.PublishError, match="console.log: still names"):
        publish.publish(run, tmp_path / "published", None)


def test_only_ok_runs_and_only_existing_trace_lines(tmp_path: Path) -> None:
    with pytest.raises(publish.PublishError, match="only ok runs are published"):
        publish.publish(run_folder(tmp_path, status="failed"), tmp_path / "out", None)
    other = tmp_path / "second"
    other.mkdir()
    with pytest.raises(publish.PublishError, match="has only 100 lines"):
        publish.publish(run_folder(other), other / "out", (90, 120))
