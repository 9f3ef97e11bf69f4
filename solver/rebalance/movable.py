"""Which running pods may move, as what, and where each may go: the `Instance` every
rebalancing engine reads.

Input: a validated `Snapshot` (its `Problem`, `solver.problem`) and its `UsageTable`
(`solver.rebalance.load`). Output: a frozen `Instance` — the movable pods on hot nodes
(`Mover`), their PodGroups' slack (`GangSlack`), each mover's candidate destinations, and
per hot node the pods held back with why.

Who may move (batchplace evicts nothing itself; it advises what it could stand behind):
  - only running pods of batchplace's own PodGroups: a pod of another scheduler has no
    PodGroup here and is that scheduler's business (it still counts in the usage estimate);
  - only preemptable ones (the pod and its PodGroup): what may not be preempted for a
    higher-priority job may not be restarted for balance either;
  - a gang is never cut below its minimum, as for preemption (DESIGN.md rule 8, "it loses
    all its pods or keeps enough"): a PodGroup moves some pods while those that stay still
    meet `gang_requirement` (min_member and, when they apply, each task's min_available),
    or it moves *whole* — every running pod — when all of them sit on hot nodes. A whole
    move is how a one-pod job moves at all (its single pod is its minimum); a gang with
    pods on cool nodes does not move whole, since restarting those pods cools nothing.
    A PodGroup already below its minimum moves nothing.

Where a mover may go (its `candidates`): a node whose usage is judged and cool now (a node
without a fresh reading is never a destination: nothing says what it can take), other than
its own, where one pod of its task may go by every per-pod rule — eligibility, node
affinity, usage (`Problem.eligible_nodes`), room for its requests, whole GPU devices or a
device with its fraction, its NUMA cell (`CycleState.fit_mask`), pod affinity and spread
with the mover itself gone (`InterPod`), a hard-topology PodGroup's HyperNode (it stays in
the one of tier ≤ its limit that holds its running pods) — and where its estimated usage
alone keeps the node at or under every threshold. Several movers on one node, and the
rules between them, are the engines' to add up and the checker's to judge
(`solver.rebalance.verify`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from models.cached import cached_property
from models.snapshot import NodeName, Pod, PodGroup, PodGroupKey, Snapshot
from solver.greedy.state import CycleState
from solver.problem import Problem, build_problem
from solver.rebalance.load import PodLoad, UsageTable
from solver.rules.gang import gang_requirement, is_met
from solver.rules.topology import common_domain, hard_tier_limit

__all__ = [
    "HELD_OTHER_SCHEDULER",
    "HELD_NOT_PREEMPTABLE",
    "HELD_GANG",
    "Mover",
    "GangSlack",
    "Instance",
    "build_instance",
]

HELD_OTHER_SCHEDULER = "of other schedulers"
HELD_NOT_PREEMPTABLE = "not preemptable"
HELD_GANG = "in gangs at their minimum"


@dataclass(frozen=True)
class Mover:
    """A running pod on a hot node that may move (alone, or with its whole PodGroup)."""

    index: int  # the pod's index in the Problem
    pod: Pod
    group: PodGroupKey
    task: str
    task_row: int
    source: NodeName
    load: PodLoad
    candidates: tuple[int, ...]  # node indices in the Problem, ascending
    alone: bool  # may move without its PodGroup's other pods (the gang keeps enough)


@dataclass(frozen=True)
class GangSlack:
    """How far a PodGroup with movers may be cut: those that stay keep `least_kept` pods
    and each task its `task_least_kept`, unless `whole` and every running pod moves."""

    key: PodGroupKey
    movers: tuple[int, ...]  # indices into `Instance.movers`
    running: int
    least_kept: int
    task_running: Mapping[str, int]
    task_least_kept: Mapping[str, int]
    whole: bool  # may move whole: every running pod is a mover

    def may_keep(self, moved_per_task: Mapping[str, int]) -> bool:
        """Do the pods that stay keep the gang whole, after `moved_per_task` leave?"""
        kept = {task: running - moved_per_task.get(task, 0) for task, running in self.task_running.items()}
        if sum(moved_per_task.values()) == 0:
            return True
        if self.whole and sum(kept.values()) == 0:
            return True
        return sum(kept.values()) >= self.least_kept and all(
            kept.get(task, 0) >= least for task, least in self.task_least_kept.items()
        )


@dataclass(frozen=True, eq=False)
class Instance:
    snapshot: Snapshot
    problem: Problem
    table: UsageTable
    movers: tuple[Mover, ...]
    gangs: tuple[GangSlack, ...]
    held: Mapping[NodeName, Mapping[str, int]]  # hot node → why pods stay → how many
    movable_on: Mapping[NodeName, tuple[int, ...]]  # hot node → indices into `movers`

    def gang_of(self, mover: int) -> GangSlack:
        return self.gang_by_key[self.movers[mover].group]

    @cached_property
    def gang_by_key(self) -> dict[PodGroupKey, GangSlack]:
        return {gang.key: gang for gang in self.gangs}


def build_instance(snapshot: Snapshot, table: UsageTable) -> Instance:
    """The `Instance` of `snapshot` (see the module docstring)."""
    problem = build_problem(snapshot)
    hot = set(table.hot)
    running_by_group: dict[PodGroupKey, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.phase == "running" and pod.pod_group is not None:
            running_by_group.setdefault(pod.pod_group, []).append(pod)
    held: dict[NodeName, dict[str, int]] = {name: {} for name in table.hot}
    chosen: list[tuple[Pod, bool]] = []
    for pod in snapshot.pods:
        if pod.phase != "running" or pod.node not in hot:
            continue
        cause, alone = _why_held(snapshot, pod, running_by_group, hot)
        if cause is not None:
            counts = held[NodeName(pod.node)]
            counts[cause] = counts.get(cause, 0) + 1
        else:
            chosen.append((pod, alone))
    state = CycleState(problem, snapshot)
    cool_mask = np.zeros(problem.node_count, dtype=bool)
    for name in table.cool:
        cool_mask[problem.node_index[name]] = True
    movers = tuple(
        _mover(snapshot, problem, table, state, cool_mask, pod, alone=alone, group_pods=running_by_group[pod.pod_group])  # type: ignore[index]
        for pod, alone in chosen
    )
    gangs = _gangs(snapshot, movers, running_by_group)
    movable_on: dict[NodeName, list[int]] = {name: [] for name in table.hot}
    for i, mover in enumerate(movers):
        movable_on[mover.source].append(i)
    return Instance(
        snapshot=snapshot,
        problem=problem,
        table=table,
        movers=movers,
        gangs=gangs,
        held=held,
        movable_on={name: tuple(indices) for name, indices in movable_on.items()},
    )


def _gang_counts(snapshot: Snapshot, group: PodGroup, pods: list[Pod]) -> tuple[dict[str, int], int, dict[str, int]]:
    """(running per task, least kept, least kept per task) of a running PodGroup."""
    requirement = gang_requirement(snapshot, group)
    running: dict[str, int] = {task.name: 0 for task in group.tasks}
    for pod in pods:
        running[pod.task or ""] = running.get(pod.task or "", 0) + 1
    least = {task: minimum for task, minimum in requirement.min_per_task.items() if minimum > 0}
    return running, requirement.min_member, least


def _why_held(
    snapshot: Snapshot, pod: Pod, running_by_group: Mapping[PodGroupKey, list[Pod]], hot: set[NodeName]
) -> tuple[str | None, bool]:
    """(why the pod stays, or None; may it move alone)."""
    if pod.pod_group is None or pod.task is None:
        return HELD_OTHER_SCHEDULER, False
    group = snapshot.pod_group_by_key[pod.pod_group]
    if not (pod.preemptable and group.preemptable):
        return HELD_NOT_PREEMPTABLE, False
    pods = running_by_group[pod.pod_group]
    running, least_kept, task_least = _gang_counts(snapshot, group, pods)
    requirement = gang_requirement(snapshot, group)
    if not is_met(requirement, running):
        return HELD_GANG, False
    alone = sum(running.values()) - 1 >= least_kept and running.get(pod.task, 0) - 1 >= task_least.get(pod.task, 0)
    whole = all(p.node in hot and p.preemptable for p in pods)
    if not alone and not whole:
        return HELD_GANG, False
    return None, alone


def _mover(
    snapshot: Snapshot,
    problem: Problem,
    table: UsageTable,
    state: CycleState,
    cool_mask: np.ndarray,
    pod: Pod,
    *,
    alone: bool,
    group_pods: list[Pod],
) -> Mover:
    index = problem.pod_index[pod.key]
    row = int(problem.pod_task_row[index])
    shape = state.shape(row)
    load = table.loads[pod.key]
    mark = state.checkpoint()
    state.evict(index, reason="rebalance", for_group=-1)
    base = problem.eligible_nodes(row) & cool_mask
    nodes = np.flatnonzero(state.fit_mask(shape, state.inter_pod_base(row, base)))
    state.rollback(mark)
    group = snapshot.pod_group_by_key[pod.pod_group]  # type: ignore[index]
    limit = hard_tier_limit(group)
    running_nodes = [NodeName(p.node) for p in group_pods if p.node is not None]
    candidates = []
    for n in nodes.tolist():
        name = problem.node_names[n]
        if limit is not None and common_domain(snapshot, [*running_nodes, name], limit) is None:
            continue
        node = snapshot.node_by_name[name]
        levels = table.levels[name]
        if all(levels[r] + load.arriving(node, r) <= table.thresholds[r] for r in table.judged(name)):
            candidates.append(n)
    return Mover(
        index=index,
        pod=pod,
        group=pod.pod_group,  # type: ignore[arg-type]
        task=pod.task,  # type: ignore[arg-type]
        task_row=row,
        source=NodeName(pod.node),  # type: ignore[arg-type]
        load=load,
        candidates=tuple(candidates),
        alone=alone,
    )


def _gangs(
    snapshot: Snapshot, movers: tuple[Mover, ...], running_by_group: Mapping[PodGroupKey, list[Pod]]
) -> tuple[GangSlack, ...]:
    by_group: dict[PodGroupKey, list[int]] = {}
    for i, mover in enumerate(movers):
        by_group.setdefault(mover.group, []).append(i)
    gangs = []
    for key, indices in by_group.items():
        group = snapshot.pod_group_by_key[key]
        pods = running_by_group[key]
        running, least_kept, task_least = _gang_counts(snapshot, group, pods)
        gangs.append(
            GangSlack(
                key=key,
                movers=tuple(indices),
                running=len(pods),
                least_kept=least_kept,
                task_running=running,
                task_least_kept=task_least,
                whole=len(indices) == len(pods),
            )
        )
    return tuple(gangs)

