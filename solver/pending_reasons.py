"""Why each PodGroup a placement leaves pending stays pending, judged in the state after
that placement — whichever engine made it.

Input: the snapshot, its `Problem`, a `Placement` (CP-SAT's, typically) and the keys of
the PodGroups it leaves pending. Output: per key, the reasons of `solver.reasons`, each
carrying its rule and numbers; and for a PodGroup it starts whose tasks cannot place a
pod this cycle (no node matches one, one waits on a dependency), those tasks' sentences.

Why not greedy's reasons: greedy explains the state *its* placement left. When CP-SAT
answers, a PodGroup greedy started may stay pending (greedy had no word for it, and the
answer said "unplaced: 1 pending pods not placed this cycle"), and one pending in both
had its numbers taken from another cluster state. So the placement is replayed into the
greedy engine's `CycleState` — its binds on their own devices, its evictions — and each
pending PodGroup's minimum is tried there as greedy would try it, without preemption; the
failure is explained in that state (quota, eligibility, topology, gang, capacity; queue
and dependency reasons hold whatever the placement). Example: 9 CPU, CP-SAT gives queue b
two 2-CPU jobs and a four → job-b-3 "capacity: task worker: 0/2 nodes fit another pod:
2 insufficient cpu".

A minimum that does fit in that state (a search stopped at its time limit) is said so:
"unplaced: … fits after this placement; the search ended first (FEASIBLE)".

The same replay says why each pod a *started* PodGroup leaves pending stays so
(`with_unplaced_pods`), for every engine's answer: Volcano raises FailedScheduling on those
pods too, and an answer that listed them under a scheduled PodGroup with no word was read
as "nothing is wrong". It costs a small part of greedy's time, paid only when such a pod
exists (measured: docs/results.md, "Reasons for the pods a started PodGroup leaves
pending").

Time: each PodGroup costs about what greedy spent on it; past `deadline` the rest keep the
reasons the caller had (greedy's), so explaining never pushes `place()` past its limit.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from models.placement import Decision, Placement, UnplacedPod
from models.snapshot import Pod, PodGroupKey, Snapshot
from solver import reasons
from solver.greedy.engine import GreedyConfig, GreedyEngine
from solver.greedy.explain import unplaceable_tasks
from solver.greedy.plan import GreedyFailure, GroupPlan
from solver.greedy.sub_groups import why_left_out
from solver.outcome import dependency_waits
from solver.problem import Problem
from solver.reasons import Reason
from solver.rules import gated

__all__ = ["pending_reasons", "with_unplaced_pods"]


def pending_reasons(
    snapshot: Snapshot,
    problem: Problem,
    placement: Placement,
    pending: Iterable[PodGroupKey],
    *,
    status: str,
    deadline: float,
    otherwise: Mapping[PodGroupKey, Sequence[Reason]],
) -> dict[PodGroupKey, list[Reason]]:
    """Reasons for each PodGroup in `pending`, in the state after `placement`; those not
    reached by `deadline` (`time.perf_counter()`) get their `otherwise` reasons."""
    wanted = set(pending)
    if not wanted:  # nothing to explain but the tasks no node matches (no replay needed)
        return unplaceable_tasks(snapshot, problem)
    engine = _replayed(snapshot, problem, placement)
    out: dict[PodGroupKey, list[Reason]] = {}
    # A PodGroup with no pod to place has no static reasons (no dependency or node to wait
    # for): only the wanted ones of those are read.
    asked = set(np.flatnonzero(problem.group_has_pending).tolist())
    asked.update(problem.group_index[key] for key in wanted if key in problem.group_index)
    for k in sorted(asked):
        plan = engine.plans[k]
        key = plan.group.key
        if key not in wanted:
            if plan.static_reasons:  # a started PodGroup's tasks that cannot place a pod, as greedy says them
                out[key] = list(plan.static_reasons)
            continue
        if time.perf_counter() > deadline:
            out[key] = list(otherwise.get(key, ()))
            continue
        if plan.failure is GreedyFailure.STATIC:
            out[key] = plan.reasons
            continue
        if not any(engine.unbound(task, 1) for task in plan.tasks):
            out[key] = list(plan.static_reasons)  # nothing to place this cycle; outcome adds the generic reason
            continue
        if engine.attempt(plan, action=None, commit=False):
            pods = sum(len(engine.unbound(task)) for task in plan.tasks)
            out[key] = [reasons.fits_after(pending=pods, status=status), *plan.static_reasons]
        else:
            out[key] = list(dict.fromkeys(plan.reasons))
    return out


def _replayed(snapshot: Snapshot, problem: Problem, placement: Placement) -> GreedyEngine:
    """A greedy engine whose state is the one after `placement`: its evictions, then its binds
    on their own devices (module docstring)."""
    engine = GreedyEngine(snapshot, problem, GreedyConfig(preemption=False, reclaim=False, packing="best-fit"))
    engine.replay(placement)
    return engine


def with_unplaced_pods(snapshot: Snapshot, problem: Problem, decision: Decision, *, deadline: float) -> Decision:
    """`decision` with each scheduled PodGroup's pending pods it leaves unplaced, each with
    why (`PodGroupOutcome.unplaced_pods`), as Volcano raises FailedScheduling on every pod of
    a started job that did not fit. Per task, in the state after the placement: its
    dependency ("dependency: task-b waits for task-a (0 of 1 running)"), else its queue's
    capability or the nodes' fit error, as greedy says why no more pods of a task place
    ("capacity: task worker: 0/4 nodes fit another pod: 4 insufficient cpu"), else that a
    node could still take them (`reasons.left_out`). Past `deadline` the replay is skipped
    and each pod gets the generic `reasons.unplaced`. A gated pod's reason is its own gates
    ("gated: waiting for example.com/quota-check"), whatever its task's."""
    bound = {bind.pod for bind in decision.placement.binds}
    left: dict[PodGroupKey, list[Pod]] = {}
    for outcome in decision.podgroups:
        if outcome.state == "scheduled":
            pods = [p for p in snapshot.pods_by_group.get(outcome.name, ()) if p.phase == "pending" and p.key not in bound]
            if pods:
                left[outcome.name] = pods
    if not left:
        return decision
    engine = _replayed(snapshot, problem, decision.placement) if time.perf_counter() < deadline else None
    # Per PodGroup, the sub-groups the placement binds pods of; gathered only when a pod left
    # out is in a sub-group, so a cycle without sub-groups pays nothing for it.
    bound_sub_groups: dict[PodGroupKey, set[str]] = {}
    if engine is not None and any(pod.sub_group is not None for pods in left.values() for pod in pods):
        for key in bound:
            pod = snapshot.pod_by_key[key]
            if pod.sub_group is not None and pod.pod_group is not None:
                bound_sub_groups.setdefault(pod.pod_group, set()).add(pod.sub_group)
    outcomes = []
    for outcome in decision.podgroups:
        pods = left.get(outcome.name)
        if not pods:
            outcomes.append(outcome)
            continue
        waits = dependency_waits(snapshot, snapshot.pod_group_by_key[outcome.name])
        plan = engine.plans[problem.group_index[outcome.name]] if engine is not None else None
        per_sub_group = (
            _sub_groups_left_out(engine, plan, pods, bound_sub_groups.get(outcome.name, set()))
            if engine is not None and plan is not None
            else {}
        )
        per_task: dict[str, str] = {}
        for task in dict.fromkeys(pod.task or "" for pod in pods):
            count = sum(1 for pod in pods if (pod.task or "") == task)
            if task in waits:
                per_task[task] = waits[task]
            elif engine is None or plan is None or task not in plan.task_rows:
                per_task[task] = reasons.unplaced(pending=count)
            else:
                per_task[task] = _no_more(engine, plan, task, pending=count, status=decision.status)
        unplaced = tuple(
            UnplacedPod(
                pod=pod.key,
                reason=reasons.gated_waiting(sorted(set(pod.scheduling_gates)))
                if gated.is_gated(pod)
                else per_sub_group.get(pod.sub_group or "") or per_task[pod.task or ""],
            )
            for pod in pods
        )
        outcomes.append(outcome.model_copy(update={"unplaced_pods": unplaced}))
    return decision.model_copy(update={"podgroups": tuple(outcomes)})


