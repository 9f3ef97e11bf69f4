"""The PodGroups page (a table to filter and sort) and one PodGroup's page.

Input: an `Analysis`. Output: `PodGroupRow`s — state, queue, priority, placed/min_member
(and how many of its sub-groups start), age and its reason sentences from this cycle's decision (why a pending one waits; what of
a started one waits: a dependent task, a task no node matches) — and for one
PodGroup a `PodGroupDetail` with its tasks (and where each may run), its pods (node, GPU devices, its DRA claims' devices, a pending
one's PodScheduled reason as its object says it — `Unschedulable` when a node would help —, what this cycle
does to each), whom it preempts and the Events the controller writes for this decision.

States (this cycle's decision, as the controller would act on it):
  - `running`: its gang minimum is met by pods already running, nothing to bind;
  - `starting`: the placement binds pods of it this cycle and the gang minimum is met;
  - `pending`: the minimum is not met; `reasons` say which rule keeps it out, with numbers.

Sub-groups (gangs inside the gang: shards, serving replicas, prefill and decode roles) are
shown inside their job as the controller writes them (`solver.sub_group_report`): each
one's policy, placed/min after this cycle, started or waiting (and why), and the domain it
landed in; each pod line names its sub-group.

Events: the snapshot carries none, so the detail page shows those the controller's plan
writes for this decision (`controller.plan`), and only those: `Preempted` on each victim;
`Scheduled` per bind of a PodGroup that evicts nobody (one that preempts binds in a later
cycle, once its victims are gone, so its binds get no Event now); for a pending PodGroup
`Unschedulable` on the PodGroup and `FailedScheduling` on each pending pod, both with the
gang message (`solver.reasons.gang_message`, counted as the controller counts: its gang
minimum, pods running before the cycle). What `kubectl describe` would show after the
cycle, not a history; the controller also leaves out a message it reported already.

Filtering (`filter_rows`) matches a text in the name or a reason, a state and a queue;
sorting (`sort_rows`) takes a column name and a direction. Both pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.placement import Bind, PodGroupOutcome, devices_by_request
from models.snapshot import GPU, PodGroup, PodGroupKey, PodKey, Snapshot, Task
from service.ui.analysis import Analysis
from service.ui.units import gpus_text, queue_slots, resources_text
from solver.reasons import gang_assigned_message, gang_message, gated_waiting
from solver.rules import node_affinity
from solver.rules.eligibility import eligible
from solver.rules.gang import task_minimums_apply
from solver.sub_group_report import SubGroupStatus, sub_group_statuses

__all__ = [
    "STATES",
    "SORT_KEYS",
    "PodGroupRow",
    "PodLine",
    "EventLine",
    "TaskLine",
    "PodGroupDetail",
    "build_podgroup_rows",
    "filter_rows",
    "sort_rows",
    "build_podgroup_detail",
]

STATES = ("pending", "starting", "running")
SORT_KEYS = ("name", "state", "queue", "priority", "placed", "age")


@dataclass(frozen=True)
class PodGroupRow:
    key: PodGroupKey
    queue: str
    slot: int | None
    priority: int
    state: str
    placed: int
    min_member: int
    pods: int
    gpus: str
    age_s: float | None
    reasons: tuple[str, ...]
    sub_groups: str = ""  # "3 of 4 sub-groups started" after this cycle; "" without sub-groups


def _state(outcome: PodGroupOutcome | None, bound: int) -> str:
    if outcome is None or outcome.state == "pending":
        return "pending"
    return "starting" if bound > 0 else "running"


def build_podgroup_rows(analysis: Analysis) -> tuple[PodGroupRow, ...]:
    snapshot = analysis.snapshot
    slots = queue_slots(snapshot)
    outcomes = analysis.outcome_by_group
    binds_of = _binds_by_group(analysis)
    rows = []
    for group in snapshot.pod_groups:
        outcome = outcomes.get(group.key)
        pods = snapshot.pods_by_group.get(group.key, ())
        subs = sub_group_statuses(snapshot, group, binds_of.get(group.key, ()), ()) if group.sub_groups else ()
        rows.append(
            PodGroupRow(
                key=group.key,
                queue=group.queue,
                slot=slots.get(group.queue),
                priority=group.priority,
                state=_state(outcome, analysis.after.bound_count(group.key)),
                placed=outcome.placed if outcome else 0,
                min_member=group.min_member,
                pods=len(pods),
                gpus=gpus_text(sum(pod.requests.get(GPU, 0) for pod in pods)),
                age_s=analysis.now_s - group.creation_time if group.creation_time > 0 else None,
                reasons=outcome.reasons if outcome else (),
                sub_groups=f"{sum(1 for sub in subs if sub.started)} of {len(subs)} sub-groups started" if subs else "",
            )
        )
    return tuple(rows)


def _binds_by_group(analysis: Analysis) -> dict[PodGroupKey, list[Bind]]:
    pods = analysis.snapshot.pod_by_key
    found: dict[PodGroupKey, list[Bind]] = {}
    for bind in analysis.decision.placement.binds:
        group = pods[bind.pod].pod_group
        if group is not None:
            found.setdefault(group, []).append(bind)
    return found


def filter_rows(rows: Sequence[PodGroupRow], *, text: str = "", state: str = "", queue: str = "") -> list[PodGroupRow]:
    """Rows whose name or reason contains `text` (any case), in `state` and `queue` when given."""
    needle = text.strip().lower()
    return [
        row
        for row in rows
        if (not state or row.state == state)
        and (not queue or row.queue == queue)
        and (not needle or needle in row.key.lower() or any(needle in reason.lower() for reason in row.reasons))
    ]


def sort_rows(rows: Sequence[PodGroupRow], *, key: str, descending: bool) -> list[PodGroupRow]:
    """Sorted by `key` (one of `SORT_KEYS`; unknown → name), ties by name. Unknown ages sort last."""
    def value(row: PodGroupRow) -> tuple[object, ...]:
        if key == "state":
            return (STATES.index(row.state),)
        if key == "queue":
            return (row.queue,)
        if key == "priority":
            return (row.priority,)
        if key == "placed":
            return (row.placed / row.min_member if row.min_member else 1.0, row.placed)
        if key == "age":
            return (row.age_s is not None, row.age_s or 0.0)
        return ()

    by_name = sorted(rows, key=lambda row: row.key)
    return sorted(by_name, key=value, reverse=descending)


@dataclass(frozen=True)
class TaskLine:
    name: str
    replicas: int
    min_available: int
    min_available_applies: bool  # False when the PodGroup's min_member is below its tasks' sum
    requests: str
    depends_on: str
    runs_on: str  # "gpu In [h100]: 1 of 3 nodes; prefers zone In [a] (20)" — see `_runs_on`


@dataclass(frozen=True)
class PodLine:
    key: str
    task: str
    phase: str
    node: str
    gpus: str
    requests: str
    this_cycle: str
    scheduled_reason: str = ""  # a pending pod's PodScheduled reason as its object says it
    claims: str = ""  # its DRA claims' devices: allocated already, or by this cycle ("claim: gpus: gpu-0, gpu-1")
    sub_group: str = ""  # the sub-group it belongs to, "" when none


@dataclass(frozen=True)
class EventLine:
    type: str
    reason: str
    object: str
    message: str


@dataclass(frozen=True)
class PodGroupDetail:
    row: PodGroupRow
    group: PodGroup
    tasks: tuple[TaskLine, ...]
    pods: tuple[PodLine, ...]
    nodes: tuple[str, ...]
    gpu_devices_held: int
    gpu_devices_reserved: int
    preempts: tuple[str, ...]
    events: tuple[EventLine, ...]
    sub_groups: tuple[SubGroupStatus, ...] = ()  # after this cycle, in the PodGroup's order


def _claims_by_pod(analysis: Analysis) -> dict[str, str]:
    """Pod key → its DRA claims and their devices, `ml/serve-gpus: gpus: gpu-0, gpu-1`: the
    claims already allocated that are reserved for it, then those this cycle allocates."""
    snapshot = analysis.snapshot
    lines: dict[str, list[str]] = {}
    for claim in snapshot.dra.resource_claims:
        for name in claim.reserved_for if claim.allocation is not None else ():
            key = f"{claim.namespace}/{name}"
            running = snapshot.pod_by_key.get(PodKey(key))
            text = devices_by_request(claim.allocation or (), node=running.node if running is not None else None)
            lines.setdefault(key, []).append(f"{claim.key}: {text}")
    for allocation in analysis.decision.placement.claims:
        for pod in allocation.reserved_for:
            lines.setdefault(pod, []).append(f"{allocation.label}: {allocation.devices_by_request}")
    return {pod: " · ".join(texts) for pod, texts in lines.items()}


def build_podgroup_detail(analysis: Analysis, key: PodGroupKey) -> PodGroupDetail | None:
    """The detail of PodGroup `key`, or None when the snapshot has no such PodGroup."""
    snapshot = analysis.snapshot
    group = snapshot.pod_group_by_key.get(key)
    if group is None:
        return None
    row = next(row for row in build_podgroup_rows(analysis) if row.key == key)
    placement = analysis.decision.placement
    bind_of = {bind.pod: bind for bind in placement.binds}
    eviction_of = {eviction.pod: eviction for eviction in placement.evictions}
    pods = snapshot.pods_by_group.get(key, ())
    lines = []
    nodes: set[str] = set()
    held = reserved = 0
    events: list[EventLine] = []
    assigned: list[tuple[str, str]] = []
    preempting = any(e.for_ == key for e in placement.evictions)
    claims_of = _claims_by_pod(analysis)
    for pod in sorted(pods, key=lambda p: p.key):
        bind = bind_of.get(pod.key)
        eviction = eviction_of.get(pod.key)
        if pod.node:
            nodes.add(pod.node)
            held += len(pod.gpu_indices)
        if bind is not None:
            nodes.add(bind.node)
            reserved += len(bind.gpus)
            this_cycle = f"bound to {bind.node}" + (f", GPUs {_indices(bind.gpus)}" if bind.gpus else "")
            if preempting:
                this_cycle = f"placed on {bind.node}, bound once its victims are gone"
            else:
                assigned.append((pod.key, bind.node))
        elif eviction is not None:
            this_cycle = f"evicted for {eviction.for_} ({eviction.reason})"
            events.append(EventLine("Normal", "Preempted", f"Pod {pod.key}",
                                    f"Preempted by podgroup {eviction.for_} on node {eviction.node} ({eviction.reason})"))
        elif pod.phase == "pending":
            this_cycle = gated_waiting(pod.scheduling_gates) if pod.scheduling_gates else "waits"
        else:
            this_cycle = "keeps running"
        lines.append(
            PodLine(
                key=pod.key,
                task=pod.task or "",
                phase=pod.phase,
                node=pod.node or (bind.node if bind else ""),
                gpus=_indices(pod.gpu_indices or (bind.gpus if bind else ())),
                requests=resources_text(pod.requests),
                this_cycle=this_cycle,
                scheduled_reason=pod.scheduled_reason or "",
                claims=claims_of.get(pod.key, ""),
                sub_group=pod.sub_group or "",
            )
        )
    if assigned:  # the gang's one Scheduled Event, on its PodGroup
        events.append(EventLine("Normal", "Scheduled", f"PodGroup {key}", gang_assigned_message(assigned)))
    outcome = analysis.outcome_by_group.get(key)
    if row.state == "pending":
        message = gang_message(
            min_member=outcome.min_member if outcome else group.min_member,
            placed=sum(1 for pod in pods if pod.phase == "running"),
            total_pods=len(pods),
            why=row.reasons,
        )
        waiting = [
            EventLine("Warning", "FailedScheduling", f"Pod {pod.key}", message)
            for pod in sorted(pods, key=lambda p: p.key)
            if pod.phase == "pending"
        ]
        events[:0] = [EventLine("Warning", "Unschedulable", f"PodGroup {key}", message), *waiting]
    preempts = tuple(f"{e.pod} on {e.node} ({e.reason})" for e in placement.evictions if e.for_ == key)
    left_out = {unplaced.pod: unplaced.reason for unplaced in outcome.unplaced_pods} if outcome else {}
    sub_groups = sub_group_statuses(snapshot, group, _binds_by_group(analysis).get(key, ()), row.reasons, left_out)
    return PodGroupDetail(
        row=row,
        group=group,
        tasks=tuple(_task_line(task, snapshot, group) for task in group.tasks),
        pods=tuple(lines),
        nodes=tuple(sorted(nodes)),
        gpu_devices_held=held,
        gpu_devices_reserved=reserved,
        preempts=preempts,
        events=tuple(events),
        sub_groups=sub_groups,
    )


def _task_line(task: Task, snapshot: Snapshot, group: PodGroup) -> TaskLine:
    replicas = sum(1 for pod in snapshot.pods_by_group.get(group.key, ()) if pod.task == task.name)
    return TaskLine(
        name=task.name,
        replicas=replicas,
        min_available=task.min_available,
        min_available_applies=task_minimums_apply(group),
        requests=resources_text(task.requests),
        depends_on=", ".join(task.depends_on) or "—",
        runs_on=_runs_on(task, snapshot),
    )


def _runs_on(task: Task, snapshot: Snapshot) -> str:
    """Where the task's pods may go (`solver.rules.eligibility.eligible`, affinity included):
    "pool=infer, gpu In [h100]: 1 of 3 nodes"; "any node: 3 of 3 nodes" without constraints
    (taints and cordons still count in the number); then its preferred node affinity with
    the weights: "; prefers zone In [a] (20)"."""
    wants = [f"{key}={value}" for key, value in sorted(task.node_selector.items())]
    if task.required_node_affinity:
        wants.append(node_affinity.describe_terms(task.required_node_affinity))
    admitted = sum(1 for node in snapshot.nodes if eligible(node, task))
    text = f"{', '.join(wants) or 'any node'}: {admitted} of {len(snapshot.nodes)} nodes"
    prefers = [
        f"{node_affinity.describe_terms((term.preference,))} ({term.weight})" for term in task.preferred_node_affinity
    ]
    return f"{text}; prefers {', '.join(prefers)}" if prefers else text


def _indices(indices: Sequence[int]) -> str:
    return ",".join(str(index) for index in indices) if indices else "—"
