"""Pods as the LeaderWorkerSet and JobSet controllers (and their pod webhooks) create them:
their labels, annotations and, with exclusive placement, the injected pod affinity — written
from kubernetes-sigs/lws `api/leaderworkerset/v1` and `pkg/webhooks/pod_webhook.go`, and
kubernetes-sigs/jobset `api/jobset/v1alpha2` and its pod webhook — and a Kubernetes Workload
API PodGroup (`scheduling.k8s.io`) with the pods that name it by `spec.schedulingGroup`."""

from __future__ import annotations

import hashlib

from tests.models._kube_builders import Obj, container, pod

LWS = "leaderworkerset.sigs.k8s.io"
JOBSET = "jobset.sigs.k8s.io"


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _exclusive_affinity(key_label: str, key: str, topology_key: str) -> Obj:
    """The leader's required affinity to its own gang and anti-affinity to the others, on
    `topology_key`, as both webhooks inject it."""
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": key_label, "operator": "In", "values": [key]}]},
                    "topologyKey": topology_key,
                }
            ]
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": key_label, "operator": "Exists"},
                            {"key": key_label, "operator": "NotIn", "values": [key]},
                        ]
                    },
                    "topologyKey": topology_key,
                }
            ]
        },
    }


def lws_pod(
    set_name: str,
    group: int,
    worker: int,
    *,
    size: object,
    gpus: int = 1,
    exclusive: str | None = None,
    node: str | None = None,
    node_selector: dict[str, str] | None = None,
    inject_affinity: bool = True,
    namespace: str | None = None,
) -> Obj:
    """Leader (`worker` 0) `<set>-<group>` or worker `<set>-<group>-<worker>` of a LeaderWorkerSet."""
    leader_name = f"{set_name}-{group}"
    name = leader_name if worker == 0 else f"{leader_name}-{worker}"
    group_key = _hash(f"{namespace or 'default'}/{leader_name}")
    labels = {
        f"{LWS}/name": set_name,
        f"{LWS}/group-index": str(group),
        f"{LWS}/worker-index": str(worker),
        f"{LWS}/group-key": group_key,
        f"{LWS}/template-revision-hash": "5c7f8d9b6",
    }
    annotations = {f"{LWS}/size": str(size)}
    if worker:
        annotations[f"{LWS}/leader-name"] = leader_name
    extra: Obj = {}
    if exclusive is not None:
        annotations[f"{LWS}/exclusive-topology"] = exclusive
        if worker == 0 and inject_affinity:
            extra["affinity"] = _exclusive_affinity(f"{LWS}/group-key", group_key, exclusive)
    if node_selector:
        extra["nodeSelector"] = node_selector
    return pod(
        name,
        cpu="1",
        gpus=gpus,
        scheduler="batchplace",
        node=node,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        **extra,
    )


def jobset_pod(
    jobset: str,
    replicated_job: str,
    job_index: int,
    completion_index: int,
    *,
    gpus: int = 1,
    exclusive: str | None = None,
    node: str | None = None,
    node_selector: dict[str, str] | None = None,
    inject_affinity: bool = True,
) -> Obj:
    """Pod `<jobset>-<rjob>-<job index>-<completion index>-<suffix>` of a JobSet's indexed Job."""
    job_name = f"{jobset}-{replicated_job}-{job_index}"
    job_key = hashlib.sha256(f"default/{job_name}".encode()).hexdigest()
    tags = {
        f"{JOBSET}/jobset-name": jobset,
        f"{JOBSET}/replicatedjob-name": replicated_job,
        f"{JOBSET}/job-index": str(job_index),
        f"{JOBSET}/job-key": job_key,
        f"{JOBSET}/replicatedjob-replicas": "2",
        "batch.kubernetes.io/job-name": job_name,
        "batch.kubernetes.io/job-completion-index": str(completion_index),
    }
    labels = dict(tags)
    annotations = dict(tags)
    extra: Obj = {}
    if exclusive is not None:
        annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"] = exclusive
        if completion_index == 0 and inject_affinity:
            extra["affinity"] = _exclusive_affinity(f"{JOBSET}/job-key", job_key, exclusive)
    if node_selector:
        extra["nodeSelector"] = node_selector
    return pod(
        f"{job_name}-{completion_index}-x7k2p",
        cpu="1",
        gpus=gpus,
        scheduler="batchplace",
        node=node,
        labels=labels,
        annotations=annotations,
        **extra,
    )


def kube_pod_group(name: str, *, version: str = "v1beta1", **spec: object) -> Obj:
    spec.setdefault("schedulingPolicy", {"gang": {"minCount": 2}})
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"workloadRef": {"workloadName": "train", "templateName": "workers"}, **spec},
    }


def member_pod(name: str, group: str, **extra: object) -> Obj:
    return pod(name, scheduler="batchplace", schedulingGroup={"podGroupName": group}, **extra)  # type: ignore[arg-type]


def _pod_template(gpus: int, *, scheduler: str = "batchplace", annotations: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"labels": {"app": "llm"}, "annotations": dict(annotations or {})},
        "spec": {"schedulerName": scheduler, "containers": [container("1", gpus=gpus)]},
    }


def lws_object(
    name: str,
    *,
    replicas: int | None = 2,
    size: object = 3,
    leader_gpus: int | None = None,
    worker_gpus: int = 1,
    exclusive: str | None = None,
    scheduler: str = "batchplace",
    **spec: object,
) -> Obj:
    """A LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`) as a user submits it; a leader
    template only when `leader_gpus` is given."""
    template: Obj = {"size": size, "workerTemplate": _pod_template(worker_gpus, scheduler=scheduler)}
    if leader_gpus is not None:
        template["leaderTemplate"] = _pod_template(leader_gpus, scheduler=scheduler)
    body: Obj = {"leaderWorkerTemplate": template, **spec}
    if replicas is not None:
        body["replicas"] = replicas
    annotations = {f"{LWS}/exclusive-topology": exclusive} if exclusive else {}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": body,
    }


def replicated_job(
    name: str, *, replicas: int = 1, parallelism: int | None = 1, gpus: int = 1, exclusive: str | None = None, **job_spec: object
) -> Obj:
    """One `spec.replicatedJobs[]` entry of a JobSet."""
    spec: Obj = {"template": _pod_template(gpus), **job_spec}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    annotations = {"alpha.jobset.sigs.k8s.io/exclusive-topology": exclusive} if exclusive else {}
    return {"name": name, "replicas": replicas, "template": {"metadata": {"annotations": annotations}, "spec": spec}}


def jobset_object(name: str, *jobs: Obj, exclusive: str | None = None, **spec: object) -> Obj:
    """A JobSet (`jobset.x-k8s.io/v1alpha2`) as a user submits it."""
    annotations = {"alpha.jobset.sigs.k8s.io/exclusive-topology": exclusive} if exclusive else {}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"replicatedJobs": list(jobs), **spec},
    }
