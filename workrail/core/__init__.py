"""The pure core: models, canonical JSON, ids, budgets. No I/O, no clock, no implicit randomness."""
