"""Deserved shares of queues by weighted water-filling, as Volcano's proportion plugin.

Input: a `Snapshot`. Output: for each queue, its deserved resources (`deserved_shares`),
what it holds now (`queue_allocated`) and what it asks for (`queue_requests`).
Every engine orders queues by these numbers and the checker uses them to judge whether a
reclaim was legal, so they live in one place.

The rule, per level of the queue tree (the root's total is the cluster's allocatable):
  1. each queue first gets its `guarantee`; a queue with an explicit `deserved` gets that;
  2. the rest is dealt out in rounds in proportion to weight among queues not yet met;
  3. a queue's share is capped, per resource, by its capability and by its request
     (allocated + pending); a queue is *met* once its request fits in every resource;
  4. rounds repeat until nothing is left or a round gives nothing more.

Worked example (Volcano's): 100 CPU, requests 10 / 60 / 100, weights 1 / 1 / 2.
Round 1 gives 25 / 25 / 50; the first is capped at its request 10 and met. 15 CPU remain.
Round 2 splits them 1:2 between the others: 25+5 = 30 and 50+10 = 60. Result 10 / 30 / 60.

A queue's deserved share is then split the same way among its children; a queue that
holds PodGroups *and* has children takes part in that split as one more member with its
own weight (Volcano forbids jobs on non-leaf queues; we accept and share).

Not promised: exact equality with Volcano in the last millicore — shares are integers
and what a round cannot divide evenly stays undealt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.snapshot import ROOT_QUEUE, Queue, QueueName, ResourceList, Snapshot
from solver.memo import memoized

__all__ = [
    "water_fill",
    "cluster_allocatable",
    "queue_allocated",
    "queue_requests",
    "deserved_shares",
    "dominant_share",
    "add_resources",
]


def add_resources(total: dict[str, int], extra: Mapping[str, int], *, times: int = 1) -> None:
    """`total += extra * times`, in place, resource by resource."""
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount * times


def _fits(amount: Mapping[str, int], limit: Mapping[str, int]) -> bool:
    return all(value <= limit.get(name, 0) for name, value in amount.items())


def water_fill(
    total: Mapping[str, int],
    *,
    weights: Sequence[int],
    requests: Sequence[Mapping[str, int]],
    capabilities: Sequence[Mapping[str, int] | None],
    guarantees: Sequence[Mapping[str, int]] = (),
    fixed: Sequence[Mapping[str, int] | None] = (),
) -> list[dict[str, int]]:
    """Deal `total` out among members by weight; see the module docstring for the rule.

    `capabilities[i]` None means uncapped; a resource missing from a capability is uncapped.
    `fixed[i]` set means member i's share is that (capped by capability), outside the rounds.
    """
    count = len(weights)
    guarantees = list(guarantees) or [{}] * count
    fixed = list(fixed) or [None] * count
    names = sorted(set(total) | {name for request in requests for name in request})

    def cap(member: int, name: str) -> int:
        limit = requests[member].get(name, 0)
        capability = capabilities[member]
        if capability is not None and name in capability:
            limit = min(limit, capability[name])
        return limit

    deserved: list[dict[str, int]] = []
    remaining = {name: total.get(name, 0) for name in names}
    met = [False] * count
    for member in range(count):
        if fixed[member] is not None:
            # A resource the fixed share does not name is deserved up to what the queue asks.
            named = fixed[member]
            share = {name: named.get(name, cap(member, name)) for name in names}  # type: ignore[union-attr]
            capability = capabilities[member]
            if capability is not None:
                share = {name: min(v, capability.get(name, v)) for name, v in share.items()}
            met[member] = True
        else:
            share = {name: guarantees[member].get(name, 0) for name in names}
            met[member] = _fits(requests[member], share)
        deserved.append(share)
        for name in names:
            remaining[name] -= share[name]
    remaining = {name: max(0, value) for name, value in remaining.items()}

    while any(remaining.values()):
        active = [m for m in range(count) if not met[m]]
        if not active:
            break
        total_weight = sum(weights[m] for m in active)
        given = {name: 0 for name in names}
        for member in active:
            share = deserved[member]
            for name in names:
                offer = remaining[name] * weights[member] // total_weight
                new_value = min(share[name] + offer, max(share[name], cap(member, name)))
                given[name] += new_value - share[name]
                share[name] = new_value
            met[member] = all(share[name] >= cap(member, name) for name in names)
        if not any(given.values()):
            break
        remaining = {name: remaining[name] - given[name] for name in names}
    return [{name: value for name, value in share.items() if value} for share in deserved]


def cluster_allocatable(snapshot: Snapshot) -> dict[str, int]:
    """What the root queue deals out: allocatable of every schedulable node."""
    total: dict[str, int] = {}
    for node in snapshot.nodes:
        if not node.unschedulable:
            add_resources(total, node.allocatable)
    return total


def _copied(per_queue: Mapping[QueueName, Mapping[str, int]]) -> dict[QueueName, dict[str, int]]:
    return {name: dict(amount) for name, amount in per_queue.items()}


def _own_usage(snapshot: Snapshot, *, include_pending: bool) -> Mapping[QueueName, Mapping[str, int]]:
    """Requests of each queue's own PodGroups' pods (memoized per snapshot: read, never mutate)."""
    return memoized(snapshot, ("own_usage", include_pending), lambda: _compute_own_usage(snapshot, include_pending))


def _compute_own_usage(snapshot: Snapshot, include_pending: bool) -> dict[QueueName, dict[str, int]]:
    usage: dict[QueueName, dict[str, int]] = {q.name: {} for q in snapshot.queues}
    for pod in snapshot.pods:
        if pod.pod_group is None or (pod.phase == "pending" and not include_pending):
            continue
        queue = snapshot.pod_group_by_key[pod.pod_group].queue
        if queue in usage:
            add_resources(usage[queue], pod.requests)
    return usage


def _with_descendants(snapshot: Snapshot, own: Mapping[QueueName, Mapping[str, int]]) -> dict[QueueName, dict[str, int]]:
    total: dict[QueueName, dict[str, int]] = {name: {} for name in own}
    for queue_name, amount in own.items():
        for ancestor in snapshot.queue_ancestors(queue_name):
            add_resources(total[ancestor], amount)
    return total


def queue_allocated(snapshot: Snapshot) -> dict[QueueName, dict[str, int]]:
    """Resources held by running pods of each queue's PodGroups, its subtree included."""
    return _copied(
        memoized(snapshot, ("queue_allocated",), lambda: _with_descendants(snapshot, _own_usage(snapshot, include_pending=False)))
    )


