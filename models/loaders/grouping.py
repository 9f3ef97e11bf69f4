"""Join pods to their PodGroups and tasks, as Volcano's controllers would see them.

Input: PodGroup, job (vcjob, PyTorchJob) and Pod records of every document. Output: for
every PodGroup its tasks, and for every pod its PodGroup and task (or none, for running
pods that only take capacity).

Rules, in order:
1. A job is expanded into its PodGroup and pending pods, unless the input already holds
   pods the job created — for a vcjob, pods whose label or annotation
   `volcano.sh/job-name` names it; for a PyTorchJob, pods whose label
   `training.kubeflow.org/job-name` does; for a LeaderWorkerSet or JobSet, pods whose
   `leaderworkerset.sigs.k8s.io/name` or `jobset.sigs.k8s.io/jobset-name` does: then the
   job is a live one and its real PodGroup and pods are read instead (warning).
2. Pods without a PodGroup that a LeaderWorkerSet or a JobSet made join one PodGroup per
   set / JobSet, each group / Job replica a sub-group of it (`owner_gang_groups`, before
   the next sentence applies); a LeaderWorkerSet or JobSet object in the input whose pods
   are there too only adds what they lack (`Workload.live_jobs`).
   A pending pod of batchplace without a PodGroup gets a one-pod PodGroup
   `podgroup-<pod>` (queue from `scheduling.volcano.sh/queue-name`, min_member 1), as
   Volcano's PodGroup controller makes for plain pods. So does a running pod without a
   PodGroup that names its queue with that annotation — one placed that way in an earlier
   cycle, or by Volcano — so it counts in its queue's allocation (quota, shares, fairness,
   reclaim) as it did while pending; a running pod naming no queue only takes capacity.
3. A pending pod naming a PodGroup that is not in the input is skipped (warning); a running
   one keeps taking capacity, outside any PodGroup (warning); a running pod on a node
   that is not in the input is skipped (warning).
4. Tasks of a plain PodGroup come from its pods: the task name is the pod's
   `volcano.sh/task-spec` annotation, else its `batchplace.io/task` label or annotation,
   else its `training.kubeflow.org/replica-type` label, else "main". Pods of one task must
   ask for the same (requests, node selector, node affinity, tolerations, NUMA policy)
   because the engines treat a task's replicas as interchangeable; when they do not, the
   task is split into one task per distinct shape, named `<task>-<hash>` with the first 6
   hex digits of the shape's SHA-256 (stable whatever the pod order or names), with a
   warning. Each task's min_available is the PodGroup's `minTaskMember[task]` (0 when
   absent or when the task was split; a `minTaskMember` entry of a task without pods is
   ignored, with a warning). Whatever the tasks carry, the sum of `minTaskMember` as
   declared is kept on the PodGroup (`task_min_available_total`, set by `assemble` when
   the tasks carry less): Volcano decides on it whether task minimums apply at all
   (`solver.rules.gang`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from models.snapshot import DEFAULT_QUEUE, Node, Task

from .raw import RecordedWarnings, Warnings
from .step_memo import NO_STEP_MEMO, StepMemo
from .workloads import JobRecord, PodGroupRecord, PodRecord, task_from_template

__all__ = ["Workload", "expand_jobs", "add_one_pod_groups", "join_pods"]

DEFAULT_TASK = "main"
ONE_POD_GROUP_PREFIX = "podgroup-"


@dataclass
class Workload:
    """PodGroups with their tasks, pods with their group and task."""

    groups: list[PodGroupRecord]
    pods: list[PodRecord]
    jobs: dict[str, JobRecord] = field(default_factory=dict)  # group key → the expanded job
    live_jobs: dict[str, JobRecord] = field(default_factory=dict)  # group key → a job read through its pods
    tasks: dict[str, tuple[Task, ...]] = field(default_factory=dict)  # group key → tasks
    membership: dict[str, tuple[str, str] | None] = field(default_factory=dict)  # pod key → (group, task)


def expand_jobs(records: Sequence[PodGroupRecord | PodRecord | JobRecord], warnings: Warnings) -> Workload:
    """Rule 1, keeping input order: a job's PodGroup and pods sit where the job did."""
    live_jobs = {(r.namespace, *r.job) for r in records if isinstance(r, PodRecord) and r.job}
    workload = Workload(groups=[], pods=[])
    for record in records:
        if isinstance(record, PodGroupRecord):
            workload.groups.append(record)
        elif isinstance(record, PodRecord):
            workload.pods.append(record)
        elif (record.group.namespace, record.controller, record.group.name) in live_jobs:
            warnings.add(
                record.group.location,
                "the input holds pods this job created; they and their PodGroup are read instead of expanding the job",
            )
            workload.live_jobs[record.group.key] = record
        else:
            workload.groups.append(record.group)
            workload.pods.extend(record.pods)
            workload.jobs[record.group.key] = record
    return workload


