"""Rule 7, dependencies: a task's pods are placed only once every task it depends on is
running — all of that task's pods, as Volcano's job controller waits for before it even
creates the dependent pods.

A task that waits does not count toward its gang this cycle (see `gang.gang_requirement`),
as Volcano skips the gang check for tasks of a dependent job whose pods do not exist yet.
"""

from __future__ import annotations

from models.snapshot import PodGroup, Snapshot

NAME = "dependency"


def waiting_tasks(snapshot: Snapshot, group: PodGroup) -> frozenset[str]:
    """Names of `group`'s tasks with a dependency that is not wholly running.

    Example: task-b depends on task-a; task-a has 2 pods, 1 running → {"task-b"}.
    A dependency with no pods at all has nothing running, so its dependents wait.
    """
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
