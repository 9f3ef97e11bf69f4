"""What-if: apply changes to a base snapshot, and report, per added job, what one solve does with it.

Input: a validated base `Snapshot` (posted, or the controller's live one) and `Changes` —
Kubernetes objects to add as jobs (Volcano Jobs, Kubeflow PyTorchJobs, PodGroups with their
pods, bare pending Pods, and the DRA ResourceClaims / ResourceClaimTemplates their pods name)
and as nodes, read by the same `models.loaders` as every other
input so a job expands exactly as `batchplace solve` expands it; and node names to drain. Output of
`apply_changes`: a `ChangedSnapshot` (the new validated snapshot and what changed); of
`job_verdicts`, given the `Decision` solved on it: one `JobVerdict` per added job.

What the changes mean:
  - an added job is pending and was submitted *now*: a PodGroup without a creation time
    gets `submitted_at_s`, so among equals the jobs already waiting go first, as they would;
    its pods must be pending (no nodeName); its queue must exist or it stays pending with
    the `queue:` reason, as Volcano leaves it; priority class names resolve against the
    base snapshot's classes;
  - an added pod's `spec.resourceClaims` name claims or templates of the base or added with
    it; an added template's requests name the base's DeviceClasses (the cluster's, which
    the change does not touch); the base's DRA objects all stay, so its allocated claims
    keep their devices. The verdict lists the devices each claim of the job would get;
  - an added node joins no HyperNode (outside any network domain);
  - a drained node is cordoned (unschedulable) and loses its running pods, as
    `kubectl drain` evicts them: a pod of a PodGroup goes back to pending (its controller
    recreates it, and it competes for room in the same solve); a pod of no PodGroup
    (another scheduler's) is dropped. Both lists are reported per node.
Everything else pending in the base competes in the same solve: "if I submit it now"
means this scheduling cycle, with everything that waits already.

GPU numbers of a `JobVerdict`, in devices (milli-GPU / 1000, so 0.5 is half a device):
  - `gpus_requested`: all of the job's pods;
  - `gpus_to_start`: the least its gang needs to start (`solver.rules.gang.gang_requirement`):
    each task's minimum pods (none when the job's `min_member` is below the sum of its
    tasks' `min_available`), then the rest of `min_member` from its smallest-GPU pods
    (tasks waiting on a dependency left out);
  - `gpus_placed`: its pods bound by this solve;
  - `gpus_free_eligible`: what the cluster has free *after* this solve on the nodes where
    some GPU task of the job may run (`solver.rules.eligibility.eligible`: schedulable,
    selector matches, required node affinity admits, taints tolerated) and that may run one
    more pod (below their `pods`): whole devices nothing holds when its GPU pods take whole
    devices, else free milli;
  - `gpus_short`: 0 when it starts; else `max(0, gpus_to_start − gpus_free_eligible)` —
    how many more GPUs must come free before it can start. 0 for a job that does not
    start means the GPUs are there but something else blocks (quota, topology, NUMA,
    the split of free devices over nodes, …): `blocking` says what.
Worked example: 8 pods × 8 GPUs, min_member 8, 56 whole devices free on eligible nodes
→ to_start 64, short 8.

This module is pure (no HTTP, no I/O, no clock: the caller passes `submitted_at_s`) and
imports only `models` and `solver`: what a change does to a cycle is domain logic, which
`service` (the API's `/v1/what-if`) and any other caller reach the same way.

Errors: `models.errors.SnapshotError` (`FieldError`/`InputFormatError`) whose
`location.source` is the document source the caller chose (`changes.add_jobs`, …) and
`location.document` the 1-based document number, so the caller can point into its request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.errors import FieldError, InputFormatError, Location
from models.loaders import DEFAULT_SCHEDULER_NAMES, load_snapshot_documents
from models.loaders.kube_yaml import Document
from models.dra import DraObjects
from models.placement import Bind, ClaimAllocation, Decision, Eviction, UnplacedPod
from models.reason import Reason
from models.snapshot import (
    GPU,
    GPU_MILLI_PER_DEVICE,
    PODS,
    Node,
    NodeName,
    Pod,
    PodGroup,
    PodGroupKey,
    PodKey,
    Snapshot,
    is_fractional_gpu,
)
from solver.after import After, build_after
from solver.rules.eligibility import eligible
from solver.rules.gang import gang_requirement, minimum_pods

__all__ = [
    "ADD_JOB_KINDS",
    "ADD_NODE_KINDS",
    "Changes",
    "ChangedSnapshot",
    "DrainedNode",
    "JobVerdict",
    "apply_changes",
    "amount_free_eligible",
    "amount_to_start",
    "job_verdicts",
    "requeued_pod",
]

ADD_JOB_KINDS = frozenset(
    {
        ("batch.volcano.sh", "Job"),
        ("kubeflow.org", "PyTorchJob"),
        ("scheduling.volcano.sh", "PodGroup"),
        ("scheduling.x-k8s.io", "PodGroup"),
        ("", "Pod"),
        ("resource.k8s.io", "ResourceClaim"),
        ("resource.k8s.io", "ResourceClaimTemplate"),
    }
)
ADD_NODE_KINDS = frozenset({("", "Node"), ("nodeinfo.volcano.sh", "Numatopology")})
_BASE_SOURCE = "base snapshot"


@dataclass(frozen=True)
class Changes:
    """Documents are `(source, 1-based number, object)`, as `models.loaders` reads them."""

    add_jobs: tuple[Document, ...] = ()
    add_nodes: tuple[Document, ...] = ()
    drain_nodes: tuple[str, ...] = ()
    drain_source: str = "changes.drain_nodes"


class DrainedNode(BaseModel):
    model_config = ConfigDict(frozen=True)

    node: NodeName = Field(description="the drained node: cordoned, its running pods evicted")
    requeued_pods: tuple[PodKey, ...] = Field((), description="running pods of PodGroups, pending again")
    removed_pods: tuple[PodKey, ...] = Field((), description="running pods of no PodGroup (other schedulers), dropped")


@dataclass(frozen=True)
class ChangedSnapshot:
    snapshot: Snapshot
    added_jobs: tuple[PodGroupKey, ...]
    added_nodes: tuple[NodeName, ...]
    drained: tuple[DrainedNode, ...]
    warnings: tuple[str, ...]


class JobVerdict(BaseModel):
    """What one solve does with one added job; GPU fields in devices (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    name: PodGroupKey = Field(description="the added job's PodGroup, namespace/name")
    queue: str = Field(description="its queue")
    starts: bool = Field(description="its gang requirement is met this cycle")
    placed: int = Field(description="its pods bound this cycle")
    min_member: int = Field(description="pods it needs running at once to start (its gang minimum)")
    pods: int = Field(description="all of its pods")
    nodes: tuple[NodeName, ...] = Field((), description="nodes its pods are bound to, sorted")
    binds: tuple[Bind, ...] = Field((), description="its pods' binds in this solve, with device indices")
    preempts: tuple[Eviction, ...] = Field((), description="running pods evicted to make room for it")
    blocking: tuple[str, ...] = Field((), description="why it does not start: the rule and the numbers")
    blocking_rules: tuple[str, ...] = Field((), description="the rule names of `blocking`: gang, quota, capacity, …")
    unplaced_pods: tuple[UnplacedPod, ...] = Field(
        (), description="when it starts: each of its pods this solve leaves pending, with why"
    )
    claims: tuple[ClaimAllocation, ...] = Field(
        (), description="the DRA claims its bound pods would get: per claim, the node and the devices by request"
    )
    gpus_requested: float = Field(description="GPUs all of its pods ask, in devices (0.5 = half a device)")
    gpus_to_start: float = Field(description="the fewest GPUs its gang needs to start, in devices")
    gpus_placed: float = Field(description="GPUs of its pods bound by this solve, in devices")
    gpus_free_eligible: float = Field(
        description="GPUs free after this solve on the nodes where a GPU task of it may run, in devices "
        "(whole free devices when its GPU pods take whole devices)"
    )
    gpus_short: float = Field(
        description="0 when it starts; else how many more GPUs (devices) must come free before it can start — "
        "0 for a job that does not start: the GPUs are there but something else blocks (`blocking` says what)"
    )


# ---- apply ----


def apply_changes(base: Snapshot, changes: Changes, *, submitted_at_s: float) -> ChangedSnapshot:
    """The base with `changes` applied, validated; see the module docstring for the meaning."""
    _check_kinds(changes.add_jobs, ADD_JOB_KINDS, what="a job")
    _check_kinds(changes.add_nodes, ADD_NODE_KINDS, what="a node")
    _check_added_pods_pending(changes.add_jobs)
    added, warnings = _load_added(base, changes)
    dra = _with_added_claims(base.dra, added.dra, changes.add_jobs)
    base_groups = base.pod_group_by_key
    for group in added.pod_groups:
        if group.key in base_groups:
            raise _conflict(changes.add_jobs, group.namespace, group.name, f"PodGroup {group.key} already exists in the base snapshot")
    for node in added.nodes:
        if node.name in base.node_by_name:
            raise _conflict(changes.add_nodes, None, node.name, f"node {node.name} already exists in the base snapshot")
    _check_job_documents_read(changes.add_jobs, added, warnings)
    drained_names = _drain_names(base, changes)
    nodes, pods, drained = _drain(base, drained_names)
    new_groups = [
        group if group.creation_time else group.model_copy(update={"creation_time": submitted_at_s})
        for group in added.pod_groups
    ]
    try:
        snapshot = Snapshot.model_validate(
            {
                "nodes": [*nodes, *added.nodes],
                "hypernodes": base.hypernodes,
                "queues": base.queues,
                "pod_groups": [*base.pod_groups, *new_groups],
                "pods": [*pods, *added.pods],
                "priority_classes": base.priority_classes,
                "usage_policy": base.usage_policy,
                "dra": dra,
            }
        )
    except ValidationError as error:
        first = error.errors()[0]
        raise FieldError(f"the changed snapshot is not valid: {first['msg']}", location=Location("changes")) from None
    return ChangedSnapshot(
        snapshot=snapshot,
        added_jobs=tuple(group.key for group in new_groups),
        added_nodes=tuple(node.name for node in added.nodes),
        drained=drained,
        warnings=tuple(warnings),
    )


def _kind_of(obj: Mapping[object, object]) -> tuple[str, str]:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    return group, kind if isinstance(kind, str) else ""


def _ref(obj: object) -> str | None:
    """`Job default/finetune`, `Node gpu-9`: as the loader names objects in its messages."""
    if not isinstance(obj, Mapping):
        return None
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    kind = obj.get("kind")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    if kind in ("Node", "Numatopology"):
        return f"{kind} {name}"
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return f"{kind} {namespace if isinstance(namespace, str) and namespace else 'default'}/{name}"


def _check_kinds(documents: Sequence[Document], allowed: frozenset[tuple[str, str]], *, what: str) -> None:
    """Only kinds that make sense as `what` are taken; a Queue or Node among jobs is a mistake to say."""
    names = ", ".join(sorted(f"{group}/{kind}" if group else kind for group, kind in allowed))
    for source, number, obj in documents:
        if not isinstance(obj, Mapping):
            continue  # the loader says what is wrong with it, at the same place
        group, kind = _kind_of(obj)
        if not kind or "apiVersion" not in obj:
            continue
        if (group, kind) not in allowed:
            raise FieldError(
                f"{obj.get('apiVersion')}/{kind} cannot be added as {what}; expected one of {names}",
                location=Location(source, number, _ref(obj)),
                path=("kind",),
            )


def _check_added_pods_pending(documents: Sequence[Document]) -> None:
    for source, number, obj in documents:
        if isinstance(obj, Mapping) and _kind_of(obj) == ("", "Pod"):
            spec = obj.get("spec")
            if isinstance(spec, Mapping) and spec.get("nodeName"):
                raise FieldError(
                    "an added pod is submitted now, so it is pending: remove spec.nodeName",
                    location=Location(source, number, _ref(obj)),
                    path=("spec", "nodeName"),
                )


def _priority_class_documents(base: Snapshot) -> list[Document]:
    """The base's PriorityClasses as Kubernetes objects, so added objects resolve their names."""
    return [
        (
            _BASE_SOURCE,
            index + 1,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": priority_class.name},
                "value": priority_class.value,
                "globalDefault": priority_class.global_default,
            },
        )
        for index, priority_class in enumerate(base.priority_classes)
    ]


