"""The run archive: every finished gem5 run, kept in the repository without its trace.

A campaign's results folder lives on the machine that ran it, and a
machine can be lost with every hour simulated on it. So the outputs that
the report reads are packed, run by run, into the repository:

    results/archive/<campaign>/
        index.json              per run: study, bytes, sha256, traced, what it was made with
        runs/<run-id>.tar.xz    spec.json, result.json, attempts.json, and out/ with
                                result.json, stats.txt, config.json, console.log,
                                and roi.trace.gz.derived.json for a traced run

A run is packed once, when it is done; its tar is the same bytes
whenever it is packed again (sorted members, no times, no owners). Every
absolute path of the machine that ran it becomes a placeholder
(lockstudy/publish.py), and the worker's host name and pid are dropped.

A trace is never packed: it is gigabytes. What the report's trace readers
made from it (the hot-line profile, the per-lock attribution: kept in the
lockstudy cache by analysis/traffic/trace_cache.py) is packed instead, as
`roi.trace.gz.derived.json`, and a report on a restored run reads that.

`restore` unpacks the runs a results folder lacks, except those made with
another machine file, kernel build or disk image than today's (staleness.py):
their hours would count for a machine that no longer exists. The launcher
restores before it runs anything, so a campaign never simulates a run the
archive holds.

- `settings.py`: where the archive is and how it packs (lockstudy/data/campaign.toml [archive]);
- `pack.py`: `campaign archive`: pack the done runs not yet packed;
- `restore.py`: `campaign restore`, and the launcher's restore before a launch.
"""
