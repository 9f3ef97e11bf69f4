"""Rule 3, gang: a PodGroup ends the cycle with at least `min_member` pods running or
placed, and each task at least its `min_available`, or none of its pending pods is placed.

Tasks that wait on dependencies are left out of the requirement: their `min_available`
comes off `min_member` (Volcano's `WaitCreateTaskNum`). Example: min_member 4 = task-a 2
+ task-b 2, task-b waits → this cycle needs 2 pods, both of task-a.

`check` judges two things, counting kept running + bound pods after the placement:
  - a PodGroup with at least one bind meets `gang_requirement` (min_member and each
    task's min_available). Example: min_member 4, 1 running, 2 bound → 3 < 4, a violation;
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
    min_member: int
    min_per_task: dict[str, int]
    waiting: frozenset[str]


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
    waiting_minimum = sum(group.task_by_name[name].min_available for name in waiting)
    return GangRequirement(
        min_member=max(0, group.min_member - waiting_minimum),
        min_per_task={t.name: t.min_available for t in group.tasks if t.name not in waiting},
        waiting=waiting,
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
