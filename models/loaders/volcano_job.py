"""Expand a Volcano Job (`batch.volcano.sh` vcjob) the way Volcano's admission webhook and
job controller would: into one PodGroup and its pending pods.

Input: one vcjob `RawObject`. Output: a `JobRecord` — a `PodGroupRecord` named as the job,
its `Task`s, and one pending `PodRecord` per replica, named `<job>-<task>-<index>`.

Defaults, as Volcano's webhook applies them (`pkg/webhooks/admission/jobs/mutate`):
- a task's `minAvailable` is its `replicas`; an unnamed task is `default<index>`;
- the job's `minAvailable`, when absent or 0, is the sum of its tasks' `minAvailable`;
- `queue` is "default", `schedulerName` "volcano"; a pod template without a
  `schedulerName` or `priorityClassName` takes the job's (as the job controller does).
Checks, as Volcano's validating webhook makes them: at least one task, `replicas` >= 0,
0 <= task `minAvailable` <= `replicas`, unique task names, job `minAvailable` <= total
replicas, `dependsOn.name` naming tasks of the job.

A job is batchplace's when every task's effective scheduler is in `scheduler_names`; a job
of another scheduler is skipped silently, one whose tasks disagree is skipped with a warning.

Fields for Volcano's job controller — `plugins` (ssh, svc, env: what the pods are given),
`policies` of the job and of each task, `maxRetry` of the job and of each task,
`minSuccess`, `ttlSecondsAfterFinished`, `volumes`, `runningEstimate` — decide what happens
once pods run or finish, not where they go: accepted, and named in one warning per job,
`spec.plugins (ssh, svc), spec.tasks[mpimaster].policies are for Volcano's job controller;
placement does not read them` (a task by its name, an unnamed one by its index).
`min_resources` is left unset (the engines derive a gang's needs from its tasks).

A task's `partitionPolicy` (Volcano 1.14+: `totalPartitions`, `partitionSize`,
`minPartitions`, `networkTopology`) becomes a sub-group policy of the PodGroup named as the
task, as the job controller writes it, and its pods carry their partition label, so
`sub_groups` forms the task's partitions `<task>-0`, `<task>-1`, … (`_partition_policy`); a
task with one and no `minAvailable` needs minPartitions × partitionSize pods, as the job
controller counts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass

from models.snapshot import DEFAULT_QUEUE, SnapshotLimits, Task

from .cluster_objects import LabelSelector
from .keys import (
    VOLCANO_JOB_NAME_KEY,
    VOLCANO_JOB_NAMESPACE_LABEL,
    VOLCANO_PARTITION_ID_LABEL,
    VOLCANO_QUEUE_LABEL,
    VOLCANO_TASK_ANNOTATION,
)
from .sub_group_policy import SubGroupPolicyRecord
from .kube_fields import read_sla_waiting
from .object_names import check_vcjob_names
from .raw import Metadata, RawObject, Warnings
from .workloads import (
    JobRecord,
    NumaPolicy,
    PodGroupRecord,
    PodRecord,
    PodTemplate,
    expanded_pods,
    parse_numa_policy,
    read_network_topology,
    read_pod_template,
    read_preemptable,
    task_from_template,
    warn_job_controller_fields,
)

__all__ = ["read_volcano_job", "DEFAULT_JOB_SCHEDULER"]

DEFAULT_JOB_SCHEDULER = "volcano"
DEFAULT_TASK_PREFIX = "default"
MAX_PODS = SnapshotLimits().max_pods
JOB_CONTROLLER = "Volcano's job controller"
_JOB_CONTROLLER_FIELDS = (
    "plugins",
    "policies",
    "maxRetry",
    "minSuccess",
    "ttlSecondsAfterFinished",
    "volumes",
    "runningEstimate",
)
_TASK_CONTROLLER_FIELDS = ("policies", "maxRetry")


@dataclass(frozen=True)
class _TaskSpec:
    name: str
    replicas: int
    min_available: int
    template: PodTemplate
    depends_on: tuple[str, ...]
    obj: RawObject
    partition: SubGroupPolicyRecord | None = None  # the sub-group policy its partitionPolicy makes


def read_volcano_job(
    obj: RawObject, meta: Metadata, *, scheduler_names: Collection[str], warnings: Warnings
) -> JobRecord | None:
    spec = obj.child("spec")
    task_objs = spec.children("tasks")
    if not task_objs:
        raise spec.error("tasks", "a vcjob needs at least one task")
    job_priority_class = spec.optional_string("priorityClassName")
    queue = spec.string("queue", DEFAULT_QUEUE)
    tasks = [
        _read_task(task, index, meta, job_priority_class, queue, warnings) for index, task in enumerate(task_objs)
    ]
    _check_task_names(tasks)
    check_vcjob_names(meta.name, [task.name for task in tasks], obj.location, obj.path)
    total_replicas = sum(task.replicas for task in tasks)
    if total_replicas > MAX_PODS:
        message = f"the tasks' replicas total {total_replicas}, more than a snapshot's {MAX_PODS} pods"
        raise spec.error("tasks", message)
    if not _is_ours(tasks, spec.string("schedulerName", DEFAULT_JOB_SCHEDULER), scheduler_names, obj, warnings):
        return None
    fields = _job_controller_fields(spec, task_objs)
    warn_job_controller_fields(obj, fields, controller=JOB_CONTROLLER, warnings=warnings)
    group = PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=queue,
        min_member=_job_min_available(spec, tasks),
        min_task_member={task.name: task.min_available for task in tasks},
        min_resources=None,
        priority_class=job_priority_class,
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False,
        network_topology=read_network_topology(spec, warnings=warnings),
        location=obj.location,
        sla_waiting_s=read_sla_waiting(obj, meta, warnings),
        sub_group_policies=tuple(task.partition for task in tasks if task.partition is not None),
    )
    return JobRecord(
        kind="vcjob",
        controller="volcano",
        group=group,
        tasks=tuple(_task_model(task) for task in tasks),
        pods=tuple(pod for task in tasks for pod in _task_pods(task, meta)),
    )


def _job_controller_fields(spec: RawObject, task_objs: tuple[RawObject, ...]) -> list[str]:
    """`["spec.plugins (ssh, svc)", "spec.tasks[mpimaster].policies"]`: the fields set that only
    the job controller reads, the job's first, then each task's."""
    fields = []
    for key in _JOB_CONTROLLER_FIELDS:
        if not spec.has(key):
            continue
        plugins = [name for name, _ in spec.entries("plugins")] if key == "plugins" else []
        fields.append(f"spec.{key}" + (f" ({', '.join(plugins)})" if plugins else ""))
    for index, task in enumerate(task_objs):
        name = task.optional_string("name")
        fields += [f"spec.tasks[{name or index}].{key}" for key in _TASK_CONTROLLER_FIELDS if task.has(key)]
    return fields


def _read_task(
    task: RawObject, index: int, job_meta: Metadata, job_priority_class: str | None, queue: str, warnings: Warnings
) -> _TaskSpec:
    replicas = task.integer("replicas", 0, minimum=0)
    min_available = task.optional_integer("minAvailable", minimum=0)
    if min_available is not None and min_available > replicas:
        raise task.error("minAvailable", f"must be <= replicas ({replicas}), got {min_available}")
    template_obj = task.child("template")
    template_meta = template_obj.child("metadata")
    name = task.string("name", f"{DEFAULT_TASK_PREFIX}{index}")
    partition = _partition_policy(task, name, replicas, warnings)
    if min_available is None and partition is not None and partition.min_sub_groups:
        min_available = partition.min_sub_groups * (partition.sub_group_size or 0)
    pod_meta = Metadata(
        name=name,
        namespace=job_meta.namespace,
        labels={**template_meta.string_map("labels"), **_job_controller_labels(job_meta, queue, name)},
        annotations=template_meta.string_map("annotations"),
        creation_time=job_meta.creation_time,
    )
    template = read_pod_template(template_obj, pod_meta, numa_fallback=_topology_policy(task))
    if template.priority_class is None and job_priority_class is not None:
        template = dataclasses.replace(template, priority_class=job_priority_class)
    return _TaskSpec(
        name=name,
        replicas=replicas,
        min_available=replicas if min_available is None else min_available,
        template=template,
        depends_on=task.child("dependsOn").string_list("name"),
        obj=task,
        partition=partition,
    )


def _partition_policy(task: RawObject, name: str, replicas: int, warnings: Warnings) -> SubGroupPolicyRecord | None:
    """A task's `partitionPolicy` as the sub-group policy Volcano's job controller writes onto
    the PodGroup for it (`getSubGroupPolicy`): named as the task, its pods (label
    `volcano.sh/task-spec: <task>`) split by `volcano.sh/partition-id` (pod index //
    partitionSize), min_member partitionSize, minSubGroups minPartitions, the partition's
    networkTopology. Checked as Volcano's webhook does: totalPartitions × partitionSize =
    replicas. Example: replicas 8, partitionSize 4 → sub-groups worker-0, worker-1 of min 4."""
    if not task.has("partitionPolicy"):
        return None
    policy = task.child("partitionPolicy")
    total, size = (_required_count(policy, key) for key in ("totalPartitions", "partitionSize"))
    if total * size != replicas:
        message = f"totalPartitions {total} × partitionSize {size} = {total * size}, not the task's replicas ({replicas})"
        raise policy.error("totalPartitions", message)
    minimum = policy.integer("minPartitions", 0, minimum=0)
    if minimum > total:
        raise policy.error("minPartitions", f"must be <= totalPartitions ({total}), got {minimum}")
    return SubGroupPolicyRecord(
        name=name,
        selector=LabelSelector(match_labels=((VOLCANO_TASK_ANNOTATION, name),), expressions=()),
        match_label_keys=(VOLCANO_PARTITION_ID_LABEL,),
        sub_group_size=size,
        min_sub_groups=minimum,
        network_topology=read_network_topology(policy, warnings=warnings),
        path=policy.path,
    )


def _job_controller_labels(job_meta: Metadata, queue: str, task: str) -> dict[str, str]:
    """The labels Volcano's job controller puts on every pod of a task (the per-pod index
    aside), so other pods' selectors see the expanded pods as they would see the real ones."""
    return {
        VOLCANO_JOB_NAME_KEY: job_meta.name,
        VOLCANO_JOB_NAMESPACE_LABEL: job_meta.namespace,
        VOLCANO_QUEUE_LABEL: queue,
        VOLCANO_TASK_ANNOTATION: task,
    }


