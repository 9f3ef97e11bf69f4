"""One-line builders of raw Kubernetes objects (JSON as the API server sends them) for the
controller's pure-stage tests: `node("n1", cpu=4)`, `pod("p-0", group="pg", cpu=1)`."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def node(name: str, *, cpu: int = 4, memory: str = "8Gi", gpus: int = 0, labels: dict[str, str] | None = None) -> JsonObject:
    allocatable: dict[str, str] = {"cpu": str(cpu), "memory": memory, "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(
    name: str,
    *,
    namespace: str = "ns",
    cpu: str = "1",
    group: str | None = None,
    task: str | None = None,
    job: str | None = None,
    node_name: str | None = None,
    phase: str = "Pending",
    deleting: bool = False,
    scheduler: str = "batchplace",
    priority: int | None = None,
    priority_class: str | None = None,
    gpus: int = 0,
    app: str | None = None,
) -> JsonObject:
    annotations: dict[str, str] = {}
    labels: dict[str, str] = {}
    if group:
        annotations["scheduling.k8s.io/group-name"] = group
    if task:
        annotations["volcano.sh/task-spec"] = task
    if job:
        labels["volcano.sh/job-name"] = job
    if app:
        labels["app"] = app
    requests: dict[str, str] = {"cpu": cpu}
    resources: JsonObject = {"requests": requests}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}  # the API server wants a limit for an extended resource
    metadata: JsonObject = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "annotations": annotations, "labels": labels}
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    spec: JsonObject = {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x", "resources": resources}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": phase}}


def for_api(obj: JsonObject) -> JsonObject:
    """The object without the fields the API server sets itself (uid, status of pods)."""
    metadata = {k: v for k, v in obj["metadata"].items() if k not in ("uid", "deletionTimestamp")}
    body = {**obj, "metadata": metadata}
    if obj.get("kind") == "Pod":
        body.pop("status", None)
    return body


def pod_group(name: str, *, namespace: str = "ns", min_member: int = 1, queue: str = "default",
              min_task_member: dict[str, int] | None = None, status: JsonObject | None = None,
              priority_class: str | None = None) -> JsonObject:
    spec: JsonObject = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = min_task_member
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pg-{name}"},
        "spec": spec,
        "status": status or {},
    }


def vcjob(name: str, *, namespace: str = "ns", depends: dict[str, list[str]]) -> JsonObject:
    tasks = [{"name": task, "replicas": 1, **({"dependsOn": {"name": deps}} if deps else {})} for task, deps in depends.items()]
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"tasks": tasks}}


def priority_class(name: str, value: int) -> JsonObject:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def volcano_job_objects(
    job: str, *, namespace: str = "ns", min_available: int, tasks: dict[str, tuple[int, int | None]], cpu: str = "1"
) -> list[JsonObject]:
    """The PodGroup and pods Volcano's job controller creates for a vcjob whose tasks are
    `{name: (replicas, minAvailable or None)}`: the PodGroup named as the job with `minMember`
    the job's minAvailable and `minTaskMember` per task its minAvailable, else its replicas;
    pods `<job>-<task>-<index>` annotated with the group, the job and the task."""
    group = pod_group(
        job,
        namespace=namespace,
        min_member=min_available,
        min_task_member={task: replicas if minimum is None else minimum for task, (replicas, minimum) in tasks.items()},
    )
    pods = []
    for task, (replicas, _) in tasks.items():
        for index in range(replicas):
            member = pod(f"{job}-{task}-{index}", namespace=namespace, cpu=cpu, group=job, task=task, job=job)
            member["metadata"]["annotations"]["volcano.sh/job-name"] = job
            member["metadata"]["labels"]["volcano.sh/task-spec"] = task
            pods.append(member)
    return [group, *pods]


def hypernode(name: str, tier: int, *members: str, member_type: str = "Node") -> JsonObject:
    """A HyperNode whose members are named exactly."""
    selectors = [{"type": member_type, "selector": {"exactMatch": {"name": member}}} for member in members]
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": selectors},
    }


def pytorch_job_objects(
    job: str, *, namespace: str = "ns", workers: int, gpus: int = 1, annotations: dict[str, str] | None = None
) -> list[JsonObject]:
    """The scheduler-plugins PodGroup and pods Kubeflow's training operator creates for a
    PyTorchJob of 1 master and `workers` workers gang-scheduled through scheduler-plugins:
    the PodGroup named as the job, `minMember` every replica, the job's `annotations` copied
    onto it; pods `<job>-master-0`, `<job>-worker-<index>` labelled with the operator, the
    job, the replica type and index (`job-role: master` on the master) and
    `scheduling.x-k8s.io/pod-group`."""
    group: JsonObject = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": job, "namespace": namespace, "uid": f"uid-pg-{job}", "annotations": annotations or {}},
        "spec": {"minMember": 1 + workers},
        "status": {},
    }
    pods = []
    for task, index in [("master", 0), *(("worker", index) for index in range(workers))]:
        member = pod(f"{job}-{task}-{index}", namespace=namespace, cpu="4", gpus=gpus)
        member["metadata"]["labels"] = {
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/job-name": job,
            "training.kubeflow.org/replica-type": task,
            "training.kubeflow.org/replica-index": str(index),
            "scheduling.x-k8s.io/pod-group": job,
            **({"training.kubeflow.org/job-role": "master"} if task == "master" else {}),
        }
        pods.append(member)
    return [group, *pods]
