"""Candidate domains for a topology-aware PodGroup, smallest first (rule 5 and soft rule 4).

Input: the `Problem`, what is available per node (free capacity, plus what evictable
victims hold when preempting), the nodes eligible for the group, and its demand: the
minimum it must place and everything it has pending. Output: the domains worth trying —
single nodes (tier 0) and HyperNodes of each tier up to the limit — in the order the
engine tries them, and the best domain for the reason when none fits.

Order: domains that hold the whole gang (every pending pod) before those that hold only
its minimum; then lower tier first (a node before a leaf before a spine); then the
fewest free resources of the gang's key resource (gpu when it asks for GPUs) that still
hold it — best fit, so big domains stay whole for big gangs; then id. Example: a 16-GPU
gang, leaf-a with 16 free and leaf-b with 24 free, no node with 16 → leaf-a, then leaf-b.

Aggregates are sums over a domain's eligible nodes, a necessary condition only (a node
with 3 free cores cannot host a 4-core pod even if the leaf has 40): the engine's
transaction decides. At most `per_level` candidates are kept per (holds-all, level), which
bounds a hopeless gang's work at 10,000 nodes.

A PodGroup with running pods is anchored: only domains containing all its running pods'
nodes are candidates (hard mode judges kept and bound pods together).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.greedy.domain_free import DomainFree
from solver.problem import Problem

__all__ = ["Domain", "BestDomain", "candidate_domains", "key_resource"]


@dataclass(frozen=True)
class Domain:
    level: int  # 0: one node; else the HyperNode tier
    tier_position: int  # row of problem.domain_of, −1 for a node
    ident: int  # node index, or HyperNode id within its tier
    name: str
    holds_all: bool

    def mask(self, problem: Problem) -> np.ndarray:
        if self.tier_position < 0:
            mask = np.zeros(problem.node_count, dtype=bool)
            mask[self.ident] = True
            return mask
        return problem.domain_of[self.tier_position] == self.ident


@dataclass(frozen=True)
class BestDomain:
    name: str
    free: int  # of the key resource


def candidate_domains(
    problem: Problem,
    *,
    available: np.ndarray,
    whole_available: np.ndarray,
    eligible_any: np.ndarray,
    anchors: np.ndarray,
    demand_min: np.ndarray,
    devices_min: int,
    demand_all: np.ndarray,
    devices_all: int,
    tier_limit: int | None,
    whole_only: bool,
    domain_free: DomainFree | None = None,
    per_level: int = 4,
) -> tuple[list[Domain], BestDomain | None]:
    """Domains to try, in order, and the one with most free key resource (for reasons).
    `domain_free`: the cycle's sums per domain when `available` and `whole_available` are
    the cycle's own free capacity; read when the gang is eligible everywhere."""
    key = _key_resource(problem, demand_all)
    columns = [int(r) for r in np.flatnonzero(demand_all)]
    found: list[tuple[bool, int, float, int, Domain]] = []
    best: BestDomain | None = None
    same = devices_min == devices_all and bool((demand_min == demand_all).all())

    # Tier 0: each node on its own.
    holds_all = _holds(available, whole_available, eligible_any, columns, demand_all, devices_all)
    holds_min = (
        holds_all if same else _holds(available, whole_available, eligible_any, columns, demand_min, devices_min)
    )
    anchor_nodes = np.unique(anchors)
    if anchor_nodes.size:
        only = np.zeros(problem.node_count, dtype=bool)
        if anchor_nodes.size == 1:
            only[anchor_nodes[0]] = True
        holds_min = holds_min & only
        holds_all = holds_all & only
    free_key = available[key]
    for ident in _top(holds_min, holds_all, free_key, per_level, whole_only):
        found.append((not holds_all[ident], 0, float(free_key[ident]), ident, _node(problem, ident, holds_all)))
    if eligible_any.any():
        pool = np.where(eligible_any, free_key, -1)
        top = int(np.argmax(pool))
        best = BestDomain(name=problem.node_names[top], free=int(pool[top]))

    # Sums per HyperNode: the cycle's kept sums when the gang may go anywhere; else a
    # bincount over `domain_of + 1`, so that bucket 0 collects the nodes in no HyperNode of
    # the tier and needs no boolean indexing.
    everywhere = bool(eligible_any.all())  # the usual case: no mask to multiply in
    kept = domain_free if everywhere else None
    weights = {r: available[r] if everywhere else available[r] * eligible_any for r in {*columns, key}}
    whole_weights = whole_available if everywhere else whole_available * eligible_any
    for position, tier in enumerate(problem.tiers):
        if tier_limit is not None and tier > tier_limit:
            break
        count = len(problem.domain_names[position])
        if not count:
            continue
        sums: dict[int, np.ndarray] | np.ndarray
        if kept is not None:
            sums, whole = kept.of(position)
        else:
            bucket = problem.domain_of[position] + 1
            sums = {r: np.bincount(bucket, weights=w, minlength=count + 1)[1:] for r, w in weights.items()}
            whole = np.bincount(bucket, weights=whole_weights, minlength=count + 1)[1:]
        level_all = whole >= devices_all
        for r in columns:
            level_all &= sums[r] >= demand_all[r]
        if same:
            level_min = level_all
        else:
            level_min = whole >= devices_min
            for r in columns:
                level_min &= sums[r] >= demand_min[r]
        if anchor_nodes.size:
            anchor_domains = np.unique(problem.domain_of[position][anchor_nodes])
            only = np.zeros(count, dtype=bool)
            if anchor_domains.size == 1 and anchor_domains[0] >= 0:
                only[anchor_domains[0]] = True
            level_min = level_min & only
            level_all = level_all & only
        level_free = sums[key]
        for ident in _top(level_min, level_all, level_free, per_level, whole_only):
            domain = Domain(
                level=tier,
                tier_position=position,
                ident=ident,
                name=problem.domain_names[position][ident],
                holds_all=bool(level_all[ident]),
            )
            found.append((not domain.holds_all, tier, float(level_free[ident]), ident, domain))
        top = int(np.argmax(level_free))
        if best is None or level_free[top] > best.free:
            best = BestDomain(name=problem.domain_names[position][top], free=int(level_free[top]))
    found.sort(key=lambda item: item[:4])
    return [item[4] for item in found], best


