"""Statistics of repeated runs: configurations, intervals, claim verdicts.

A deterministic simulator makes one run look exact; it is one sample of
the interleavings (Alameldeen & Wood, HPCA 2003). This package groups the
metrics table's runs into configurations (everything but the repeat),
gives each rate a mean, n and a 95 % interval, refuses to pool runs that
measured different things (traced with untraced, different timed
windows), and judges each seed claim on the interval of its ratio:
agrees / disagrees only when the interval says so, inconclusive otherwise.

  rules.py           analysis/data/statistics.toml, validated
  intervals.py       Student-t interval of a mean; Fieller interval of a ratio of means
  pooling.py         which runs may be pooled: refusals naming the runs
  configurations.py  runs -> configurations: mean, n and interval of a rate
  verdicts.py        a ratio's interval against the "same" band -> verdict
  claims.py          every seed claim as one judgement; claims.csv
"""
