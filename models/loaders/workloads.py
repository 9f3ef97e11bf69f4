"""Readers for the workload side: v1 Pod, Volcano PodGroup (`scheduling.volcano.sh`) and
scheduler-plugins PodGroup (`scheduling.x-k8s.io`, as Kubeflow uses it), and the records a
job reader (`volcano_job`, `pytorch_job`) expands a job into.

Input: one `RawObject` per object. Output: `PodRecord` / `PodGroupRecord` / `JobRecord`,
not yet joined; `assemble` groups pods into their PodGroups and tasks.

Which pods count (DESIGN.md, "Pod"): a pod with `spec.nodeName` is running and takes
capacity whatever its scheduler; a pod without one is pending and is batchplace's only when
its `spec.schedulerName` is one of `scheduler_names` (others are ignored, silently, as
another scheduler's business). Pods in phase Succeeded or Failed are skipped.

A pod's task is its `volcano.sh/task-spec` annotation, else its `batchplace.io/task` label
or annotation, else its Kubeflow `training.kubeflow.org/replica-type` label (`master`,
`worker`): so the pods a training operator created fall into the tasks `pytorch_job` would
have expanded. A pod's creating job is its `volcano.sh/job-name` (Volcano's job
controller), else its `training.kubeflow.org/job-name` label (Kubeflow's training
operator): `grouping` reads such pods instead of expanding the job again.

A pod's PodGroup is its `scheduling.k8s.io/group-name` annotation (Volcano), else its
`scheduling.x-k8s.io/pod-group` label (scheduler-plugins), else its
`spec.schedulingGroup.podGroupName` (the Kubernetes Workload API, `kube_pod_group`); naming
none, a LeaderWorkerSet or JobSet pod carries its gang (`OwnerGang`) for `owner_gang_groups`,
its task `leader` / `worker` or the replicated job's name when nothing above names one.

Network topology of a scheduler-plugins PodGroup (which has no field for it) comes from
Volcano's annotations `volcano.sh/network-topology-mode` (hard | soft, default hard) and
`volcano.sh/network-topology-highest-tier`, the form Volcano's own PodGroup controller reads
from a pod; Kubeflow's training operator copies its job's annotations onto the PodGroup it
creates, so they are set on the PyTorchJob.

A pod's affinity is read whole: node affinity, required and preferred (`affinity_fields`),
pod (anti-)affinity and topology spread constraints (`pod_affinity_fields`, which names the
few parts it cannot read for the loader's warning).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from models.cached import cached_property
from models.dra import PodResourceClaim
from models.errors import FieldError, Location, PathPart
from models.node_affinity import NodeSelectorTerm, PreferredSchedulingTerm
from models.pod_affinity import InterPodConstraints
from models.snapshot import (
    DEFAULT_QUEUE,
    GPU,
    GPU_MILLI_PER_DEVICE,
    WILDCARD_HOST_IP,
    HostPort,
    NetworkTopology,
    PreemptionPolicy,
    ResourceList,
    SubGroup,
    Task,
    Toleration,
)

from .dra_objects import read_pod_resource_claims
from .network_topology_fields import read_network_topology
from .jobset import read_jobset_gang
from .leader_worker_set import read_leader_worker_set_gang
from .owner_gang import OwnerGang
from .affinity_fields import read_preferred_node_affinity, read_required_node_affinity
from .keys import (
    CHECKPOINT_ANNOTATION,
    GPUS_ANNOTATION,
    KUBEFLOW_JOB_NAME_LABEL,
    KUBEFLOW_REPLICA_TYPE_LABEL,
    NETWORK_TOPOLOGY_MODE_ANNOTATION,
    NETWORK_TOPOLOGY_TIER_ANNOTATION,
    NUMA_POLICY_ANNOTATION,
    OFFLINE_QOS_LEVELS,
    POD_QUEUE_ANNOTATION,
    PREEMPTABLE_ANNOTATION,
    QOS_LEVEL_ANNOTATION,
    TASK_KEY,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_JOB_NAME_KEY,
    VOLCANO_NUMA_POLICY_ANNOTATION,
    VOLCANO_TASK_ANNOTATION,
    XK8S_GROUP_LABEL,
    XK8S_QUEUE_KEYS,
)
from .kube_fields import (
    container_requests,
    pod_requests,
    read_preemption_policy,
    read_resources,
    read_sla_waiting,
    read_tolerations,
)
from .pod_affinity_fields import read_inter_pod
from .sub_group_policy import PodGroupReplica, SubGroupPolicyRecord, read_sub_group_policies
from .raw import Metadata, RawObject, Warnings, build_model
from .vgpu import VgpuAsk, vgpu_ask

__all__ = [
    "task_from_template",
    "expanded_pods",
    "pending_pod",
    "NumaPolicy",
    "JobController",
    "PodTemplate",
    "PodRecord",
    "PodGroupRecord",
    "JobRecord",
    "warn_job_controller_fields",
    "templates_are_ours",
    "read_pod_template",
    "read_pod",
    "read_volcano_pod_group",
    "read_xk8s_pod_group",
    "labelled_queue",
    "read_network_topology",
    "read_network_topology_annotations",
    "read_numa_policy",
    "parse_numa_policy",
    "read_preemptable",
    "GPUS_PATH",
]

NumaPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]
_NUMA_POLICIES: dict[str, NumaPolicy] = {
    "none": "none",
    "best-effort": "best-effort",
    "restricted": "restricted",
    "single-numa-node": "single-numa-node",
}
JobController = Literal["volcano", "kubeflow", "leaderworkerset", "jobset"]
"""Whose job created a pod: Volcano's job controller, Kubeflow's training operator, the
LeaderWorkerSet or the JobSet controller."""
_OWNER_CONTROLLERS: dict[str, JobController] = {"LeaderWorkerSet": "leaderworkerset", "JobSet": "jobset"}
_TRUE = ("1", "t", "T", "true", "TRUE", "True")  # what Go's strconv.ParseBool reads as true
_FINISHED_PHASES = ("Succeeded", "Failed")
KUBERNETES_DEFAULT_SCHEDULER = "default-scheduler"
GPUS_PATH: tuple[PathPart, ...] = ("metadata", "annotations", GPUS_ANNOTATION)


def _annotation_path(obj: RawObject, key: str) -> tuple[PathPart, ...]:
    return (*obj.path, "metadata", "annotations", key)


def read_numa_policy(obj: RawObject, meta: Metadata, *, fallback: NumaPolicy = "none") -> NumaPolicy:
    """`batchplace.io/numa-policy`, else Volcano's `volcano.sh/numa-topology-policy`, else
    `fallback` (a vcjob task's `topologyPolicy`)."""
    for key in (NUMA_POLICY_ANNOTATION, VOLCANO_NUMA_POLICY_ANNOTATION):
        text = meta.annotations.get(key)
        if text:
            return parse_numa_policy(text, obj.location, _annotation_path(obj, key))
    return fallback


def parse_numa_policy(text: str, location: Location, path: tuple[PathPart, ...]) -> NumaPolicy:
    policy = _NUMA_POLICIES.get(text)
    if policy is None:
        message = f"must be one of {', '.join(_NUMA_POLICIES)}, got {text!r}"
        raise FieldError(message, location=location, path=path)
    return policy


def read_preemptable(obj: RawObject, meta: Metadata) -> bool | None:
    """`volcano.sh/preemptable` as Volcano's `GetPodPreemptable` reads it (volcano-sh/volcano
    `pkg/scheduler/api/pod_info.go`): the annotation, else the label of that key; a value
    Go's `strconv.ParseBool` does not take means *not* preemptable (Volcano logs it and
    protects the pod — evicting what Volcano would keep is the worse mistake). None when
    neither is there, so the PodGroup's value (default true) applies. Example: label
    `volcano.sh/preemptable: "false"` → False; annotation `"true"` over that label → True;
    annotation `"maybe"` → False."""
    for tags in (meta.annotations, meta.labels):
        text = tags.get(PREEMPTABLE_ANNOTATION)
        if text is not None:
            return text in _TRUE
    return None


def read_network_topology_annotations(obj: RawObject, meta: Metadata) -> NetworkTopology | None:
    """Volcano's annotation form of `networkTopology` (see the module docstring): None when
    neither annotation is there. The mode is read ignoring case, as Volcano does; where
    Volcano logs a value it cannot read and falls back (mode hard, no tier), this is an
    error naming the annotation. Example: `volcano.sh/network-topology-highest-tier: "1"`
    alone → hard, tier 1."""
    mode_text = meta.annotations.get(NETWORK_TOPOLOGY_MODE_ANNOTATION)
    tier_text = meta.annotations.get(NETWORK_TOPOLOGY_TIER_ANNOTATION)
    if mode_text is None and tier_text is None:
        return None
    mode = (mode_text or "hard").lower()
    if mode not in ("hard", "soft"):
        path = _annotation_path(obj, NETWORK_TOPOLOGY_MODE_ANNOTATION)
        raise FieldError(f"must be hard or soft, got {mode_text!r}", location=obj.location, path=path)
    tier = None
    if tier_text is not None:
        if not tier_text.strip().isdigit() or int(tier_text) < 1:
            message = f"expected a HyperNode tier, an integer >= 1, got {tier_text!r}"
            path = _annotation_path(obj, NETWORK_TOPOLOGY_TIER_ANNOTATION)
            raise FieldError(message, location=obj.location, path=path)
        tier = int(tier_text)
    return NetworkTopology(mode="hard" if mode == "hard" else "soft", highest_tier_allowed=tier)


# ---- pod templates and pods ----


@dataclass(frozen=True)
class PodTemplate:
    """What a pod (or a vcjob task's template) asks of the scheduler."""

    requests: ResourceList
    node_selector: dict[str, str]
    required_node_affinity: tuple[NodeSelectorTerm, ...]
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...]
    tolerations: tuple[Toleration, ...]
    numa_policy: NumaPolicy
    scheduler_name: str | None
    priority: int | None
    priority_class: str | None
    preemptable: bool | None
    preemption_policy: PreemptionPolicy | None  # spec.preemptionPolicy; None: its PriorityClass's
    unread_fields: tuple[str, ...]  # scheduling fields set but not read, for the loader's warning
    labels: dict[str, str]
    inter_pod: InterPodConstraints
    vgpu: tuple[VgpuAsk, ...] = ()
    offline: bool = False  # annotation volcano.sh/qos-level: BE  # Volcano vGPU asks of the containers, not yet in `requests`
    active_deadline_s: float | None = None  # spec.activeDeadlineSeconds: the kubelet ends the pod this long after start
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates[].name: not to be scheduled while any remains
    host_ports: tuple[HostPort, ...] = ()  # containers[].ports[] with a hostPort (rule nodeports)
    resource_claims: tuple[PodResourceClaim, ...] = ()  # spec.resourceClaims: DRA claims it needs