def add_one_pod_groups(workload: Workload) -> None:
    """Rule 2: a one-pod PodGroup for each pending pod that names none, and for each
    running one that names none but its queue."""
    pods = []
    for pod in workload.pods:
        if pod.group_name is None and (pod.pending or pod.queue_name is not None):
            group_name = f"{ONE_POD_GROUP_PREFIX}{pod.name}"
            workload.groups.append(
                PodGroupRecord(
                    namespace=pod.namespace,
                    name=group_name,
                    queue=pod.queue_name or DEFAULT_QUEUE,
                    min_member=1,
                    min_task_member={},
                    min_resources=None,
                    priority_class=pod.template.priority_class,
                    creation_time=pod.creation_time or 0.0,
                    preemptable=pod.template.preemptable is not False,
                    network_topology=None,
                    location=pod.location,
                    priority=pod.template.priority,
                )
            )
            pod = dataclasses.replace(pod, group_name=group_name)
        pods.append(pod)
    workload.pods = pods


def join_pods(workload: Workload, nodes: Sequence[Node], warnings: Warnings, steps: StepMemo = NO_STEP_MEMO) -> None:
    """Rules 3 and 4: fill `workload.tasks` and `workload.membership`; drop pods that cannot stay."""
    node_names = {node.name for node in nodes}
    groups = {group.key: group for group in workload.groups}
    members: dict[str, list[PodRecord]] = {key: [] for key in groups}
    kept = []
    for pod in workload.pods:
        if not pod.pending and pod.node not in node_names:
            warnings.add(
                pod.location,
                f"runs on node {pod.node!r}, which is not in the input; skipped",
                like="a running pod's node is not in the input; skipped",
            )
            continue
        group_key = f"{pod.namespace}/{pod.group_name}" if pod.group_name else None
        if group_key is not None and group_key not in groups:
            if pod.pending:
                warnings.add(
                    pod.location,
                    f"names PodGroup {pod.group_name!r}, which is not in the input; skipped",
                    like="a pending pod's PodGroup is not in the input; skipped",
                )
                continue
            warnings.add(
                pod.location,
                f"names PodGroup {pod.group_name!r}, which is not in the input; it only takes capacity",
                like="a running pod's PodGroup is not in the input; it only takes capacity",
            )
            group_key = None
        kept.append(pod)
        workload.membership[pod.key] = None
        if group_key is not None:
            members[group_key].append(pod)
    dropped: set[str] = set()
    for key, group in groups.items():
        if key in workload.jobs:
            dropped |= _join_job_tasks(workload, group, members[key], warnings)
        else:
            _join_tasks(workload, group, members[key], warnings, steps)
    workload.pods = [pod for pod in kept if pod.key not in dropped]


def _join_job_tasks(workload: Workload, group: PodGroupRecord, pods: list[PodRecord], warnings: Warnings) -> set[str]:
    """Pods joining a job's PodGroup must name one of its tasks; returns pending pods to drop."""
    job = workload.jobs[group.key]
    tasks = job.tasks
    names = {task.name for task in tasks}
    workload.tasks[group.key] = tasks
    dropped = set()
    for pod in pods:
        task = pod.task_name or DEFAULT_TASK
        if task in names:
            workload.membership[pod.key] = (group.key, task)
            continue
        action = "skipped" if pod.pending else "it only takes capacity"
        warnings.add(pod.location, f"names task {task!r}, which {job.kind} {group.key} does not have; {action}")
        if pod.pending:
            dropped.add(pod.key)
    return dropped


