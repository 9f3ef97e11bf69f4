"""Place what the parts left pending but the whole cluster still has room for.

Input: the whole snapshot, its `Problem`, the merged and repaired placement of the parts,
and the greedy configuration of the call. Output: that placement with more binds — or the
same one, when nothing more fits or the filled placement would break a rule.

Why: a PodGroup is dealt to one part and placed only on that part's nodes. When the cluster
is nearly full, the part it was dealt to may have no room left for it while another part
has: dealt by GPU room per pod size (`split._Room`), the parts cannot see CPU, memory or
which device a share fits. On the FGD protocol at k = 16, near a full cluster, the parts
left such pods pending in some batches (docs/results.md, "The partitioned solve").

How: the greedy engine's state is set to the one after the placement (`GreedyEngine.replay`:
its evictions, then its binds on their own devices), and greedy allocates in it as in any
cycle — in fairness order, with the call's packing score, without preemption or reclaim
(an eviction would be a second decision on what the parts decided). A PodGroup the parts
started may get more of its pending pods; one they left pending starts when its minimum
fits. The binds the parts made stay where they are. The checker judges the result on the
whole snapshot; should it reject it, the placement is returned unfilled.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from models.placement import Placement
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.greedy.engine import GreedyConfig, GreedyEngine
from solver.problem import Problem

__all__ = ["fill"]

log = logging.getLogger(__name__)


def fill(snapshot: Snapshot, problem: Problem, placement: Placement, config: GreedyConfig) -> Placement:
    """`placement` with the pending pods greedy still places after it (module docstring)."""
    engine = GreedyEngine(snapshot, problem, replace(config, preemption=False, reclaim=False))
    engine.replay(placement)
    filled, _ = engine.run()
    if len(filled.binds) == len(placement.binds):
        return placement
    violations = check_placement(snapshot, filled)
    if violations:
        log.warning("partition: filling the merge broke %d rule(s); the merge is kept as it was", len(violations))
        return placement
    return filled
