"""`run.sh publish`: copy a gem5 run folder into the repository, portably.

A run folder written by gem5-configs/run.py names the machine it ran on:
the gem5 binary, the checkout, the checkpoint and output folders, all as
absolute paths (result.json's provenance and command, gem5's config.json).
Published results (tests/fixtures/gem5/, results/) must not. This copies
stats.txt, config.json, console.log and result.json, rewriting each
absolute prefix into a placeholder (`$GEM5`, `<repo>`, `<run>`,
`<checkpoint>`, `<cache>` for the machine-wide cache, `<build>` for a
build folder outside the checkout (LOCKSTUDY_BUILD), `~` for the home
folder), and refuses to finish if any of those prefixes, or the
folders holding them, still appear. With --trace-lines A:B it also keeps
lines A..B (1-based, inclusive) of the ROI trace, gzip'd: a real excerpt
small enough to commit. PUBLISHED.json records what was copied and cut,
with the sha256 of every source file.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

from lockstudy.console import error, step
from lockstudy.files import file_sha256, write_json_atomically
from lockstudy.paths import ROOT, cache_dir

RUN_FILES = ("stats.txt", "config.json", "console.log", "result.json")
TRACE = "roi.trace.gz"
RECORD = "PUBLISHED.json"
# A path prefix ends where the next character cannot continue a file name.
PATH_END = r"(?![\w.+-])"


BUILD = "<build>"
# run.py's image is <build folder>/image/rootfs.ext2 (lockstudy/image.py).
IMAGE_DEPTH_IN_BUILD = 2


class PublishError(RuntimeError):
    """The run cannot be published; the message says why."""


def placeholders(source: Path, result: dict[str, Any]) -> list[tuple[str, str]]:
    """(absolute prefix, placeholder), longest prefix first."""
    provenance = result.get("provenance", {})
    pairs = [(str(ROOT), "<repo>"), (str(source.resolve()), "<run>"), (str(cache_dir()), "<cache>"), (str(Path.home()), "~")]
    if provenance.get("gem5_binary"):
        pairs.append((str(provenance["gem5_binary"]), "$GEM5"))
    if provenance.get("checkpoint_in"):
        pairs.append((str(provenance["checkpoint_in"]), "<checkpoint>"))
    if result.get("gem5_outdir"):
        pairs.append((str(result["gem5_outdir"]), "<run>/m5out"))
    build = build_folder(result)
    if build is not None:
        pairs.append((str(build), BUILD))
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def build_folder(result: dict[str, Any]) -> Path | None:
    """The build folder the run's kernel and image came from, when it is outside the checkout
    (LOCKSTUDY_BUILD): from the image path its provenance records, else None."""
    image = (result.get("provenance", {}).get("image") or {}).get("path")
    if not isinstance(image, str) or not Path(image).is_absolute():
        return None
    parents = Path(image).parents
    if len(parents) <= IMAGE_DEPTH_IN_BUILD:
        return None  # no build folder above image/ (the file system's root is none)
    folder = parents[IMAGE_DEPTH_IN_BUILD - 1]
    return None if folder.is_relative_to(ROOT) else folder


def forbidden(pairs: list[tuple[str, str]]) -> set[str]:
    """Prefixes that must not survive: each replaced path and its parent folder."""
    out: set[str] = set()
    for prefix, _ in pairs:
        path = Path(prefix)
        out.add(str(path))
        if path.parent != Path(path.anchor):
            out.add(str(path.parent) + "/")
    return out


def replace_paths(text: str, pairs: list[tuple[str, str]]) -> str:
    """Each prefix replaced where it is a whole path or a leading part of one (not "/root" in "/rootfs")."""
    for prefix, placeholder in sorted(pairs, key=lambda pair: -len(pair[0])):
        text = re.sub(re.escape(prefix) + PATH_END, lambda _match, p=placeholder: p, text)
    return text


def portable(text: str, pairs: list[tuple[str, str]], name: str) -> str:
    text = replace_paths(text, pairs)
    left = sorted(prefix for prefix in forbidden(pairs) if re.search(re.escape(prefix) + ("" if prefix.endswith("/") else PATH_END), text))
    if left:
        raise PublishError(f"{name}: still names {left} after rewriting; not published")
    return text


def excerpt(trace: Path, first: int, last: int, dest: Path) -> int:
    kept = 0
    # mtime 0 and no file name in the header: the same excerpt gives the same bytes
    with gzip.open(trace, "rt") as source, open(dest, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as packed:
        for line in itertools.islice(source, first - 1, last):
            packed.write(line.encode())
            kept += 1
    if kept != last - first + 1:
        raise PublishError(f"{trace}: has only {first - 1 + kept} lines, --trace-lines asked for {first}:{last}")
    return kept


def publish(source: Path, dest: Path, trace_lines: tuple[int, int] | None) -> dict[str, Any]:
    missing = [name for name in RUN_FILES if not (source / name).is_file()]
    if missing:
        raise PublishError(f"{source}: not a finished run folder of gem5-configs/run.py (missing {', '.join(missing)})")
    result = json.loads((source / "result.json").read_text())
    if result.get("status") != "ok":
        raise PublishError(f"{source}/result.json: status {result.get('status')!r} ({result.get('reason')}); only ok runs are published")
    if trace_lines and not (source / TRACE).is_file():
        raise PublishError(f"{source}: --trace-lines given but there is no {TRACE}")
    pairs = placeholders(source, result)
    texts = {name: portable((source / name).read_text(), pairs, f"{source / name}") for name in RUN_FILES}
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (dest / name).write_text(text)
    record: dict[str, Any] = {
        "source_sha256": {name: file_sha256(source / name) for name in RUN_FILES},
        "placeholders": {placeholder: "an absolute path on the machine that ran it" for _, placeholder in pairs},
    }
    if trace_lines:
        first, last = trace_lines
        kept = excerpt(source / TRACE, first, last, dest / TRACE)
        record["trace_excerpt"] = {"source_sha256": file_sha256(source / TRACE), "first_line": first, "last_line": last, "lines": kept}
    write_json_atomically(dest / RECORD, record)
    return record


def line_range(text: str) -> tuple[int, int]:
    first, sep, last = text.partition(":")
    if not (sep and first.isdigit() and last.isdigit() and 0 < int(first) <= int(last)):
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST:LAST with 1 <= FIRST <= LAST")
    return int(first), int(last)


def run(args: argparse.Namespace) -> int:
    step(f"publishing {args.run_dir} -> {args.dest}")
    try:
        record = publish(args.run_dir, args.dest, args.trace_lines)
    except PublishError as exc:
        shutil.rmtree(args.dest, ignore_errors=True) if args.dest.exists() and not any(args.dest.iterdir()) else None
        error(str(exc))
        return 1
    sizes = ", ".join(f"{p.name} {p.stat().st_size // 1024} KiB" for p in sorted(args.dest.iterdir()))
    print(f"    {sizes}")
    if "trace_excerpt" in record:
        print(f"    trace lines {record['trace_excerpt']['first_line']}..{record['trace_excerpt']['last_line']} kept")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "publish",
        help="copy a gem5 run folder into the repository without this machine's paths",
        description=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("run_dir", type=Path, help="a folder gem5-configs/run.py wrote (its --outdir)")
    parser.add_argument("dest", type=Path, help="where the portable copy goes (e.g. tests/fixtures/gem5/NAME)")
    parser.add_argument("--trace-lines", type=line_range, metavar="FIRST:LAST", help="also keep these lines of roi.trace.gz")
    parser.set_defaults(func=run)