def read_pod_template(obj: RawObject, meta: Metadata, *, numa_fallback: NumaPolicy = "none") -> PodTemplate:
    """`obj` holds `metadata` and `spec`: a Pod, or a vcjob task's `template`."""
    spec = obj.child("spec")
    if not spec.children("containers"):
        # Kubernetes rejects such a pod; a misspelled `containers` key reads the same way.
        raise spec.error("containers", "a pod needs at least one container (Kubernetes rejects a pod with none)")
    requests = pod_requests(spec)
    gpu_milli = requests.get(GPU, 0)
    if gpu_milli > GPU_MILLI_PER_DEVICE and gpu_milli % GPU_MILLI_PER_DEVICE:
        raise spec.error(
            "containers",
            f"the containers ask for {gpu_milli} milli-GPU in total: "
            "whole GPUs, or a fraction (1-999) of one GPU, not both",
        )
    inter_pod, unread = read_inter_pod(spec, meta.labels)
    return PodTemplate(
        requests=requests,
        node_selector=spec.string_map("nodeSelector"),
        required_node_affinity=read_required_node_affinity(spec),
        preferred_node_affinity=read_preferred_node_affinity(spec),
        tolerations=read_tolerations(spec),
        numa_policy=read_numa_policy(obj, meta, fallback=numa_fallback),
        scheduler_name=spec.optional_string("schedulerName"),
        priority=spec.optional_integer("priority"),
        priority_class=spec.optional_string("priorityClassName"),
        preemptable=read_preemptable(obj, meta),
        preemption_policy=read_preemption_policy(spec),
        unread_fields=unread,
        labels=meta.labels,
        inter_pod=inter_pod,
        vgpu=tuple(ask for c in spec.children("containers") if (ask := vgpu_ask(c, container_requests(c)))),
        offline=meta.annotations.get(QOS_LEVEL_ANNOTATION) in OFFLINE_QOS_LEVELS,
        active_deadline_s=spec.optional_integer("activeDeadlineSeconds", minimum=1),
        scheduling_gates=read_scheduling_gates(spec),
        host_ports=read_host_ports(spec),
        resource_claims=read_pod_resource_claims(spec),
    )


