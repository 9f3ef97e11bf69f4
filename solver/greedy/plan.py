"""The greedy engine's view of one PodGroup for one cycle: a `GroupPlan`.

Input: the `Snapshot` and its `Problem`. Output: per PodGroup, its pending pods per task
(tasks waiting on dependencies left out, as `gang_requirement` leaves them out), its
requirement, its topology, and the sentences that hold whatever else happens — the
dependency it waits for, an unknown or closed queue, fewer pods than its minimum. The
engine (`greedy.py`) then moves the plan along: minimum met, extras exhausted, reasons.

Also the dominant share in the two forms the engine uses (a numpy row per queue, and a
plain list for one queue), both equal to `solver.shares.dominant_share`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from models.snapshot import PodGroup, Snapshot, SubGroup
from solver import reasons
from solver.outcome import dependency_reasons, gate_reasons
from solver.made_when_read import MadeWhenRead
from solver.problem import GroupFacts, Problem
from solver.rules.gang import GangRequirement, is_partly_bound, pod_shortages, sub_group_minimum
from solver.rules.topology import hard_tier_limit

__all__ = [
    "GreedyFailure", "PlanTask", "SubGroupPlan", "GroupPlan", "GroupPlans", "build_plan", "dominant_shares",
    "dominant_share_of_row",
]  # fmt: skip


class GreedyFailure(Enum):
    """Why the engine's last try at a PodGroup's minimum failed (`GroupPlan.failure`; None
    while it has not failed, or once its minimum is placed). Preemption and reclaim retry
    only the room failures (`greedy.preempt`); pending reasons keep a static one as it is."""

    STATIC = "static"  # no placement this cycle can change it: unknown or closed queue, too few pods
    ELIGIBILITY = "eligibility"  # a task its minimum needs matches no node
    QUOTA = "quota"  # its queue's capability (or an ancestor's) leaves no room
    CAPACITY = "capacity"  # the nodes have no room for it
    TOPOLOGY = "topology"  # no domain of its hard topology holds it whole
    INTER_POD = "inter_pod"  # its placement broke an inter-pod rule at the cycle's end


@dataclass
class PlanTask:
    row: int
    name: str
    minimum: int  # gang_requirement's: 0 when the PodGroup's task minimums do not apply
    pending: list[int]  # pod indices, snapshot order
    placeable: bool  # some node is eligible for its pods (else none of them can ever be placed)
    cursor: int = 0  # pending[:cursor] are bound and committed


@dataclass
class SubGroupPlan:
    """One sub-group of a PodGroup (`SubGroup`) for the cycle: its pods by task row, and the
    domain its minimum went into once it starts (`greedy.sub_groups`)."""

    sub: SubGroup
    minimum: int  # `gang.sub_group_minimum`: the pods it starts with, running counted
    tier_limit: int | None  # hard topology: one domain of tier ≤ this
    soft_topology: bool
    pending: list[tuple[int, int]]  # (task row, pod index) of tasks that do not wait, snapshot order
    running: list[int]  # pod indices running at the snapshot (evicted ones stay listed)
    domain: np.ndarray | None = None  # where its minimum went this cycle (None: not yet, or anywhere)
    exhausted: bool = False  # its further pods fit nowhere (or it cannot start) this cycle


@dataclass
class GroupPlan:
    """What the engine tracks for one PodGroup during the cycle."""

    index: int
    group: PodGroup
    queue: int
    requirement: GangRequirement
    tasks: list[PlanTask]  # tasks that do not wait, in PodGroup order
    tier_limit: int | None
    soft_topology: bool
    static_reasons: list[str]  # tasks that cannot place a pod this cycle (a dependency, no node matches), whatever else happens
    running_pods: list[int]  # pod indices running at the snapshot (evicted ones stay listed)
    task_rows: dict[str, int]  # every task of the PodGroup, waiting ones too → its task row
    reasons: list[str] = field(default_factory=list)
    failure: GreedyFailure | None = None
    minimum_met: bool = False
    domain: np.ndarray | None = None  # the domain its minimum went into (hard topology)
    exhausted: set[int] = field(default_factory=set)  # task rows whose extras fit nowhere

    partly_bound: bool = False  # `solver.rules.gang.is_partly_bound`: served before its priority peers
    sub_groups: list[SubGroupPlan] = field(default_factory=list)  # empty: a PodGroup without sub-groups
    loose: list[tuple[int, int]] = field(default_factory=list)  # (task row, pod index) pending in no sub-group
    sub_group_reasons: list[str] = field(default_factory=list)  # why its last try left a sub-group out

    def sub_group(self, name: str) -> SubGroupPlan:
        """Its sub-group `name` (one the PodGroup declares)."""
        return next(sub for sub in self.sub_groups if sub.sub.name == name)

    @property
    def order(self) -> tuple[int, bool, float, str]:
        """Priority first, then a partly bound gang before a new one (Volcano's priority,
        then gang, JobOrderFn), then first come."""
        return (-self.group.priority, not self.partly_bound, self.group.creation_time, self.group.key)

    @property
    def fill_order(self) -> list[PlanTask]:
        """The tasks min_member is filled from: those some node may take first, in PodGroup
        order. A task no node matches must not sink a gang whose minimum its other tasks
        meet (Volcano binds the pods that fit and counts them against min_member). Example:
        min_member 1, master (nodeSelector matching nothing) and worker → the worker fills it."""
        return sorted(self.tasks, key=lambda task: not task.placeable)


def dominant_shares(used: np.ndarray, deserved: np.ndarray) -> np.ndarray:
    """Per row, allocated / deserved at its largest over resources; ∞ when a resource is
    used but its deserved is 0 — the vector form of `solver.shares.dominant_share`.
    Example: used (4 GPU, 10 CPU), deserved (8 GPU, 100 CPU) → 0.5."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(used > 0, np.where(deserved > 0, used / np.maximum(deserved, 1), np.inf), 0.0)
    return ratio.max(axis=-1, initial=0.0)