def _device_class_documents(base: Snapshot) -> list[Document]:
    """The base's DeviceClasses as Kubernetes objects, so an added claim template's requests
    resolve their class names (the loader refuses a class the input lacks)."""
    return [
        (
            _BASE_SOURCE,
            index + 1,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": device_class.name},
                "spec": {"selectors": [{"cel": {"expression": expression}} for expression in device_class.selectors]},
            },
        )
        for index, device_class in enumerate(base.dra.device_classes)
    ]


def _load_added(base: Snapshot, changes: Changes) -> tuple[Snapshot, list[str]]:
    from_base = [*_priority_class_documents(base), *_device_class_documents(base)]
    documents = [*from_base, *changes.add_jobs, *changes.add_nodes]
    if len(documents) == len(from_base):
        return Snapshot(), []
    result = load_snapshot_documents(documents)
    return result.snapshot, list(result.warnings)


def _with_added_claims(base: DraObjects, added: DraObjects, documents: Sequence[Document]) -> DraObjects:
    """The base's DRA objects with the claims and templates added with the jobs (the added
    load's DeviceClasses are the base's own, read back); a name the base already holds is
    a conflict, as an added PodGroup's is."""
    taken = {claim.key for claim in (*base.resource_claims, *base.resource_claim_templates)}
    for claim in (*added.resource_claims, *added.resource_claim_templates):
        if claim.key in taken:
            kind = type(claim).__name__
            raise _conflict(documents, claim.namespace, claim.name, f"{kind} {claim.key} already exists in the base snapshot")
    return DraObjects(
        device_classes=base.device_classes,
        resource_slices=base.resource_slices,
        resource_claims=(*base.resource_claims, *added.resource_claims),
        resource_claim_templates=(*base.resource_claim_templates, *added.resource_claim_templates),
    )


