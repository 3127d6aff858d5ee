"""The run.sh commands, one module each, each with its register() (publish, which the archive
and the report use too, stays in lockstudy/; `analyze` and `report` are analysis/command.py).

  bench.py     `run.sh bench TARGET`: benchmarks that print their figures.
  build.py     `run.sh build TARGET`: build one stage of the pipeline.
  campaign.py  `run.sh campaign`: declare a matrix, run it locally, on Slurm or under QEMU; resume after any failure.
  costs.py     `run.sh costs`: the cost model's measurements, and how well it predicts them.
  demo.py      `run.sh demo`: the teaching demo in one command.
  doctor.py    `run.sh doctor`: one line per prerequisite, with how to fix what is missing.
  handoff.py   `run.sh handoff RUN_DIR --lock NAME`: the message sequence chart of one lock hand-off of a traced run.
  setup.py     `run.sh setup`: install every dependency and build what can be built.
  test.py      `run.sh test`: the whole test suite, as CI runs it.
"""
