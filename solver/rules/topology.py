"""Rule 5, hard network topology: all pods of a PodGroup inside one HyperNode of tier
≤ `highest_tier_allowed`. Volcano enforces hard mode only when a tier limit is set.

A single node is a domain of its own (tier 0): a gang wholly on one node is always inside.
"""

from __future__ import annotations

from collections.abc import Iterable

from models.snapshot import NodeName, PodGroup, Snapshot

NAME = "topology"


def hard_tier_limit(group: PodGroup) -> int | None:
    """The tier a hard-topology PodGroup must stay within, or None when unconstrained."""
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
