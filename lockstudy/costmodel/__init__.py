"""The cost model: host time and memory of campaign runs, fitted on measured runs (issue 19)."""