def queue_requests(snapshot: Snapshot) -> dict[QueueName, dict[str, int]]:
    """Allocated plus pending requests per queue (Volcano's `request`), subtree included."""
    return _copied(
        memoized(snapshot, ("queue_requests",), lambda: _with_descendants(snapshot, _own_usage(snapshot, include_pending=True)))
    )


def deserved_shares(snapshot: Snapshot) -> dict[QueueName, dict[str, int]]:
    """Each queue's deserved resources, water-filled level by level down the queue tree
    (computed once per snapshot; each call returns its own copy)."""
    return _copied(memoized(snapshot, ("deserved_shares",), lambda: _deserved_shares(snapshot)))


def _deserved_shares(snapshot: Snapshot) -> dict[QueueName, dict[str, int]]:
    requests = queue_requests(snapshot)
    own_requests = _own_usage(snapshot, include_pending=True)
    children: dict[QueueName | None, list[Queue]] = {}
    for queue in snapshot.queues:
        parent = None if queue.parent in (None, ROOT_QUEUE) else queue.parent
        children.setdefault(parent, []).append(queue)

    deserved: dict[QueueName, dict[str, int]] = {}

    def split(parent: Queue | None, amount: Mapping[str, int]) -> None:
        members = children.get(parent.name if parent else None, [])
        if not members:
            return
        weights = [q.weight for q in members]
        member_requests: list[ResourceList] = [requests[q.name] for q in members]
        capabilities = [q.capability for q in members]
        guarantees = [q.guarantee for q in members]
        fixed = [q.deserved for q in members]
        if parent is not None and own_requests[parent.name]:
            # The parent's own PodGroups compete with its children as one more member.
            weights.append(parent.weight)
            member_requests.append(own_requests[parent.name])
            capabilities.append(None)
            guarantees.append({})
            fixed.append(None)
        shares = water_fill(
            amount,
            weights=weights,
            requests=member_requests,
            capabilities=capabilities,
            guarantees=guarantees,
            fixed=fixed,
        )
        for queue, share in zip(members, shares):
            deserved[queue.name] = share
            split(queue, share)

    split(None, cluster_allocatable(snapshot))
    return deserved


def dominant_share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """The largest allocated/deserved ratio over resources (DRF); ∞ when over a zero share.

    Example: allocated 4 GPU / 10 CPU of deserved 8 GPU / 100 CPU → max(0.5, 0.1) = 0.5.
    """
    share = 0.0
    for name, amount in allocated.items():
        if amount <= 0:
            continue
        limit = deserved.get(name, 0)
        share = max(share, amount / limit if limit > 0 else float("inf"))
    return share