def _conflict(documents: Sequence[Document], namespace: str | None, name: str, message: str) -> FieldError:
    """A duplicate name, pointed at the added object that carries it (else at the whole list)."""
    for source, number, obj in documents:
        metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
        if isinstance(metadata, Mapping) and metadata.get("name") == name:
            if namespace is None or metadata.get("namespace", "default") == namespace:
                return FieldError(message, location=Location(source, number, _ref(obj)), path=("metadata", "name"))
    source = documents[0][0] if documents else "changes"
    return FieldError(message, location=Location(source))


def _check_job_documents_read(documents: Sequence[Document], added: Snapshot, warnings: Sequence[str]) -> None:
    """A Job or PodGroup the loader skipped (another schedulerName) would silently vanish from
    the answer; say so instead, with the loader's own warning."""
    keys = {group.key for group in added.pod_groups}
    for source, number, obj in documents:
        if not isinstance(obj, Mapping) or _kind_of(obj)[1] not in ("Job", "PyTorchJob", "PodGroup"):
            continue
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping):
            continue
        key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"
        if key not in keys:
            marker = f"document {number} "
            said = [line for line in warnings if line.startswith(f"{source}: {marker}")]
            detail = said[0].split("): ", 1)[-1] if said else (
                f"its schedulerName is not one of {', '.join(DEFAULT_SCHEDULER_NAMES)}, so another scheduler owns it"
            )
            raise InputFormatError(f"this object adds no pending job: {detail}", location=Location(source, number, _ref(obj)))