_PROTOCOLS = ("TCP", "UDP", "SCTP")


def read_host_ports(spec: RawObject) -> tuple[HostPort, ...]:
    """The host ports the pod's containers bind, as kube-scheduler's NodePorts plugin reads them:
    `containers[].ports[]` with a `hostPort` (0 or unset binds none), `protocol` TCP when unset,
    `hostIP` 0.0.0.0 (every address) when unset; sidecars (init containers with `restartPolicy:
    Always`, which run beside the app) bind theirs too, other init containers have exited by
    then and bind none. A `hostNetwork` pod binds each container port
    on the node: the API server defaults `hostPort` to `containerPort` there. Listed once each,
    in first-seen order."""
    host_network = spec.boolean("hostNetwork", False)
    found: list[HostPort] = []
    sidecars = [init for init in spec.children("initContainers") if init.optional_string("restartPolicy") == "Always"]
    for container in (*spec.children("containers"), *sidecars):
        for port in container.children("ports"):
            number = port.optional_integer("hostPort", minimum=0)
            if number is None and host_network:
                number = port.optional_integer("containerPort", minimum=0)
            if not number:
                continue
            if number > 65535:
                raise port.error("hostPort", f"{number} is not a port number (1-65535)")
            protocol = port.string("protocol", "TCP") or "TCP"
            if protocol not in _PROTOCOLS:
                raise port.error("protocol", f"{protocol!r} is not one of {', '.join(_PROTOCOLS)}")
            host_ip = port.string("hostIP", WILDCARD_HOST_IP) or WILDCARD_HOST_IP
            host_port = HostPort(port=number, protocol=protocol, host_ip=host_ip)  # type: ignore[arg-type]
            if host_port not in found:
                found.append(host_port)
    return tuple(found)


