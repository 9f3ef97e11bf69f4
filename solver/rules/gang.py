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

The rule's definitions, each once, for every engine, the bound, the decision and what-if
to call rather than re-derive (engine-shaped encodings — CP-SAT's linear rows, greedy's
numpy state — stay in the engines, fed by these):
  - `gang_requirement`: what the PodGroup must end the cycle with (above);
  - `pod_shortages` / `can_be_met`: whether it has pods enough to ever meet it — each task
    that does not wait has running + pending ≥ its minimum, and the running pods of every
    task plus the pending pods of those that do not wait reach min_member;
  - `unmet_tasks` / `is_met`: whether the pods it ends with (running kept + bound) meet it;
  - `minimum_pods`: which pods make its minimum — each task its minimum less its running
    pods (`task_shortfalls`), then the rest of min_member (`members_missing`) from pending
    pods in an order the caller gives;
  - `victim_may_keep` / `least_kept`: what a victim gang may be left with;
  - `is_partly_bound`: a gang started but short of its minimum (some pods running, too few
    to meet it) — one a crash or a failed bind left half bound. Volcano's gang plugin orders
    such not-ready jobs ahead of ready ones among jobs of equal priority (its JobOrderFn,
    after the priority plugin's in the default tiers), so they complete before a new gang
    takes the room; here greedy serves them first and the objective weighs their pods one
    priority step up (`solver.objective`, throughput).

Sub-groups (`SubGroup`, gangs inside the gang) add three parts, each counted with the
sub-group's running pods:
  - a sub-group starts whole or not at all: one that receives a bind ends with at least its
    `min_member` pods (at least one when 0) — `sub_group_shortfall`;
  - the PodGroup starts only when, besides its own min_member (pods of every sub-group and
    of none), each policy has at least `min_sub_groups[policy]` sub-groups started
    (`started_sub_groups`, `sub_groups_missing`); a sub-group has started when its kept +
    bound pods reach its minimum;
  - a victim sub-group keeps all or enough: none of its running pods, or its minimum
    (`victim_may_keep` on the sub-group's minimum).
A pod in no sub-group belongs to the PodGroup alone: it counts toward the PodGroup's
min_member and its topology, never toward a sub-group's minimum or started count.
Example: LeaderWorkerSet `llm` of 2 replicas of size 4 → sub-groups llm-0 and llm-1 of
min 4, min_member 4: the set starts with one whole replica; 4 + 3 bound is a violation
(llm-1 has 3 < 4).

`check` judges two things, counting kept running + bound pods after the placement:
  - a PodGroup with at least one bind meets `gang_requirement` (min_member and, when they
    apply, each task's min_available). Example: min_member 4, 1 running, 2 bound → 3 < 4;
  - a PodGroup that loses pods to eviction (a victim gang) keeps at least min_member or
    keeps no running pod at all. Example: min_member 4, 6 running, 3 evicted → 3 < 4.
A bind of a waiting task is rule 7's to report (`dependency`), not this rule's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from models.snapshot import Pod, PodGroup, Snapshot, SubGroup
from solver.after import After
from solver.memo import memoized
from solver.rules.dependency import waiting_tasks
from solver.rules.gated import is_gated
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


@dataclass(frozen=True)
class PodShortage:
    """Too few pods to ever meet a part of the requirement: `pods` of `task` (None: of the
    whole PodGroup, against min_member) where `minimum` are needed."""

    task: str | None
    minimum: int
    pods: int


def pod_shortages(
    requirement: GangRequirement, running_per_task: Mapping[str, int], pending_per_task: Mapping[str, int]
) -> list[PodShortage]:
    """The parts of `requirement` the PodGroup has too few pods for, whatever gets placed:
    min_member first (against the running pods of every task plus the pending pods of the
    tasks that do not wait), then each task that does not wait (its running + pending against
    its minimum), in PodGroup order. Empty when it can be met. Tasks missing from the
    mappings have no pods.

    Example: min_member 4 = ps 1 + worker 3, ps 1 pending, worker 1 running + 1 pending →
    [PodShortage(None, 4, 3), PodShortage("worker", 3, 2)]. With min_member 2 instead (below
    1 + 3, task minimums do not apply) → [] (3 pods ≥ 2)."""
    shortages = []
    for task, minimum in requirement.min_per_task.items():
        have = running_per_task.get(task, 0) + pending_per_task.get(task, 0)
        if have < minimum:
            shortages.append(PodShortage(task=task, minimum=minimum, pods=have))
    available = sum(running_per_task.values()) + sum(
        count for task, count in pending_per_task.items() if task not in requirement.waiting
    )
    if available < requirement.min_member:
        shortages.insert(0, PodShortage(task=None, minimum=requirement.min_member, pods=available))
    return shortages


def can_be_met(
    requirement: GangRequirement, running_per_task: Mapping[str, int], pending_per_task: Mapping[str, int]
) -> bool:
    """Has the PodGroup pods enough to ever meet `requirement` (`pod_shortages` is empty)?
    A waiting task's pending pods do not count (none is placed this cycle), its running pods
    do. Example: min_member 4 = task-a 2 + task-b 2, task-b waits → requirement min_member 2,
    task-a 2: task-a 2 pending → True; task-a 1 pending, task-b 3 pending → False."""
    return not pod_shortages(requirement, running_per_task, pending_per_task)


def unmet_tasks(requirement: GangRequirement, placed_per_task: Mapping[str, int]) -> list[tuple[str, int, int]]:
    """(task, placed, minimum) for each task that does not wait and ends below its minimum,
    in task-name order; `placed_per_task` counts running kept + bound pods. Example: ps min 1,
    worker min 3, placed {"worker": 4} → [("ps", 0, 1)]."""
    return [
        (task, placed_per_task.get(task, 0), minimum)
        for task, minimum in sorted(requirement.min_per_task.items())
        if placed_per_task.get(task, 0) < minimum
    ]


def is_met(requirement: GangRequirement, placed_per_task: Mapping[str, int]) -> bool:
    """Does the PodGroup end the cycle meeting `requirement`: its pods (running kept + bound,
    of every task, a waiting task's running pods included) ≥ min_member, and each task that
    does not wait ≥ its minimum? Example: min_member 4 = ps 1 + worker 3: {"ps": 1,
    "worker": 3} → True; {"worker": 4} → False (no ps); with min_member 3 < 1 + 3 (task
    minimums do not apply) {"worker": 3} → True."""
    return sum(placed_per_task.values()) >= requirement.min_member and not unmet_tasks(requirement, placed_per_task)


def is_partly_bound(snapshot: Snapshot, group: PodGroup) -> bool:
    """Has `group` running pods, but too few to meet its requirement with them alone (and
    pending pods, not gated, to complete it with)? Example: min_member 4, 1 running, 3
    pending → True; 4 running → False; none running → False (a new gang); 1 running and 3
    pending behind a scheduling gate → False (it waits for the gates, not for room)."""
    return memoized(snapshot, ("partly_bound", group.key), lambda: _partly_bound(snapshot, group))


def _partly_bound(snapshot: Snapshot, group: PodGroup) -> bool:
    pods = snapshot.pods_by_group.get(group.key, ())
    if not any(pod.phase == "pending" and not is_gated(pod) for pod in pods):
        return False  # nothing to complete it with (most PodGroups of a busy cluster: all running)
    running: dict[str, int] = {}
    for pod in pods:
        if pod.phase == "running" and pod.task is not None:
            running[pod.task] = running.get(pod.task, 0) + 1
    return bool(running) and not is_met(gang_requirement(snapshot, group), running)  # not started: a new gang


def task_shortfalls(requirement: GangRequirement, running_per_task: Mapping[str, int]) -> dict[str, int]:
    """Each task that does not wait → the pods its minimum still needs: its minimum less its
    running pods, at least 0. Example: worker min 3 with 1 running, ps min 1 with 1 running
    → {"ps": 0, "worker": 2}; when task minimums do not apply, every task → 0."""
    return {task: max(0, minimum - running_per_task.get(task, 0)) for task, minimum in requirement.min_per_task.items()}


def members_missing(requirement: GangRequirement, running: int, chosen: int) -> int:
    """min_member less the PodGroup's running pods (every task's, a waiting task's too) and
    the `chosen` pending ones; ≤ 0 once min_member is reached. Example: min_member 4, 1
    running, 2 chosen → 1."""
    return requirement.min_member - running - chosen


def minimum_pods(
    requirement: GangRequirement, running_per_task: Mapping[str, int], pending_in_order: Iterable[tuple[str, int]]
) -> dict[str, int]:
    """How many pending pods of each task make the PodGroup's minimum, given its running pods:
    first each task that does not wait its minimum less its running pods, then the rest of
    min_member (less every running pod, a waiting task's too) taken from `pending_in_order`.

    `pending_in_order` lists the pending pods the caller may choose from as runs
    `(task, pods)` in the order it prefers them (a task may appear in several runs; waiting
    tasks are skipped). Each task's minimum takes its *first* pods in this order, and the rest
    of min_member the pods after them, in order — so a caller that orders pods by cost gets
    the cheapest minimum, one that lists its tasks in turn fills from the first task first.

    A task's minimum is not cut to the pods it has: when it has too few, the count exceeds
    them and `can_be_met` is False. Keys: every task that does not wait.

    Example: min_member 5, tasks a (min 2, 4 pending) and b (min 2, 2 pending), nothing
    running, order [(a, 4), (b, 2)] → {a: 3, b: 2}. min_member 4, ps (min 1, 1 pod, 0 GPU)
    and worker (min 2, 4 pods × 8 GPU), pods by GPU [(ps, 1), (worker, 4)] → {ps: 1,
    worker: 3}. Volcano's bypass: min_member 2 < 1 + 2, so the minimums are 0 → the two
    first pods of the order, {ps: 1, worker: 1}."""
    counts = task_shortfalls(requirement, running_per_task)
    remaining = members_missing(requirement, sum(running_per_task.values()), sum(counts.values()))
    skip = dict(counts)  # each task's first pods in the order are its minimum's
    for task, pods in pending_in_order:
        if remaining <= 0:
            break
        if task not in counts:
            continue  # a waiting task: none of its pods is placed this cycle
        skipped = min(pods, skip[task])
        skip[task] -= skipped
        take = min(remaining, pods - skipped)
        if take > 0:
            counts[task] += take
            remaining -= take
    return counts


def victim_may_keep(requirement: GangRequirement, kept: int, bound: int = 0) -> bool:
    """May a PodGroup that loses pods to eviction end with `kept` running pods (and `bound`
    new ones)? Only all or enough: none kept, or kept + bound ≥ min_member. Example:
    min_member 4, 6 running: keeping 4 → True, 3 → False, 0 → True."""
    return kept == 0 or kept + bound >= requirement.min_member


def least_kept(min_member: int, running: int) -> int:
    """The fewest running pods a victim gang that keeps any may keep (`victim_may_keep`):
    min_member, or all of them when fewer run. Example: min_member 4, 6 running → 4; 2
    running → 2 (evicting any would leave it below, so it keeps both or none)."""
    return min(min_member, running)


def sub_group_minimum(sub: SubGroup) -> int:
    """The pods a sub-group must have to start: its min_member, at least one. Example:
    min_member 0 → 1 (any pod starts it); 4 → 4."""
    return max(1, sub.min_member)


def sub_group_shortfall(sub: SubGroup, placed: int) -> int:
    """Pods a sub-group that has any still lacks for its minimum; 0 when it has none or
    enough. Example: min 4, 3 placed → 1; 0 placed → 0 (not started is allowed)."""
    return 0 if placed == 0 else max(0, sub_group_minimum(sub) - placed)


def started_sub_groups(group: PodGroup, placed_per_sub_group: Mapping[str, int]) -> dict[str, int]:
    """Policy → its sub-groups whose pods (running kept + bound) reach their minimum, for
    every policy of the PodGroup. Example: decode-0 (min 4) 4 placed, decode-1 (min 4) 2,
    prefill-0 (min 2) 0 → {"decode": 1, "prefill": 0}."""
    started = {sub.policy: 0 for sub in group.sub_groups}
    for sub in group.sub_groups:
        if placed_per_sub_group.get(sub.name, 0) >= sub_group_minimum(sub):
            started[sub.policy] += 1
    return started


def sub_groups_missing(group: PodGroup, placed_per_sub_group: Mapping[str, int]) -> dict[str, int]:
    """Policy → sub-groups still to start for `min_sub_groups`, for each policy short of it.
    Example: min_sub_groups {"decode": 2}, one decode sub-group started → {"decode": 1}."""
    started = started_sub_groups(group, placed_per_sub_group)
    return {
        policy: minimum - started.get(policy, 0)
        for policy, minimum in sorted(group.min_sub_groups.items())
        if started.get(policy, 0) < minimum
    }


def sub_groups_met(group: PodGroup, placed_per_sub_group: Mapping[str, int]) -> bool:
    """Are the PodGroup's sub-group parts met: no sub-group with pods short of its minimum,
    and each policy's `min_sub_groups` started? True for a PodGroup without sub-groups."""
    if not group.sub_groups:
        return True
    partial = any(sub_group_shortfall(sub, placed_per_sub_group.get(sub.name, 0)) for sub in group.sub_groups)
    return not partial and not sub_groups_missing(group, placed_per_sub_group)


def sub_group_pods(snapshot: Snapshot, group: PodGroup) -> dict[str, tuple[Pod, ...]]:
    """Sub-group name → its pods (running and pending, snapshot order), every sub-group of
    `group` a key; pods in no sub-group are left out. Memoized per (snapshot, PodGroup)."""

    def build() -> dict[str, tuple[Pod, ...]]:
        members: dict[str, list[Pod]] = {sub.name: [] for sub in group.sub_groups}
        for pod in snapshot.pods_by_group.get(group.key, ()):
            if pod.sub_group is not None:
                members[pod.sub_group].append(pod)
        return {name: tuple(pods) for name, pods in members.items()}

    return memoized(snapshot, ("sub_group_pods", group.key), build)


def _sub_group_violations(group: PodGroup, after: After, bound: int, evicted: int) -> list[str]:
    """Messages for the sub-group parts of `check` (module docstring)."""
    kept_per, bound_per = after.sub_group_counts(group.key)
    placed_per = {name: kept_per.get(name, 0) + bound_per.get(name, 0) for name in {*kept_per, *bound_per}}
    evicted_from = (
        {e.pod.sub_group for e in after.evicted if e.pod.pod_group == group.key} if evicted else set()
    )
    messages = []
    for sub in group.sub_groups:
        kept, new = kept_per.get(sub.name, 0), bound_per.get(sub.name, 0)
        placed = kept + new
        if new and sub_group_shortfall(sub, placed):
            messages.append(
                f"sub-group {sub.name}: {kept} running + {new} bound = {placed} < min_member {sub_group_minimum(sub)}"
            )
        elif sub.name in evicted_from and sub_group_shortfall(sub, placed):
            messages.append(
                f"victim sub-group {sub.name} is cut below its gang: keeps {kept} running + {new} bound = {placed} "
                f"< min_member {sub_group_minimum(sub)} (evict all its running pods or keep enough)"
            )
    if bound:
        messages.extend(
            f"{missing} more sub-group(s) of policy {policy or '(unnamed)'} must start "
            f"(min_sub_groups {group.min_sub_groups[policy]})"
            for policy, missing in sub_groups_missing(group, placed_per).items()
        )
    return messages


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    violations: list[Violation] = []
    for group in snapshot.pod_groups:
        bound, evicted = after.bound_count(group.key), after.group_evicted[group.key]
        if bound == 0 and evicted == 0:
            continue
        requirement = gang_requirement(snapshot, group)
        placed, kept = after.placed(group.key), after.kept_count(group.key)
        if bound > 0:
            placed_per_task = after.placed_per_task(group.key)
            shortfalls = []
            if not is_met(requirement, placed_per_task):
                if placed < requirement.min_member:
                    shortfalls.append(f"{kept} running + {bound} bound = {placed} < min_member {requirement.min_member}")
                shortfalls.extend(
                    f"task {task} has {task_placed} < min_available {minimum}"
                    for task, task_placed, minimum in unmet_tasks(requirement, placed_per_task)
                )
            if shortfalls:
                violations.append(
                    Violation(rule=NAME, subject=group.key, message=f"pod group {group.key}: {'; '.join(shortfalls)}")
                )
        if group.sub_groups:
            violations.extend(
                Violation(rule=NAME, subject=group.key, message=f"pod group {group.key}: {message}")
                for message in _sub_group_violations(group, after, bound, evicted)
            )
        if evicted > 0 and not victim_may_keep(requirement, kept, bound):
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
