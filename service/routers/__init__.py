"""The routes: `placements` and `what_if` under `/v1` (auth, solver pool), `health` at the root."""
