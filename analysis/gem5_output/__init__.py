"""Reading gem5's output: one folder of a run as the analysis sees it.

  stats_reader.py   A streaming reader of gem5's stats.txt (text format of gem5 v24.0.0.1).
  stat_rules.py     Renames across gem5 releases and the stats gem5 omits when zero.
  config_reader.py  The simulated machine's facts, read from gem5's config.json.
  ruby_wiring.py    Which node each Ruby controller is on, read from the network wiring in config.json.
  result_schema.py  A run's result.json checked against the fields the analysis reads (analysis/data/result_json.toml).
  run_provenance.py One reader of what made a run: result.json's `provenance` (gem5-configs/run.py).
  runs.py           Runs of a results folder, their stats, and the one way metrics read a value.
  tidy.py           The tidy table: one row per run x ROI x stat x sub, with provenance.
  trace_chunks.py   A gzip'd (or plain) gem5 debug trace read in chunks of whole lines.
"""
