"""The two altix-numa models side by side: node-local homes against line-interleaved ones.

  rules.py    analysis/data/model_comparison.toml, validated
  table.py    kbench runs of both models -> one row per model, size, variant and metric: mean, n, interval
  section.py  the report's section: the table and one figure per metric, the interleaved model dashed
"""
