"""Cut one cycle's snapshot into parts that can be solved apart: nodes along the topology,
each pending PodGroup into exactly one part.

Input: a validated `Snapshot` and the number of parts wanted. Output: `Part`s, each a valid
`Snapshot` of its own — its nodes, the running pods on them, its pending PodGroups with all
their pending pods, the PodGroups of its running pods, the HyperNodes cut to its nodes, and
every queue as the whole cluster has it (quota stays global: `solver.partition.repair`
makes the merged answer keep it).

Nodes, by unit: the domains of the highest HyperNode tier that has at least as many domains
as parts (spines before leaves: fewer, larger cuts keep more of the topology whole); nodes
in no such domain, and every node of a cluster without HyperNodes, are units of one node.
Domains are taken in name order; single nodes after them, each kind (GPU model, allocatable
and free resources) spread evenly through the order (`_spread`), so every part gets its
share of every kind — no topology is kept by a single node's place, and a part without the
kind of hole a pod fits best could only give it a worse one (POP's sub-problems are alike
in the same way). The order is cut into contiguous runs of balanced capacity (GPU milli, or
CPU milli on a cluster without GPUs). Example: 8 leaves of 16 eight-GPU nodes under one
spine, 2 parts → the spine is one domain (fewer than 2), the 8 leaves are units; leaves 0–3
go to part 0 and 4–7 to part 1, 512 GPUs each. Without HyperNodes, 4 free 8-GPU nodes a0–a3
and 4 half-used ones b0–b3 → a0, a1, b0, b1 in part 0 and the rest in part 1.

PodGroups with pending pods, by priority then age, each to one part:
  - anchored: a PodGroup with running pods goes where most of them run (its gang and its
    domain are there);
  - hard topology (the PodGroup's tier limit, else its sub-groups' widest): to a part
    holding a whole HyperNode of tier ≤ the limit with room for it, else one holding such a
    HyperNode at all, else any part — the gang stays whole in one part and is placed
    inside what that part holds of its domain, a subset of the domain, so still inside it;
  - dealt: to the part where its queue's pending demand for pods of its size, with it, is
    the smallest fraction of the part's room for pods of that size on nodes they may use
    (`_Room`) — so each queue's pods spread over the parts in proportion to their room,
    fairness across queues holds in each part as in the whole, small pods go where the
    holes are, and a pod that selects a GPU model goes where that model is.
Ties go to the lower part index: the same input gives the same parts, run after run (no
set or hash order is read).

Not promised: that the parts' best answers add up to the whole's best. A gang is placed
only inside its part, and inter-pod rules across parts are not seen by either part (the
checker on the whole snapshot judges the merge).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from models.snapshot import (
    CPU,
    GPU,
    HyperNode,
    Node,
    NodeName,
    Pod,
    PodGroup,
    PodGroupKey,
    QueueName,
    Snapshot,
    Task,
)
from solver.rules.eligibility import eligible
from solver.rules.topology import hard_tier_limit

__all__ = ["Part", "split_snapshot"]


@dataclass(frozen=True)
class Part:
    """One sub-problem: its snapshot and the pending PodGroups it owns (placed by no other part)."""

    index: int
    snapshot: Snapshot
    owned: tuple[PodGroupKey, ...]
    """PodGroups whose pending pods this part holds, in dealing order."""


def split_snapshot(snapshot: Snapshot, *, parts: int) -> tuple[Part, ...]:
    """`snapshot` cut into at most `parts` parts (fewer when it has fewer node units); see the
    module docstring. Example: 4 leaves of 2 nodes, 2 parts → nodes of leaves 0–1 and 2–3."""
    if parts < 1:
        raise ValueError(f"parts {parts}: at least 1")
    resource = GPU if any(node.allocatable.get(GPU, 0) for node in snapshot.nodes) else CPU
    members = _domain_nodes(snapshot)
    free = _free_by_node(snapshot)
    node_part = _cut_nodes(snapshot, members, parts, resource, free)
    count = 1 + max(node_part.values(), default=0)
    room = _Room(snapshot, node_part, count, resource, free)
    owner = _deal_groups(snapshot, members, node_part, room, count, resource, free)
    return tuple(_part(snapshot, members, index, node_part, owner) for index in range(count))


# ---- nodes ----


def _cut_nodes(
    snapshot: Snapshot,
    members: Mapping[str, tuple[NodeName, ...]],
    parts: int,
    resource: str,
    free: Mapping[NodeName, Mapping[str, int]],
) -> dict[NodeName, int]:
    """Each node's part: units of the split tier in name order, cut into contiguous runs of
    balanced capacity; parts left empty by a large unit are closed up."""
    units = _node_units(snapshot, members, parts, free)
    capacity = [sum(snapshot.node_by_name[name].allocatable.get(resource, 0) for name in unit) for unit in units]
    if sum(capacity) == 0:
        capacity = [len(unit) for unit in units]
    total = sum(capacity)
    wanted = min(parts, len(units))
    node_part: dict[NodeName, int] = {}
    before = 0
    indices: list[int] = []
    for unit, unit_capacity in zip(units, capacity):
        # the run whose share of the capacity holds this unit's middle
        indices.append(min(wanted - 1, int((before + unit_capacity / 2) * wanted / total)))
        before += unit_capacity
    renumbered = {old: new for new, old in enumerate(sorted(set(indices)))}
    for unit, index in zip(units, indices):
        for name in unit:
            node_part[name] = renumbered[index]
    return node_part


def _node_units(
    snapshot: Snapshot, members: Mapping[str, tuple[NodeName, ...]], parts: int, free: Mapping[NodeName, Mapping[str, int]]
) -> list[tuple[NodeName, ...]]:
    """The node units (module docstring): whole domains of the split tier, then single nodes."""
    tiers = sorted({h.tier for h in snapshot.hypernodes}, reverse=True)
    domains: list[HyperNode] = []
    for tier in tiers:
        domains = sorted((h for h in snapshot.hypernodes if h.tier == tier and members[h.name]), key=lambda h: h.name)
        if len(domains) >= parts:
            break
    if len(domains) < parts:
        domains = []
    units: list[tuple[NodeName, ...]] = [members[h.name] for h in domains]
    covered = {name for unit in units for name in unit}
    return units + [(name,) for name in _spread([node for node in snapshot.nodes if node.name not in covered], free)]


def _spread(nodes: Sequence[Node], free: Mapping[NodeName, Mapping[str, int]]) -> list[NodeName]:
    """`nodes` ordered so each kind (GPU model, allocatable, `free` after its running pods) is
    spread evenly through the order: the i-th of a kind of n sits at (i + ½) / n, ties by
    name. Example: a0–a3 of one kind, b0–b1 of another → a0, b0, a1, a2, b1, a3."""
    by_kind: dict[tuple[object, ...], list[NodeName]] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        kind = (node.gpu_model or "", tuple(sorted(node.allocatable.items())), tuple(sorted(free[node.name].items())))
        by_kind.setdefault(kind, []).append(node.name)
    placed = [((rank + 0.5) / len(names), name) for names in by_kind.values() for rank, name in enumerate(names)]
    return [name for _, name in sorted(placed)]


def _free_by_node(snapshot: Snapshot) -> dict[NodeName, dict[str, int]]:
    """Per node, each resource allocatable less what its running pods request: read once, by
    the cut (`_spread`), the dealing's room (`_Room`) and its domains (`_domain_free`)."""
    free = {node.name: dict(node.allocatable) for node in snapshot.nodes}
    for pod in snapshot.pods:
        if pod.phase == "running" and pod.node in free:
            for resource, amount in pod.requests.items():
                free[pod.node][resource] = free[pod.node].get(resource, 0) - amount
    return free