def read_scheduling_gates(spec: RawObject) -> tuple[str, ...]:
    """`spec.schedulingGates` as its names, in order (rule `gated`). A gate without a name, or a
    name twice, is an input error as the API server's validation makes it."""
    names: list[str] = []
    for index, gate in enumerate(spec.children("schedulingGates")):
        name = gate.required_string("name")
        if name in names:
            raise spec.error("schedulingGates", f"item {index}: gate {name!r} is listed twice (Kubernetes: Duplicate value)")
        names.append(name)
    return tuple(names)


@dataclass(frozen=True)
class PodRecord:
    """A pod as read, before it joins its PodGroup and task."""

    namespace: str
    name: str
    template: PodTemplate
    node: str | None
    group_name: str | None
    task_name: str | None
    job: tuple[JobController, str] | None  # the job that created the pod: (controller, job name)
    queue_name: str | None
    gpu_indices: tuple[int, ...] | None
    creation_time: float | None
    start_time: float | None
    location: Location
    path: tuple[PathPart, ...] = ()
    checkpoint_time: float | None = None  # `batchplace.io/last-checkpoint`
    scheduled_reason: str | None = None  # a pending pod's PodScheduled condition reason
    owner_gang: OwnerGang | None = None  # its LeaderWorkerSet group / JobSet Job (`owner_gang_groups`)
    replica: PodGroupReplica | None = None  # the Workload API pod group replica it names (`sub_groups`)
    sub_group: str | None = None  # the sub-group of its PodGroup it is in (`PodGroupRecord.sub_groups`)

    @cached_property
    def key(self) -> str:
        """`namespace/name`, made once: the assembly looks pods up by it on every pass."""
        return f"{self.namespace}/{self.name}"

    @property
    def pending(self) -> bool:
        return self.node is None


