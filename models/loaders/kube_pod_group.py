"""Read a Kubernetes PodGroup (`scheduling.k8s.io` v1beta1, Kubernetes 1.37; v1alpha3 has the
same fields), the gang unit of the Workload API, onto batchplace's one-level PodGroup.

In that API a `Workload` holds `podGroupTemplates`; its controller makes a `PodGroup` object
per template instance, and each pod names its group with `spec.schedulingGroup.podGroupName`
(`workloads.read_pod`). So the PodGroup and its pods are what is read; the Workload itself is
not (`kube_yaml` skips it with a note), nor its `compositePodGroupTemplates` — a gang of gangs,
which the one-level model cannot hold yet.

Read: `spec.schedulingPolicy` — `gang.minCount` is the gang's `min_member`; `basic` (pods
placed one by one, no gang) is `min_member` 1; exactly one of the two, as the API server
validates it. A PodGroup written without a `schedulingPolicy` that names its Workload's
PodGroupTemplate (`podGroupTemplateRef`, or `workloadRef` in the v1alpha3/v1beta1 client)
takes the template's, as the Workload's controller copies it (`kube_workload`). Pods that give `spec.schedulingGroup.podGroupReplicaKey` split the PodGroup
into one sub-group per replica, each a gang of that minimum (`sub_groups`). `spec.priorityClassName` and `spec.priority` as a pod's. The queue, which the
API has no field for, from the label or annotation `scheduling.x-k8s.io/queue` or
`volcano.sh/queue-name` as on a scheduler-plugins PodGroup; `volcano.sh/preemptable` as on
any PodGroup.

Not used yet, named in one warning per PodGroup: `spec.schedulingConstraints.topology` (a
node label key the gang should sit inside one value of: the model's network topology is a
HyperNode tier, not a node label), `disruptionMode`, `preemptionPolicy`, `resourceClaims`
and `parentCompositePodGroupName`. `podGroupTemplateRef` / `workloadRef` only link to the Workload and are not named.
"""

from __future__ import annotations

from .raw import Metadata, RawObject, Warnings
from .workloads import PodGroupRecord, labelled_queue, read_preemptable

__all__ = ["read_kube_pod_group", "gang_min_count"]

_NOT_USED = ("disruptionMode", "preemptionPolicy", "resourceClaims", "parentCompositePodGroupName")


def read_kube_pod_group(obj: RawObject, meta: Metadata, *, warnings: Warnings) -> PodGroupRecord:
    spec = obj.child("spec")
    template_ref = None if spec.has("schedulingPolicy") else _template_ref(spec)
    min_member = 1 if template_ref else gang_min_count(spec, "schedulingPolicy")
    _warn_not_used(obj, spec, warnings)
    return PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=labelled_queue(meta),
        min_member=min_member,
        min_task_member={},
        min_resources=None,
        priority_class=spec.optional_string("priorityClassName"),
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False,
        network_topology=None,
        location=obj.location,
        priority=spec.optional_integer("priority"),
        replica_min_member={meta.name: min_member},
        template_ref=template_ref,
    )


def _template_ref(spec: RawObject) -> tuple[str, str] | None:
    """The Workload and PodGroupTemplate a PodGroup was made from: `podGroupTemplateRef`
    (`{workloadName, podGroupTemplateName}`, or nested under `workload`), else `workloadRef`
    (`{workloadName, templateName}`); None when it names none."""
    for ref, template_key in (
        (spec.child("podGroupTemplateRef").child("workload"), "podGroupTemplateName"),
        (spec.child("podGroupTemplateRef"), "podGroupTemplateName"),
        (spec.child("workloadRef"), "templateName"),
    ):
        workload, template = ref.optional_string("workloadName"), ref.optional_string(template_key)
        if workload and template:
            return workload, template
    return None


def gang_min_count(parent: RawObject, key: str) -> int:
    """The pods a Workload API scheduling policy (`parent[key]`: a PodGroup's
    `schedulingPolicy`, a Workload pod group's `policy`) needs together: `gang.minCount`, or 1
    for `basic` (pods placed one by one); exactly one of the two, as the API server validates
    it."""
    policy = parent.child(key)
    kinds = [kind for kind in ("basic", "gang") if policy.has(kind)]
    if len(kinds) != 1:
        got = "neither" if not kinds else "both"
        raise parent.error(key, f"exactly one of basic or gang is required (the API server's rule), got {got}")
    if kinds == ["basic"]:
        return 1
    gang = policy.child("gang")
    if not gang.has("minCount"):
        raise gang.error("minCount", "a gang policy needs minCount, the pods that must start together")
    return gang.integer("minCount", 1, minimum=1)


def _warn_not_used(obj: RawObject, spec: RawObject, warnings: Warnings) -> None:
    fields = []
    keys = [c.optional_string("key") or "?" for c in spec.child("schedulingConstraints").children("topology")]
    if keys:
        fields.append(f"spec.schedulingConstraints.topology (key {', '.join(keys)})")
    fields += [f"spec.{name}" for name in _NOT_USED if spec.has(name)]
    if fields:
        verb = "is" if len(fields) == 1 else "are"
        warnings.add(
            obj.location,
            f"{', '.join(fields)} {verb} not used yet; placement reads the gang policy alone",
            like="Kubernetes PodGroup fields not used yet",
        )
