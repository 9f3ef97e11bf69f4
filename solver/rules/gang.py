"""Rule 3, gang: a PodGroup ends the cycle with at least `min_member` pods running or
placed, and each task at least its `min_available`, or none of its pending pods is placed.

Tasks that wait on dependencies are left out of the requirement: their `min_available`
comes off `min_member` (Volcano's `WaitCreateTaskNum`). Example: min_member 4 = task-a 2
+ task-b 2, task-b waits → this cycle needs 2 pods, both of task-a.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.snapshot import PodGroup, Snapshot
from solver.rules.dependency import waiting_tasks

NAME = "gang"


@dataclass(frozen=True)
class GangRequirement:
    min_member: int
    min_per_task: dict[str, int]
    waiting: frozenset[str]


def gang_requirement(snapshot: Snapshot, group: PodGroup) -> GangRequirement:
    waiting = waiting_tasks(snapshot, group)
    waiting_minimum = sum(group.task_by_name[name].min_available for name in waiting)
    return GangRequirement(
        min_member=max(0, group.min_member - waiting_minimum),
        min_per_task={t.name: t.min_available for t in group.tasks if t.name not in waiting},
        waiting=waiting,
    )
