"""The five seeds: their published claims, our runs judged against them, and what moved each.

  seeds.py           The seed patches' published numbers and claims (analysis/data/seeds.toml).
  seed_comparison.py Each seed's published claims against our gem5 runs of its study.
  seed_evidence.py   What moved where: the coherence traffic behind each seed's claim, from our runs.
  upstream_moves.py  What moved each seed's bottleneck before Linux 6.1, for the report.
"""
