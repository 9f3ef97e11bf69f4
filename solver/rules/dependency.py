"""Rule 7, dependencies: a task's pods are placed only once every task it depends on is
running — all of that task's pods, as Volcano's job controller waits for before it even
creates the dependent pods.

A task that waits does not count toward its gang this cycle (see `gang.gang_requirement`),
as Volcano skips the gang check for tasks of a dependent job whose pods do not exist yet.

`check`: no pod of a task in `waiting_tasks` is bound, and no pod of a task is bound
while the same placement evicts a pod of a task it depends on (the dependency would
not be running after the cycle). Example: task-b depends on task-a, 2 of 2 task-a pods
running; binding task-b is fine, unless one task-a pod is evicted in the same placement.
"""

from __future__ import annotations

from models.snapshot import PodGroup, Snapshot
from solver.after import After
from solver.violation import Violation

NAME = "dependency"


def waiting_tasks(snapshot: Snapshot, group: PodGroup) -> frozenset[str]:
    """Names of `group`'s tasks with a dependency that is not wholly running.

    Example: task-b depends on task-a; task-a has 2 pods, 1 running → {"task-b"}.
    A dependency with no pods at all has nothing running, so its dependents wait.
    """
    if not any(task.depends_on for task in group.tasks):
        return frozenset()  # the common case, without a pass over the PodGroup's pods
    pods = snapshot.pods_by_group.get(group.key, ())
    total: dict[str, int] = {}
    running: dict[str, int] = {}
    for pod in pods:
        task = pod.task or ""
        total[task] = total.get(task, 0) + 1
        if pod.phase == "running":
            running[task] = running.get(task, 0) + 1
    return frozenset(
        task.name
        for task in group.tasks
        if any(total.get(d, 0) == 0 or running.get(d, 0) < total[d] for d in task.depends_on)
    )


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    evicted_tasks = {(e.pod.pod_group, e.pod.task) for e in after.evicted if e.pod.pod_group is not None}
    waiting_by_group: dict[str, frozenset[str]] = {}
    for bound in after.bound:
        group = bound.group
        if group.key not in waiting_by_group:
            waiting_by_group[group.key] = waiting_tasks(snapshot, group)
        task = bound.task
        if task.name in waiting_by_group[group.key]:
            unmet = [d for d in task.depends_on if _not_wholly_running(snapshot, group, d)]
            violations.append(
                Violation(
                    rule=NAME,
                    subject=bound.pod.key,
                    message=(
                        f"pod {bound.pod.key} of task {task.name} is bound, but it depends on "
                        f"{', '.join(unmet)}, not all of whose pods are running"
                    ),
                )
            )
            continue
        evicted_dependencies = sorted(d for d in task.depends_on if (group.key, d) in evicted_tasks)
        if evicted_dependencies:
            violations.append(
                Violation(
                    rule=NAME,
                    subject=bound.pod.key,
                    message=(
                        f"pod {bound.pod.key} of task {task.name} is bound while the same placement evicts "
                        f"pods of {', '.join(evicted_dependencies)}, which it depends on"
                    ),
                )
            )
    return violations


def _not_wholly_running(snapshot: Snapshot, group: PodGroup, task_name: str) -> bool:
    pods = [p for p in snapshot.pods_by_group.get(group.key, ()) if p.task == task_name]
    return not pods or any(p.phase != "running" for p in pods)
