"""Whether a queue's capability holds a waiting PodGroup whatever the nodes — the test the
greedy engine passes before it says "quota: …", a reason no node lifts (`nodes_would_help`).

A PodGroup may start in more than one way: when its tasks' minimums do not apply
(`solver.rules.gang`), min_member may be met by pods of any task, and a PodGroup with no
minimum starts with any one pod. Greedy tries one way — the tasks some node takes first —
and a capped pod of that way says nothing of the others. Example: min_member 1, task `cpu`
(no GPU, no node admits it) and task `gpu` (a quarter GPU, queue capped at 0 GPU): greedy
tries `gpu`, the cap stops it; yet a node that admits `cpu` starts the PodGroup, so its
wait is the nodes' (eligibility of `cpu`), not the quota's.

So the capability of (queue, resource) holds the PodGroup when even the way of starting it
that asks least of that resource crosses it: its minimum made of the pods asking least of
the resource first (`gang.minimum_pods` in that order), or, with no minimum, one such pod.
Resources are judged one at a time: a PodGroup each of whose ways crosses some cap, but no
one cap for all of them, is not said held — the safe side, as the scale-up plan still checks
what its queue has left before it buys (`solver.scale_up.demand`).

What counts as in use is less what the preempt action may give back: the running pods of
the PodGroup's own queue it may evict (`greedy.preempt`: same-queue victims return their
resources to the queue and every ancestor). Example: capability 1 GPU, all of it held by
two preemptable half-GPU pods of lower priority, a quarter-GPU pod that no node holds →
not held: once a node holds the pod, preempt evicts one of them and it starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from solver.greedy.plan import GroupPlan
from solver.greedy.state import CycleState
from solver.rules.gang import minimum_pods

__all__ = ["holding_capability"]


def _least_start(
    plan: GroupPlan,
    requests: np.ndarray,
    column: int,
    *,
    running_per_task: Mapping[str, int],
    pods_left: Mapping[int, int],
) -> np.ndarray:
    """`[R]` what starting `plan`'s PodGroup asks at least of resource `column`: its minimum of
    the pods asking least of it (ties in task order), or one such pod when the minimum is
    nothing. `requests` is the problem's `[task rows, R]`; `pods_left` its unplaced pending
    pods per task row. Example: min_member 1, tasks cpu (0 GPU) and gpu (0.25 GPU), by GPU →
    one pod of cpu: 0 GPU."""
    tasks = sorted(plan.tasks, key=lambda task: int(requests[task.row, column]))
    counts = minimum_pods(plan.requirement, running_per_task, [(task.name, pods_left[task.row]) for task in tasks])
    if not any(counts.values()):
        first = next((task for task in tasks if pods_left[task.row]), None)
        if first is not None:
            counts[first.name] = 1
    total = np.zeros(requests.shape[1], dtype=np.int64)
    for task in plan.tasks:
        total += counts.get(task.name, 0) * requests[task.row]
    return total


def holding_capability(
    state: CycleState,
    plan: GroupPlan,
    *,
    running_per_task: Mapping[str, int],
    pods_left: Mapping[int, int],
    preemptible: Callable[[], np.ndarray],
) -> tuple[tuple[int, int], np.ndarray] | None:
    """The first (queue, resource) on the way to the root whose capability holds `plan`'s
    PodGroup (module docstring), and the least it asks then (`[R]`, what the quota reason
    says the job needs); None when no capability holds it. `preemptible()`: `[R]` what its
    queue's pods it may evict hold, asked only when a cap is crossed."""
    requests = state.problem.task_requests
    least: dict[int, np.ndarray] = {}
    given_back: np.ndarray | None = None
    for ancestor, column, capability in state.capped(plan.queue):
        if column not in least:
            least[column] = _least_start(plan, requests, column, running_per_task=running_per_task, pods_left=pods_left)
        asked = int(least[column][column])
        if asked > 0 and int(state.queue_used[ancestor, column]) + asked > capability:
            given_back = preemptible() if given_back is None else given_back
            if int(state.queue_used[ancestor, column]) - int(given_back[column]) + asked > capability:
                return (ancestor, column), least[column]
    return None