def _drain_names(base: Snapshot, changes: Changes) -> set[NodeName]:
    names: set[NodeName] = set()
    for index, name in enumerate(changes.drain_nodes):
        if NodeName(name) not in base.node_by_name:
            raise FieldError(
                f"no node {name!r} in the base snapshot to drain", location=Location(changes.drain_source, index + 1)
            )
        names.add(NodeName(name))
    return names


def requeued_pod(snapshot: Snapshot, pod: Pod) -> Pod:
    """The pod its controller recreates when this running pod of a PodGroup goes (drained,
    or moved by rebalancing advice): pending, on no node, asking what its task asks."""
    task = snapshot.task_of(pod)
    pending = {
        **pod.model_dump(),
        "phase": "pending",
        "node": None,
        "gpu_indices": (),
        "numa_cell": None,
        "start_time": None,
        "requests": task.requests if task is not None else pod.requests,
    }
    return Pod.model_validate(pending)


def _drain(base: Snapshot, names: set[NodeName]) -> tuple[list[Node], list[Pod], tuple[DrainedNode, ...]]:
    if not names:
        return list(base.nodes), list(base.pods), ()
    nodes = [node.model_copy(update={"unschedulable": True}) if node.name in names else node for node in base.nodes]
    pods: list[Pod] = []
    requeued: dict[NodeName, list[PodKey]] = {name: [] for name in names}
    removed: dict[NodeName, list[PodKey]] = {name: [] for name in names}
    for pod in base.pods:
        node = NodeName(pod.node or "")
        if pod.phase != "running" or node not in names:
            pods.append(pod)
        elif pod.pod_group is None:
            removed[node].append(pod.key)
        else:
            pods.append(requeued_pod(base, pod))
            requeued[node].append(pod.key)
    drained = tuple(
        DrainedNode(node=name, requeued_pods=tuple(requeued[name]), removed_pods=tuple(removed[name]))
        for name in sorted(names)
    )
    return nodes, pods, drained


# ---- report ----


