"""The seed examples as live objects: what `kubectl apply` and the job controllers would create.

Input: an example file (`examples/*.yaml`: Nodes, Queues, HyperNodes, Pods, vcjobs,
PyTorchJobs, LeaderWorkerSets, JobSets, DRA objects). Output: `SeedObject`s in creation
order — cluster-scoped objects first (DeviceClasses and ResourceSlices after the nodes), then
ResourceClaimTemplates and ResourceClaims, then per vcjob the Job itself, its PodGroup and its
pods, per PyTorchJob its PodGroup and its pods, per LeaderWorkerSet or JobSet its pods
(`controller.testing.seed_owner_gangs`) — for `create_all` to send to an API server. A ResourceClaim given
with a `status` (allocated already) gets it written after it is created, as the API server
keeps no status on create.

A vcjob is expanded by `models.loaders` itself (the same expansion `batchplace solve`
uses): the PodGroup takes the loader's name, queue, minMember and per-task minAvailable (and,
for tasks with a Volcano 1.14 `partitionPolicy`, the `subGroupPolicy` the job controller
writes, each pod labelled with its partition),
and one pod is made per pod of the loaded Snapshot, `<job>-<task>-<index>`, from its
task's template, with the labels and annotations Volcano's job controller puts on them
(`scheduling.k8s.io/group-name`, `volcano.sh/job-name`, `volcano.sh/task-spec`, …).
A PyTorchJob is expanded the same way, into what Kubeflow's training operator creates with
gang scheduling through scheduler-plugins: a `scheduling.x-k8s.io` PodGroup named as the
job (its `minMember`, the job's annotations copied onto it) and pods `<job>-<type>-<index>`
labelled `training.kubeflow.org/{operator-name,job-name,replica-type,replica-index}` (and
`job-role: master` on the master) and `scheduling.x-k8s.io/pod-group`. The PyTorchJob
itself is not created: the API server here serves no Kubeflow CRD, and the controller
never reads one.
`scheduler_name` replaces the examples' `schedulerName`, as an operator switching to
batchplace does. Namespaced objects go to `namespace`; with `namespace=None` each keeps its
own (`default` when it names none), as `kubectl apply` puts them — `demo --live FILE` runs a
user's manifests so.

Not promised: Volcano's job controller's lifecycle (restarts, policies, dependsOn waits):
every pod is created at once; the controller holds dependents back itself.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller.kinds import (
    DEVICE_CLASSES,
    DRA_KINDS,
    HYPERNODES,
    NODES,
    NUMATOPOLOGIES,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    VCJOBS,
    VOLCANO_PODGROUPS,
    XK8S_PODGROUPS,
    ResourceKind,
)
from controller.testing.files import EXAMPLES_DIR
from controller.testing.seed_owner_gangs import JOBSET, LEADER_WORKER_SET, jobset_pods, leader_worker_set_pods
from models.loaders import load_snapshot_documents

__all__ = ["SeedObject", "seed_objects", "vcjob_objects", "pytorch_job_objects", "create_all", "EXAMPLES_DIR"]

JsonObject = dict[str, Any]

_KINDS: dict[tuple[str, str], ResourceKind] = {
    ("v1", "Node"): NODES,
    ("v1", "Pod"): PODS,
    ("scheduling.k8s.io/v1", "PriorityClass"): PRIORITY_CLASSES,
    ("scheduling.volcano.sh/v1beta1", "Queue"): QUEUES,
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): VOLCANO_PODGROUPS,
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): XK8S_PODGROUPS,
    ("topology.volcano.sh/v1alpha1", "HyperNode"): HYPERNODES,
    ("nodeinfo.volcano.sh/v1alpha1", "Numatopology"): NUMATOPOLOGIES,
    ("batch.volcano.sh/v1alpha1", "Job"): VCJOBS,
    **{(kind.api_version, kind.kind): kind for kind in DRA_KINDS},
}
_PYTORCH_JOB = ("kubeflow.org/v1", "PyTorchJob")
_OWNER_PODS = {LEADER_WORKER_SET: leader_worker_set_pods, JOBSET: jobset_pods}
_ORDER = (NODES, NUMATOPOLOGIES, PRIORITY_CLASSES, QUEUES, HYPERNODES, DEVICE_CLASSES, RESOURCE_SLICES)
_CLAIMS_FIRST = (RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS)
"""Namespaced objects made before the workloads that name them."""


@dataclass(frozen=True)
class SeedObject:
    kind: ResourceKind
    namespace: str | None
    body: JsonObject

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def seed_objects(path: Path, *, namespace: str | None, scheduler_name: str = "batchplace") -> list[SeedObject]:
    read = [d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d]
    documents = [item for d in read for item in (d.get("items") or [] if d.get("kind") == "List" else [d]) if item]
    cluster: list[SeedObject] = []
    workloads: list[SeedObject] = []
    for document in documents:
        own = namespace or (document.get("metadata") or {}).get("namespace") or "default"
        if (document.get("apiVersion"), document.get("kind")) == _PYTORCH_JOB:
            objects = pytorch_job_objects(document, namespace=own, scheduler_name=scheduler_name, source=str(path))
            workloads.extend(objects)
            continue
        expand = _OWNER_PODS.get((document.get("apiVersion"), document.get("kind")))
        if expand is not None:  # a LeaderWorkerSet or JobSet: its pods, as its controller creates them
            for pod in expand(_clean(document), namespace=own):
                _set_scheduler(pod["spec"], scheduler_name)
                workloads.append(SeedObject(PODS, own, pod))
            continue
        kind = _KINDS.get((document.get("apiVersion"), document.get("kind")))
        if kind is None:
            continue
        if kind == VCJOBS:
            workloads.extend(vcjob_objects(document, namespace=own, scheduler_name=scheduler_name, source=str(path)))
            continue
        body = _clean(document)
        if kind.namespaced:
            body["metadata"]["namespace"] = own
            if kind == PODS:
                _set_scheduler(body["spec"], scheduler_name)
            workloads.append(SeedObject(kind, own, body))
        else:
            cluster.append(SeedObject(kind, None, body))
    cluster.sort(key=lambda obj: _ORDER.index(obj.kind) if obj.kind in _ORDER else len(_ORDER))
    workloads.sort(key=lambda obj: obj.kind not in _CLAIMS_FIRST)
    return [*cluster, *workloads]


def vcjob_objects(job: JsonObject, *, namespace: str, scheduler_name: str, source: str = "<vcjob>") -> list[SeedObject]:
    """The Job, its PodGroup and its pods, expanded by `models.loaders` (see the module docstring)."""
    job = _clean(job)
    job["metadata"]["namespace"] = namespace
    spec = job.setdefault("spec", {})
    job_scheduler = spec.get("schedulerName") or "volcano"
    schedulers = {job_scheduler, *(t.get("template", {}).get("spec", {}).get("schedulerName") or job_scheduler for t in spec.get("tasks", []))}
    snapshot = load_snapshot_documents([(source, 1, job)], scheduler_names=schedulers).snapshot
    (group,) = snapshot.pod_groups
    name = job["metadata"]["name"]
    templates = {str(t.get("name") or f"default{i}"): t.get("template") or {} for i, t in enumerate(spec.get("tasks", []))}
    spec["schedulerName"] = scheduler_name
    pod_group: JsonObject = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": group.name, "namespace": namespace, "labels": {"volcano.sh/job-name": name}},
        "spec": {
            "minMember": group.min_member,
            "minTaskMember": {task.name: task.min_available for task in group.tasks},
            "queue": group.queue,
            **({"priorityClassName": spec["priorityClassName"]} if spec.get("priorityClassName") else {}),
            **({"networkTopology": spec["networkTopology"]} if spec.get("networkTopology") else {}),
            **({"subGroupPolicy": policies} if (policies := _partition_policies(spec)) else {}),
        },
        "status": {"phase": "Pending"},
    }
    partition_size = {policy["name"]: policy["subGroupSize"] for policy in policies}
    objects = [SeedObject(VCJOBS, namespace, job), SeedObject(VOLCANO_PODGROUPS, namespace, pod_group)]
    for pod in snapshot.pods:
        template = copy.deepcopy(templates[pod.task or ""])
        metadata = template.get("metadata") or {}
        pod_spec = template.get("spec") or {}
        _set_scheduler(pod_spec, scheduler_name)
        if spec.get("priorityClassName") and not pod_spec.get("priorityClassName"):
            pod_spec["priorityClassName"] = spec["priorityClassName"]
        labels = {
            **(metadata.get("labels") or {}),
            "volcano.sh/job-name": name,
            "volcano.sh/job-namespace": namespace,
            "volcano.sh/queue-name": group.queue,
            "volcano.sh/task-spec": pod.task or "",
        }
        if pod.task in partition_size:  # its partition, as the job controller labels it: pod index // partitionSize
            labels[PARTITION_ID_LABEL] = str(int(pod.name.rsplit("-", 1)[1]) // partition_size[pod.task])
        annotations = {
            **(metadata.get("annotations") or {}),
            "scheduling.k8s.io/group-name": group.name,
            "volcano.sh/job-name": name,
            "volcano.sh/queue-name": group.queue,
            "volcano.sh/task-spec": pod.task or "",
        }
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod.name, "namespace": namespace, "labels": labels, "annotations": annotations},
            "spec": pod_spec,
        }
        objects.append(SeedObject(PODS, namespace, body))
    return objects


PARTITION_ID_LABEL = "volcano.sh/partition-id"


def _partition_policies(spec: JsonObject) -> list[JsonObject]:
    """The PodGroup's `subGroupPolicy` Volcano's job controller (1.14+) writes for the tasks
    with a `partitionPolicy`: one per task, named as it, over its pods (`volcano.sh/task-spec`)
    split by their partition label, `partitionSize` pods each, `minPartitions` of them to
    start, each inside the partition's `networkTopology`."""
    policies = []
    for index, task in enumerate(spec.get("tasks") or []):
        partition = task.get("partitionPolicy")
        if not partition:
            continue
        name = str(task.get("name") or f"default{index}")
        policy: JsonObject = {
            "name": name,
            "subGroupSize": partition["partitionSize"],
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": name}},
            "matchLabelKeys": [PARTITION_ID_LABEL],
        }
        if partition.get("minPartitions"):
            policy["minSubGroups"] = partition["minPartitions"]
        if partition.get("networkTopology"):
            policy["networkTopology"] = partition["networkTopology"]
        policies.append(policy)
    return policies