def _topology_policy(task: RawObject) -> NumaPolicy:
    text = task.optional_string("topologyPolicy")
    if text is None:
        return "none"
    return parse_numa_policy(text, task.location, (*task.path, "topologyPolicy"))


def _check_task_names(tasks: list[_TaskSpec]) -> None:
    first_index: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.name in first_index:
            raise task.obj.error("name", f"task name {task.name!r} repeats spec.tasks[{first_index[task.name]}]")
        first_index[task.name] = index
    for task in tasks:
        for position, dependency in enumerate(task.depends_on):
            if dependency not in first_index:
                raise task.obj.child("dependsOn").error(
                    "name", f"item {position}: {dependency!r} is not a task of this job"
                )


def _is_ours(
    tasks: list[_TaskSpec], job_scheduler: str, scheduler_names: Collection[str], obj: RawObject, warnings: Warnings
) -> bool:
    schedulers = {task.template.scheduler_name or job_scheduler for task in tasks}
    ours = {name for name in schedulers if name in scheduler_names}
    if ours and ours != schedulers:
        warnings.add(
            obj.location,
            f"tasks name different schedulers ({', '.join(sorted(schedulers))}); a gang cannot be split "
            "between schedulers, so the job is skipped",
        )
        return False
    return bool(ours)


def _job_min_available(spec: RawObject, tasks: list[_TaskSpec]) -> int:
    total_replicas = sum(task.replicas for task in tasks)
    min_available = spec.integer("minAvailable", 0, minimum=0)
    if min_available > total_replicas:
        raise spec.error(
            "minAvailable", f"must be <= the total replicas of its tasks ({total_replicas}), got {min_available}"
        )
    return min_available or sum(task.min_available for task in tasks)


def _task_model(task: _TaskSpec) -> Task:
    return task_from_template(
        task.template, task.obj.location, name=task.name, min_available=task.min_available, depends_on=task.depends_on
    )


def _required_count(policy: RawObject, key: str) -> int:
    value = policy.optional_integer(key, minimum=1)
    if value is None:
        raise policy.error(key, "required (an integer >= 1), got nothing")
    return value


def _task_pods(task: _TaskSpec, job_meta: Metadata) -> list[PodRecord]:
    pods = expanded_pods(task.obj, job_meta, task=task.name, template=task.template, replicas=task.replicas, job="volcano")
    if task.partition is None or not task.partition.sub_group_size:
        return pods
    size = task.partition.sub_group_size
    return [  # the partition label the job controller puts on each pod (`_partition_policy`)
        dataclasses.replace(
            pod,
            template=dataclasses.replace(
                pod.template, labels={**pod.template.labels, VOLCANO_PARTITION_ID_LABEL: str(index // size)}
            ),
        )
        for index, pod in enumerate(pods)
    ]