def job_verdicts(changed: ChangedSnapshot, decision: Decision) -> tuple[JobVerdict, ...]:
    """One `JobVerdict` per added job, in the order they were added."""
    snapshot = changed.snapshot
    after = build_after(snapshot, decision.placement)
    outcomes = {outcome.name: outcome for outcome in decision.podgroups}
    verdicts = []
    for key in changed.added_jobs:
        group = snapshot.pod_group_by_key[key]
        pods = snapshot.pods_by_group[key]
        pod_keys = {pod.key for pod in pods}
        binds = tuple(bind for bind in decision.placement.binds if bind.pod in pod_keys)
        outcome = outcomes[key]
        starts = outcome.state == "scheduled"
        to_start = amount_to_start(snapshot, group, pods)
        free = amount_free_eligible(snapshot, after, group)
        gpu_of = {pod.key: pod.requests.get(GPU, 0) for pod in pods}
        verdicts.append(
            JobVerdict(
                name=key,
                queue=group.queue,
                starts=starts,
                placed=len(binds),
                min_member=group.min_member,
                pods=len(pods),
                nodes=tuple(sorted({bind.node for bind in binds})),
                binds=binds,
                preempts=tuple(eviction for eviction in decision.placement.evictions if eviction.for_ == key),
                blocking=() if starts else outcome.reasons,
                blocking_rules=() if starts else _rule_names(outcome.reasons),
                unplaced_pods=outcome.unplaced_pods,
                claims=tuple(claim for claim in decision.placement.claims if pod_keys.intersection((claim.pod, *claim.reserved_for))),
                gpus_requested=_devices(sum(gpu_of.values())),
                gpus_to_start=_devices(to_start),
                gpus_placed=_devices(sum(gpu_of[bind.pod] for bind in binds)),
                gpus_free_eligible=_devices(free),
                gpus_short=0.0 if starts else _devices(max(0, to_start - free)),
            )
        )
    return tuple(verdicts)


def _devices(gpu_milli: int) -> float:
    return gpu_milli / GPU_MILLI_PER_DEVICE


def _rule_names(reasons: Iterable[Reason]) -> tuple[str, ...]:
    """`(gang_shortfall(…), capacity_fit_error(…))` → `("gang", "capacity")`, first seen first."""
    return tuple(dict.fromkeys(reason.rule for reason in reasons if reason.rule))


def amount_to_start(snapshot: Snapshot, group: PodGroup, pods: Sequence[Pod], *, resource: str = GPU) -> int:
    """Each task's minimum pods, then the cheapest pods up to min_member (module docstring):
    what they ask of `resource`, in its unit (GPU and cpu milli, memory bytes).

    Example: tasks ps (1 pod, 0 GPU, min 1) and worker (4 pods × 8000, min 2), min_member 4:
    1 ps + 2 workers, then 1 more pod, the cheapest left (a worker) → 3 × 8000 = 24000.
    With min_member 2 instead (below 1 + 2, so task minimums do not apply): the 2 cheapest
    pods, the ps and a worker → 8000.
    """
    requirement = gang_requirement(snapshot, group)
    pending = sorted(
        (pod.requests.get(resource, 0), pod.task or "") for pod in pods if pod.phase == "pending"
    )  # cheapest first; a task's pods among themselves too
    running: dict[str, int] = {}
    for pod in pods:
        if pod.phase == "running":
            running[pod.task or ""] = running.get(pod.task or "", 0) + 1
    counts = minimum_pods(requirement, running, [(task, 1) for _, task in pending])
    total = 0
    for gpu, task in pending:
        if counts.get(task, 0) > 0:
            counts[task] -= 1
            total += gpu
    return total


def amount_free_eligible(
    snapshot: Snapshot, after: After, group: PodGroup, *, nodes: Iterable[Node] | None = None, resource: str = GPU
) -> int:
    """GPUs free after a solve on the nodes (all, or `nodes`) where some GPU task of `group`
    may run (module docstring, `gpus_free_eligible`); for another `resource` (cpu, memory, …)
    its allocatable less what is used, on the nodes where some task asking it may run."""
    asking = [task for task in group.tasks if task.requests.get(resource, 0) > 0]
    if not asking:
        return 0
    fractional = resource == GPU and any(is_fractional_gpu(task.requests[GPU]) for task in asking)
    free = 0
    for node in snapshot.nodes if nodes is None else nodes:
        if not any(eligible(node, task) for task in asking):
            continue
        if after.node_used[node.name].get(PODS, 0) >= node.allocatable[PODS]:
            continue  # room on a node that runs all the pods it may is no room for this job
        if resource != GPU:
            free += max(0, node.allocatable.get(resource, 0) - after.node_used[node.name].get(resource, 0))
            continue
        for used in after.gpu_used_milli.get(node.name, {}).values():
            if fractional:
                free += max(0, GPU_MILLI_PER_DEVICE - used)
            elif used == 0:
                free += GPU_MILLI_PER_DEVICE
    return free