def pytorch_job_objects(
    job: JsonObject, *, namespace: str, scheduler_name: str, source: str = "<PyTorchJob>"
) -> list[SeedObject]:
    """The PodGroup and pods of a PyTorchJob, expanded by `models.loaders` (module docstring)."""
    job = _clean(job)
    job["metadata"]["namespace"] = namespace
    name = job["metadata"]["name"]
    annotations = job["metadata"].get("annotations") or {}
    spec = job.get("spec") or {}
    templates: dict[str, JsonObject] = {}
    for replica_type, replica in (spec.get("pytorchReplicaSpecs") or {}).items():
        template = copy.deepcopy(replica.get("template") or {})
        _set_scheduler(template.setdefault("spec", {}), scheduler_name)
        replica["template"] = template
        templates[str(replica_type).lower()] = template
    snapshot = load_snapshot_documents([(source, 1, job)], scheduler_names=(scheduler_name,)).snapshot
    (group,) = snapshot.pod_groups
    min_resources = ((spec.get("runPolicy") or {}).get("schedulingPolicy") or {}).get("minResources")
    pod_group: JsonObject = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": group.name, "namespace": namespace, "annotations": dict(annotations)},
        "spec": {"minMember": group.min_member, **({"minResources": min_resources} if min_resources else {})},
    }
    objects = [SeedObject(XK8S_PODGROUPS, namespace, pod_group)]
    for pod in snapshot.pods:
        task = pod.task or ""
        template = copy.deepcopy(templates[task])
        metadata = template.get("metadata") or {}
        labels = {
            **(metadata.get("labels") or {}),
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/replica-type": task,
            "training.kubeflow.org/replica-index": pod.name.rsplit("-", 1)[1],
            "scheduling.x-k8s.io/pod-group": group.name,
        }
        if task == "master":
            labels["training.kubeflow.org/job-role"] = "master"
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod.name,
                "namespace": namespace,
                "labels": labels,
                "annotations": dict(metadata.get("annotations") or {}),
            },
            "spec": template.get("spec") or {},
        }
        objects.append(SeedObject(PODS, namespace, body))
    return objects


def create_all(client: Any, objects: Iterable[SeedObject]) -> None:
    """Create each object with `client` (a `controller.kube.KubeClient`); an existing one is kept."""
    from controller.errors import Conflict  # local: this module is also read without a client

    for obj in objects:
        try:
            created = client.create(obj.kind, obj.namespace, obj.body)
        except Conflict:
            continue
        if obj.kind == RESOURCE_CLAIMS and obj.body.get("status"):  # a claim allocated already: its status is its own write
            client.replace(obj.kind, obj.namespace, obj.name, {**created, "status": obj.body["status"]}, subresource="status")


def _clean(document: JsonObject) -> JsonObject:
    """A deep copy without server-set metadata (uid, resourceVersion, timestamps)."""
    body = copy.deepcopy(document)
    metadata = body.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"):
        metadata.pop(key, None)
    return body


def _set_scheduler(pod_spec: JsonObject, scheduler_name: str) -> None:
    if not pod_spec.get("nodeName"):
        pod_spec["schedulerName"] = scheduler_name