def _domain_nodes(snapshot: Snapshot) -> dict[str, tuple[NodeName, ...]]:
    """Every HyperNode's nodes, its sub-HyperNodes' included, in the snapshot's node order."""
    chains = snapshot.hypernode_chain
    found: dict[str, list[NodeName]] = {h.name: [] for h in snapshot.hypernodes}
    for node in snapshot.nodes:
        for name in chains[node.name]:
            found[name].append(node.name)
    return {name: tuple(nodes) for name, nodes in found.items()}


class _Room:
    """What each part has free for pods of one size that may go to its nodes: on each node
    eligible for the pods' task (`rules.eligibility.eligible`: node selector, required
    node affinity, taints), the room its free `resource` holds in whole pods of that size,
    summed per part (memoized per size and placement constraints). Example: nodes with 3
    and 8 free GPUs, pods of 4 → room 0 + 8 = 8 GPUs; pods of 1 → 11; pods of 1 that select
    the first node's GPU model → 3. Why by size: holes left by running pods take small pods
    only, and a part of whole free nodes dealt as many small pods as a part of holes would
    open nodes the holes could have taken. Why by eligibility: a part without the GPU model
    or pool a pod selects has no room for it however much it has free — dealt there, the
    pod could not be placed at all."""

    def __init__(
        self,
        snapshot: Snapshot,
        node_part: Mapping[NodeName, int],
        count: int,
        resource: str,
        free: Mapping[NodeName, Mapping[str, int]],
    ) -> None:
        self._nodes = snapshot.nodes
        self._free = {name: amounts.get(resource, 0) for name, amounts in free.items()}
        self._node_part = node_part
        self._count = count
        self._by_size: dict[tuple[int, object], list[int]] = {}

    def for_pods_of(self, size: int, task: Task) -> list[int]:
        """Per part, the `resource` free in whole pods of `size` (at least 1) on the nodes
        `task`'s pods may go to."""
        key = (size, tuple(sorted(task.node_selector.items())), repr(task.tolerations), repr(task.required_node_affinity))
        if key not in self._by_size:
            room = [0] * self._count
            for node in self._nodes:
                free = self._free[node.name]
                if free > 0 and eligible(node, task):
                    room[self._node_part[node.name]] += free // max(1, size) * max(1, size)
            self._by_size[key] = [max(1, amount) for amount in room]
        return self._by_size[key]


