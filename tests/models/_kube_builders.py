"""Builders for Kubernetes objects as parsed YAML, so each loader test case is one line.

Imported as `from tests.models._kube_builders import …` (the root conftest puts the
repository root on `sys.path`).

`node("n1", gpus=8)`, `pod("p", cpu="500m", node="n1")`, `vcjob("j", task("w", replicas=2))`,
`pytorch_job("j", {"Master": replica(1), "Worker": replica(3, gpus=1)})`, then `load(...)` /
`load_error(...)` run them through `load_snapshot_documents` as documents 1, 2, … of a file
named `test.yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from models.errors import SnapshotError
from models.loaders import LoadResult, load_snapshot_documents
from models.loaders.extended_resources import is_extended_resource
from models.snapshot import Snapshot

Obj = dict[str, object]
SOURCE = "test.yaml"


def _metadata(
    name: str, namespace: str | None, labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None
) -> Obj:
    metadata: Obj = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return metadata


def node(
    name: str,
    *,
    cpu: object = "4",
    memory: object = "8Gi",
    gpus: int = 0,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool | None = None,
) -> Obj:
    allocatable: Obj = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    spec: Obj = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _metadata(name, None, labels, annotations),
        "spec": spec,
        "status": {"allocatable": allocatable},
    }


def container(cpu: object = "1", *, gpus: object = None, gpu_milli: object = None, **extra: object) -> Obj:
    requests: Obj = {"cpu": cpu} if cpu is not None else {}
    if gpus is not None:
        requests["nvidia.com/gpu"] = gpus
    if gpu_milli is not None:
        requests["batchplace.io/gpu-milli"] = gpu_milli
    requests.update(extra)
    resources: Obj = {"requests": requests}
    limits = {name: amount for name, amount in requests.items() if is_extended_resource(name)}
    if limits:
        resources["limits"] = limits  # the API server wants request == limit for these
    return {"name": "main", "image": "busybox", "resources": resources}


def pod(
    name: str,
    *,
    cpu: object = "1",
    gpus: object = None,
    gpu_milli: object = None,
    node: str | None = None,
    scheduler: str | None = "volcano",
    group: str | None = None,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    phase: str | None = None,
    containers: list[Obj] | None = None,
    **spec_extra: object,
) -> Obj:
    annotations = dict(annotations or {})
    if group is not None:
        annotations["scheduling.k8s.io/group-name"] = group
    spec: Obj = {
        "containers": containers if containers is not None else [container(cpu, gpus=gpus, gpu_milli=gpu_milli)]
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if node is not None:
        spec["nodeName"] = node
    spec.update(spec_extra)
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(name, namespace, labels, annotations),
        "spec": spec,
    }
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def task(
    name: str | None = "worker",
    *,
    replicas: object = 1,
    cpu: object = "1",
    gpus: object = None,
    min_available: object = None,
    depends_on: list[str] | None = None,
    annotations: Mapping[str, str] | None = None,
    **template_spec: object,
) -> Obj:
    template: Obj = {"spec": {"containers": [container(cpu, gpus=gpus)], **template_spec}}
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    result: Obj = {"replicas": replicas, "template": template}
    if name is not None:
        result["name"] = name
    if min_available is not None:
        result["minAvailable"] = min_available
    if depends_on is not None:
        result["dependsOn"] = {"name": depends_on}
    return result


def vcjob(
    name: str, *tasks: Obj, namespace: str | None = None, annotations: Mapping[str, str] | None = None, **spec: object
) -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _metadata(name, namespace, None, annotations),
        "spec": {"tasks": list(tasks) if tasks else [task()], **spec},
    }


def queue(name: str, *, status: Obj | None = None, **spec: object) -> Obj:
    obj: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def pod_group(
    name: str, *, namespace: str | None = None, annotations: Mapping[str, str] | None = None, **spec: object
) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": _metadata(name, namespace, None, annotations),
        "spec": spec,
    }


def xk8s_pod_group(
    name: str, *, labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None, **spec: object
) -> Obj:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": _metadata(name, None, labels, annotations),
        "spec": spec,
    }


def replica(
    replicas: object = 1,
    *,
    cpu: object = "1",
    gpus: object = None,
    scheduler: str | None = "batchplace",
    labels: Mapping[str, str] | None = None,
    **fields: object,
) -> Obj:
    """One entry of a PyTorchJob's `pytorchReplicaSpecs`; `replicas=None` leaves it unset."""
    spec: Obj = {"containers": [{**container(cpu, gpus=gpus), "name": "pytorch"}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    template: Obj = {"spec": spec}
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    result: Obj = {"template": template, **fields}
    if replicas is not None:
        result["replicas"] = replicas
    return result


def pytorch_job(
    name: str,
    replica_specs: Mapping[str, Obj] | None = None,
    *,
    namespace: str | None = None,
    annotations: Mapping[str, str] | None = None,
    run_policy: Obj | None = None,
    **spec: object,
) -> Obj:
    """A Kubeflow PyTorchJob; by default 1 master and 3 workers of 1 CPU, scheduler batchplace."""
    specs = dict(replica_specs) if replica_specs is not None else {"Master": replica(1), "Worker": replica(3)}
    body: Obj = {"pytorchReplicaSpecs": specs, **spec}
    if run_policy is not None:
        body["runPolicy"] = run_policy
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": _metadata(name, namespace, None, annotations),
        "spec": body,
    }


def priority_class(name: str, value: object, *, global_default: bool | None = None) -> Obj:
    obj: Obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if global_default is not None:
        obj["globalDefault"] = global_default
    return obj


def member(
    member_type: str = "Node",
    *,
    exact: str | None = None,
    regex: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Obj:
    selector: Obj = {}
    if exact is not None:
        selector["exactMatch"] = {"name": exact}
    if regex is not None:
        selector["regexMatch"] = {"pattern": regex}
    if labels is not None:
        selector["labelMatch"] = {"matchLabels": dict(labels)}
    return {"type": member_type, "selector": selector}


def hypernode(name: str, tier: object, *members: Obj) -> Obj:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": list(members)},
    }


def numatopology(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": "nodeinfo.volcano.sh/v1alpha1",
        "kind": "Numatopology",
        "metadata": {"name": name},
        "spec": spec,
    }


def load(*objects: object, scheduler_names: tuple[str, ...] = ("batchplace", "volcano")) -> LoadResult:
    documents = [(SOURCE, number, obj) for number, obj in enumerate(objects, start=1)]
    return load_snapshot_documents(documents, scheduler_names=scheduler_names)


def snapshot(*objects: object) -> Snapshot:
    return load(*objects).snapshot


def load_error(*objects: object) -> str:
    """The one-line message of the SnapshotError the objects raise."""
    with pytest.raises(SnapshotError) as caught:
        load(*objects)
    return str(caught.value)
