"""The greedy engine: Volcano's allocate, preempt and reclaim actions over numpy arrays,
one PodGroup at a time as a transaction (`engine`), with its cycle state (`state`), plans
(`plan`), topology domains (`topology`), inter-pod counts (`interpod`), preemption
(`preempt`) and the reasons it gives (`explain`). `solver.place` reaches it through the
`solver.engines` protocol; the public names are re-exported here."""

from solver.greedy.engine import GreedyConfig, GreedyEngine, GroupPlan, dominant_shares, solve_greedy

__all__ = ["GreedyConfig", "GreedyEngine", "GroupPlan", "dominant_shares", "solve_greedy"]
