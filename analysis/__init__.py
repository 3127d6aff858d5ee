"""From gem5 output to coherence traffic per run, per lock and per hand-off.

Part 1: the stats.txt reader (stats_reader), machine facts from
config.json (config_reader), runs and the value() accessor (runs) and the
tidy table (tidy); see README.md.
"""
