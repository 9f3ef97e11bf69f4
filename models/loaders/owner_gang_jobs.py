"""What a LeaderWorkerSet or JobSet object expands into when its pods are not in the input
(`leader_worker_set.read_leader_worker_set`, `jobset.read_jobset`): one `JobRecord` — a
PodGroup named as the object with a sub-group per replica group / Job replica, its tasks,
and the pending pods the controllers would create — the same PodGroup `owner_gang_groups`
makes of the pods once they exist, so a placement made before and after they are created
agree.

The PodGroup: queue from the pod templates' `scheduling.volcano.sh/queue-name` annotation
(what the pods would carry), else the object's `scheduling.x-k8s.io/queue` or
`volcano.sh/queue-name` label or annotation, else "default"; priority class from the first
template; preemptable unless the object or a template says `volcano.sh/preemptable: false`;
creation time the object's; no network topology of its own (an exclusive topology is each
sub-group's, `exclusive_topology`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from models.snapshot import SnapshotLimits, SubGroup, Task

from .keys import POD_QUEUE_ANNOTATION
from .raw import Metadata, RawObject, Warnings
from .workloads import (
    JobController,
    JobRecord,
    PodGroupRecord,
    PodTemplate,
    labelled_queue,
    pending_pod,
    read_pod_template,
    read_preemptable,
    task_from_template,
    templates_are_ours,
)

__all__ = ["OwnerTemplate", "OwnerPods", "check_pod_count", "owner_template", "owner_job"]

MAX_PODS = SnapshotLimits().max_pods


@dataclass(frozen=True)
class OwnerTemplate:
    """One pod template of the object and the task its pods form."""

    task: str
    template: PodTemplate
    annotations: dict[str, str]  # the template's: where a pod's queue annotation would come from
    obj: RawObject  # the template, for locations


@dataclass(frozen=True)
class OwnerPods:
    """The pods of one sub-group: `names[i]` of task `tasks[i]`."""

    sub_group: SubGroup
    names: tuple[str, ...]
    tasks: tuple[str, ...]


def check_pod_count(spec: RawObject, key: str, total: int) -> None:
    """More pods than a snapshot holds is an error naming the field that asks for them,
    raised before they are made."""
    if total > MAX_PODS:
        raise spec.error(key, f"its pods total {total}, more than a snapshot's {MAX_PODS}")


def owner_template(
    template_obj: RawObject, owner_meta: Metadata, *, task: str, labels: dict[str, str]
) -> OwnerTemplate:
    """A pod template (`metadata`, `spec`) with the labels its controller adds to every pod
    of the task (`labels`), so other pods' selectors see the expanded pods as the real ones."""
    template_meta = template_obj.child("metadata")
    annotations = template_meta.string_map("annotations")
    pod_meta = Metadata(
        name=task,
        namespace=owner_meta.namespace,
        labels={**template_meta.string_map("labels"), **labels},
        annotations=annotations,
        creation_time=owner_meta.creation_time,
    )
    return OwnerTemplate(task, read_pod_template(template_obj, pod_meta), annotations, template_obj)


def owner_job(
    obj: RawObject,
    meta: Metadata,
    *,
    kind: str,
    controller: JobController,
    templates: Sequence[OwnerTemplate],
    sub_groups: Sequence[OwnerPods],
    min_member: int,
    min_sub_groups: dict[str, int],
    label_keys: dict[str, str],
    scheduler_names: Collection[str],
    warnings: Warnings,
) -> JobRecord | None:
    """The `JobRecord`; None when the object is another scheduler's (`templates_are_ours`)."""
    if not templates_are_ours([t.template for t in templates], scheduler_names, obj, warnings):
        return None
    by_task = {t.task: t for t in templates}
    queue = next((value for t in templates if (value := t.annotations.get(POD_QUEUE_ANNOTATION))), None)
    group = PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=queue or labelled_queue(meta),
        min_member=min_member,
        min_task_member={},
        min_resources=None,
        priority_class=templates[0].template.priority_class,
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False
        and all(t.template.preemptable is not False for t in templates),
        network_topology=None,
        location=obj.location,
        sub_groups=tuple(pods.sub_group for pods in sub_groups),
        min_sub_groups=min_sub_groups,
        sub_group_label_keys=label_keys,
    )
    used = {task for pods in sub_groups for task in pods.tasks}
    return JobRecord(
        kind=kind,
        controller=controller,
        group=group,
        tasks=tuple(_task(t) for t in templates if t.task in used),
        pods=tuple(
            pending_pod(
                obj,
                meta,
                name=name,
                task=task,
                template=by_task[task].template,
                job=controller,
                sub_group=pods.sub_group.name,
                path=by_task[task].obj.path,
            )
            for pods in sub_groups
            for name, task in zip(pods.names, pods.tasks, strict=True)
        ),
    )


def _task(template: OwnerTemplate) -> Task:
    return task_from_template(template.template, template.obj.location, name=template.task, min_available=0)