def read_pod(obj: RawObject, meta: Metadata, *, scheduler_names: Collection[str]) -> PodRecord | None:
    """None for a finished pod, and for a pending pod another scheduler places."""
    owner_gang = read_leader_worker_set_gang(obj, meta) or read_jobset_gang(obj, meta)
    spec = obj.child("spec")
    status = obj.child("status")
    if status.optional_string("phase") in _FINISHED_PHASES:
        return None
    node = spec.optional_string("nodeName")
    template = read_pod_template(obj, meta)
    if node is not None and template.scheduling_gates:
        raise spec.error("schedulingGates", "a pod with nodeName set has no scheduling gates (Kubernetes refuses both)")
    if node is None and (template.scheduler_name or KUBERNETES_DEFAULT_SCHEDULER) not in scheduler_names:
        return None
    replica_link = _workload_replica(spec)
    return PodRecord(
        namespace=meta.namespace,
        name=meta.name,
        template=template,
        node=node,
        group_name=(
            meta.tag(VOLCANO_GROUP_ANNOTATION)
            or meta.tag(XK8S_GROUP_LABEL)
            or spec.child("schedulingGroup").optional_string("podGroupName")
            or (replica_link[0] if replica_link else None)
        ),
        task_name=(
            meta.annotations.get(VOLCANO_TASK_ANNOTATION)
            or meta.tag(TASK_KEY)
            or meta.labels.get(KUBEFLOW_REPLICA_TYPE_LABEL)
            or (owner_gang.task if owner_gang else None)
        ),
        job=_creating_job(meta) or ((_OWNER_CONTROLLERS[owner_gang.kind], owner_gang.owner) if owner_gang else None),
        queue_name=meta.annotations.get(POD_QUEUE_ANNOTATION),
        gpu_indices=_gpu_indices(obj, meta),
        creation_time=meta.creation_time,
        start_time=status.timestamp("startTime"),
        location=obj.location,
        path=obj.path,
        checkpoint_time=obj.child("metadata").child("annotations").timestamp(CHECKPOINT_ANNOTATION),
        scheduled_reason=_scheduled_reason(status) if node is None else None,
        owner_gang=owner_gang,
        replica=replica_link[1] if replica_link else None,
    )


def _workload_replica(spec: RawObject) -> tuple[str, PodGroupReplica] | None:
    """The Kubernetes Workload API pod group a pod names, with the group it joins: its
    `spec.schedulingGroup{podGroupName, podGroupReplicaKey}` (a PodGroup object; a replica key
    only when set, `sub_groups` says why), else its `spec.workloadRef{name, podGroup,
    podGroupReplicaKey}` (a pod group inside a Workload, which is the group it joins). Example:
    `workloadRef: {name: llm, podGroup: decode, podGroupReplicaKey: "1"}` → group `llm`,
    replica (decode, 1)."""
    group = spec.child("schedulingGroup")
    pod_group = group.optional_string("podGroupName")
    if pod_group is not None:
        key = group.optional_string("podGroupReplicaKey")
        return (pod_group, PodGroupReplica(pod_group=pod_group, key=key, path=group.path)) if key else None
    if not spec.has("workloadRef"):
        return None
    ref = spec.child("workloadRef")
    return ref.required_string("name"), PodGroupReplica(
        pod_group=ref.required_string("podGroup"), key=ref.optional_string("podGroupReplicaKey"), path=ref.path
    )


def _scheduled_reason(status: RawObject) -> str | None:
    """The reason of a pending pod's PodScheduled condition ("Unschedulable",
    "QueueQuotaExceeded", …), None when it has none: what the dashboard shows of it."""
    for condition in status.children("conditions"):
        if condition.optional_string("type") == "PodScheduled":
            return condition.optional_string("reason")
    return None


def _creating_job(meta: Metadata) -> tuple[JobController, str] | None:
    volcano_job = meta.tag(VOLCANO_JOB_NAME_KEY)
    if volcano_job:
        return ("volcano", volcano_job)
    kubeflow_job = meta.labels.get(KUBEFLOW_JOB_NAME_LABEL)
    if kubeflow_job:
        return ("kubeflow", kubeflow_job)
    return None


