"""Rule 8, preemption and reclaim: who may be evicted to make room, and for whom.

- *preempt*: the victim is preemptable, in the same queue as the PodGroup the room is for,
  and of lower priority (PodGroup priority; a pod without a PodGroup is never a victim).
- *reclaim*: the victim is preemptable, in another queue that is reclaimable and holds
  more than its deserved share, and the queue the room is for is not overused (its
  deserved is not ≤ its allocation in every resource), as Volcano's proportion plugin.
  In a queue tree the reclaim also leaves every ancestor of the victim's queue that is
  not an ancestor of the preemptor's (the subtrees it takes out of, `charged_queues`),
  and each of those must be above its deserved share too. A queue is never pushed below
  its guarantee.
- Either way a victim gang keeps at least `min_member` running pods (`gang_requirement`'s,
  the same number the gang had to reach to start) or loses them all, and nobody is
  evicted for a PodGroup that then places nothing. Task minimums are not kept for a
  victim: when the PodGroup's `min_member` is below their sum they never applied (as in
  Volcano's gang preemption); when they do apply, only their total is kept.

- A PodGroup with a waiting time (`sla-waiting-time`, its queue's or the controller's
  default) evicts nobody, by preempt or reclaim: its wait is bounded by the starvation
  guard (`solver.rules.reservation`), so an eviction would only buy a shorter wait with
  the GPU-time the victim has run since its start. On the `llm` timeline evictions come
  from priority-1 training preempting priority-0 training; refusing only equal-priority
  reclaim of gangs would refuse nothing there, refusing gang victims (min_member > 1)
  leaves single-pod 8-GPU jobs evicted, refusing every victim evicts nothing and gives the
  lowest training p99 (measured: docs/results.md, "Starvation guard and preemption on the
  llm timeline").
  Without a waiting time the rules above hold as in Volcano, and the objective's
  disruption tier weighs each victim by its priority and the GPU-time it loses
  (`solver.objective`).

`victim_refusal` answers for one (preemptor, victim) pair; the checker adds the
whole-placement parts (gang of victims, guarantee, deserved after the evictions).

`reclaim_share_refusal` is how far a queue reclaims for itself, one pod and one victim at a
time, as Volcano's capacity plugin compares only the dimensions the reclaimer requests: a
victim is taken for one more pod only if it frees something the pod asks, and the queue,
with the pod, stays within its deserved share in every resource both the pod asks and
the victim frees — what the reclaim takes from the other queue. What the pod takes of idle
capacity is no reclaim and not limited here (capability is rule 4's). Example: queue18
deserves 2 CPU and 1 GPU and holds 2 CPU; a pod of 1 CPU and 1 GPU may reclaim a GPU pod
(0 + 1 ≤ 1 GPU) while the CPU comes from idle capacity, but not a CPU pod (2 + 1 > 2). The
greedy engine searches with it; the checker does not judge it. CP-SAT weighs the same
trade in its objective instead — a queue past its share in what it takes gains no fairness
there, and the victim costs disruption — so the engines agree unless throughput tips it
(`docs/volcano-differences.md`, dominant-share-fairness).

`check` judges every eviction of a running pod (malformed ones are `binding`'s):
  - `victim_refusal` is None, with allocated and deserved per queue at the snapshot
    (`solver.shares`), and the victim's PodGroup is preemptable too;
  - the PodGroup it is `for` exists and gets at least one bind in this placement;
  - reclaim takes from a queue only while it is above its deserved share: for each
    queue Q that some reclaim eviction charges, some reclaimed victim v from Q's subtree
    has allocated_after(Q) + v not ≤ deserved(Q) — then the victims can be taken one by
    one, v last, each while Q is still above its share (Volcano's proportion
    `Reclaimable` loop). allocated_after counts Q's kept running and bound pods (its
    subtree), as Volcano's reclaim runs after allocate and sees its allocations.
    Example: Q deserves 4 GPUs and runs two 4-GPU pods; reclaiming one leaves 4 and
    4 + 4 > 4 holds; reclaiming both leaves 0 and 0 + 4 ≤ 4, so the second was taken
    from a queue already at its share: a violation. One level up: org (deserving 4 CPU)
    runs 6 in team-a; other reclaims 4 of them: org is left 2 and 2 + 1 ≤ 4, a violation
    even while team-a, deserving 2, is left 2 and 2 + 1 > 2.
The gang of victims is rule 3's (`gang`), the guarantee rule 4's (`quota`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from models.snapshot import Pod, PodGroup, QueueName, Snapshot
from solver.after import After, EvictedPod
from solver.rules.reservation import waiting_limit_s
from solver.shares import deserved_shares, queue_allocated
from solver.violation import Violation, describe_resources

NAME = "preemption"

EvictionReason = Literal["preempt", "reclaim"]


def queue_overused(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> bool:
    """Volcano's `Overused`: deserved ≤ allocated in every resource deserved names."""
    return all(deserved.get(name, 0) <= allocated.get(name, 0) for name in set(deserved) | set(allocated))


