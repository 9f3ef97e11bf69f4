"""observe: the caches' raw objects → one validated `Snapshot` and what acting on it needs.

Input: a `ClusterView` (raw JSON objects per kind, as the informers hold them) and the
controller's `AssumedState` (binds and evictions it made that the watch may not show yet).
Output: an `Observation`. Pure: no I/O, no clock; the same view gives the same observation.

What happens on the way, in order:
1. Pods being deleted (`metadata.deletionTimestamp`) and pods this controller evicted are
   *terminating*: left out of the Snapshot — their resources are about to be free, and the
   solver may plan on them (Volcano's "pipelined" allocation) — but listed, with their
   requests, so `plan` binds nothing onto them until they are gone.
2. A pending pod this controller bound in an earlier cycle is given that node (and GPU
   indices) here, so it is never placed twice, whatever the watch has delivered.
3. vcjob `dependsOn`: the PodGroup and pods a vcjob's controller creates do not carry it,
   so it is read from the Job (`volcano.sh/job-name` on the pods). A Snapshot pod is
   "running" as soon as it is bound, but a dependency counts only once the kubelet says
   `Running` (as Volcano's job controller waits for), so while every pod of a dependency is
   bound and some are not yet Running, the dependent task's pending pods are held out of
   the cycle (`Observation.held`). While some dependency pods still wait for a node, the
   dependency is added to the Snapshot's task and the solver keeps the dependents pending
   with its `dependency:` reason.
4. `models.loaders.load_snapshot_documents` builds the Snapshot. One bad object must not
   stop the cluster's scheduling: an object the loader rejects — a quantity above its
   ceiling (`memory: 10E` on a pod, `cpu: "1e16"` on a node), a malformed field — is left
   out (`rejected`, with the loader's message and field path) and the rest is loaded again.
5. Overcommitted nodes: a bound pod's resources are in use whatever a scheduler thinks, so
   none is left out of the count. When bound pods do not fit their node together — a GPU
   index held twice, more GPUs than the node has (the loader refuses one of them), or
   requests above its allocatable — `controller.repair` chooses which to evict (those bound
   last, and the rest of a gang that cuts below its minMember; never another scheduler's
   pod): `repairs`. The Snapshot is
   built again without them and they are listed as terminating, so their room is counted
   until they are gone, and `plan` evicts them first.

Not promised: that the Snapshot is fresh — it is as current as the caches.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.dra_claims import ClaimIndex, claim_index, claim_statuses
from controller.informer import object_key
from controller.kinds import KUBE_PODGROUPS, KUBE_PODGROUPS_V1ALPHA2, VOLCANO_PODGROUPS, XK8S_PODGROUPS, ResourceKind
from controller.reads import CycleReads
from controller.repair import HeldPod, RepairEviction, counted, over_allocatable, repair_evictions
from controller.sub_group_status import SUB_GROUPS_ANNOTATION
from models.errors import Location, SnapshotError, format_path
from models.loaders import load_snapshot_documents
from models.loaders.keys import GPUS_ANNOTATION, VOLCANO_JOB_NAME_KEY, VOLCANO_TASK_ANNOTATION
from models.loaders.raw import RawObject, read_metadata
from models.loaders.step_memo import NO_STEP_MEMO, StepMemo
from models.loaders.workloads import read_pod
from models.snapshot import NodeName, Pod, PodGroup, PodGroupKey, PodKey, ResourceList, Snapshot
from solver.reasons import dependency_starting

__all__ = [
    "ClusterView",
    "AssumedBind",
    "AssumedState",
    "PodGroupRef",
    "PodRef",
    "SeenCondition",
    "TerminatingPod",
    "Rejected",
    "Observation",
    "ObserveError",
    "observe",
]

JsonObject = dict[str, Any]
MAX_REJECTED = 100
SOURCE = "cluster"


class ObserveError(Exception):
    """No Snapshot could be built (an error no single object can be blamed for): skip the cycle."""


@dataclass(frozen=True)
class ClusterView:
    pods: tuple[JsonObject, ...] = ()
    nodes: tuple[JsonObject, ...] = ()
    priority_classes: tuple[JsonObject, ...] = ()
    volcano_pod_groups: tuple[JsonObject, ...] = ()
    xk8s_pod_groups: tuple[JsonObject, ...] = ()
    queues: tuple[JsonObject, ...] = ()
    hypernodes: tuple[JsonObject, ...] = ()
    numatopologies: tuple[JsonObject, ...] = ()
    vcjobs: tuple[JsonObject, ...] = ()
    device_classes: tuple[JsonObject, ...] = ()
    resource_slices: tuple[JsonObject, ...] = ()
    resource_claims: tuple[JsonObject, ...] = ()
    resource_claim_templates: tuple[JsonObject, ...] = ()
    kube_workloads: tuple[JsonObject, ...] = ()  # scheduling.k8s.io Workloads, each with its apiVersion and kind
    kube_pod_groups: tuple[JsonObject, ...] = ()  # scheduling.k8s.io PodGroups, each with its apiVersion and kind


@dataclass(frozen=True)
class AssumedBind:
    node: NodeName
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class AssumedState:
    binds: Mapping[PodKey, AssumedBind] = field(default_factory=dict)
    evictions: frozenset[PodKey] = frozenset()


@dataclass(frozen=True)
class PodGroupRef:
    """A PodGroup object in the API (one-pod PodGroups the loader makes up have none)."""

    key: PodGroupKey
    flavor: str  # "volcano" (status in the main resource), "xk8s" or "kube" (status subresource)
    namespace: str
    name: str
    uid: str
    status: Mapping[str, Any]
    sub_groups: str | None = None  # its `batchplace.io/sub-groups` annotation as read (controller.sub_group_status)
    api_version: str = ""  # a Kubernetes Workload API PodGroup's, as read: v1alpha2 or v1beta1
    resource_version: str = ""  # the copy read: a status written over it is not written again over it (controller.act)

    @property
    def kind(self) -> ResourceKind:
        """The API resource it is read from and written to: its flavor's (and version's)."""
        if self.flavor == "kube":
            return KUBE_PODGROUPS if self.api_version == KUBE_PODGROUPS.api_version else KUBE_PODGROUPS_V1ALPHA2
        return XK8S_PODGROUPS if self.flavor == "xk8s" else VOLCANO_PODGROUPS


@dataclass(frozen=True)
class SeenCondition:
    """A pending pod's PodScheduled condition as the API server has it: what `plan` compares
    the condition it wants against, so an unchanged one is not written again."""

    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class PodRef:
    key: PodKey
    namespace: str
    name: str
    uid: str
    phase: str  # the kubelet's status.phase
    scheduled: SeenCondition | None = None  # a pending pod's PodScheduled condition; None when bound or without one
    claim_statuses: Mapping[str, str] = field(default_factory=dict)  # status.resourceClaimStatuses: entry → claim name


@dataclass(frozen=True)
class TerminatingPod:
    key: PodKey
    node: NodeName
    requests: ResourceList
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Rejected:
    """An object the loader refused, left out of the cycle (a quantity above its ceiling,
    a malformed field, …); `plan` writes a Warning Event on it, the loop logs it."""

    what: str  # "Pod ns/name"
    namespace: str | None  # None for cluster-scoped kinds (Node, Queue, …)
    name: str
    kind: str
    api_version: str
    uid: str
    field: str  # the loader's field path, "spec.containers[0].resources.requests.memory"; "" when none
    message: str


@dataclass(frozen=True)
class Observation:
    snapshot: Snapshot
    pod_groups: Mapping[PodGroupKey, PodGroupRef] = field(default_factory=dict)
    pods: Mapping[PodKey, PodRef] = field(default_factory=dict)
    running: Mapping[PodGroupKey, int] = field(default_factory=dict)
    terminating: tuple[TerminatingPod, ...] = ()
    held: Mapping[PodGroupKey, str] = field(default_factory=dict)
    held_counts: Mapping[PodGroupKey, int] = field(default_factory=dict)
    held_pods: Mapping[PodKey, str] = field(default_factory=dict)
    rejected: tuple[Rejected, ...] = ()
    warnings: tuple[str, ...] = ()
    repairs: tuple[RepairEviction, ...] = ()  # bound pods to evict: their node is overcommitted (rule 5)
    claims: ClaimIndex = ClaimIndex(objects={}, generated={})  # the cached ResourceClaims, for the claim writes


def observe(
    view: ClusterView,
    *,
    scheduler_names: Collection[str],
    assumed: AssumedState = AssumedState(),
    reads: CycleReads | None = None,
) -> Observation:
    """`reads`, kept by the caller from cycle to cycle, reads only the objects whose version
    changed (`controller.reads`); the observation is the same with it or without."""
    pods, terminating_raw = _split_pods(view.pods, assumed)
    holds = _dependency_holds(pods, view.vcjobs)
    held_pods = {key: reason for key, reason in holds.items()}
    if held_pods:
        pods = [pod for pod in pods if object_key(pod) not in held_pods]
    snapshot, warnings, rejected = _load(_documents(view, pods), scheduler_names, reads)
    steps = NO_STEP_MEMO if reads is None else reads.steps
    steps.begin()
    repairs, victims = _repairs(snapshot, rejected, pods, scheduler_names, assumed, steps)
    steps.end()
    evicted = {repair.pod for repair in repairs}
    victims_raw = [pod for pod in pods if object_key(pod) in evicted] if evicted else []
    if evicted:  # rule 5: built again without the victims, counted as terminating instead
        pods = [pod for pod in pods if object_key(pod) not in evicted]
        snapshot, warnings, rejected = _load(_documents(view, pods), scheduler_names, reads)
    snapshot = _with_dependencies(snapshot, pods, view.vcjobs)
    every_pod = (*pods, *terminating_raw, *victims_raw)
    made = map(_pod_ref, every_pod) if reads is None else reads.per_version("pod_ref", every_pod, _pod_ref)
    pod_refs = {ref.key: ref for ref in made}
    group_of = {pod.key: pod.pod_group for pod in snapshot.pods if pod.pod_group is not None}
    running: dict[PodGroupKey, int] = {}
    for key, group in group_of.items():
        ref = pod_refs.get(key)
        if ref is not None and ref.phase == "Running":
            running[group] = running.get(group, 0) + 1
    held_by_group: dict[PodGroupKey, str] = {}
    held_counts: dict[PodGroupKey, int] = {}
    for pod in view.pods if held_pods else ():
        reason = held_pods.get(object_key(pod))
        group = _group_name(pod)
        if reason is not None and group is not None:
            group_key = PodGroupKey(f"{_namespace(pod)}/{group}")
            held_by_group.setdefault(group_key, reason)
            held_counts[group_key] = held_counts.get(group_key, 0) + 1
    return Observation(
        snapshot=snapshot,
        pod_groups=_pod_group_refs(view),
        pods=pod_refs,
        running=running,
        terminating=(*_terminating(terminating_raw, view.nodes), *victims),
        repairs=repairs,
        held=held_by_group,
        held_counts=held_counts,
        held_pods=held_pods,
        rejected=tuple(rejected),
        warnings=tuple(warnings),
        claims=claim_index(view.resource_claims),
    )


def _documents(view: ClusterView, pods: Sequence[JsonObject]) -> list[JsonObject]:
    return [
        *_typed(view.nodes, "v1", "Node"),
        *_typed(view.numatopologies, "nodeinfo.volcano.sh/v1alpha1", "Numatopology"),
        *_typed(view.hypernodes, "topology.volcano.sh/v1alpha1", "HyperNode"),
        *_typed(view.queues, "scheduling.volcano.sh/v1beta1", "Queue"),
        *_typed(view.priority_classes, "scheduling.k8s.io/v1", "PriorityClass"),
        *_typed(view.volcano_pod_groups, "scheduling.volcano.sh/v1beta1", "PodGroup"),
        *_typed(view.xk8s_pod_groups, "scheduling.x-k8s.io/v1alpha1", "PodGroup"),
        *view.kube_workloads,
        *view.kube_pod_groups,
        *_typed(view.device_classes, "resource.k8s.io/v1", "DeviceClass"),
        *_typed(view.resource_slices, "resource.k8s.io/v1", "ResourceSlice"),
        *_typed(view.resource_claims, "resource.k8s.io/v1", "ResourceClaim"),
        *_typed(view.resource_claim_templates, "resource.k8s.io/v1", "ResourceClaimTemplate"),
        *_typed(pods, "v1", "Pod"),
    ]


# ---- pods ----


def _split_pods(pods: Sequence[JsonObject], assumed: AssumedState) -> tuple[list[JsonObject], list[JsonObject]]:
    """(pods for the Snapshot, with assumed binds applied; terminating pods that hold a node)."""
    kept: list[JsonObject] = []
    terminating: list[JsonObject] = []
    for pod in pods:
        key = object_key(pod)
        bind = assumed.binds.get(key)
        if bind is not None and not (pod.get("spec") or {}).get("nodeName"):
            pod = _with_node(pod, bind)
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if (pod.get("metadata") or {}).get("deletionTimestamp") or key in assumed.evictions:
            if bound:
                terminating.append(pod)
            continue
        kept.append(pod)
    return kept, terminating


def _with_node(pod: JsonObject, bind: AssumedBind) -> JsonObject:
    """A copy of a pending pod as it is after our bind: on `bind.node`, holding `bind.gpus`.
    The copy is a version of its own, with a `resourceVersion` that says so: the read memo
    names an object's content by its version, and this content is not the server's."""
    metadata = dict(pod.get("metadata") or {})
    version = metadata.get("resourceVersion")
    if version:
        metadata["resourceVersion"] = f"{version}+bound:{bind.node}:{','.join(map(str, bind.gpus))}"
    if bind.gpus:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), GPUS_ANNOTATION: ",".join(map(str, bind.gpus))}
    return {**pod, "metadata": metadata, "spec": {**(pod.get("spec") or {}), "nodeName": bind.node}}


def _terminating(pods: Sequence[JsonObject], nodes: Sequence[JsonObject]) -> tuple[TerminatingPod, ...]:
    """Requests and GPUs of terminating pods, read by the same loader (their nodes alongside)."""
    if not pods:
        return ()
    node_names = {pod["spec"]["nodeName"] for pod in pods}
    documents = [
        *_typed([n for n in nodes if (n.get("metadata") or {}).get("name") in node_names], "v1", "Node"),
        *_typed([_detached(pod) for pod in pods], "v1", "Pod"),
    ]
    try:
        snapshot = load_snapshot_documents(
            [(SOURCE, number, obj) for number, obj in enumerate(documents, start=1)],
            scheduler_names=(),
            check_fields=False,
        ).snapshot
    except SnapshotError:
        return ()
    return tuple(
        TerminatingPod(key=pod.key, node=NodeName(pod.node or ""), requests=dict(pod.requests), gpus=pod.gpu_indices)
        for pod in snapshot.pods
        if pod.node is not None
    )


def _detached(pod: JsonObject) -> JsonObject:
    """The pod without its PodGroup: only its requests and node matter here."""
    metadata = dict(pod.get("metadata") or {})
    metadata["annotations"] = {
        key: value for key, value in (metadata.get("annotations") or {}).items() if key != "scheduling.k8s.io/group-name"
    }
    metadata["labels"] = {
        key: value for key, value in (metadata.get("labels") or {}).items() if key != "scheduling.x-k8s.io/pod-group"
    }
    metadata.pop("deletionTimestamp", None)
    return {**pod, "metadata": metadata}


def _pod_ref(pod: JsonObject) -> PodRef:
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return PodRef(
        key=PodKey(object_key(pod)),
        namespace=_namespace(pod),
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
        phase=str(status.get("phase", "")),
        scheduled=None if (pod.get("spec") or {}).get("nodeName") else _seen_scheduled(status),
        claim_statuses=claim_statuses(pod),
    )


def _seen_scheduled(status: JsonObject) -> SeenCondition | None:
    """The PodScheduled condition of a pod's `status`, None when it has none."""
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            return SeenCondition(
                status=str(condition.get("status", "")),
                reason=str(condition.get("reason") or ""),
                message=str(condition.get("message") or ""),
            )
    return None


