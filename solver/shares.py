"""Deserved shares of queues, as Volcano's proportion plugin deals them out.

Input: a `Snapshot`. Output: for each queue, its deserved resources (`deserved_shares`),
what it holds now (`queue_allocated`) and what it asks for (`queue_requests`).
Every engine orders queues by these numbers and the checker uses them to judge whether a
reclaim was legal, so they live in one place.

The rule at one level of the queue tree (the root's total is the cluster's allocatable),
per resource, as Volcano's proportion plugin (`pkg/scheduler/plugins/proportion`):
  1. `realCapability = min(capability, total − Σ guarantees at the level + own guarantee)`:
     no queue may be dealt what the level's other guarantees reserve;
  2. rounds deal `remaining` out by weight among queues not yet *met*; each round a queue's
     share becomes `max(min(share + offer, realCapability, request), guarantee)` —
     the guarantee is a floor on the weighted share, not a head start before it;
  3. a queue is met once its request fits in every resource, or once a round changes
     nothing for it (its realCapability stops it); `remaining` loses what the round gave;
  4. rounds stop when nothing remains or a round changes nothing.
`request` is allocated + pending (Volcano's), so a queue never deserves more than it asks
for — unless its guarantee is larger: the guarantee stays reserved for it.

Worked examples (CPU):
  - 100, requests 10 / 60 / 100, weights 1 / 1 / 2, no guarantees (Volcano's own):
    round 1 offers 25 / 25 / 50, the first is capped at 10 and met; 15 remain and round 2
    gives 5 / 10 → 10 / 30 / 60.
  - 12, A (weight 1, guarantee 8) runs 12, B (weight 1) asks 12: realCapability A 12,
    B 12 − 8 = 4. Round 1 offers 6 each: A max(6, 8) = 8, B min(6, 4) = 4; nothing
    remains → A 8, B 4, so reclaim may take 4 from A. (Giving A its guarantee first and
    then half the rest, 8 + 2, would stop reclaim after 2.)
  - 100, A (guarantee 60) and B both ask 100: round 1 offers 50 each, A is lifted to 60,
    B gets 40 (its realCapability) → A 60, B 40.

Where Volcano overcommits, we do not. Volcano lifts each queue to its guarantee *after*
dealing the round, so one round can give more than remains: 12, A (guarantee 8), B and C
all asking 12 → Volcano offers 4 each and ends at 8 / 4 / 4 = 16 of 12 (B's and C's
realCapability, 4 each, bound each alone, not both). Here the lifts to guarantees stand
and the weighted parts of that round are cut, by weight, to what is left: 8 / 2 / 2.
Wherever Volcano's rounds fit, the result is Volcano's (up to the rounding below).

Only when the guarantees (and explicit `deserved`) at a level alone exceed its total, in
some resource, do the shares exceed it: each queue then deserves exactly its guarantee
(or explicit share) in that resource and the others nothing, as in Volcano. We keep that
overcommit rather than scale guarantees down because the guarantee is a promise the quota
rule holds reclaim to (rule 4): a deserved share below it would be a second line that
reclaim could never reach, and which queue to shortchange would be our invention.

Which queues take part: those whose subtree holds a PodGroup (Volcano deals only among
queues with jobs); an idle queue deserves nothing, though its guarantee still lowers the
others' realCapability.

Explicit `deserved` (Volcano's capacity plugin reads it; proportion ignores it): each
resource it names is pinned at `max(min(deserved, realCapability), guarantee)` before the
rounds and taken out of what they deal; the resources it does not name are dealt in the
rounds as for any queue. A guarantee above the capability still sets the share (as
Volcano): the queue can never hold it, so it is never above its share and never reclaimed.

Hierarchy (Volcano's proportion plugin is flat; this is our choice, in the spirit of its
hierarchical capacity plugin): a queue's deserved share is dealt among its children by the
same rule, with the parent's deserved as the total and the children's guarantees as the
level's. A queue that holds PodGroups *and* has children takes part in that split as one
more member with its own weight and no guarantee, capability or explicit share (Volcano
forbids jobs on non-leaf queues; we accept and share).

Not promised: equality with Volcano in the last millicore — shares are integers and what
a round cannot divide evenly stays undealt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.snapshot import ROOT_QUEUE, Queue, QueueName, Snapshot, sum_resources
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


def water_fill(
    total: Mapping[str, int],
    *,
    weights: Sequence[int],
    requests: Sequence[Mapping[str, int]],
    capabilities: Sequence[Mapping[str, int] | None],
    guarantees: Sequence[Mapping[str, int]] = (),
    fixed: Sequence[Mapping[str, int] | None] = (),
    level_guarantee: Mapping[str, int] | None = None,
) -> list[dict[str, int]]:
    """Deal `total` out among the members of one level; see the module docstring.

    `capabilities[i]` None means uncapped; a resource missing from a capability is uncapped.
    `fixed[i]` pins member i's share of the resources it names (explicit `deserved`).
    `level_guarantee` is Σ guarantees of every queue at the level, idle ones included
    (default: the members'); it sets each member's realCapability.
    """
    count = len(weights)
    guarantees = list(guarantees) or [{}] * count
    fixed = list(fixed) or [None] * count
    if level_guarantee is None:
        level_guarantee = {}
        for guarantee in guarantees:
            add_resources(level_guarantee, guarantee)  # type: ignore[arg-type]
    names = sorted(
        set(total)
        | {name for request in requests for name in request}
        | {name for guarantee in guarantees for name in guarantee}
        | {name for share in fixed if share for name in share}
    )

    free_of_guarantees = {name: max(0, total.get(name, 0) - level_guarantee.get(name, 0)) for name in names}

    def real_capability(member: int, name: str) -> int:
        limit = free_of_guarantees[name] + guarantees[member].get(name, 0)
        capability = capabilities[member]
        if capability is not None and name in capability:
            limit = min(limit, capability[name])
        return limit

    deserved = [{name: 0 for name in names} for _ in range(count)]
    pinned = [dict(share or {}) for share in fixed]
    for member in range(count):
        for name, amount in pinned[member].items():
            capped = min(amount, real_capability(member, name))
            deserved[member][name] = max(capped, guarantees[member].get(name, 0))
    remaining = {name: max(0, total.get(name, 0) - sum(share[name] for share in deserved)) for name in names}
    # A member that pins everything it asks for or is guaranteed has nothing left to be dealt.
    met = [
        bool(pinned[m]) and all(name in pinned[m] for name in (*requests[m], *guarantees[m])) for m in range(count)
    ]

    while True:
        active = [m for m in range(count) if not met[m]]
        if not active:
            break
        remaining_before = dict(remaining)
        before = {m: dict(deserved[m]) for m in active}
        for name in names:
            dealt = [m for m in active if name not in pinned[m]]
            weight = sum(weights[m] for m in dealt)
            if not weight:
                continue
            # Volcano's max(min(share + offer, realCapability, request), guarantee), split into
            # the lift to the guarantee and the weighted growth above it.
            lift, growth = [], []
            for m in dealt:
                share = before[m][name]
                offered = share + remaining[name] * weights[m] // weight
                grown = min(offered, real_capability(m, name), requests[m].get(name, 0))
                lifted = max(share, guarantees[m].get(name, 0))
                lift.append(lifted - share)
                growth.append(max(0, grown - lifted))
            room = remaining[name] - sum(lift)
            if sum(growth) > room:  # the lifts overran the round: cut the growth to fit
                growth = _deal(max(0, room), weights=[weights[m] for m in dealt], caps=growth)
            for m, lifted_by, grown_by in zip(dealt, lift, growth):
                deserved[m][name] += lifted_by + grown_by
            remaining[name] = max(0, remaining[name] - sum(lift) - sum(growth))
        for m in active:
            asked_fits = all(requests[m].get(name, 0) <= deserved[m][name] for name in names)
            met[m] = asked_fits or deserved[m] == before[m]
        if not any(remaining.values()) or remaining == remaining_before:
            break
    return [{name: value for name, value in share.items() if value} for share in deserved]


def _deal(amount: int, *, weights: Sequence[int], caps: Sequence[int]) -> list[int]:
    """`amount` split by weight, none above its cap, what a cap leaves going to the others.

    Example: 4 over weights 1 / 1 capped 4 / 1 → 3 / 1.
    """
    given = [0] * len(caps)
    open_members = [i for i, cap in enumerate(caps) if cap > 0]
    while amount > 0 and open_members:
        weight = sum(weights[i] for i in open_members)
        steps = [min(caps[i] - given[i], amount * weights[i] // weight) for i in open_members]
        if not any(steps):
            break
        for i, step in zip(open_members, steps):
            given[i] += step
        amount -= sum(steps)
        open_members = [i for i in open_members if given[i] < caps[i]]
    return given


def cluster_allocatable(snapshot: Snapshot) -> dict[str, int]:
    """What the root queue deals out: allocatable of every schedulable node (a sum per
    resource over the nodes, in C, rather than a Python addition per node and resource)."""
    return sum_resources([node.allocatable for node in snapshot.nodes if not node.unschedulable])


def _copied(per_queue: Mapping[QueueName, Mapping[str, int]]) -> dict[QueueName, dict[str, int]]:
    return {name: dict(amount) for name, amount in per_queue.items()}


def _own_usage(snapshot: Snapshot, *, include_pending: bool) -> Mapping[QueueName, Mapping[str, int]]:
    """Requests of each queue's own PodGroups' pods (memoized per snapshot: read, never mutate)."""
    running, every = memoized(snapshot, ("own_usage",), lambda: _compute_own_usage(snapshot))
    return every if include_pending else running


def _compute_own_usage(snapshot: Snapshot) -> tuple[dict[QueueName, dict[str, int]], dict[QueueName, dict[str, int]]]:
    """(running pods only, every pod) per queue, from one pass over the pods: each queue's
    pods' request lists gathered, then summed resource by resource in C (`sum_resources`): each
    cycle of a large cluster asks both, and a Python addition per pod and resource, twice,
    showed in its solve (docs/results.md, "Steady state at 10,000 nodes")."""
    queue_of = {group.key: group.queue for group in snapshot.pod_groups}
    running: dict[QueueName, list[dict[str, int]]] = {q.name: [] for q in snapshot.queues}
    every: dict[QueueName, list[dict[str, int]]] = {q.name: [] for q in snapshot.queues}
    for pod in snapshot.pods:
        if pod.pod_group is None:
            continue
        queue = queue_of[pod.pod_group]
        if queue in every:
            every[queue].append(pod.requests)
            if pod.phase != "pending":
                running[queue].append(pod.requests)
    return {q: sum_resources(lists) for q, lists in running.items()}, {q: sum_resources(lists) for q, lists in every.items()}


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
    return _copied(_requests(snapshot))


def _requests(snapshot: Snapshot) -> Mapping[QueueName, Mapping[str, int]]:
    """`queue_requests`, memoized per snapshot: read, never mutate."""
    return memoized(snapshot, ("queue_requests",), lambda: _with_descendants(snapshot, _own_usage(snapshot, include_pending=True)))


def deserved_shares(snapshot: Snapshot) -> dict[QueueName, dict[str, int]]:
    """Each queue's deserved resources, water-filled level by level down the queue tree
    (computed once per snapshot; each call returns its own copy)."""
    return _copied(memoized(snapshot, ("deserved_shares",), lambda: _deserved_shares(snapshot)))


def _deserved_shares(snapshot: Snapshot) -> dict[QueueName, dict[str, int]]:
    requests = _requests(snapshot)
    own_requests = _own_usage(snapshot, include_pending=True)
    children: dict[QueueName | None, list[Queue]] = {}
    for queue in snapshot.queues:
        parent = None if queue.parent in (None, ROOT_QUEUE) else queue.parent
        children.setdefault(parent, []).append(queue)
    holds_groups: set[QueueName] = set()  # queues with a PodGroup of their own
    busy: set[QueueName] = set()  # queues with a PodGroup in their subtree
    for group in snapshot.pod_groups:
        if group.queue in snapshot.queue_by_name:
            holds_groups.add(group.queue)
            busy.update(snapshot.queue_ancestors(group.queue))

    deserved: dict[QueueName, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}

    def split(parent: Queue | None, amount: Mapping[str, int]) -> None:
        siblings = children.get(parent.name if parent else None, [])
        level_guarantee: dict[str, int] = {}
        for queue in siblings:
            add_resources(level_guarantee, queue.guarantee)
        members = [queue for queue in siblings if queue.name in busy]
        weights = [q.weight for q in members]
        member_requests: list[Mapping[str, int]] = [requests[q.name] for q in members]
        capabilities = [q.capability for q in members]
        guarantees = [q.guarantee for q in members]
        fixed = [q.deserved for q in members]
        if parent is not None and parent.name in holds_groups and members:
            # The parent's own PodGroups compete with its children as one more member.
            weights.append(parent.weight)
            member_requests.append(own_requests[parent.name])
            capabilities.append(None)
            guarantees.append({})
            fixed.append(None)
        if not members:
            return
        shares = water_fill(
            amount,
            weights=weights,
            requests=member_requests,
            capabilities=capabilities,
            guarantees=guarantees,
            fixed=fixed,
            level_guarantee=level_guarantee,
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