def above_deserved(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> bool:
    """True when allocated exceeds deserved in at least one resource (not LessEqual)."""
    return any(amount > deserved.get(name, 0) for name, amount in allocated.items())


def charged_queues(snapshot: Snapshot, *, victim_queue: QueueName, preemptor_queue: QueueName) -> tuple[QueueName, ...]:
    """The queues a reclaim takes from: the victim's queue, then each of its ancestors that
    is not also the preemptor's (reclaim between siblings moves nothing out of their parent).
    Example: team-a and team-b under org, other under the root: a team-a victim reclaimed
    for team-b charges (team-a,); for other, (team-a, org)."""
    shared = set(snapshot.queue_ancestors(preemptor_queue))
    chain = snapshot.queue_ancestors(victim_queue)
    return (victim_queue, *(queue for queue in chain[1:] if queue not in shared))


def waits_instead(snapshot: Snapshot, preemptor: PodGroup) -> bool:
    """True when `preemptor` has a waiting time (`sla-waiting-time`, its queue's or the
    default): it can wait for a reservation (`solver.rules.reservation`) instead."""
    return waiting_limit_s(snapshot, preemptor) is not None


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
    if not preemptor.may_preempt:
        return f"{preemptor.key} may not preempt (preemptionPolicy Never)"
    if victim.phase != "running":
        return "not running"
    if victim.pod_group is None:
        return "not managed by batchplace (no PodGroup)"
    if not victim.preemptable:
        return "not preemptable"
    victim_group = snapshot.pod_group_by_key[victim.pod_group]
    if victim_group.key == preemptor.key:
        return "belongs to the PodGroup it would make room for"
    if waits_instead(snapshot, preemptor):
        return f"{preemptor.key} has a waiting time (sla-waiting-time): it waits, then holds room, and evicts nobody"
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
    for queue in charged_queues(snapshot, victim_queue=victim_queue.name, preemptor_queue=preemptor.queue):
        if not above_deserved(allocated.get(queue, {}), deserved.get(queue, {})):
            return f"queue {queue} is not above its deserved share"
    if queue_overused(allocated.get(preemptor.queue, {}), deserved.get(preemptor.queue, {})):
        return f"queue {preemptor.queue} already holds its deserved share"
    return None


def reclaim_share_refusal(
    queue: QueueName,
    *,
    allocated: Mapping[str, int],
    deserved: Mapping[str, int],
    request: Mapping[str, int],
    victim: Mapping[str, int],
) -> str | None:
    """None when `queue`, holding `allocated`, may reclaim a pod holding `victim` for one
    more pod asking `request` (see the module docstring), else why not.

    Example: allocated {cpu: 2000}, deserved {cpu: 2000, gpu: 1000}, request {cpu: 1000,
    gpu: 1000}: victim {gpu: 1000} → None; victim {cpu: 1000} → refused (cpu); victim
    {memory: 4Gi} → refused (frees nothing the pod asks)."""
    taken = sorted(name for name, amount in request.items() if amount > 0 and victim.get(name, 0) > 0)
    if not taken:
        return "frees nothing the pod asks"
    for name in taken:
        if allocated.get(name, 0) + request[name] > deserved.get(name, 0):
            return (
                f"queue {queue} would pass its deserved {name}: "
                f"{allocated.get(name, 0)} held + {request[name]} asked > {deserved.get(name, 0)}"
            )
    return None


@dataclass(frozen=True)
class ReclaimShare:
    """What `reclaim_share_refusal` compares for one more pod of a reclaiming queue: the
    queue, its allocation now (this cycle's binds included), its deserved share and the
    pod's requests; `refusal(victim)` asks it for one victim."""

    queue: QueueName
    allocated: Mapping[str, int]
    deserved: Mapping[str, int]
    request: Mapping[str, int]

    def refusal(self, victim: Mapping[str, int]) -> str | None:
        return reclaim_share_refusal(self.queue, allocated=self.allocated, deserved=self.deserved,
                                     request=self.request, victim=victim)  # fmt: skip


def _plus(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {name: a.get(name, 0) + b.get(name, 0) for name in set(a) | set(b)}


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    if not after.evicted:
        return violations
    allocated = queue_allocated(snapshot)
    deserved = deserved_shares(snapshot)

    def report(subject: str, message: str) -> None:
        violations.append(Violation(rule=NAME, subject=subject, message=message))

    charged: set[QueueName] = set()
    reclaimed: list[tuple[QueueName, EvictedPod]] = []  # (victim's queue, eviction)
    for evicted in after.evicted:
        pod, eviction = evicted.pod, evicted.eviction
        what = f"{eviction.reason} of pod {pod.key} for {eviction.for_}"
        preemptor = snapshot.pod_group_by_key.get(eviction.for_)
        if preemptor is None:
            report(pod.key, f"{what}: pod group {eviction.for_} does not exist")
            continue
        if after.bound_count(preemptor.key) == 0:
            report(pod.key, f"{what}: pod group {preemptor.key} gets no bind in this placement")
        refusal = victim_refusal(
            snapshot,
            preemptor=preemptor,
            victim=pod,
            reason=eviction.reason,
            allocated=allocated,
            deserved=deserved,
        )
        if refusal is None and pod.pod_group is not None:
            victim_group = snapshot.pod_group_by_key[pod.pod_group]
            if not victim_group.preemptable:
                refusal = f"its pod group {victim_group.key} is not preemptable"
        if refusal is not None:
            report(pod.key, f"{what} is not allowed: {refusal}")
        elif eviction.reason == "reclaim" and pod.pod_group is not None:
            queue = snapshot.pod_group_by_key[pod.pod_group].queue
            charged.update(charged_queues(snapshot, victim_queue=queue, preemptor_queue=preemptor.queue))
            reclaimed.append((queue, evicted))

    for queue in sorted(charged):
        left, share = after.queue_allocated_after[queue], deserved.get(queue, {})
        victims = [v for victim_queue, v in reclaimed if queue in snapshot.queue_ancestors(victim_queue)]
        if not any(above_deserved(_plus(left, v.pod.requests), share) for v in victims):
            report(
                queue,
                f"queue {queue}: {len(victims)} reclaim eviction(s) leave it {describe_resources(left)}, "
                f"and adding back any one victim keeps it within its deserved {describe_resources(share)}: "
                "the last victim was taken from a queue no longer above its share",
            )
    return violations
