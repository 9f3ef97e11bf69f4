"""Expand a Kubeflow PyTorchJob (`kubeflow.org/v1`) the way Kubeflow's training operator
does with gang scheduling through scheduler-plugins: into one PodGroup and its pending pods.

Input: one PyTorchJob `RawObject`. Output: a `JobRecord` — a `PodGroupRecord` named as the
job, tasks `master` and `worker`, and one pending `PodRecord` per replica, `<job>-master-0`
and `<job>-worker-<index>`. What the operator does (kubeflow/training-operator v1.9,
`pkg/controller.v1/common/job.go`, `pod.go`, `control/podgroup_control.go`), and so this:
- replica types `Master` and `Worker` in `spec.pytorchReplicaSpecs`, matched ignoring case
  as its defaulting does; `replicas` defaults to 1; its webhook takes exactly one Master
  replica, and at least one Worker replica when there are Workers;
- the PodGroup (`scheduling.x-k8s.io`): `minMember` is `runPolicy.schedulingPolicy.
  minAvailable`, else every replica; `minResources` is `schedulingPolicy.minResources`;
  no per-task minimum (that PodGroup has none), so a task's `min_available` is 0;
- its pods carry the template's labels plus `training.kubeflow.org/operator-name`,
  `job-name`, `replica-type` (`master`, `worker`), `job-role: master` on the master, and
  `scheduling.x-k8s.io/pod-group`; the per-pod `replica-index`, and `job-role` on worker 0
  of a job without a Master, are left out, as a task's labels are those all its pods share
  (what other pods' selectors may count on before the pods exist).
Read for the PodGroup where the operator's PodGroup has no field for it: the queue is
`schedulingPolicy.queue` (what it writes into a Volcano PodGroup), else the job's
`scheduling.x-k8s.io/queue` or `volcano.sh/queue-name` annotation (it copies the job's
annotations onto its PodGroup, where `read_xk8s_pod_group` finds them), else "default"; the
priority class is `schedulingPolicy.priorityClass` (pods keep their own
`priorityClassName`); network topology comes from the job's annotations
`volcano.sh/network-topology-mode` and `volcano.sh/network-topology-highest-tier`
(`read_network_topology_annotations`), copied onto the PodGroup the same way. Once the
operator has created its PodGroup, which is read instead (`grouping`, rule 1), the topology
and an annotated queue come out the same; a queue set only in `schedulingPolicy` and the
priority class do not, as the operator writes neither onto a scheduler-plugins PodGroup.

A job is batchplace's when every replica's template names one of `scheduler_names` as its
`schedulerName`. A template without one is judged as a Pod without one, default-scheduler's:
the operator fills in its gang scheduler's name only when it runs with gang scheduling,
which the job does not say. A job of another scheduler is skipped silently, one whose
replicas disagree with a warning. A suspended job (`runPolicy.suspend: true`) has no pods
until it is resumed: skipped with a warning.

`runPolicy.activeDeadlineSeconds`: the operator ends the job that long after it started, and
no pod starts before its job, so it bounds each pod's run as a pod's own
`activeDeadlineSeconds` does; a replica's pods get the smaller of the two (rule
`reservation` backfills held nodes by it). Example: runPolicy 7200 and a template of 3600 →
3600; runPolicy 7200 alone → 7200. The pods the operator creates do not carry the job's:
once they exist they are read as they are.

Fields for the operator alone — `runPolicy.cleanPodPolicy`, `ttlSecondsAfterFinished`,
`backoffLimit`, `managedBy`, `elasticPolicy`, `nprocPerNode`, a
replica's `restartPolicy` — decide what happens once pods run or fail: accepted, and named
in one warning per job. Not modelled: the init container the operator adds to workers to
wait for the master's address (50m CPU, 10Mi by default, set in the operator's
configuration), which changes a worker's requests only when it asks for less; and
`schedulingPolicy.scheduleTimeoutSeconds`, not read on scheduler-plugins' PodGroup either.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from models.snapshot import DEFAULT_QUEUE, SnapshotLimits, Task

from .keys import (
    KUBEFLOW_JOB_NAME_LABEL,
    KUBEFLOW_JOB_ROLE_LABEL,
    KUBEFLOW_OPERATOR_NAME_LABEL,
    KUBEFLOW_REPLICA_TYPE_LABEL,
    XK8S_GROUP_LABEL,
    XK8S_QUEUE_KEYS,
)
from .kube_fields import read_resources
from .object_names import check_pytorch_job_name
from .raw import Metadata, RawObject, Warnings
from .workloads import (
    JobRecord,
    PodGroupRecord,
    PodRecord,
    PodTemplate,
    expanded_pods,
    read_network_topology_annotations,
    read_pod_template,
    read_preemptable,
    task_from_template,
    templates_are_ours,
    warn_job_controller_fields,
)

__all__ = ["read_pytorch_job"]

REPLICA_TYPES = ("Master", "Worker")  # the operator's order: the master leads
OPERATOR_NAME = "pytorchjob-controller"
JOB_CONTROLLER = "Kubeflow's training operator"
MAX_PODS = SnapshotLimits().max_pods
_RUN_POLICY_FIELDS = ("cleanPodPolicy", "ttlSecondsAfterFinished", "backoffLimit", "managedBy")
_SPEC_FIELDS = ("elasticPolicy", "nprocPerNode")


@dataclass(frozen=True)
class _Replicas:
    replica_type: str  # "Master" or "Worker", as the operator spells it
    replicas: int
    template: PodTemplate
    obj: RawObject

    @property
    def task(self) -> str:
        """`master`, `worker`: the pods' `replica-type` label and names, and the task."""
        return self.replica_type.lower()


