"""Read a Kubernetes `Workload` (`scheduling.k8s.io`) whose pods name it directly.

Two shapes of the API have been published. In the first (v1alpha1, Kubernetes 1.35, and
v1alpha2) a Workload lists its gangs inline, `spec.podGroups[]{name, policy}`, and each pod
names its Workload, pod group and replica in `spec.workloadRef{name, podGroup,
podGroupReplicaKey}`: that Workload is read here, as ONE PodGroup `<workload>` whose
sub-groups are its pod groups' replicas (`sub_groups`: `<podGroup>` or
`<podGroup>-<replicaKey>`, policy `<podGroup>`, min_member its `policy.gang.minCount`, 1 for
`policy.basic`). The pod groups of one Workload are scheduled each on its own in Kubernetes,
so the Workload starts when any one of its sub-groups starts whole: its own min_member is
the smallest pod group minimum, and no count of started sub-groups is asked. Example:
pod groups `prefill` (gang 2) and `decode` (gang 4) → min_member 2.

In the second (v1alpha2 as Kubernetes 1.36 published it, v1alpha3, v1beta1) the Workload
holds `podGroupTemplates` and its controller makes `PodGroup` objects, copying a template's
`schedulingPolicy` into each, that pods name in `spec.schedulingGroup`: those PodGroups and
pods are what is read (`kube_pod_group`), and the Workload itself is skipped with a note.
Its templates' minimums are kept (`PodGroupTemplates`) for a PodGroup written without its
own policy that names its template (`resolve_template_policies`). Example: template
`workers` with gang minCount 4, a PodGroup with `podGroupTemplateRef: {workloadName: train,
podGroupTemplateName: workers}` and no policy → min_member 4.

Checks, as the API server validates them: at least one pod group, names unique, exactly
one of `basic` or `gang` each (`kube_pod_group.gang_min_count`). `spec.controllerRef` only
links to the true workload and is not read. The queue comes from a label or annotation, as
on a Kubernetes PodGroup (`workloads.labelled_queue`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.errors import FieldError

from .kube_pod_group import gang_min_count
from .raw import Metadata, RawObject, Warnings
from .workloads import JobRecord, PodGroupRecord, PodRecord, labelled_queue, read_preemptable

__all__ = ["read_kube_workload", "PodGroupTemplates", "resolve_template_policies", "TEMPLATES_NOTE"]

TEMPLATES_NOTE = (
    "a Workload with podGroupTemplates is read through the PodGroups made from them and their pods; the "
    "Workload itself is skipped (its compositePodGroupTemplates, a gang of gangs, are not enforced yet)"
)


@dataclass(frozen=True)
class PodGroupTemplates:
    """A templates-shape Workload's gang minimum per PodGroupTemplate."""

    namespace: str
    workload: str
    min_member: Mapping[str, int]


def read_kube_workload(obj: RawObject, meta: Metadata, *, warnings: Warnings) -> PodGroupRecord | PodGroupTemplates:
    """The Workload as one PodGroup, or (the templates shape, with a note) its templates."""
    spec = obj.child("spec")
    if not spec.has("podGroups"):
        warnings.add(obj.location, TEMPLATES_NOTE, like="a Workload with podGroupTemplates is skipped")
        return PodGroupTemplates(
            namespace=meta.namespace,
            workload=meta.name,
            min_member=_minimums(spec, "podGroupTemplates", "schedulingPolicy"),
        )
    pod_groups = spec.children("podGroups")
    if not pod_groups:
        raise spec.error("podGroups", "a Workload needs at least one pod group (the API server's rule)")
    minimums = _minimums(spec, "podGroups", "policy")
    return PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=labelled_queue(meta),
        min_member=min(minimums.values()),
        min_task_member={},
        min_resources=None,
        priority_class=None,
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False,
        network_topology=None,
        location=obj.location,
        replica_min_member=minimums,
    )


def _minimums(spec: RawObject, key: str, policy_key: str) -> dict[str, int]:
    """Name → gang minimum of each `spec[key][]` entry; names must be unique."""
    minimums: dict[str, int] = {}
    for entry in spec.children(key):
        name = entry.required_string("name")
        if name in minimums:
            raise entry.error("name", f"{name!r} repeats spec.{key}[{list(minimums).index(name)}]")
        minimums[name] = gang_min_count(entry, policy_key)
    return minimums


def resolve_template_policies(
    records: Sequence[PodGroupRecord | PodRecord | JobRecord], templates: Sequence[PodGroupTemplates]
) -> list[PodGroupRecord | PodRecord | JobRecord]:
    """Each PodGroup that takes its policy from a template gets the template's minimum; one
    whose Workload or template is not in the input is an error naming its schedulingPolicy."""
    known = {(t.namespace, t.workload, name): minimum for t in templates for name, minimum in t.min_member.items()}
    resolved: list[PodGroupRecord | PodRecord | JobRecord] = []
    for record in records:
        if isinstance(record, PodGroupRecord) and record.template_ref is not None:
            workload, template = record.template_ref
            minimum = known.get((record.namespace, workload, template))
            if minimum is None:
                raise FieldError(
                    f"required: the PodGroup has none, and the PodGroupTemplate {template!r} of Workload {workload!r} "
                    "it names, whose policy it would take, is not in the input",
                    location=record.location,
                    path=("spec", "schedulingPolicy"),
                )
            record = dataclasses.replace(record, min_member=minimum, replica_min_member={record.name: minimum})
        resolved.append(record)
    return resolved
