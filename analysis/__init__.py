"""From gem5 output to coherence traffic per run, per lock and per hand-off."""