def read_pytorch_job(
    obj: RawObject, meta: Metadata, *, scheduler_names: Collection[str], warnings: Warnings
) -> JobRecord | None:
    check_pytorch_job_name(meta.name, obj.location, obj.path)
    spec = obj.child("spec")
    run_policy = spec.child("runPolicy")
    policy = run_policy.child("schedulingPolicy")
    replica_specs = _replica_specs(spec)
    job_deadline_s = run_policy.optional_integer("activeDeadlineSeconds", minimum=1)
    replicas = [
        _read_replicas(replica_type, spec_obj, meta, job_deadline_s=job_deadline_s)
        for replica_type, spec_obj in replica_specs.items()
    ]
    total_replicas = sum(r.replicas for r in replicas)
    if total_replicas > MAX_PODS:
        message = f"the replicas total {total_replicas}, more than a snapshot's {MAX_PODS} pods"
        raise spec.error("pytorchReplicaSpecs", message)
    if not templates_are_ours([r.template for r in replicas], scheduler_names, obj, warnings):
        return None
    if run_policy.boolean("suspend", False):
        message = "spec.runPolicy.suspend is true: the operator creates no pods until it is resumed; skipped"
        warnings.add(obj.location, message)
        return None
    min_member = policy.integer("minAvailable", total_replicas, minimum=0)
    if min_member > total_replicas:
        raise policy.error("minAvailable", f"must be <= the total replicas ({total_replicas}), got {min_member}")
    fields = _job_controller_fields(spec, replicas)
    warn_job_controller_fields(obj, fields, controller=JOB_CONTROLLER, warnings=warnings)
    group = PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=policy.optional_string("queue") or _annotated_queue(meta),
        min_member=min_member,
        min_task_member={},
        min_resources=read_resources(policy, "minResources", role="quota") if policy.has("minResources") else None,
        priority_class=policy.optional_string("priorityClass"),
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False,
        network_topology=read_network_topology_annotations(obj, meta),
        location=obj.location,
    )
    return JobRecord(
        kind="PyTorchJob",
        controller="kubeflow",
        group=group,
        tasks=tuple(_task_model(r) for r in replicas),
        pods=tuple(pod for r in replicas for pod in _replica_pods(r, meta)),
    )


