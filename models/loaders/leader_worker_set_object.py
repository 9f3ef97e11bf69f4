"""Read a LeaderWorkerSet object whose pods are not in the input (`leader_worker_set` reads the pods
when they are, and says how a LeaderWorkerSet is one PodGroup with sub-groups).

The object (`read_leader_worker_set`), read when its pods are not in the input, becomes the
same PodGroup with every group's pods pending: `spec.replicas` (default 1) groups,
`leaderWorkerTemplate.size` (default 1) pods each, the leader from `leaderTemplate` (default
`workerTemplate`), the workers from `workerTemplate`, each with the labels
`leaderworkerset.sigs.k8s.io/name` and (the leader) `worker-index: "0"`; the exclusive
topology from its annotation. The webhooks' pod affinity is not written onto these pods, so
one group per domain is not kept until they exist. When the set's pods are in the input they
are read instead (`grouping`, rule 1). Fields for the LWS controller alone —
`rolloutStrategy`, `startupPolicy`, `networkConfig`, `leaderWorkerTemplate.restartPolicy`,
`subGroupPolicy`, `volumeClaimTemplates`, `persistentVolumeClaimRetentionPolicy` — are
accepted and named in one warning. `replicas: 0`: no pods, skipped with a warning.
"""

from __future__ import annotations

from collections.abc import Collection

from models.snapshot import SubGroup

from .leader_worker_set import (
    LEADER_TASK,
    LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION,
    LWS_NAME_LABEL,
    LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION,
    LWS_WORKER_INDEX_LABEL,
    WORKER_TASK,
)
from .object_names import check_object_name
from .owner_gang_jobs import OwnerPods, check_pod_count, owner_job, owner_template
from .raw import Metadata, RawObject, Warnings
from .workloads import JobRecord, warn_job_controller_fields

__all__ = ["read_leader_worker_set"]

LWS_CONTROLLER = "the LeaderWorkerSet controller"
_SPEC_FIELDS = ("rolloutStrategy", "startupPolicy", "networkConfig")
_TEMPLATE_FIELDS = ("restartPolicy", "subGroupPolicy", "volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy")


def read_leader_worker_set(
    obj: RawObject, meta: Metadata, *, scheduler_names: Collection[str], warnings: Warnings
) -> JobRecord | None:
    """The set's PodGroup and pending pods (module docstring); None when its pods are another
    scheduler's or it has no replicas."""
    spec = obj.child("spec")
    replicas = spec.integer("replicas", 1, minimum=0)
    template = spec.child("leaderWorkerTemplate")
    size = template.integer("size", 1, minimum=1)
    check_pod_count(spec, "replicas", replicas * size)
    if replicas:  # the last group's last worker has the longest name
        check_object_name(f"{meta.name}-{replicas - 1}-{size - 1}", meta.namespace, obj.location, obj.path)
    worker_obj = template.child("workerTemplate")
    leader_obj = template.child("leaderTemplate") if template.has("leaderTemplate") else worker_obj
    labels = {LWS_NAME_LABEL: meta.name}
    leader = owner_template(leader_obj, meta, task=LEADER_TASK, labels={**labels, LWS_WORKER_INDEX_LABEL: "0"})
    worker = owner_template(worker_obj, meta, task=WORKER_TASK, labels=labels)
    fields = [f"spec.{key}" for key in _SPEC_FIELDS if spec.has(key)]
    fields += [f"spec.leaderWorkerTemplate.{key}" for key in _TEMPLATE_FIELDS if template.has(key)]
    if meta.annotations.get(LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION):
        fields.append(f"metadata.annotations.{LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION}")
    if replicas == 0:
        warnings.add(obj.location, "spec.replicas is 0: the set has no pods; skipped")
        return None
    warn_job_controller_fields(obj, fields, controller=LWS_CONTROLLER, warnings=warnings)
    names = [f"{meta.name}-{index}" for index in range(replicas)]
    exclusive = meta.annotations.get(LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION)
    return owner_job(
        obj,
        meta,
        kind="LeaderWorkerSet",
        controller="leaderworkerset",
        templates=(leader, worker),
        sub_groups=[
            OwnerPods(
                sub_group=SubGroup(name=name, policy=meta.name, min_member=size),
                names=(name, *(f"{name}-{worker_index}" for worker_index in range(1, size))),
                tasks=(LEADER_TASK, *([WORKER_TASK] * (size - 1))),
            )
            for name in names
        ],
        min_member=size,
        min_sub_groups={},
        label_keys={name: exclusive for name in names} if exclusive else {},
        scheduler_names=scheduler_names,
        warnings=warnings,
    )