# ---- overcommitted nodes (rule 5) ----


def _repairs(
    snapshot: Snapshot, rejected: Sequence[Rejected], pods: Sequence[JsonObject], scheduler_names: Collection[str],
    assumed: AssumedState, steps: StepMemo,
) -> tuple[tuple[RepairEviction, ...], tuple[TerminatingPod, ...]]:
    """(the repair evictions, the victims as terminating pods). Judged: the nodes of bound pods
    the loader refused (a GPU already taken, more GPUs than the node has) and the nodes whose
    pods' requests add up to more than their allocatable; the others fit as loaded. Each
    node's sum reads the Snapshot's pods as they are: a bound pod's `HeldPod` is made only
    when some node is judged (one for every bound pod was most of this step's time). A
    node's sum is made once for the same Node and Pod objects (`steps`: the loader builds
    the same ones for objects that did not change), so a cycle adds up the nodes whose pods
    changed."""
    nodes = snapshot.node_by_name
    on_node: dict[NodeName, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.phase == "running" and pod.node is not None and counted(pod, nodes[pod.node]):
            on_node.setdefault(pod.node, []).append(pod)
    suspects = {
        name
        for name, there in on_node.items()
        if steps.built("overcommit", (nodes[name], *there), (), lambda: over_allocatable(nodes[name], there))
    }
    refused = [item for item in rejected if item.kind == "Pod"]
    if not suspects and not refused:
        return (), ()
    raw_by_key = {object_key(pod): pod for pod in pods}
    held: list[HeldPod] = []
    for pod in snapshot.pods:
        if pod.phase == "running" and pod.node is not None:
            raw = raw_by_key.get(pod.key, {})
            annotated = pod.gpu_indices if GPUS_ANNOTATION in ((raw.get("metadata") or {}).get("annotations") or {}) else None
            held.append(  # bound_at_s is read below, for the nodes judged only
                HeldPod(key=pod.key, node=pod.node, requests=pod.requests, gpus=annotated, bound_at_s=0.0,
                        group=pod.pod_group, offline=pod.offline, ours=_scheduler_name(raw) in scheduler_names)
            )
    for item in refused:
        raw = raw_by_key.get(f"{item.namespace}/{item.name}")
        found = _held_pod(raw, snapshot, scheduler_names, assumed) if raw is not None else None
        if found is not None:
            held.append(found)
            suspects.add(found.node)
    if not suspects:
        return (), ()
    held = [
        dataclasses.replace(pod, bound_at_s=_bound_at_s(raw_by_key.get(pod.key, {}), assumed))
        if pod.node in suspects and pod.key in raw_by_key and not pod.bound_at_s else pod
        for pod in held
    ]
    groups = snapshot.pod_group_by_key
    min_member = {pod.group: groups[pod.group].min_member for pod in held if pod.group in groups}
    repairs = repair_evictions({name: snapshot.node_by_name[name] for name in suspects}, held, min_member)
    by_key = {pod.key: pod for pod in held}
    victims = tuple(
        TerminatingPod(key=r.pod, node=r.node, requests=dict(by_key[r.pod].requests), gpus=by_key[r.pod].gpus or ())
        for r in repairs
    )
    return repairs, victims


def _held_pod(pod: JsonObject, snapshot: Snapshot, scheduler_names: Collection[str], assumed: AssumedState) -> HeldPod | None:
    """A bound pod the loader refused, read on its own; None when it is unreadable, finished
    or not on a known node (it stays left out, with the loader's message)."""
    raw = RawObject(pod, Location(object_ref=f"Pod {object_key(pod)}"))
    try:
        record = read_pod(raw, read_metadata(raw), scheduler_names=())
    except SnapshotError:
        return None
    if record is None or record.node is None or record.node not in snapshot.node_by_name:
        return None
    group = _group_name(pod)
    return HeldPod(
        key=PodKey(record.key), node=NodeName(record.node), requests=dict(record.template.requests),
        gpus=record.gpu_indices, bound_at_s=_bound_at_s(pod, assumed),
        group=PodGroupKey(f"{record.namespace}/{group}") if group else None, offline=record.template.offline,
        ours=_scheduler_name(pod) in scheduler_names,
    )


def _scheduler_name(pod: JsonObject) -> str:
    return str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")


def _bound_at_s(pod: JsonObject, assumed: AssumedState) -> float:
    """When the pod was bound: +inf for our bind the watch has not shown yet, else the time of
    its PodScheduled condition (the API server sets it when it binds), else its creation."""
    if object_key(pod) in assumed.binds:
        return math.inf
    raw = RawObject(pod, Location())
    try:
        for condition in raw.child("status").children("conditions"):
            if condition.optional_string("type") == "PodScheduled" and condition.optional_string("status") == "True":
                when = condition.timestamp("lastTransitionTime")
                if when is not None:
                    return when
        return raw.child("metadata").timestamp("creationTimestamp") or 0.0
    except SnapshotError:
        return 0.0


# ---- vcjob dependencies ----


def _job_tasks(vcjobs: Sequence[JsonObject]) -> dict[tuple[str, str], dict[str, tuple[str, ...]]]:
    """(namespace, job) → task → the tasks it depends on; only jobs with a dependency."""
    jobs: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
    for job in vcjobs:
        tasks = (job.get("spec") or {}).get("tasks") or []
        depends: dict[str, tuple[str, ...]] = {}
        for index, task in enumerate(tasks):
            if not isinstance(task, dict):
                continue
            names = ((task.get("dependsOn") or {}).get("name")) or []
            depends[str(task.get("name") or f"default{index}")] = tuple(str(n) for n in names if isinstance(n, str))
        if any(depends.values()):
            jobs[(_namespace(job), str((job.get("metadata") or {}).get("name", "")))] = depends
    return jobs


def _job_and_task(pod: JsonObject) -> tuple[tuple[str, str], str] | None:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    job = labels.get(VOLCANO_JOB_NAME_KEY) or annotations.get(VOLCANO_JOB_NAME_KEY)
    task = annotations.get(VOLCANO_TASK_ANNOTATION)
    if not job or not task:
        return None
    return (_namespace(pod), str(job)), str(task)


def _dependency_holds(pods: Sequence[JsonObject], vcjobs: Sequence[JsonObject]) -> dict[str, str]:
    """Pending pods to hold out of the cycle: pod key → the dependency reason (rule 3 above)."""
    jobs = _job_tasks(vcjobs)
    if not jobs:
        return {}
    # (job, task) → [pending, bound but not Running, Running]
    counts: dict[tuple[tuple[str, str], str], list[int]] = {}
    for pod in pods:
        found = _job_and_task(pod)
        if found is None or found[0] not in jobs:
            continue
        tally = counts.setdefault(found, [0, 0, 0])
        if not (pod.get("spec") or {}).get("nodeName"):
            tally[0] += 1
        elif (pod.get("status") or {}).get("phase") != "Running":
            tally[1] += 1
        else:
            tally[2] += 1
    held: dict[str, str] = {}
    for pod in pods:
        found = _job_and_task(pod)
        if found is None or found[0] not in jobs or (pod.get("spec") or {}).get("nodeName"):
            continue
        job, task = found
        for dependency in jobs[job].get(task, ()):
            pending, starting, running = counts.get((job, dependency), [0, 0, 0])
            if pending == 0 and starting > 0:
                total = starting + running
                held[object_key(pod)] = dependency_starting(dependency=dependency, running=running, total=total)
                break
    return held


def _with_dependencies(snapshot: Snapshot, pods: Sequence[JsonObject], vcjobs: Sequence[JsonObject]) -> Snapshot:
    """The Snapshot with each vcjob task's `depends_on` (rule 3), or itself when there are none."""
    jobs = _job_tasks(vcjobs)
    if not jobs:
        return snapshot
    job_of_group: dict[PodGroupKey, tuple[str, str]] = {}
    for pod in pods:
        found = _job_and_task(pod)
        key = PodKey(object_key(pod))
        if found is None or found[0] not in jobs or key not in snapshot.pod_by_key:
            continue
        group = snapshot.pod_by_key[key].pod_group
        if group is not None:
            job_of_group[group] = found[0]
    if not job_of_group:
        return snapshot
    groups: list[PodGroup] = []
    changed = False
    for group in snapshot.pod_groups:
        depends = jobs.get(job_of_group.get(group.key, ("", "")))
        if not depends:
            groups.append(group)
            continue
        names = set(group.task_by_name)
        tasks = tuple(
            task.model_copy(update={"depends_on": tuple(d for d in depends.get(task.name, ()) if d in names)})
            for task in group.tasks
        )
        fields = {name: getattr(group, name) for name in PodGroup.model_fields}
        groups.append(PodGroup(**{**fields, "tasks": tasks}))
        changed = True
    if not changed:
        return snapshot
    return snapshot.replaced(pod_groups=groups)


# ---- loading ----


def _typed(objects: Sequence[JsonObject], api_version: str, kind: str) -> list[JsonObject]:
    """Each object with the apiVersion and kind the loader dispatches on: a copy only where
    they are missing or another version (the informers stamp what they list, so in a
    steady cycle none is copied)."""
    typed = {"apiVersion": api_version, "kind": kind}
    return [obj if obj.get("kind") == kind and obj.get("apiVersion") == api_version else {**obj, **typed} for obj in objects]


def _load(
    documents: list[JsonObject], scheduler_names: Collection[str], reads: CycleReads | None = None
) -> tuple[Snapshot, tuple[str, ...], list[Rejected]]:
    numbered = dict(enumerate(documents, start=1)) if reads is None else reads.numbered(documents)
    rejected: list[Rejected] = []
    while True:
        try:
            result = load_snapshot_documents(
                ((SOURCE, number, obj) for number, obj in numbered.items()),  # made one by one (the loader's docstring)
                scheduler_names=scheduler_names,
                check_fields=False,
                memo=None if reads is None else reads.memo,
            )
            return result.snapshot, result.warnings, rejected
        except SnapshotError as error:
            number = error.location.document
            if number is None or number not in numbered or len(rejected) >= MAX_REJECTED:
                raise ObserveError(f"no snapshot: {error}") from error
            obj = numbered.pop(number)
            metadata = obj.get("metadata") or {}
            rejected.append(
                Rejected(
                    what=f"{obj.get('kind')} {object_key(obj)}",
                    namespace=metadata.get("namespace"),
                    name=str(metadata.get("name", "")),
                    kind=str(obj.get("kind")),
                    api_version=str(obj.get("apiVersion")),
                    uid=str(metadata.get("uid", "")),
                    field=format_path(error.path),
                    message=str(error),
                )
            )


def _pod_group_refs(view: ClusterView) -> dict[PodGroupKey, PodGroupRef]:
    refs: dict[PodGroupKey, PodGroupRef] = {}
    for flavor, objects in (("kube", view.kube_pod_groups), ("xk8s", view.xk8s_pod_groups), ("volcano", view.volcano_pod_groups)):
        for obj in objects:
            metadata = obj.get("metadata") or {}
            key = PodGroupKey(object_key(obj))
            refs[key] = PodGroupRef(
                key=key,
                flavor=flavor,
                namespace=_namespace(obj),
                name=str(metadata.get("name", "")),
                uid=str(metadata.get("uid", "")),
                status=obj.get("status") or {},
                sub_groups=(metadata.get("annotations") or {}).get(SUB_GROUPS_ANNOTATION),
                api_version=str(obj.get("apiVersion") or ""),
                resource_version=str(metadata.get("resourceVersion") or ""),
            )
    return refs


def _namespace(obj: JsonObject) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _group_name(pod: JsonObject) -> str | None:
    metadata = pod.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    return annotations.get("scheduling.k8s.io/group-name") or labels.get("scheduling.x-k8s.io/pod-group")