def _gpu_indices(obj: RawObject, meta: Metadata) -> tuple[int, ...] | None:
    """`batchplace.io/gpus: "0,1"` → `(0, 1)`; None when absent."""
    text = meta.annotations.get(GPUS_ANNOTATION)
    if text is None or not text.strip():
        return None
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        message = f"expected comma-separated GPU indices such as 0,1, got {text!r}"
        raise FieldError(message, location=obj.location, path=(*obj.path, *GPUS_PATH))
    indices = tuple(int(part) for part in parts)
    if len(set(indices)) != len(indices):
        raise FieldError(f"lists a GPU twice: {text!r}", location=obj.location, path=(*obj.path, *GPUS_PATH))
    return indices


# ---- PodGroups ----


@dataclass(frozen=True)
class PodGroupRecord:
    """A PodGroup as read; its tasks come later, from its pods or from its vcjob."""

    namespace: str
    name: str
    queue: str
    min_member: int
    min_task_member: dict[str, int]
    min_resources: ResourceList | None
    priority_class: str | None
    creation_time: float
    preemptable: bool
    network_topology: NetworkTopology | None
    location: Location
    priority: int | None = None  # set for a one-pod PodGroup whose pod states `spec.priority`
    sla_waiting_s: float | None = None  # `sla-waiting-time`
    sub_group_policies: tuple[SubGroupPolicyRecord, ...] = ()  # Volcano `subGroupPolicy` (`sub_groups`)
    replica_min_member: Mapping[str, int] = field(default_factory=dict)  # Workload API pod group → its gang minimum
    template_ref: tuple[str, str] | None = None  # (Workload, template) whose policy it takes (`kube_workload`)
    sub_groups: tuple[SubGroup, ...] = ()  # gangs inside the gang (`SubGroup`)
    min_sub_groups: dict[str, int] = field(default_factory=dict)  # policy → sub-groups that must start
    sub_group_label_keys: dict[str, str] = field(default_factory=dict)
    """sub-group name → the node label key it must sit inside one value of (an exclusive
    topology), made a HyperNode tier once nodes and HyperNodes are known (`exclusive_topology`)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def read_volcano_pod_group(obj: RawObject, meta: Metadata, *, warnings: Warnings) -> PodGroupRecord:
    spec = obj.child("spec")
    min_task_member = spec.child("minTaskMember")
    return PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=spec.string("queue", DEFAULT_QUEUE),
        min_member=spec.integer("minMember", 0, minimum=0),
        min_task_member={
            task: min_task_member.integer(task, 0, minimum=0) for task, _ in spec.entries("minTaskMember")
        },
        min_resources=read_resources(spec, "minResources", role="quota") if spec.has("minResources") else None,
        priority_class=spec.optional_string("priorityClassName"),
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False,
        network_topology=read_network_topology(spec, warnings=warnings),
        location=obj.location,
        sla_waiting_s=read_sla_waiting(obj, meta, warnings),
        sub_group_policies=read_sub_group_policies(spec, warnings=warnings),
    )


def labelled_queue(meta: Metadata) -> str:
    """The queue of a PodGroup whose API has no queue field (scheduler-plugins', the Kubernetes
    Workload API's): the label or annotation `scheduling.x-k8s.io/queue`, else
    `volcano.sh/queue-name`, else "default"."""
    return next((value for key in XK8S_QUEUE_KEYS if (value := meta.tag(key))), DEFAULT_QUEUE)


def read_xk8s_pod_group(obj: RawObject, meta: Metadata, *, warnings: Warnings) -> PodGroupRecord:
    """scheduler-plugins' PodGroup: no queue field, so a label or annotation names one; no
    network topology field, so Volcano's annotations give one (module docstring)."""
    spec = obj.child("spec")
    queue = labelled_queue(meta)
    return PodGroupRecord(
        namespace=meta.namespace,
        name=meta.name,
        queue=queue,
        min_member=spec.integer("minMember", 0, minimum=0),
        min_task_member={},
        min_resources=read_resources(spec, "minResources", role="quota") if spec.has("minResources") else None,
        priority_class=None,
        creation_time=meta.creation_time or 0.0,
        preemptable=read_preemptable(obj, meta) is not False,
        network_topology=read_network_topology_annotations(obj, meta),
        location=obj.location,
        sla_waiting_s=read_sla_waiting(obj, meta, warnings),
    )


# ---- jobs ----


@dataclass(frozen=True)
class JobRecord:
    """A job expanded into the PodGroup, tasks and pending pods its controller would create."""

    kind: str  # for messages: "vcjob", "PyTorchJob"
    controller: JobController  # pods it created say so (`PodRecord.job`): then it is live
    group: PodGroupRecord
    tasks: tuple[Task, ...]
    pods: tuple[PodRecord, ...]


def warn_job_controller_fields(obj: RawObject, fields: Sequence[str], *, controller: str, warnings: Warnings) -> None:
    """One warning naming the fields of a job that only its job controller reads (retries,
    clean-up, lifecycle policies): accepted, so a job loads as its users submit it, and
    named, so nobody takes them for scheduling rules. Example: `spec.plugins (ssh, svc),
    spec.tasks[mpimaster].policies are for Volcano's job controller; placement does not
    read them`."""
    if not fields:
        return
    verb, pronoun = ("is", "it") if len(fields) == 1 else ("are", "them")
    message = f"{', '.join(fields)} {verb} for {controller}; placement does not read {pronoun}"
    warnings.add(obj.location, message, like=f"fields for {controller} not read")


def templates_are_ours(
    templates: Sequence[PodTemplate], scheduler_names: Collection[str], obj: RawObject, warnings: Warnings
) -> bool:
    """Whether a job whose pods come from `templates` is batchplace's: every template names one
    of `scheduler_names` (none named: Kubernetes' default-scheduler). A job of another
    scheduler is skipped silently; one whose templates disagree with a warning, as a gang
    cannot be split between schedulers."""
    schedulers = {template.scheduler_name or KUBERNETES_DEFAULT_SCHEDULER for template in templates}
    ours = {name for name in schedulers if name in scheduler_names}
    if ours and ours != schedulers:
        warnings.add(
            obj.location,
            f"replicas name different schedulers ({', '.join(sorted(schedulers))}); a gang cannot be split "
            "between schedulers, so the job is skipped",
        )
        return False
    return bool(ours)


def task_from_template(
    template: PodTemplate,
    location: Location,
    *,
    name: str,
    min_available: int,
    labels: Mapping[str, str] | None = None,
    depends_on: Sequence[str] = (),
) -> Task:
    """The `Task` a pod template stands for: what its pods ask of placement. `labels`: the
    ones the task's pods all share (the template's by default)."""
    return build_model(
        Task,
        location,
        name=name,
        min_available=min_available,
        requests=template.requests,
        node_selector=template.node_selector,
        required_node_affinity=template.required_node_affinity,
        preferred_node_affinity=template.preferred_node_affinity,
        tolerations=template.tolerations,
        depends_on=tuple(depends_on),
        numa_policy=template.numa_policy,
        offline=template.offline,
        active_deadline_s=template.active_deadline_s,
        labels=template.labels if labels is None else labels,
        inter_pod=template.inter_pod,
        host_ports=template.host_ports,
    )


def expanded_pods(
    obj: RawObject, job_meta: Metadata, *, task: str, template: PodTemplate, replicas: int, job: JobController
) -> list[PodRecord]:
    """The pending pods a job controller creates for one task: `<job>-<task>-<index>`."""
    return [
        pending_pod(obj, job_meta, name=f"{job_meta.name}-{task}-{index}", task=task, template=template, job=job)
        for index in range(replicas)
    ]


def pending_pod(
    obj: RawObject,
    job_meta: Metadata,
    *,
    name: str,
    task: str,
    template: PodTemplate,
    job: JobController,
    sub_group: str | None = None,
    path: tuple[PathPart, ...] | None = None,
) -> PodRecord:
    """One pending pod a job controller would create, in the job's PodGroup (named as the
    job); `path`: where its template sits (the job's `template` by default)."""
    return PodRecord(
        namespace=job_meta.namespace,
        name=name,
        template=template,
        node=None,
        group_name=job_meta.name,
        task_name=task,
        job=(job, job_meta.name),
        queue_name=None,
        gpu_indices=None,
        creation_time=job_meta.creation_time,
        start_time=None,
        location=obj.location,
        path=(*obj.path, "template") if path is None else path,
        sub_group=sub_group,
    )