# ---- PodGroups ----


def _deal_groups(
    snapshot: Snapshot,
    members: Mapping[str, tuple[NodeName, ...]],
    node_part: Mapping[NodeName, int],
    room: _Room,
    count: int,
    resource: str,
    free: Mapping[NodeName, Mapping[str, int]],
) -> dict[PodGroupKey, int]:
    """The part of every PodGroup with pending pods (module docstring)."""
    whole = _whole_domains(snapshot, members, node_part)
    domain_free = _domain_free(members, resource, free)
    dealt: dict[tuple[QueueName, int], list[int]] = {}
    owner: dict[PodGroupKey, int] = {}
    for group in sorted(snapshot.pod_groups, key=lambda g: (-g.priority, g.creation_time, g.key)):
        pods = snapshot.pods_by_group[group.key]
        pending = [pod for pod in pods if pod.phase == "pending"]
        if not pending:
            continue
        anchor = _anchor(pods, node_part)
        if anchor is not None:
            owner[group.key] = anchor
            continue
        asked = sum(pod.requests.get(resource, 0) for pod in pending)
        largest = max(pending, key=lambda pod: pod.requests.get(resource, 0))
        size = largest.requests.get(resource, 0)
        demand = asked or sum(pod.requests.get(CPU, 0) for pod in pending)
        ledger = dealt.setdefault((group.queue, size), [0] * count)
        candidates = _topology_candidates(group, whole, domain_free, demand, count)
        task = snapshot.task_of(largest)
        # CPU-only gangs on a GPU cluster, and pods of no task: spread by count
        free = room.for_pods_of(size, task) if asked and task is not None else [1] * count
        chosen = min(candidates, key=lambda p: ((ledger[p] + max(demand, 1)) / free[p], p))
        ledger[chosen] += max(demand, 1)
        owner[group.key] = chosen
    return owner


def _anchor(pods: Iterable[Pod], node_part: Mapping[NodeName, int]) -> int | None:
    """The part holding most of these pods' running ones (the lower index on a tie); None: none run."""
    running: dict[int, int] = {}
    for pod in pods:
        if pod.phase == "running" and pod.node is not None:
            part = node_part[pod.node]
            running[part] = running.get(part, 0) + 1
    if not running:
        return None
    return min(running, key=lambda part: (-running[part], part))


