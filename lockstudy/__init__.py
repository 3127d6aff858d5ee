"""lockstudy: a gem5 full-system study of Linux kernel lock variants.

The package holds the orchestration: the `run.sh` command line, set-up,
prerequisite checks, the build drivers of each pipeline stage and the
campaign launcher. It uses only the Python standard library, so that
`./run.sh setup`, `doctor` and `--help` work before the project's Python
environment exists.
"""
