"""An exclusive topology — a node label key a LeaderWorkerSet group or JobSet Job is to sit
inside one value of (`leaderworkerset.sigs.k8s.io/exclusive-topology`,
`alpha.jobset.sigs.k8s.io/exclusive-topology`) — as the sub-group's hard network topology,
which the model states as a HyperNode tier (`SubGroup.network_topology`).

Why here: the key names nodes' labels, the tier names HyperNodes, and only assembly knows
both. The tier of a key is the lowest tier whose HyperNodes group the nodes by it: each
HyperNode of the tier holds nodes of one value of the key (nodes without the key are not
counted), no value is split between two of them, and together they hold every node that has
the key. Example: racks r1, r2 as tier-1 HyperNodes under a spine, nodes labelled
`topology.kubernetes.io/rack: r1 | r2` → tier 1; with key `zone` and both racks in one zone
→ tier 2 (the spine holds every zone-a node; a rack holds only part of them).

When no tier groups the nodes by the key (no HyperNodes, or domains that do not match the
labels), one warning per PodGroup and key says so, and the sub-group keeps no topology: what
the controllers' webhooks wrote on the pods — a required pod affinity on the key for the
leader, a node selector for the others — is enforced as any pod's (`solver.rules.
pod_affinity`). That one gang owns its domain (the webhooks' anti-affinity) is left to those
pods as well: a tier keeps a gang inside one domain, not others out of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from models.snapshot import HyperNode, NetworkTopology, Node

from .grouping import Workload
from .raw import Warnings

__all__ = ["resolve_exclusive_topologies", "label_key_tier"]


def resolve_exclusive_topologies(
    workload: Workload, nodes: Sequence[Node], hypernodes: Sequence[HyperNode], warnings: Warnings
) -> None:
    """Give each sub-group with a label key (`PodGroupRecord.sub_group_label_keys`) the hard
    topology of the key's tier, in place."""
    tiers: dict[str, int | None] = {}
    for index, group in enumerate(workload.groups):
        if not group.sub_group_label_keys:
            continue
        for key in sorted(set(group.sub_group_label_keys.values())):
            if key not in tiers:
                tiers[key] = label_key_tier(key, nodes, hypernodes)
            if tiers[key] is None:
                warnings.add(
                    group.location,
                    f"PodGroup {group.key}: exclusive topology {key!r} matches no HyperNode tier (no tier's "
                    f"HyperNodes group the nodes by {key!r}); each gang is kept inside one {key!r} value only by "
                    "the pod affinity its controller's webhook writes on its pods",
                    like="an exclusive topology matches no HyperNode tier",
                )
        sub_groups = tuple(
            sub.model_copy(update={"network_topology": NetworkTopology(mode="hard", highest_tier_allowed=tier)})
            if (key := group.sub_group_label_keys.get(sub.name)) and (tier := tiers[key]) is not None
            else sub
            for sub in group.sub_groups
        )
        workload.groups[index] = dataclasses.replace(group, sub_groups=sub_groups)


def label_key_tier(key: str, nodes: Sequence[Node], hypernodes: Sequence[HyperNode]) -> int | None:
    """The lowest tier whose HyperNodes group the nodes by label `key` (module docstring);
    None when none does."""
    values = {node.name: node.labels[key] for node in nodes if key in node.labels}
    if not values:
        return None
    members = _node_members(hypernodes)
    for tier in sorted({hypernode.tier for hypernode in hypernodes}):
        held: dict[str, str] = {}  # value → the HyperNode holding its nodes
        covered: set[str] = set()
        grouped = True
        for hypernode in (h for h in hypernodes if h.tier == tier):
            labelled = {values[name] for name in members[hypernode.name] if name in values}
            if len(labelled) > 1 or any(held.setdefault(value, hypernode.name) != hypernode.name for value in labelled):
                grouped = False
                break
            covered |= members[hypernode.name] & values.keys()
        if grouped and covered == values.keys():
            return tier
    return None


def _node_members(hypernodes: Sequence[HyperNode]) -> dict[str, set[str]]:
    """Every node under each HyperNode, through its HyperNode members."""
    by_name = {hypernode.name: hypernode for hypernode in hypernodes}
    found: dict[str, set[str]] = {}

    def nodes_of(name: str, trail: frozenset[str]) -> set[str]:
        if name in found:
            return found[name]
        hypernode = by_name.get(name)
        if hypernode is None or name in trail:
            return set()
        result = set(hypernode.node_members)
        for child in hypernode.hypernode_members:
            result |= nodes_of(child, trail | {name})
        found[name] = result
        return result

    for hypernode in hypernodes:
        nodes_of(hypernode.name, frozenset())
    return found
