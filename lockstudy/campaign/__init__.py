"""Campaigns: a matrix of runs, executed locally, on Slurm or under QEMU, resumable.

A campaign file (campaigns/*.toml) declares studies; each study is a matrix
whose product gives runs. A run's id is a hash of its normalised spec, so the
same run declared twice is one run, and a re-read campaign finds its results.
"""
