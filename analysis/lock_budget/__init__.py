"""Seed 001's locked RMWs, counted in our runs and priced at the seed's CPUs (analysis/data/lock_budget.toml)."""
