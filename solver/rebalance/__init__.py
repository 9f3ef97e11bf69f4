"""Load-aware rescheduling as advice: which running pods to move off hot nodes, and where.

`plan_rebalance(snapshot, config)` is the one entry point (`solver.rebalance.plan` says
how it works); `cycle_snapshot` is the cluster as one solve leaves it, for what-if's
`rebalance` combined with other changes. Modules, in the order data flows:

    load      a pod's estimated share of its node's measured usage (integers, worked example)
    movable   who may move (alone or with the whole gang) and where each may go
    greedy    hot nodes one at a time, as transactions (CP-SAT's hint and fallback)
    cpsat     most nodes cooled, then fewest moves, exactly within a time limit
    verify    moves as binds of requeued pods, judged by the checker on projected usage
    reasons   why a hot node stays hot
    plan      the orchestration: engines, rounds of checking, the advice
    cycle     a snapshot with a placement applied

Pure: no HTTP, no Kubernetes, no clock but the time limit's. batchplace evicts nothing for
balance; this answers a question.
"""

from solver.rebalance.cycle import cycle_snapshot
from solver.rebalance.plan import RebalanceConfig, plan_rebalance

__all__ = ["RebalanceConfig", "plan_rebalance", "cycle_snapshot"]
