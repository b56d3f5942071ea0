"""The `aas` client: push a run directory, wait for validation, answer corrections, over HTTP only."""
