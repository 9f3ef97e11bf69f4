"""Wrap an engine's `Placement` into a `Decision`: per-PodGroup outcome and per-queue shares.

Every engine (greedy, CP-SAT, the fallback) ends here, so "scheduled", "placed" and the
queue numbers mean the same whichever engine answered. Input: the snapshot, the placement,
and the engine's reasons per PodGroup; output: a frozen `Decision`.

A PodGroup is *scheduled* when its gang requirement (`gang_requirement`: `min_member` and,
when task minimums apply, each task's `min_available`; tasks waiting on dependencies left
out) is met by its pods
running and not evicted plus those bound this cycle, and at least one pod is there.
Otherwise it is *pending*, and always carries at least one reason: the engine's, or,
when the engine gave none, a generic one — its pods were evicted (`preemption:`), some
pods were not placed (`unplaced:`), or too few pods run for its gang (`gang:`). Example: min_member 4, 3 running,
1 bound → placed 4, scheduled; min_member 4, 2 running, nothing bound → pending.

A pending PodGroup that holds nodes (`solver.rules.reservation`) says so first:
"reservation: waiting 47 min > 30 min; holding leaf-3 (2 nodes held, 8 GPUs to drain), 24 of
64 GPUs free".

Every PodGroup, scheduled or pending, also says which of its tasks wait on a dependency
and for what (`dependency_reasons`): a scheduled workflow whose task-b waits for task-a
reports "dependency: task-b waits for task-a (0 of 1 running)", so the waiting pods are
never silently absent from the answer; likewise the scheduling gates its pending pods wait
for (`gate_reasons`, rule `gated`): "gated: waiting for example.com/quota-check". A
scheduled PodGroup keeps what the engine says of it too — its tasks that no node matches
("eligibility: task master: 0/3 nodes: …").

Queue shares report cpu, memory and gpu only (what people read); `allocated` is after the
placement (running − evicted + bound, subtree included), `deserved` is `deserved_shares`.

Not promised: that the placement is valid — run `solver.checker` for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.placement import Decision, Eviction, Placement, PodGroupOutcome, QueueShare, SolveStatus
from models.snapshot import CPU, GPU, MEMORY, PodGroup, PodGroupKey, QueueName, Snapshot, is_fractional_gpu
from solver import reasons as reason_text
from solver.rules import colocation, dra, gated, reservation, usage
from solver.rules.gang import gang_requirement, is_met
from solver.shares import add_resources, deserved_shares, queue_allocated

__all__ = [
    "build_decision", "pending_groups", "allocated_after", "placed_counts", "bound_gpu_milli", "dependency_reasons",
    "gate_reasons", "REPORTED_RESOURCES",
]  # fmt: skip

REPORTED_RESOURCES = (CPU, MEMORY, GPU)


def bound_gpu_milli(snapshot: Snapshot, placement: Placement) -> int:
    """GPU milli the placement binds this cycle (what two engines' answers to one snapshot are
    compared by in the experiments). Example: binds of an 8-GPU pod and a 500-milli share → 8500."""
    pods = snapshot.pod_by_key
    return sum(pods[bind.pod].requests.get(GPU, 0) for bind in placement.binds)


def placed_counts(snapshot: Snapshot, placement: Placement) -> dict[PodGroupKey, dict[str, int]]:
    """Per PodGroup, per task: pods running and not evicted, plus pods bound this cycle."""
    evicted = {eviction.pod for eviction in placement.evictions}
    bound = {bind.pod for bind in placement.binds}
    counts: dict[PodGroupKey, dict[str, int]] = {group.key: {} for group in snapshot.pod_groups}
    for pod in snapshot.pods:
        if pod.pod_group is None:
            continue
        # The same test as `allocated_after`'s, asking for keys only where a set must answer.
        holds = pod.phase == "running" and (not evicted or pod.key not in evicted)
        if holds or pod.key in bound:
            per_task = counts[pod.pod_group]
            per_task[pod.task or ""] = per_task.get(pod.task or "", 0) + 1
    return counts


def allocated_after(snapshot: Snapshot, placement: Placement) -> dict[QueueName, dict[str, int]]:
    """Each queue's allocation once the placement is carried out, its subtree included.
    Without evictions: what runs (`shares.queue_allocated`, summed once per snapshot) plus
    the binds, so a cycle adds up its bound pods, not every running pod again. The same
    amounts either way; only the order of a queue's resource names may differ, and every
    reader looks them up by name."""
    if not placement.evictions:
        total = queue_allocated(snapshot)
        for key in dict.fromkeys(bind.pod for bind in placement.binds):  # a pod bound twice counts once
            pod = snapshot.pod_by_key.get(key)
            if pod is None or pod.pod_group is None or pod.phase == "running":
                continue
            queue = snapshot.pod_group_by_key[pod.pod_group].queue
            if queue in total:
                for ancestor in snapshot.queue_ancestors(queue):
                    add_resources(total[ancestor], pod.requests)
        return total
    evicted = {eviction.pod for eviction in placement.evictions}
    bound = {bind.pod for bind in placement.binds}
    own: dict[QueueName, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    for pod in snapshot.pods:
        if pod.pod_group is None:
            continue
        holds = pod.phase == "running" and (not evicted or pod.key not in evicted)
        holds = holds or pod.key in bound
        queue = snapshot.pod_group_by_key[pod.pod_group].queue
        if holds and queue in own:
            add_resources(own[queue], pod.requests)
    total: dict[QueueName, dict[str, int]] = {name: {} for name in own}
    for name, amount in own.items():
        for ancestor in snapshot.queue_ancestors(name):
            add_resources(total[ancestor], amount)
    return total


def dependency_reasons(snapshot: Snapshot, group: PodGroup) -> list[str]:
    """One sentence per task of `group` that waits on a dependency and has pending pods,
    naming the first dependency not wholly running, with its pods running of its total.
    Example: task-b depends on task-a, 1 task-a pod pending → ["dependency: task-b waits
    for task-a (0 of 1 running)"]."""
    return list(dependency_waits(snapshot, group).values())


def dependency_waits(snapshot: Snapshot, group: PodGroup) -> dict[str, str]:
    """`dependency_reasons` by task name: {"task-b": "dependency: task-b waits for task-a (0 of 1 running)"}."""
    waiting = gang_requirement(snapshot, group).waiting
    if not waiting:
        return {}
    pending: dict[str, int] = {}
    running: dict[str, int] = {}
    for pod in snapshot.pods_by_group.get(group.key, ()):
        counts = running if pod.phase == "running" else pending
        counts[pod.task or ""] = counts.get(pod.task or "", 0) + 1
    sentences = {}
    for name in sorted(waiting):
        if not pending.get(name):
            continue
        for dependency in group.task_by_name[name].depends_on:
            total = running.get(dependency, 0) + pending.get(dependency, 0)
            if total == 0 or running.get(dependency, 0) < total:
                sentences[name] = reason_text.dependency_waits(
                    name, dependency=dependency, running=running.get(dependency, 0), total=total
                )
                break
    return sentences


def gate_reasons(snapshot: Snapshot, group: PodGroup) -> list[str]:
    """The gates `group`'s pending pods wait for, as one sentence (rule `gated`), or none.
    Example: two pods gated by example.com/quota-check → ["gated: waiting for
    example.com/quota-check"]."""
    gates = gated.gates_of(snapshot, group)
    return [reason_text.gated_waiting(gates)] if gates else []


def _with_usage_note(snapshot: Snapshot, group_reasons: tuple[str, ...]) -> tuple[str, ...]:
    """A reason that counts nodes too loaded (`solver.rules.usage`) gets the count of nodes
    whose load was not judged beside it: stale or missing usage never blocks a node, and
    the reason says so."""
    if not any(constant in reason for reason in group_reasons for constant in _USAGE_REASONS):
        return group_reasons
    stale, missing = usage.not_judged(snapshot)
    if not stale and not missing:
        return group_reasons
    note = reason_text.usage_not_judged(stale=stale, missing=missing, max_age_s=snapshot.usage_policy.max_age_s)
    return (*group_reasons, note) if note not in group_reasons else group_reasons


_USAGE_REASONS = (usage.REASON_CPU, usage.REASON_MEMORY, usage.REASON_GPU)


def _with_colocation_note(snapshot: Snapshot, group_reasons: tuple[str, ...]) -> tuple[str, ...]:
    """A reason that counts nodes short of `kubernetes.io/batch-*` (offline pods' room,
    `solver.rules.colocation`) gets the count of colocation nodes that offered no
    oversubscribed room because their usage was stale, missing or not measured apart."""
    if not any(batch in reason for reason in group_reasons for batch in colocation.BATCH_RESOURCES):
        return group_reasons
    states = [room.state for room in colocation.rooms(snapshot).values()]
    note = reason_text.colocation_not_oversubscribed(
        stale=states.count("stale"), missing=states.count("missing"), unmeasured=states.count("unmeasured"),
        colocation_nodes=len(states),
    )
    return (*group_reasons, note) if note not in group_reasons else group_reasons


def _with_gpu_lending_note(snapshot: Snapshot, group: PodGroup, group_reasons: tuple[str, ...]) -> tuple[str, ...]:
    """An offline PodGroup asking a fraction of a GPU that waits, on a cluster with
    colocation nodes that lend no GPU for want of fresh per-device usage, gets how many
    (`solver.rules.colocation`: such a node lends nothing, fail safe)."""
    if not any(task.offline and is_fractional_gpu(task.requests.get(GPU, 0)) for task in group.tasks):
        return group_reasons
    states = [room.gpu_state for room in colocation.rooms(snapshot).values()]
    if not states or all(state == "fresh" for state in states):
        return group_reasons
    note = reason_text.gpu_not_lent(
        stale=states.count("stale"), missing=states.count("missing"), unmeasured=states.count("unmeasured"),
        colocation_nodes=len(states),
    )
    return (*group_reasons, note) if note not in group_reasons else group_reasons


def _generic_reasons(
    snapshot: Snapshot,
    key: PodGroupKey,
    *,
    evicted: Sequence[Eviction],
    bound_pods: set[str],
    placed: int,
    minimum: int,
) -> tuple[str, ...]:
    """Reasons for a pending PodGroup the engine said nothing about."""
    if evicted:
        preemptors = sorted({eviction.for_ for eviction in evicted})
        return (reason_text.evicted(pods=len(evicted), reason=evicted[0].reason, for_groups=preemptors),)
    pods = snapshot.pods_by_group[key]
    if not pods:
        return (reason_text.gang_too_few_pods(minimum=minimum, pods=0),)
    unplaced = sum(1 for pod in pods if pod.phase == "pending" and pod.key not in bound_pods)
    if unplaced:
        return (reason_text.unplaced(pending=unplaced),)
    return (reason_text.gang_below_minimum(placed=placed, minimum=minimum),)


def _scheduled(snapshot: Snapshot, group: PodGroup, per_task: Mapping[str, int]) -> bool:
    """Is `group` scheduled with `per_task` pods placed (module docstring)?"""
    return is_met(gang_requirement(snapshot, group), per_task) and sum(per_task.values()) > 0


def pending_groups(snapshot: Snapshot, placement: Placement) -> list[PodGroupKey]:
    """The PodGroups `placement` leaves pending, in key order — those `build_decision`
    reports pending, without its reasons and queue shares (the caller explains them first)."""
    counts = placed_counts(snapshot, placement)
    return [g.key for g in sorted(snapshot.pod_groups, key=lambda g: g.key) if not _scheduled(snapshot, g, counts[g.key])]


def build_decision(
    snapshot: Snapshot,
    placement: Placement,
    *,
    engine: str,
    status: SolveStatus,
    solve_seconds: float,
    reasons: Mapping[PodGroupKey, Sequence[str]],
    objective: float | None = None,
    bound: float | None = None,
    gap: float | None = None,
) -> Decision:
    """The `Decision` for `placement`; see the module docstring for what the fields mean."""
    counts = placed_counts(snapshot, placement)
    bound_pods = {bind.pod for bind in placement.binds}
    evicted_by_group: dict[PodGroupKey, list[Eviction]] = {}
    for eviction in placement.evictions:
        pod = snapshot.pod_by_key.get(eviction.pod)
        if pod is not None and pod.pod_group is not None:
            evicted_by_group.setdefault(pod.pod_group, []).append(eviction)
    outcomes = []
    for group in sorted(snapshot.pod_groups, key=lambda g: g.key):
        per_task = counts[group.key]
        placed = sum(per_task.values())
        scheduled = _scheduled(snapshot, group, per_task)
        waits = [*gate_reasons(snapshot, group), *dependency_reasons(snapshot, group)]
        given = tuple(reasons.get(group.key, ()))
        group_reasons = (*given, *(w for w in waits if w not in given))
        if not scheduled:
            group_reasons = group_reasons or _generic_reasons(
                snapshot, group.key, evicted=evicted_by_group.get(group.key, []), bound_pods=bound_pods, placed=placed,
                minimum=gang_requirement(snapshot, group).min_member,
            )
            group_reasons = _with_colocation_note(snapshot, _with_usage_note(snapshot, group_reasons))
            group_reasons = _with_gpu_lending_note(snapshot, group, group_reasons)
            held = reservation.reservation_of(snapshot, group.key)
            if held is not None and reservation.reserved_reason(held) not in group_reasons:
                group_reasons = (reservation.reserved_reason(held), *group_reasons)
        outcomes.append(
            PodGroupOutcome(
                name=group.key,
                queue=group.queue,
                placed=placed,
                min_member=group.min_member,
                state="scheduled" if scheduled else "pending",
                reasons=group_reasons,
            )
        )
    allocated = allocated_after(snapshot, placement)
    deserved = deserved_shares(snapshot)
    # DRA device classes are dealt to queues as resources are (rule `dra`): reported beside them.
    reported = (*REPORTED_RESOURCES, *(column.name for column in dra.columns(snapshot)))
    queues = tuple(
        QueueShare(
            name=queue.name,
            allocated={name: allocated[queue.name].get(name, 0) for name in reported},
            deserved={name: deserved.get(queue.name, {}).get(name, 0) for name in reported},
        )
        for queue in sorted(snapshot.queues, key=lambda q: q.name)
    )
    return Decision(
        engine=engine,
        status=status,
        solve_seconds=solve_seconds,
        placement=placement,
        podgroups=tuple(outcomes),
        queues=queues,
        objective=objective,
        bound=bound,
        gap=gap,
    )
