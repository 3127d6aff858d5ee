"""Reading traced runs for the hot-line profile: a pool of processes, each trace read once and its profiles cached.

A traced run's trace is scanned (scan.py) and each ROI profiled
(profile.py) in a worker process; the profiles (every line with traffic,
per ROI) are kept in the machine's lockstudy cache (analysis/
trace_cache.py, folder `hotlines`) with what they were made from: the
trace's path, size and time, the digest of config.json, the protocol,
line size, ROI start ticks and cpu_to_node, the rules file and the
profile's code. A later report reuses them only when all of that is the
same, and reads the trace otherwise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.gem5_output import config_reader, ruby_wiring, trace_chunks
from analysis.gem5_output.trace_chunks import TraceFormatError
from analysis.hotlines import classic, profile, rules, scan, topology
from analysis.hotlines.profile import LineTraffic, RoiProfile
from analysis.hotlines.rules import load_rules
from analysis.traffic import trace_cache

CACHE_FOLDER = "hotlines"
CACHE_FORMAT = 1
CLASSIC = "classic"  # a job's `protocol` for a classic-memory trace (classic.py)


@dataclass(frozen=True)
class HotlineJob:
    """One traced run to profile: its trace, its machine's config.json and what reading them needs."""

    key: str  # the run id
    trace: Path
    config: Path
    protocol: str  # the Ruby protocol, or CLASSIC
    line_bytes: int
    roi_starts: tuple[int, ...]
    cpu_to_node: tuple[int, ...]


def code_digest() -> str:
    """The profile's code and rules: a cached profile made by other code or rules is made again."""
    sources = (
        __file__, scan.__file__, profile.__file__, rules.__file__, topology.__file__, trace_chunks.__file__, str(rules.RULES_FILE), classic.__file__,
        config_reader.__file__, ruby_wiring.__file__, str(config_reader.DATA_FILE),
    )  # fmt: skip
    return trace_cache.code_digest(*sources)


def cache_path(trace: Path) -> Path:
    return trace_cache.cache_file(CACHE_FOLDER, trace)


def made_from(job: HotlineJob) -> dict[str, Any]:
    return {
        "format": CACHE_FORMAT,
        "code_sha256": code_digest(),
        **trace_cache.trace_identity(job.trace),
        "config_sha256": hashlib.sha256(job.config.read_bytes()).hexdigest(),
        "protocol": job.protocol,
        "line_bytes": job.line_bytes,
        "roi_starts": list(job.roi_starts),
        "cpu_to_node": list(job.cpu_to_node),
    }


def to_json(profiles: list[RoiProfile], source: dict[str, Any]) -> dict[str, Any]:
    return {
        "made_from": source,
        "rois": [
            {"lines": [[t.line, t.requests, t.invalidations, t.home_messages, t.crossings] for t in sorted(p.lines.values(), key=lambda t: t.line)]}
            for p in profiles
        ],
    }


def from_json(data: dict[str, Any]) -> list[RoiProfile]:
    out = []
    for roi in data["rois"]:
        lines = {int(line): LineTraffic(int(line), int(req), int(inv), int(msg), int(cross)) for line, req, inv, msg, cross in roi["lines"]}
        out.append(RoiProfile.of_lines(lines))
    return out


def cached(job: HotlineJob) -> list[RoiProfile] | None:
    data = trace_cache.load_kept(CACHE_FOLDER, job.trace, made_from(job))
    if data is None:
        return None
    try:
        return from_json(data)
    except (KeyError, TypeError, ValueError):
        return None  # of another layout: read the trace


def profile_job(job: HotlineJob) -> list[RoiProfile]:
    """Scan the trace, profile each ROI, keep the result in the cache (when it can be written)."""
    source = made_from(job)
    if job.protocol == CLASSIC:
        profiles = classic.profile_classic(job.trace, job.line_bytes, job.roi_starts)
        trace_cache.store(cache_path(job.trace), to_json(profiles, source))
        return profiles
    hotline_rules = load_rules()
    protocol = hotline_rules.protocol(job.protocol, str(job.config))
    machine = topology.read_topology(job.config, protocol, job.line_bytes, job.cpu_to_node)
    builders = [profile.ProfileBuilder(hotline_rules, protocol, machine) for _ in range(max(1, len(job.roi_starts)))]
    try:
        for roi, counts in scan.chunk_counts(job.trace, job.roi_starts):
            builders[roi].add(counts)
    except profile.UnreadableTransition as exc:
        raise TraceFormatError(f"{job.trace}:{scan.first_line_with(job.trace, exc.key)}: {exc.reason}") from None
    profiles = [builder.result() for builder in builders]
    trace_cache.store(cache_path(job.trace), to_json(profiles, source))
    return profiles


def profile_all(jobs: list[HotlineJob], processes: int | None = None) -> dict[str, list[RoiProfile]]:
    """job.key -> its ROIs' profiles: cached ones as they are, the others read by a process pool."""
    return trace_cache.cached_or_read(jobs, lambda job: job.key, cached, profile_job, lambda job: job.trace, "profiled", processes)
