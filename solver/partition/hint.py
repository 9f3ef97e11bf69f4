"""A part's heuristic answer decided before it is solved: greedy's placement of the whole,
cut to the part (`solver.partition.split.Part.hint`).

Why not greedy run again on the part: greedy on the part alone serves its gangs in another
order (each queue's share of the part is not its share of the cluster) and leaves each part
its own scraps of partly used nodes, so the parts' greedy answers, merged, stranded more GPUs
than greedy's answer on the whole (the packing tier) on the standard bench family at 30,000
nodes, and `auto` answered with greedy's. Started from the whole's own placement, a part's
search answers with it or with what beats it there, and the merge starts from greedy's.

`GivenPlacement` is a `solver.engines.HeuristicSearch`: `place()` runs it where it would run
greedy, as its hint and its fallback. Its pending PodGroups get the generic reasons
(`solver.outcome`); the whole's answer gets its own reasons after the merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.placement import Decision, Placement
from models.snapshot import Snapshot
from solver.greedy import GreedyConfig
from solver.outcome import build_decision
from solver.problem import Problem

__all__ = ["GivenPlacement"]


@dataclass(frozen=True)
class GivenPlacement:
    """Answers every call with `placement`, labelled as greedy's."""

    placement: Placement

    def __call__(self, snapshot: Snapshot, *, config: GreedyConfig, problem: Problem) -> Decision:
        return build_decision(snapshot, self.placement, engine="greedy", status="GREEDY", solve_seconds=0.0, reasons={})
