"""A LeaderWorkerSet's and a JobSet's pods as their controllers and pod webhooks create them,
for `seed_objects` (`batchplace demo --live`): the API server here serves neither CRD, and
the controller never reads the parent objects, only the pods.

LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`): `spec.replicas` groups of
`spec.leaderWorkerTemplate.size` pods — leader `<set>-<group>` from `leaderTemplate` (else
`workerTemplate`), workers `<set>-<group>-<worker>` (worker 1 … size − 1) — labelled
`leaderworkerset.sigs.k8s.io/{name,group-index,worker-index,group-key}` (the group key: the
SHA-1 of `<namespace>/<leader name>`), annotated with the group's `size`, the workers with
their `leader-name`, and the set's `exclusive-topology` annotation copied onto each.

JobSet (`jobset.x-k8s.io/v1alpha2`): per replicated Job, `replicas` indexed Jobs
`<jobset>-<replicated job>-<job index>` of `parallelism` pods each,
`<job>-<completion index>-<suffix>`, labelled and annotated
`jobset.sigs.k8s.io/{jobset-name,replicatedjob-name,replicatedjob-replicas,job-index,job-key}`
(the job key: the SHA-1 of `<namespace>/<job>`) with the batch Job controller's
`batch.kubernetes.io/job-name` and `job-completion-index`, and the JobSet's (or the
replicated Job's) `alpha.jobset.sigs.k8s.io/exclusive-topology`.

Not reproduced: what the two pod webhooks add for exclusive placement — the leader's required
pod affinity to its own group and anti-affinity to the others on the topology key, the
followers created only once the leader is scheduled, with its domain as a node selector.
Every pod is created at once, carrying the exclusive-topology annotation, from which
batchplace keeps each group whole inside one domain of that key's tier (the group's
sub-group topology); the live tests (`tests/controller/test_sub_groups_live.py`) bind pods
that do carry the webhooks' affinity.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

__all__ = ["leader_worker_set_pods", "jobset_pods", "LEADER_WORKER_SET", "JOBSET"]

JsonObject = dict[str, Any]
LEADER_WORKER_SET = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
_LWS = "leaderworkerset.sigs.k8s.io"
_JS = "jobset.sigs.k8s.io"
_JS_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"


def leader_worker_set_pods(lws: JsonObject, *, namespace: str) -> list[JsonObject]:
    """The pods of LeaderWorkerSet `lws` (module docstring), in group order, leader first."""
    name = lws["metadata"]["name"]
    exclusive = (lws["metadata"].get("annotations") or {}).get(f"{_LWS}/exclusive-topology")
    spec = lws.get("spec") or {}
    template = spec.get("leaderWorkerTemplate") or {}
    size = int(template.get("size", 1))
    worker_template = template.get("workerTemplate") or {}
    leader_template = template.get("leaderTemplate") or worker_template
    pods = []
    for group in range(int(spec.get("replicas", 1))):
        leader = f"{name}-{group}"
        key = _sha1(f"{namespace}/{leader}")
        for worker in range(size):
            labels = {f"{_LWS}/name": name, f"{_LWS}/group-index": str(group), f"{_LWS}/worker-index": str(worker),
                      f"{_LWS}/group-key": key}
            annotations = {f"{_LWS}/size": str(size), **({f"{_LWS}/leader-name": leader} if worker else {})}
            if exclusive:
                annotations[f"{_LWS}/exclusive-topology"] = exclusive
            pod = _pod(leader_template if worker == 0 else worker_template, leader if worker == 0 else f"{leader}-{worker}",
                       namespace, labels, annotations)
            pods.append(pod)
    return pods


def jobset_pods(jobset: JsonObject, *, namespace: str) -> list[JsonObject]:
    """The pods of JobSet `jobset` (module docstring), Job by Job."""
    name = jobset["metadata"]["name"]
    set_exclusive = (jobset["metadata"].get("annotations") or {}).get(_JS_EXCLUSIVE)
    pods = []
    for replicated in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        job_template = replicated.get("template") or {}
        exclusive = ((job_template.get("metadata") or {}).get("annotations") or {}).get(_JS_EXCLUSIVE) or set_exclusive
        job_spec = job_template.get("spec") or {}
        replicas = int(replicated.get("replicas", 1))
        for job_index in range(replicas):
            job = f"{name}-{replicated['name']}-{job_index}"
            key = _sha1(f"{namespace}/{job}")
            for completion in range(int(job_spec.get("parallelism", 1))):
                tags = {f"{_JS}/jobset-name": name, f"{_JS}/replicatedjob-name": replicated["name"],
                        f"{_JS}/replicatedjob-replicas": str(replicas), f"{_JS}/job-index": str(job_index),
                        f"{_JS}/job-key": key, "batch.kubernetes.io/job-name": job,
                        "batch.kubernetes.io/job-completion-index": str(completion)}
                annotations = {**tags, **({_JS_EXCLUSIVE: exclusive} if exclusive else {})}
                suffix = _sha1(f"{job}-{completion}")[:5]
                pod = _pod(job_spec.get("template") or {}, f"{job}-{completion}-{suffix}", namespace, tags, annotations)
                pods.append(pod)
    return pods


def _pod(template: JsonObject, name: str, namespace: str, labels: JsonObject, annotations: JsonObject) -> JsonObject:
    template = copy.deepcopy(template)
    metadata = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**(metadata.get("labels") or {}), **labels},
            "annotations": {**(metadata.get("annotations") or {}), **annotations},
        },
        "spec": template.get("spec") or {},
    }


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()