def dominant_share_of_row(used: list[int], deserved: list[int]) -> float:
    """`dominant_shares` for one row of plain ints."""
    share = 0.0
    for amount, limit in zip(used, deserved):
        if amount > 0:
            share = max(share, amount / limit if limit > 0 else float("inf"))
    return share


def build_plan(snapshot: Snapshot, problem: Problem, *, index: int) -> GroupPlan:
    """The plan of PodGroup number `index`: its pending pods per task that does not wait,
    its requirement, topology, and the reasons no placement can change (queue, too few pods)."""
    k, group = index, snapshot.pod_groups[index]
    facts = problem.group_facts[k]
    requirement = facts.requirement
    tasks = [
        PlanTask(
            row=problem.task_row[(group.key, t.name)],
            name=t.name,
            minimum=requirement.task_minimum(t.name),
            pending=list(facts.pending[t.name]),
            placeable=bool(problem.eligible_nodes(problem.task_row[(group.key, t.name)]).any()),
        )
        for t in group.tasks
        if t.name not in requirement.waiting
    ]
    topology = group.network_topology
    tier_limit = hard_tier_limit(group)
    plan = GroupPlan(
        index=k,
        group=group,
        queue=int(problem.group_queue[k]),
        requirement=requirement,
        tasks=tasks,
        tier_limit=tier_limit,
        soft_topology=topology is not None and tier_limit is None,
        static_reasons=dependency_reasons(snapshot, group),
        running_pods=list(facts.running_pods),
        task_rows={t.name: problem.task_row[(group.key, t.name)] for t in group.tasks},
        partly_bound=is_partly_bound(snapshot, group),
    )
    if group.sub_groups:
        _plan_sub_groups(snapshot, plan)
    blocked = _static_blockers(snapshot, group, facts)
    if blocked:
        plan.reasons = [*blocked, *plan.static_reasons]
        plan.failure = GreedyFailure.STATIC
    return plan


class GroupPlans(MadeWhenRead[GroupPlan]):
    """Every PodGroup's plan by index, each made (`build_plan`) the first time it is read.

    A cycle places pods of the PodGroups that have some (`with_pending`); of the others it
    reads a plan only when it weighs evicting their pods or explains them. On a busy
    cluster that is most PodGroups: 12,500 running gangs and one new one make one plan and
    those of the victims looked at. What a PodGroup with nothing to place says (`reasons`)
    needs no plan: the reasons `build_plan` would give it, which no step of the cycle
    changes, since only placing or evicting for it does."""

    def __init__(self, snapshot: Snapshot, problem: Problem):
        super().__init__(len(snapshot.pod_groups), lambda k: build_plan(snapshot, problem, index=k))
        self.snapshot = snapshot
        self.problem = problem

    def with_pending(self) -> list[GroupPlan]:
        """The plans of the PodGroups with a pod not running, in index order: the only ones
        a cycle may place pods of (the others have no pending pod to bind)."""
        return [self[k] for k in np.flatnonzero(self.problem.group_has_pending).tolist()]

    def reasons(self, k: int) -> list[str]:
        """PodGroup `k`'s reasons as they stand: its plan's, or for one whose plan was never
        made (nothing to place, never a victim), what `build_plan` would say — its static
        blockers (no pending pod: no dependency or gate to wait on)."""
        plan = self.made(k)
        if plan is not None:
            return plan.reasons or plan.static_reasons
        group = self.snapshot.pod_groups[k]
        return _static_blockers(self.snapshot, group, self.problem.group_facts[k])


def _plan_sub_groups(snapshot: Snapshot, plan: GroupPlan) -> None:
    """Fill `plan.sub_groups` and `plan.loose` from its tasks' pending pods and its running pods."""
    by_name = {
        sub.name: SubGroupPlan(
            sub=sub,
            minimum=sub_group_minimum(sub),
            tier_limit=hard_tier_limit(sub),
            soft_topology=sub.network_topology is not None and hard_tier_limit(sub) is None,
            pending=[],
            running=[],
        )
        for sub in plan.group.sub_groups
    }
    pending = sorted((pod, task.row) for task in plan.tasks for pod in task.pending)
    for pod, row in pending:
        name = snapshot.pods[pod].sub_group
        (plan.loose if name is None else by_name[name].pending).append((row, pod))
    for pod in plan.running_pods:
        name = snapshot.pods[pod].sub_group
        if name is not None:
            by_name[name].running.append(pod)
    plan.sub_groups = list(by_name.values())


def _static_blockers(snapshot: Snapshot, group: PodGroup, facts: GroupFacts) -> list[str]:
    """Reasons no placement this cycle can change: queue, scheduling gates (rule `gated`), too
    few pods (`gang.pod_shortages`, counting the gated pods, which exist)."""
    queue = snapshot.queue_by_name.get(group.queue)
    if queue is None:
        return [reasons.queue_missing(group.queue)]
    if queue.state != "open":
        return [reasons.queue_closed(group.queue)]
    if facts.can_be_met:
        return []
    gates = gate_reasons(snapshot, group)
    if facts.met_once_ungated:
        return gates  # the gates alone keep it short: naming a pod count would mislead
    pods = {task: count + len(facts.gated.get(task, ())) for task, count in facts.pending_count.items()}
    return [
        *gates,
        *(
            reasons.gang_too_few_pods(minimum=shortage.minimum, pods=shortage.pods, task=shortage.task)
            for shortage in pod_shortages(facts.requirement, facts.running, pods)
        ),
    ]
