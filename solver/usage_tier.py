"""The objective's usage tier: prefer nodes with low measured load (Volcano's `usage` score).

Input: a `Snapshot` (its nodes' `NodeUsage` and its `UsagePolicy`) and, for the tier's
value, the state after a placement. Output: a *band* per node, 0 (idle) … `TOP_BAND`
(busy; an unknown load as below), and the tier — Σ over pods bound this cycle of their
node's band, smaller is better. `solver.objective` scores it, `solver.problem` carries the bands per
node class to the engines (greedy ranks nodes by band, CP-SAT weighs its patterns with it).

A node's load is the weighted mean of its fresh percents, weights from the policy
(`cpu_weight`, `memory_weight`, `gpu_weight`; a resource without a reading or with weight 0
is left out); its band is ⌊load / `USAGE_BAND_PERCENT`⌋, at most `TOP_BAND`. Example:
weights cpu 1, memory 1, gpu 2; cpu 70 %, memory 30 %, gpu 45 % → (70 + 30 + 2 · 45) / 4
= 47.5 % → band 4. A pod bound there adds 4 to the tier, one bound to a node at 12 % adds 1.

Why bands, not percents: nodes are interchangeable in the engines only when they share an
eligibility class, and the band is part of the class (`solver.problem`); 11 bands at most
multiply the classes by 11, exact percents would make every node a class of its own. And
within a band the packing tier still chooses, so load never scatters pods over nodes that
differ by a point of CPU.

A node whose usage is stale or missing — or has no weighted reading — is *unknown*, and
unknown is scored neutrally: as loaded as the least loaded measured node that may take
pods (the lowest band among cool nodes; 0 when none is), so the tier never ranks it below
a measured node, nor above the best of them. Why not worse: Volcano's `usage` score (and the scheduler-plugins'
load-aware ones) give such a node their minimum score, but there that score is one term of
a weighted sum; here the tier ranks before packing, and a top band made every node
without a reading lose to every measured one — with readings on the GPU nodes only, all
CPU-only pods went to the GPU nodes and the CPU nodes stayed empty. Why not idle (band 0):
a node whose exporter broke would draw every pod ahead of a measured node at 5 %. Why
not the mean: it still ranks an unmeasured node below each measured node under the mean.
Example: cool nodes at bands 2 and 6, one without a reading → its band is 2. Such a node is
never blocked (`solver.rules.usage`) either. When no node is measured, every band is 0 and
the tier is constant: nothing to prefer; a hot node takes no pod, so its band is no
neighbour's to match.

Where the tier sits (`solver.objective.TIERS`): after locality, before packing. A stated
preference (node affinity, a network domain) says where a pod works best and outranks a
load reading; a loaded node slows the pods placed on it now, which outranks keeping room
for pods that may come (packing). Like every tier it never costs a placement, an eviction
or a queue's share, and `SolveConfig.objective_order` moves it.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.snapshot import NodeName, NodeUsage, Snapshot, UsagePolicy
from solver.after import After
from solver.memo import memoized
from solver.rules.usage import fresh_usage, judgements

__all__ = ["USAGE_BAND_PERCENT", "TOP_BAND", "weighted_load", "band_of", "usage_bands", "usage_tier"]

USAGE_BAND_PERCENT = 10
"""Width of a band in percent of load."""
TOP_BAND = 100 // USAGE_BAND_PERCENT
"""The band of a node at 100 % and above."""


def weighted_load(usage: NodeUsage, policy: UsagePolicy) -> float | None:
    """The weighted mean percent of `usage` (module docstring); None when no reading is weighted."""
    parts = (
        (usage.cpu_percent, policy.cpu_weight),
        (usage.memory_percent, policy.memory_weight),
        (usage.gpu_percent, policy.gpu_weight),
    )
    weighted = [(percent, weight) for percent, weight in parts if percent is not None and weight > 0]
    if not weighted:
        return None
    return sum(percent * weight for percent, weight in weighted) / sum(weight for _, weight in weighted)


def band_of(load: float) -> int:
    """`47.5` → 4; `100` and above → `TOP_BAND`."""
    return min(TOP_BAND, int(load // USAGE_BAND_PERCENT))


def usage_bands(snapshot: Snapshot) -> Mapping[NodeName, int]:
    """Every node's band, once per snapshot (`solver.memo`); all 0 when no usage is fresh."""
    return memoized(snapshot, ("usage_bands",), lambda: _bands(snapshot))


def _bands(snapshot: Snapshot) -> dict[NodeName, int]:
    fresh, policy = fresh_usage(snapshot), snapshot.usage_policy
    measured: dict[NodeName, int] = {}
    for name, reading in fresh.items():
        load = weighted_load(reading, policy)
        if load is not None:
            measured[name] = band_of(load)
    cool = [band for name, band in measured.items() if judgements(snapshot)[name].state == "cool"]
    unknown = min(cool, default=0)
    return {node.name: measured.get(node.name, unknown) for node in snapshot.nodes}


def usage_tier(snapshot: Snapshot, after: After) -> int:
    """Σ over pods bound this cycle of their node's band (smaller is better)."""
    if not after.bound:
        return 0
    bands = usage_bands(snapshot)
    return sum(bands[bound.node.name] for bound in after.bound)