def _shape(pod: PodRecord) -> str:
    """What makes pods interchangeable, as canonical JSON (it also names split tasks)."""
    template = pod.template
    shape: dict[str, object] = {
        "requests": template.requests,
        "node_selector": template.node_selector,
        "tolerations": [toleration.model_dump() for toleration in template.tolerations],
        "numa_policy": template.numa_policy,
    }
    # Affinity only when set, so the names of splits without it stay as they were.
    if template.required_node_affinity:
        shape["required_node_affinity"] = [term.model_dump() for term in template.required_node_affinity]
    if template.preferred_node_affinity:
        shape["preferred_node_affinity"] = [term.model_dump() for term in template.preferred_node_affinity]
    if not template.inter_pod.empty:
        shape["inter_pod"] = template.inter_pod.model_dump()
    if template.active_deadline_s is not None:
        shape["active_deadline_s"] = template.active_deadline_s
    if template.host_ports:
        shape["host_ports"] = [port.model_dump() for port in template.host_ports]
    return json.dumps(shape, sort_keys=True)


def _common_labels(pods: Sequence[PodRecord]) -> dict[str, str]:
    """The labels every pod of a task carries: what the engines, which treat the task's pods
    as one, can promise other pods' selectors (a per-pod label such as an index is left out)."""
    common = dict(pods[0].template.labels)
    for pod in pods[1:]:
        common = {key: value for key, value in common.items() if pod.template.labels.get(key) == value}
    return common


@dataclass(frozen=True)
class _DerivedTasks:
    tasks: tuple[Task, ...]
    membership: tuple[tuple[str, tuple[str, str]], ...]  # (pod key, (group key, task name)), in pod order
    warnings: RecordedWarnings


def _join_tasks(
    workload: Workload, group: PodGroupRecord, pods: list[PodRecord], warnings: Warnings, steps: StepMemo
) -> None:
    derived = steps.built("tasks", (group, *pods), (), lambda: _derive_tasks(group, pods))
    derived.warnings.replay(warnings)
    for pod_key, member in derived.membership:  # the same tuples every load (`step_memo` says why)
        workload.membership[pod_key] = member
    workload.tasks[group.key] = derived.tasks


def _derive_tasks(group: PodGroupRecord, pods: list[PodRecord]) -> _DerivedTasks:
    """A PodGroup's tasks from its pods (by task name, split where their shapes differ)."""
    warnings = RecordedWarnings()
    shape_of = {pod.key: _shape(pod) for pod in pods}
    shapes_by_task: dict[str, dict[str, list[PodRecord]]] = {}
    for pod in pods:
        shapes_by_task.setdefault(pod.task_name or DEFAULT_TASK, {}).setdefault(shape_of[pod.key], []).append(pod)
    tasks: list[Task] = []
    task_of_shape: dict[tuple[str, str], str] = {}
    for name, shapes in shapes_by_task.items():
        split = len(shapes) > 1
        for shape, members in shapes.items():
            task_name = f"{name}-{hashlib.sha256(shape.encode()).hexdigest()[:6]}" if split else name
            task_of_shape[(name, shape)] = task_name
            min_available = 0 if split else group.min_task_member.get(name, 0)
            tasks.append(_task_model(group, task_name, members, min_available))
        if split:
            warnings.add(
                group.location,
                f"pods of task {name!r} differ in requests, node selector, node affinity, "
                "pod affinity, spread constraints, tolerations, NUMA policy, host ports or activeDeadlineSeconds; "
                f"split into tasks {', '.join(task_of_shape[(name, shape)] for shape in shapes)}"
                + (" (its minTaskMember is not applied)" if name in group.min_task_member else ""),
            )
    for name in group.min_task_member:
        if name not in shapes_by_task:
            warnings.add(group.location, f"minTaskMember names task {name!r}, which has no pods in the input; ignored")
    membership = tuple(
        (pod.key, (group.key, task_of_shape[(pod.task_name or DEFAULT_TASK, shape_of[pod.key])])) for pod in pods
    )
    return _DerivedTasks(tuple(tasks), membership, warnings)


def _task_model(group: PodGroupRecord, name: str, pods: Sequence[PodRecord], min_available: int) -> Task:
    return task_from_template(
        pods[0].template, group.location, name=name, min_available=min_available, labels=_common_labels(pods)
    )