def _sub_groups_left_out(
    engine: GreedyEngine, plan: GroupPlan, pods: Sequence[Pod], bound_sub_groups: Collection[str]
) -> dict[str, str]:
    """Sub-group → why it does not start, for the sub-groups of `pods` that a started job
    leaves out whole (none of their pods running or bound: `bound_sub_groups`, those the
    placement binds pods of) and that would not start in the state after the placement:
    "gang: subgroup shard-2 of llm: 1 of min 2 pods fit in any tier-1 domain", where the
    task's sentence would say a node still takes one of its pods."""
    left_whole = {pod.sub_group for pod in pods if pod.sub_group is not None}
    if not left_whole:
        return {}
    started = {pod.sub_group for pod in engine.snapshot.pods_by_group.get(plan.group.key, ()) if pod.phase == "running"}
    started |= set(bound_sub_groups)
    return why_left_out(engine, plan, sorted(left_whole - started))


def _no_more(engine: GreedyEngine, plan: GroupPlan, task: str, *, pending: int, status: str) -> str:
    """Why no more pods of `task` place in the engine's state, or that one would fit. One
    reason is returned as it is, its rule and code kept (the controller reads whether a node
    would help); several are one sentence, whose code is lost."""
    state, row = engine.state, plan.task_rows[task]
    shape = state.shape(row)
    room, _ = state.quota_room(plan.queue, shape)
    if room > 0 and state.fit_mask(shape, state.inter_pod_base(row, engine.problem.eligible_nodes(row))).any():
        return reasons.left_out(task, pending=pending, status=status)
    why = engine.no_more_pods(plan, row, task)
    return why[0] if len(why) == 1 else "; ".join(why)
