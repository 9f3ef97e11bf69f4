"""Why each PodGroup a placement leaves pending stays pending, judged in the state after
that placement — whichever engine made it.

Input: the snapshot, its `Problem`, a `Placement` (CP-SAT's, typically) and the keys of
the PodGroups it leaves pending. Output: per key, reason sentences of `solver.reasons`,
each naming its rule and numbers; and for a PodGroup it starts whose tasks cannot place a
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

Time: each PodGroup costs about what greedy spent on it; past `deadline` the rest keep the
reasons the caller had (greedy's), so explaining never pushes `place()` past its limit.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from models.placement import Placement
from models.snapshot import PodGroupKey, Snapshot
from solver import reasons
from solver.greedy.engine import GreedyConfig, GreedyEngine
from solver.greedy.explain import unplaceable_tasks
from solver.greedy.plan import GreedyFailure
from solver.problem import Problem

__all__ = ["pending_reasons"]


def pending_reasons(
    snapshot: Snapshot,
    problem: Problem,
    placement: Placement,
    pending: Iterable[PodGroupKey],
    *,
    status: str,
    deadline: float,
    otherwise: Mapping[PodGroupKey, Sequence[str]],
) -> dict[PodGroupKey, list[str]]:
    """Reasons for each PodGroup in `pending`, in the state after `placement`; those not
    reached by `deadline` (`time.perf_counter()`) get their `otherwise` reasons."""
    wanted = set(pending)
    if not wanted:  # nothing to explain but the tasks no node matches (no replay needed)
        return unplaceable_tasks(snapshot, problem)
    engine = GreedyEngine(snapshot, problem, GreedyConfig(preemption=False, reclaim=False, packing="best-fit"))
    state = engine.state
    pod_index = {key: i for i, key in enumerate(problem.pod_keys)}
    group_index = {group.key: k for k, group in enumerate(snapshot.pod_groups)}
    for eviction in placement.evictions:
        state.evict(pod_index[eviction.pod], reason=eviction.reason, for_group=group_index[eviction.for_])
    for bind in placement.binds:
        pod = pod_index[bind.pod]
        node = problem.node_index[bind.node]
        state.bind_on(pod, state.shape(int(problem.pod_task_row[pod])), node, gpus=bind.gpus, numa_cell=bind.numa_cell)
    state.forget()
    out: dict[PodGroupKey, list[str]] = {}
    for plan in engine.plans:
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
