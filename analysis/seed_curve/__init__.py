"""A seed's own curve over threads beside ours, as shipped and under its precondition.

  rules.py    analysis/data/seed_curves.toml, validated against the seeds file
  curve.py    the published and measured points, each normalised to its 1-thread rate
  section.py  the report's figure and table
"""
