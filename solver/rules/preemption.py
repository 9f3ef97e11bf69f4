"""Rule 8, preemption and reclaim: who may be evicted to make room, and for whom.

- *preempt*: the victim is preemptable, in the same queue as the PodGroup the room is for,
  and of lower priority (PodGroup priority; a pod without a PodGroup is never a victim).
- *reclaim*: the victim is preemptable, in another queue that is reclaimable and holds
  more than its deserved share, and the queue the room is for is not overused (its
  deserved is not ≤ its allocation in every resource), as Volcano's proportion plugin.
  A queue is never pushed below its guarantee.
- Either way a victim gang keeps at least `min_member` running pods or loses them all,
  and nobody is evicted for a PodGroup that then places nothing.

`victim_refusal` answers for one (preemptor, victim) pair; the checker adds the
whole-placement parts (gang of victims, guarantee, deserved after the evictions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from models.snapshot import Pod, PodGroup, Snapshot

NAME = "preemption"

EvictionReason = Literal["preempt", "reclaim"]


def queue_overused(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> bool:
    """Volcano's `Overused`: deserved ≤ allocated in every resource deserved names."""
    return all(deserved.get(name, 0) <= allocated.get(name, 0) for name in set(deserved) | set(allocated))


def above_deserved(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> bool:
    """True when allocated exceeds deserved in at least one resource (not LessEqual)."""
    return any(amount > deserved.get(name, 0) for name, amount in allocated.items())


def victim_refusal(
    snapshot: Snapshot,
    *,
    preemptor: PodGroup,
    victim: Pod,
    reason: EvictionReason,
    allocated: Mapping[str, Mapping[str, int]],
    deserved: Mapping[str, Mapping[str, int]],
) -> str | None:
    """None when `victim` may be evicted for `preemptor` under `reason`, else why not.

    `allocated` and `deserved` are per queue, as at the start of the cycle.
    """
    if victim.phase != "running":
        return "not running"
    if victim.pod_group is None:
        return "not managed by batchplace (no PodGroup)"
    if not victim.preemptable:
        return "not preemptable"
    victim_group = snapshot.pod_group_by_key[victim.pod_group]
    if victim_group.key == preemptor.key:
        return "belongs to the PodGroup it would make room for"
    if reason == "preempt":
        if victim_group.queue != preemptor.queue:
            return f"preempt stays within a queue ({victim_group.queue} is not {preemptor.queue})"
        if victim_group.priority >= preemptor.priority:
            return f"priority {victim_group.priority} is not below {preemptor.priority}"
        return None
    victim_queue = snapshot.queue_by_name.get(victim_group.queue)
    if victim_queue is None or victim_group.queue == preemptor.queue:
        return "reclaim takes from another, existing queue"
    if not victim_queue.reclaimable:
        return f"queue {victim_queue.name} is not reclaimable"
    if not above_deserved(allocated.get(victim_queue.name, {}), deserved.get(victim_queue.name, {})):
        return f"queue {victim_queue.name} is not above its deserved share"
    if queue_overused(allocated.get(preemptor.queue, {}), deserved.get(preemptor.queue, {})):
        return f"queue {preemptor.queue} already holds its deserved share"
    return None
