"""`Analysis`: one snapshot and what this cycle would do with it — what every dashboard page reads.

Input: a validated `Snapshot` (the controller's live one, or an upload). Output: a frozen
`Analysis` holding the snapshot, one `solver.place` decision on it (the same entry point
the controller calls), the state after that decision (`solver.after.build_after`) and the
queue numbers of `solver.shares` (allocated now, requested, deserved).

Which engine: `SolveConfig`'s default, `auto`, as `batchplace solve` and the controller
use, within the controller's default time limit (2 s) — so a page shows the answer the
controller would act on, not another engine's. Every page says which engine answered
(`answered_by`: CP-SAT and its status, or greedy and why it fell back). Each analysis is
solved once per snapshot and kept (`service.ui.routes`), so the cost is paid once.

No I/O, and no clock but the timer of its own solve (the caller passes `now_s`, the
moment the pages call "now" for ages). CPU-bound: callers run it in the solver pool,
off the event loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from models.placement import Decision, PodGroupOutcome
from models.snapshot import PodGroupKey, QueueName, Snapshot
from solver.after import After, build_after
from solver.place import SolveConfig, place
from solver.shares import cluster_allocatable, deserved_shares, queue_allocated, queue_requests

__all__ = ["Analysis", "analyze", "UI_SOLVE_CONFIG"]

UI_SOLVE_CONFIG = SolveConfig(time_limit_s=2.0)


@dataclass(frozen=True)
class Analysis:
    snapshot: Snapshot
    decision: Decision
    after: After
    cluster_allocatable: dict[str, int]
    queue_allocated: dict[QueueName, dict[str, int]]
    """Running pods per queue, its subtree included (what the queue holds now)."""
    queue_requests: dict[QueueName, dict[str, int]]
    """Allocated + pending per queue, subtree included."""
    queue_deserved: dict[QueueName, dict[str, int]]
    now_s: float
    solve_s: float

    @property
    def answered_by(self) -> str:
        """Which engine's decision the pages show: "CP-SAT (OPTIMAL)", "greedy (FALLBACK: no_time)"."""
        decision = self.decision
        engine = "CP-SAT" if decision.engine == "cpsat" else decision.engine
        detail = decision.status + (f": {decision.fallback.cause}" if decision.fallback is not None else "")
        return f"{engine} ({detail})"

    @property
    def outcome_by_group(self) -> dict[PodGroupKey, PodGroupOutcome]:
        return {outcome.name: outcome for outcome in self.decision.podgroups}


def analyze(snapshot: Snapshot, *, now_s: float) -> Analysis:
    """Solve `snapshot` once (`UI_SOLVE_CONFIG`) and gather what the pages show."""
    started = time.perf_counter()
    decision = place(snapshot, UI_SOLVE_CONFIG)
    return Analysis(
        snapshot=snapshot,
        decision=decision,
        after=build_after(snapshot, decision.placement),
        cluster_allocatable=cluster_allocatable(snapshot),
        queue_allocated=queue_allocated(snapshot),
        queue_requests=queue_requests(snapshot),
        queue_deserved=deserved_shares(snapshot),
        now_s=now_s,
        solve_s=time.perf_counter() - started,
    )