def _replica_specs(spec: RawObject) -> dict[str, RawObject]:
    """`spec.pytorchReplicaSpecs` by replica type as the operator spells it, Master first."""
    found: dict[str, RawObject] = {}
    specs = spec.child("pytorchReplicaSpecs")
    for key, _ in spec.entries("pytorchReplicaSpecs"):
        replica_type = next((known for known in REPLICA_TYPES if known.lower() == key.lower()), None)
        if replica_type is None:
            raise specs.error(key, f"not a PyTorchJob replica type; expected {' or '.join(REPLICA_TYPES)}")
        if replica_type in found:
            message = f"repeats replica type {replica_type} (the operator matches replica types ignoring case)"
            raise specs.error(key, message)
        found[replica_type] = specs.child(key)
    if not found:
        raise spec.error("pytorchReplicaSpecs", f"a PyTorchJob needs replicas: {' and/or '.join(REPLICA_TYPES)}")
    return {replica_type: found[replica_type] for replica_type in REPLICA_TYPES if replica_type in found}


def _read_replicas(replica_type: str, obj: RawObject, job_meta: Metadata, *, job_deadline_s: int | None) -> _Replicas:
    if replica_type == "Master":
        replicas = obj.integer("replicas", 1)
        if replicas != 1:
            raise obj.error("replicas", f"a PyTorchJob has exactly 1 Master replica, got {replicas}")
    else:
        replicas = obj.integer("replicas", 1, minimum=1)
    template_obj = obj.child("template")
    template_meta = template_obj.child("metadata")
    task = replica_type.lower()
    pod_meta = Metadata(
        name=task,
        namespace=job_meta.namespace,
        labels={**template_meta.string_map("labels"), **_operator_labels(job_meta, task, master=task == "master")},
        annotations=template_meta.string_map("annotations"),
        creation_time=job_meta.creation_time,
    )
    template = read_pod_template(template_obj, pod_meta)
    if job_deadline_s is not None:  # the job's deadline bounds each pod's run too (module docstring)
        own = template.active_deadline_s
        template = replace(template, active_deadline_s=job_deadline_s if own is None else min(own, job_deadline_s))
    return _Replicas(replica_type, replicas, template, obj)


def _operator_labels(job_meta: Metadata, task: str, *, master: bool) -> dict[str, str]:
    """The labels the operator puts on every pod of a replica type (module docstring), so
    other pods' selectors see the expanded pods as they would see the real ones."""
    labels = {
        KUBEFLOW_OPERATOR_NAME_LABEL: OPERATOR_NAME,
        KUBEFLOW_JOB_NAME_LABEL: job_meta.name,
        KUBEFLOW_REPLICA_TYPE_LABEL: task,
        XK8S_GROUP_LABEL: job_meta.name,
    }
    if master:
        labels[KUBEFLOW_JOB_ROLE_LABEL] = "master"
    return labels


def _annotated_queue(meta: Metadata) -> str:
    return next((value for key in XK8S_QUEUE_KEYS if (value := meta.annotations.get(key))), DEFAULT_QUEUE)


def _job_controller_fields(spec: RawObject, replicas: list[_Replicas]) -> list[str]:
    """`["spec.runPolicy.backoffLimit", "spec.pytorchReplicaSpecs.Worker.restartPolicy"]`:
    the fields set that only the operator reads."""
    run_policy = spec.child("runPolicy")
    fields = [f"spec.runPolicy.{key}" for key in _RUN_POLICY_FIELDS if run_policy.has(key)]
    fields += [f"spec.{key}" for key in _SPEC_FIELDS if spec.has(key)]
    replica_paths = [f"spec.pytorchReplicaSpecs.{r.obj.path[-1]}" for r in replicas if r.obj.has("restartPolicy")]
    fields += [f"{path}.restartPolicy" for path in replica_paths]
    return fields


def _task_model(replicas: _Replicas) -> Task:
    return task_from_template(replicas.template, replicas.obj.location, name=replicas.task, min_available=0)


def _replica_pods(replicas: _Replicas, job_meta: Metadata) -> list[PodRecord]:
    return expanded_pods(
        replicas.obj, job_meta, task=replicas.task, template=replicas.template, replicas=replicas.replicas, job="kubeflow"
    )
