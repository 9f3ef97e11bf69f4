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

In the second (v1alpha3, v1beta1) the Workload holds `podGroupTemplates` and its controller
makes `PodGroup` objects that pods name in `spec.schedulingGroup`: those PodGroups and pods
are what is read (`kube_pod_group`), and the Workload itself is skipped with a note.

Checks, as the API server validates them: at least one pod group, names unique, exactly
one of `basic` or `gang` each (`kube_pod_group.gang_min_count`). `spec.controllerRef` only
links to the true workload and is not read. The queue comes from a label or annotation, as
on a Kubernetes PodGroup (`workloads.labelled_queue`).
"""

from __future__ import annotations

from .kube_pod_group import gang_min_count
from .raw import Metadata, RawObject, Warnings
from .workloads import PodGroupRecord, labelled_queue, read_preemptable

__all__ = ["read_kube_workload", "TEMPLATES_NOTE"]

TEMPLATES_NOTE = (
    "a Workload with podGroupTemplates is read through the PodGroups made from them and their pods; the "
    "Workload itself is skipped (its compositePodGroupTemplates, a gang of gangs, are not enforced yet)"
)


def read_kube_workload(obj: RawObject, meta: Metadata, *, warnings: Warnings) -> PodGroupRecord | None:
    """The Workload as one PodGroup (module docstring); None, with a note, for the templates shape."""
    spec = obj.child("spec")
    if not spec.has("podGroups"):
        warnings.add(obj.location, TEMPLATES_NOTE, like="a Workload with podGroupTemplates is skipped")
        return None
    pod_groups = spec.children("podGroups")
    if not pod_groups:
        raise spec.error("podGroups", "a Workload needs at least one pod group (the API server's rule)")
    minimums: dict[str, int] = {}
    for pod_group in pod_groups:
        name = pod_group.required_string("name")
        if name in minimums:
            first = list(minimums).index(name)
            raise pod_group.error("name", f"{name!r} repeats spec.podGroups[{first}]")
        minimums[name] = gang_min_count(pod_group, "policy")
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
