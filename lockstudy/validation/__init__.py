"""One validation path for everything a user hands the project.

A campaign file, its runs and their run specs are checked here, on the
host, before anything is built, booted or simulated; `campaign --dry-run`,
the local, Slurm and QEMU launches and `report` all load a campaign through
lockstudy/campaign/loader.py, which uses this package, and gem5-configs/
run_plan.py applies the same rules to run.py's options. Every problem of a
file is collected and reported at once, one line each:

    file:field: value: what is wrong (what is allowed)

problems.py   the Problem line and the InputError that carries them
testcases.py  what each testcase of a run spec accepts (lockstudy/data/testcases.toml)
runs.py       the rules that tie a run's fields together (machine size, trace, boot)
"""
