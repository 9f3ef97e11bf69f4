"""Experiments: one file per question, each reading like an OR-Tools sample — data → run → report.

Among them:

- `synthetic` — not a question but the data: seeded synthetic GPU clusters and workloads
  (`synthetic_snapshot`), the same shape at 100 or 10,000 nodes.
- `bench` — how fast is each engine, how good is its placement, and does it ever lose to
  greedy? (`batchplace bench`; `bench_report` writes its CSV, Markdown and PNG under
  `results/bench/`.)

Experiments read `models` and call `solver.place` like every other entry point; they never
import `controller` or `service`. Library functions here return values; printing belongs
to the thin CLI in `batchplace/`.
"""