def _key_resource(problem: Problem, demand: np.ndarray) -> int:
    if demand[problem.gpu_column] > 0:
        return problem.gpu_column
    if demand[problem.cpu_column] > 0 or not demand.any():
        return problem.cpu_column
    return int(np.flatnonzero(demand)[0])


def key_resource(problem: Problem, demand: np.ndarray) -> int:
    """The resource a gang is measured by in reasons and domain order: gpu, else cpu."""
    return _key_resource(problem, demand)


def _holds(
    available: np.ndarray,
    whole_available: np.ndarray,
    eligible_any: np.ndarray,
    columns: list[int],
    demand: np.ndarray,
    devices: int,
) -> np.ndarray:
    mask = eligible_any.copy()
    for r in columns:
        mask &= available[r] >= demand[r]
    if devices:
        mask &= whole_available >= devices
    return mask


def _top(holds_min: np.ndarray, holds_all: np.ndarray, free: np.ndarray, per_level: int, whole_only: bool) -> list[int]:
    """Up to `per_level` ids holding everything, and as many more holding the minimum, least free first."""
    chosen: list[int] = []
    groups = [holds_all] if whole_only or holds_min is holds_all else [holds_all, holds_min & ~holds_all]
    for group in groups:
        ids = np.flatnonzero(group)
        if not ids.size:
            continue
        rank = free[ids].astype(np.float64) * float(free.size + 1) + ids  # least free first, then lowest id
        if ids.size > per_level:
            part = np.argpartition(rank, per_level - 1)[:per_level]
            ids, rank = ids[part], rank[part]
        chosen.extend(int(i) for i in ids[np.argsort(rank, kind="stable")])
    return chosen


def _node(problem: Problem, ident: int, holds_all: np.ndarray) -> Domain:
    name = problem.node_names[ident]
    return Domain(level=0, tier_position=-1, ident=ident, name=name, holds_all=bool(holds_all[ident]))
