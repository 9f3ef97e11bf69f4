"""Read a JobSet object whose pods are not in the input (`jobset` reads the pods
when they are, and says how a JobSet is one PodGroup with sub-groups).

The object (`read_jobset`), read when its pods are not in the input, becomes the same
PodGroup with every pod pending: per `spec.replicatedJobs[]`, `replicas` (default 1) Jobs of
`template.spec.parallelism` (default 1; fewer when `completions` is smaller) pods
`<job>-<completion index>` of the pod template `template.spec.template`, labelled
`jobset.sigs.k8s.io/jobset-name` and `replicatedjob-name`; the exclusive topology from the
replicated Job's template annotation, else the JobSet's. The webhook's pod affinity is not
written onto these pods, so one Job per domain is not kept until they exist. Fields for the
JobSet and Job controllers alone (`successPolicy`, `failurePolicy`, `startupPolicy`,
`network`, `coordinator`, `managedBy`, `ttlSecondsAfterFinished`, `volumeClaimPolicies`, a
replicated Job's `groupName` and `dependsOn`, a Job's `backoffLimit`, `completionMode`,
`activeDeadlineSeconds`, `podFailurePolicy`, …) are accepted and named in one warning. A
suspended JobSet (`spec.suspend: true`) has no pods until resumed: skipped with a warning.
"""

from __future__ import annotations

from collections.abc import Collection

from models.snapshot import SubGroup

from .jobset import JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION, JOBSET_NAME_KEY, JOBSET_REPLICATED_JOB_KEY
from .object_names import check_object_name
from .owner_gang_jobs import OwnerPods, OwnerTemplate, check_pod_count, owner_job, owner_template
from .raw import Metadata, RawObject, Warnings
from .workloads import JobRecord, warn_job_controller_fields

__all__ = ["read_jobset"]

JOBSET_CONTROLLER = "the JobSet and Job controllers"
_SPEC_FIELDS = (
    "successPolicy",
    "failurePolicy",
    "startupPolicy",
    "network",
    "coordinator",
    "managedBy",
    "ttlSecondsAfterFinished",
    "volumeClaimPolicies",
)
_REPLICATED_JOB_FIELDS = ("groupName", "dependsOn")
_JOB_FIELDS = (
    "activeDeadlineSeconds",
    "backoffLimit",
    "backoffLimitPerIndex",
    "completionMode",
    "managedBy",
    "maxFailedIndexes",
    "podFailurePolicy",
    "podReplacementPolicy",
    "successPolicy",
    "ttlSecondsAfterFinished",
)


def read_jobset(
    obj: RawObject, meta: Metadata, *, scheduler_names: Collection[str], warnings: Warnings
) -> JobRecord | None:
    """The JobSet's PodGroup and pending pods (module docstring); None when its pods are
    another scheduler's, it is suspended or it makes no pods."""
    spec = obj.child("spec")
    exclusive = meta.annotations.get(JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION)
    fields = [f"spec.{key}" for key in _SPEC_FIELDS if spec.has(key)]
    templates: list[OwnerTemplate] = []
    sub_groups: list[OwnerPods] = []
    label_keys: dict[str, str] = {}
    min_sub_groups: dict[str, int] = {}
    total = 0
    for index, replicated in enumerate(spec.children("replicatedJobs")):
        name = replicated.required_string("name")
        if any(t.task == name for t in templates):
            raise replicated.error("name", f"repeats replicated Job {name!r} (JobSet's validation refuses it)")
        replicas = replicated.integer("replicas", 1, minimum=0)
        job_template = replicated.child("template")
        job_spec = job_template.child("spec")
        parallelism = job_spec.integer("parallelism", 1, minimum=0)
        completions = job_spec.optional_integer("completions", minimum=0)
        pods_per_job = parallelism if completions is None else min(parallelism, completions)
        total += replicas * pods_per_job
        check_pod_count(replicated, "replicas", total)
        where = f"spec.replicatedJobs[{index}]"
        fields += [f"{where}.{key}" for key in _REPLICATED_JOB_FIELDS if replicated.has(key)]
        fields += [f"{where}.template.spec.{key}" for key in _JOB_FIELDS if job_spec.has(key)]
        labels = {JOBSET_NAME_KEY: meta.name, JOBSET_REPLICATED_JOB_KEY: name}
        templates.append(owner_template(job_spec.child("template"), meta, task=name, labels=labels))
        job_annotations = job_template.child("metadata").string_map("annotations")
        key = job_annotations.get(JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION) or exclusive
        if not (replicas and pods_per_job):
            continue
        longest = f"{meta.name}-{name}-{replicas - 1}-{pods_per_job - 1}"  # the last Job's last pod
        check_object_name(longest, meta.namespace, obj.location, obj.path)
        min_sub_groups[name] = replicas
        for job_index in range(replicas):
            job = f"{meta.name}-{name}-{job_index}"
            sub_groups.append(
                OwnerPods(
                    sub_group=SubGroup(name=job, policy=name, min_member=pods_per_job),
                    names=tuple(f"{job}-{completion}" for completion in range(pods_per_job)),
                    tasks=(name,) * pods_per_job,
                )
            )
            if key:
                label_keys[job] = key
    if not templates:
        raise spec.error("replicatedJobs", "a JobSet needs at least one replicated Job")
    if spec.boolean("suspend", False):
        warnings.add(obj.location, "spec.suspend is true: JobSet creates no Jobs until it is resumed; skipped")
        return None
    if not sub_groups:
        warnings.add(obj.location, "its replicated Jobs make no pods (replicas or parallelism 0); skipped")
        return None
    warn_job_controller_fields(obj, fields, controller=JOBSET_CONTROLLER, warnings=warnings)
    return owner_job(
        obj,
        meta,
        kind="JobSet",
        controller="jobset",
        templates=templates,
        sub_groups=sub_groups,
        min_member=total,
        min_sub_groups=min_sub_groups,
        label_keys=label_keys,
        scheduler_names=scheduler_names,
        warnings=warnings,
    )