def _whole_domains(
    snapshot: Snapshot, members: Mapping[str, tuple[NodeName, ...]], node_part: Mapping[NodeName, int]
) -> list[tuple[int, str, int]]:
    """(tier, HyperNode, part) of every HyperNode whose nodes all lie in one part."""
    found = []
    for name, nodes in sorted(members.items()):
        if not nodes:
            continue
        parts = {node_part[node] for node in nodes}
        if len(parts) == 1:
            found.append((snapshot.hypernode_by_name[name].tier, name, parts.pop()))
    return found


def _domain_free(
    members: Mapping[str, tuple[NodeName, ...]], resource: str, free: Mapping[NodeName, Mapping[str, int]]
) -> dict[str, int]:
    """Free `resource` per HyperNode: allocatable less what running pods hold."""
    return {name: sum(free[node].get(resource, 0) for node in nodes) for name, nodes in members.items()}


def _topology_candidates(
    group: PodGroup, whole: Sequence[tuple[int, str, int]], domain_free: Mapping[str, int], demand: int, count: int
) -> list[int]:
    """Parts a PodGroup may go to: for a hard-topology one, those holding a whole HyperNode of
    tier ≤ its limit with room for it, else holding one at all, else every part."""
    limit = _tier_limit(group)
    every = list(range(count))
    if limit is None:
        return every
    within = [(name, part) for tier, name, part in whole if tier <= limit]
    roomy = sorted({part for name, part in within if domain_free[name] >= demand})
    return roomy or sorted({part for _, part in within}) or every


def _tier_limit(group: PodGroup) -> int | None:
    """The tier a PodGroup's pods must stay within: its own hard limit, else its sub-groups' widest."""
    own = hard_tier_limit(group)
    if own is not None:
        return own
    limits = [limit for sub in group.sub_groups if (limit := hard_tier_limit(sub)) is not None]
    return max(limits) if limits else None


# ---- one part ----


def _part(
    snapshot: Snapshot,
    members: Mapping[str, tuple[NodeName, ...]],
    index: int,
    node_part: Mapping[NodeName, int],
    owner: Mapping[PodGroupKey, int],
) -> Part:
    """Part `index` as a snapshot of its own (module docstring)."""
    nodes = [node for node in snapshot.nodes if node_part[node.name] == index]
    pods = [pod for pod in snapshot.pods if _pod_part(pod, node_part, owner) == index]
    named = {pod.pod_group for pod in pods if pod.pod_group is not None}
    groups = [group for group in snapshot.pod_groups if group.key in named]
    owned = tuple(group.key for group in groups if owner.get(group.key) == index)
    hypernodes = _hypernodes_of(snapshot, members, nodes)
    part = snapshot.replaced(nodes=nodes, pods=pods, pod_groups=groups, hypernodes=hypernodes)
    return Part(index=index, snapshot=part, owned=owned)


def _pod_part(pod: Pod, node_part: Mapping[NodeName, int], owner: Mapping[PodGroupKey, int]) -> int | None:
    """A running pod's part is its node's; a pending pod's, its PodGroup's."""
    if pod.node is not None:
        return node_part[pod.node]
    return owner.get(pod.pod_group) if pod.pod_group is not None else None


def _hypernodes_of(
    snapshot: Snapshot, members: Mapping[str, tuple[NodeName, ...]], nodes: Sequence[Node]
) -> list[HyperNode]:
    """The HyperNodes cut to these nodes: each keeps its members inside them; empty ones go."""
    kept_nodes = {node.name for node in nodes}
    kept = {name for name, domain in members.items() if any(node in kept_nodes for node in domain)}
    return [
        hypernode.model_copy(
            update={
                "node_members": tuple(n for n in hypernode.node_members if n in kept_nodes),
                "hypernode_members": tuple(h for h in hypernode.hypernode_members if h in kept),
            }
        )
        for hypernode in snapshot.hypernodes
        if hypernode.name in kept
    ]
