"""Rule 4, quota: a queue's allocation, and each ancestor's, stays within its capability;
reclaim never pushes a queue below its guarantee; binds go only to open, existing queues.

Rule, in three parts:
  - capability: after the placement, every queue's allocation (kept running + bound pods
    of its whole subtree) is ≤ its capability in each resource the capability names —
    judged only where binds added to that resource in that subtree, so a queue already
    over its cap (an admin lowered it) is not this placement's fault unless it grows;
  - open queue: a PodGroup is bound only when its queue exists and is open;
  - guarantee: a queue that lost pods to `reclaim` (its own or a descendant's) keeps, in
    every guaranteed resource, at least min(guarantee, allocation before the cycle).

Worked example: `org` (capability 20 GPUs) has children `team-a` (no cap) and `team-b`.
team-a runs 12 GPUs, team-b 4; binding an 8-GPU pod to team-a gives org 24000 > 20000
milli-GPU: one violation, subject `org`. If team-b had guarantee 4 GPUs, reclaiming its
4-GPU pod leaves it 0 < min(4000, 4000): one violation, subject `team-b`.

`accepts_binds` is the plain predicate for engines. Closed *ancestors* are not judged:
the snapshot carries each queue's own state as the cluster reports it.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.snapshot import QueueName, Snapshot
from solver.after import After
from solver.violation import Violation, describe_amount

__all__ = ["NAME", "accepts_binds", "over_capability", "check"]

NAME = "quota"


def accepts_binds(snapshot: Snapshot, queue: QueueName) -> bool:
    """True when `queue` exists and is open, so its PodGroups may be placed."""
    found = snapshot.queue_by_name.get(queue)
    return found is not None and found.state == "open"


def over_capability(allocated: Mapping[str, int], capability: Mapping[str, int] | None) -> dict[str, int]:
    """The capped resources `allocated` exceeds, with the amount: {gpu: 24000} over a cap of 20000.

    None (no capability) caps nothing; a resource the capability omits is uncapped.
    """
    if capability is None:
        return {}
    return {name: allocated.get(name, 0) for name, cap in capability.items() if allocated.get(name, 0) > cap}


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []

    for queue in snapshot.queues:
        over = over_capability(after.queue_allocated_after[queue.name], queue.capability)
        added = after.queue_bound[queue.name]
        for resource, amount in sorted(over.items()):
            if added.get(resource, 0) <= 0:
                continue
            cap = queue.capability[resource]  # type: ignore[index]  # over_capability found it
            violations.append(
                Violation(
                    rule=NAME,
                    subject=queue.name,
                    message=(
                        f"queue {queue.name}: {resource} {amount} > capability "
                        f"{describe_amount(resource, cap)} after placement "
                        f"(was {after.queue_allocated_before[queue.name].get(resource, 0)}, "
                        f"binds add {describe_amount(resource, added[resource])})"
                    ),
                )
            )

    refused_groups = sorted({b.group.key for b in after.bound if not accepts_binds(snapshot, b.group.queue)})
    for group_key in refused_groups:
        group = snapshot.pod_group_by_key[group_key]
        state = "does not exist" if group.queue not in snapshot.queue_by_name else "is closed"
        count = after.bound_count(group_key)
        violations.append(
            Violation(
                rule=NAME,
                subject=group_key,
                message=f"pod group {group_key} gets {count} bind(s) but its queue {group.queue} {state}",
            )
        )

    reclaimed: set[QueueName] = set()
    for evicted in after.evicted:
        if evicted.eviction.reason == "reclaim" and evicted.pod.pod_group is not None:
            reclaimed.update(snapshot.queue_ancestors(snapshot.pod_group_by_key[evicted.pod.pod_group].queue))
    for queue_name in sorted(reclaimed):
        queue = snapshot.queue_by_name[queue_name]
        before, now = after.queue_allocated_before[queue_name], after.queue_allocated_after[queue_name]
        for resource, guarantee in sorted(queue.guarantee.items()):
            floor = min(guarantee, before.get(resource, 0))
            if now.get(resource, 0) < floor:
                violations.append(
                    Violation(
                        rule=NAME,
                        subject=queue_name,
                        message=(
                            f"queue {queue_name}: reclaim leaves {resource} {now.get(resource, 0)} < "
                            f"{describe_amount(resource, floor)} = min(guarantee {guarantee}, "
                            f"allocated before {before.get(resource, 0)})"
                        ),
                    )
                )
    return violations
