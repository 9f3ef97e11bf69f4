"""Rule 3, gang: a PodGroup ends the cycle with at least `min_member` pods running or
placed, and — when its tasks' minimums apply — each task at least its `min_available`,
or none of its pending pods is placed.

Task minimums apply only when `min_member` ≥ the sum of every task's `min_available`
(`task_minimums_apply`); otherwise only `min_member` counts, and it may be met by pods of
any task. This is Volcano's: `JobInfo.CheckTaskReady`/`CheckTaskValid` and its gang
preemption skip the per-task check when `MinAvailable < TaskMinAvailableTotal` (the sum
of the PodGroup's `minTaskMember`, which its job controller writes per task as the task's
`minAvailable`, else its `replicas`). Example: Volcano's quick-start job, 20 replicas ×
4 CPU with `minAvailable: 4` → min_member 4, task minimum 20, 4 < 20: the job starts
once any 4 pods fit; with `minAvailable: 20` (or unset) the task's 20 apply.

`gang_requirement` is the one place this is decided; every engine, the bound, the
decision, what-if and the controller's status ask it instead of reading `min_available`.

Tasks that wait on dependencies cannot place a pod this cycle (rule 7). When task
minimums apply, a waiting task's `min_available` comes off `min_member` (Volcano's
`WaitCreateTaskNum`). Example: min_member 4 = task-a 2 + task-b 2, task-b waits → this
cycle needs 2 pods, both of task-a. When they do not apply, no part of `min_member`
belongs to a task, so nothing comes off: the cycle needs `min_member` pods of the tasks
that do not wait (running pods of a waiting task count too), or all of those pods when
there are fewer; the rest is left to the waiting tasks, once they may start. Example:
min_member 4, task-a 3 pods (min 3), task-b 5 pods (min 5) waiting on task-a: 4 < 3 + 5,
so only min_member counts, and this cycle needs min(4, 3) = 3 pods, all of task-a; once
they run, task-b no longer waits and the next cycle needs 4 − 3 running = 1 pod of it.
Taking task-b's 5 off instead would leave max(0, 4 − 5) = 0 and let task-a start with
one pod, which is no gang at all.

Whether task minimums apply is decided on the PodGroup as declared, waiting tasks
included, as Volcano's `TaskMinAvailableTotal` counts every `minTaskMember` entry whether
its pods exist yet or not; a loader that could not give a task its part (a task split by
pod shape, one without pods) keeps the declared sum in `task_min_available_total`.

Beyond its minimum a started PodGroup takes as many further pods as fit (Volcano's
allocate keeps placing a ready job's tasks); that is the objective's, not this rule's.

`check` judges two things, counting kept running + bound pods after the placement:
  - a PodGroup with at least one bind meets `gang_requirement` (min_member and, when they
    apply, each task's min_available). Example: min_member 4, 1 running, 2 bound → 3 < 4;
  - a PodGroup that loses pods to eviction (a victim gang) keeps at least min_member or
    keeps no running pod at all. Example: min_member 4, 6 running, 3 evicted → 3 < 4.
A bind of a waiting task is rule 7's to report (`dependency`), not this rule's.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.snapshot import PodGroup, Snapshot
from solver.after import After
from solver.memo import memoized
from solver.rules.dependency import waiting_tasks
from solver.violation import Violation

NAME = "gang"


@dataclass(frozen=True)
class GangRequirement:
    """What one PodGroup must end this cycle with, its running pods counted."""

    min_member: int  # pods over its tasks that do not wait
    min_per_task: dict[str, int]  # each task that does not wait → its minimum (0 when task minimums do not apply)
    waiting: frozenset[str]  # tasks that wait on a dependency: no pod of theirs is placed this cycle
    task_minimums_apply: bool

    def task_minimum(self, task: str) -> int:
        """The pods `task` must have; 0 for a waiting task or when task minimums do not apply."""
        return self.min_per_task.get(task, 0)


def task_minimums_apply(group: PodGroup) -> bool:
    """Volcano's test: each task's min_available counts only when min_member covers their sum,
    the sum as the PodGroup declares it (`task_min_available_total`, when a task split by pod
    shape or one without pods does not carry its part). Example: min_member 4, one task of
    min 20 → False; min_member 6 = ps 1 + worker 5 → True."""
    declared = group.task_min_available_total
    total = declared if declared is not None else sum(task.min_available for task in group.tasks)
    return group.min_member >= total


def gang_requirement(snapshot: Snapshot, group: PodGroup) -> GangRequirement:
    """What `group` must end the cycle with (see the module docstring); computed once per
    (snapshot, PodGroup) — the greedy plan, the CP-SAT data, the decision and this rule's
    check all ask. The result is shared: do not mutate `min_per_task`."""
    key = ("gang_requirement", group.namespace, group.name)
    cached = memoized(snapshot, key, lambda: (group, _requirement(snapshot, group)))
    if cached[0] is group:
        return cached[1]
    return _requirement(snapshot, group)  # a PodGroup object that is not the snapshot's own


def _requirement(snapshot: Snapshot, group: PodGroup) -> GangRequirement:
    waiting = waiting_tasks(snapshot, group)
    active = [task for task in group.tasks if task.name not in waiting]
    if task_minimums_apply(group):
        waiting_minimum = sum(group.task_by_name[name].min_available for name in waiting)
        return GangRequirement(
            min_member=max(0, group.min_member - waiting_minimum),
            min_per_task={task.name: task.min_available for task in active},
            waiting=waiting,
            task_minimums_apply=True,
        )
    min_member = group.min_member
    if waiting:
        names = {task.name for task in active}
        pods = snapshot.pods_by_group.get(group.key, ())
        min_member = min(min_member, sum(1 for pod in pods if pod.task in names or pod.phase == "running"))
    return GangRequirement(
        min_member=min_member,
        min_per_task={task.name: 0 for task in active},
        waiting=waiting,
        task_minimums_apply=False,
    )


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    for group in snapshot.pod_groups:
        bound, evicted = after.bound_count(group.key), after.group_evicted[group.key]
        if bound == 0 and evicted == 0:
            continue
        requirement = gang_requirement(snapshot, group)
        placed, kept = after.placed(group.key), after.kept_count(group.key)
        if bound > 0:
            shortfalls = []
            if placed < requirement.min_member:
                shortfalls.append(f"{kept} running + {bound} bound = {placed} < min_member {requirement.min_member}")
            for task_name, minimum in sorted(requirement.min_per_task.items()):
                task_placed = after.placed(group.key, task_name)
                if task_placed < minimum:
                    shortfalls.append(f"task {task_name} has {task_placed} < min_available {minimum}")
            if shortfalls:
                violations.append(
                    Violation(rule=NAME, subject=group.key, message=f"pod group {group.key}: {'; '.join(shortfalls)}")
                )
        if evicted > 0 and kept > 0 and placed < requirement.min_member:
            violations.append(
                Violation(
                    rule=NAME,
                    subject=group.key,
                    message=(
                        f"victim pod group {group.key} is cut below its gang: {evicted} evicted leaves "
                        f"{kept} running + {bound} bound = {placed} < min_member {requirement.min_member} "
                        "(evict all its running pods or keep enough)"
                    ),
                )
            )
    return violations
