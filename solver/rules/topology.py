"""Rule 5, hard network topology: all pods of a PodGroup inside one HyperNode of tier
≤ `highest_tier_allowed`. Volcano enforces hard mode only when a tier limit is set.

A single node is a domain of its own (tier 0): a gang wholly on one node is always inside.

`check`: a PodGroup with a hard tier limit and at least one bind this cycle has all its
pods — kept running and bound — inside one such domain. Example: limit 1, pods on `n1`
(leaf sw-a) and `n3` (leaf sw-b, both under spine tier 2) → no common HyperNode of
tier ≤ 1, a violation. PodGroups with no bind are not judged (their pods do not move).

A sub-group (`SubGroup`) with a hard tier limit and a bind this cycle has its own pods —
kept running and bound — inside one domain of its tier, while the PodGroup's limit still
holds over all its pods. Example: job limit 2 (one spine), shards limit 1 (one leaf each):
shard-0 on leaf-a and shard-1 on leaf-b under one spine is inside; shard-0 split over
leaf-a and leaf-b is a violation of shard-0's.
"""

from __future__ import annotations

from collections.abc import Iterable

from models.snapshot import NodeName, PodGroup, Snapshot, SubGroup
from solver.after import After
from solver.violation import Violation

NAME = "topology"


def hard_tier_limit(group: PodGroup | SubGroup) -> int | None:
    """The tier a hard-topology PodGroup (or sub-group) must stay within, or None when unconstrained."""
    topology = group.network_topology
    if topology is None or topology.mode != "hard":
        return None
    return topology.highest_tier_allowed


def domains_within(snapshot: Snapshot, node: NodeName, tier_limit: int) -> tuple[str, ...]:
    """The HyperNodes of tier ≤ `tier_limit` that contain `node`, closest first."""
    return tuple(
        name for name in snapshot.hypernode_chain[node] if snapshot.hypernode_by_name[name].tier <= tier_limit
    )


def common_domain(snapshot: Snapshot, nodes: Iterable[NodeName], tier_limit: int) -> str | None:
    """The closest HyperNode of tier ≤ limit holding all `nodes`; the node itself if only one."""
    distinct = sorted(set(nodes))
    if len(distinct) <= 1:
        return distinct[0] if distinct else None
    common = set(domains_within(snapshot, distinct[0], tier_limit))
    for node in distinct[1:]:
        common &= set(domains_within(snapshot, node, tier_limit))
    if not common:
        return None
    return min(common, key=lambda name: snapshot.hypernode_by_name[name].tier)


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    for group in snapshot.pod_groups:
        if after.bound_count(group.key) == 0:
            continue
        limit = hard_tier_limit(group)
        if limit is not None:
            nodes = [p.node for p in after.kept_of(group.key) if p.node is not None]
            nodes += [b.node.name for b in after.bound_of(group.key)]
            violation = _outside(snapshot, group, f"pod group {group.key}", nodes, limit)
            if violation is not None:
                violations.append(violation)
        for sub in group.sub_groups:
            limit = hard_tier_limit(sub)
            bound = [b.node.name for b in after.bound_of(group.key) if b.pod.sub_group == sub.name]
            if limit is None or not bound:
                continue
            nodes = bound + [p.node for p in after.kept_of(group.key) if p.sub_group == sub.name and p.node]
            violation = _outside(snapshot, group, f"sub-group {sub.name} of pod group {group.key}", nodes, limit)
            if violation is not None:
                violations.append(violation)
    return violations


def _outside(
    snapshot: Snapshot, group: PodGroup, what: str, nodes: list[NodeName], limit: int
) -> Violation | None:
    """A violation when `nodes` share no HyperNode of tier ≤ `limit`, else None."""
    if common_domain(snapshot, nodes, limit) is not None:
        return None
    where = ", ".join(f"{node} in {_widest_domain(snapshot, node, limit)}" for node in sorted(set(nodes)))
    return Violation(
        rule=NAME,
        subject=group.key,
        message=(
            f"{what} must stay within one HyperNode of tier <= {limit}, but its "
            f"pods on {len(set(nodes))} nodes share none ({where})"
        ),
    )


def _widest_domain(snapshot: Snapshot, node: NodeName, tier_limit: int) -> str:
    """For messages: the largest HyperNode within the limit holding `node`, or "no HyperNode"."""
    domains = domains_within(snapshot, node, tier_limit)
    return domains[-1] if domains else "no HyperNode"
