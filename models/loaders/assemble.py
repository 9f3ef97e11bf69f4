"""Cross-document resolution: from the records of every document to one validated Snapshot.

Input: an `Inventory` (what each document said, in input order) and the `Warnings` so far.
Output: a `Snapshot`, or a `SnapshotError` naming the document(s) at fault.

Order (each step needs the previous ones): expand jobs and add one-pod PodGroups → form
sub-groups (`sub_groups`) →
put Volcano vGPU asks into `gpu` (the smallest GPU memory a node states, `vgpu`) →
reject duplicate names, naming both documents → build Nodes (with GPUs and NUMA cells),
resolve HyperNode selectors, then exclusive topologies to tiers (`exclusive_topology`) →
join pods to PodGroups and tasks → give running pods their GPU devices → resolve
priorities → validate the whole Snapshot.

Priorities, as Kubernetes and Volcano resolve them: a pod's `spec.priority` when set
(admission fills it in a live cluster), else its `priorityClassName`'s value, else the
value of the PriorityClass with `globalDefault: true`, else 0. A PodGroup's comes from its
`priorityClassName` the same way. A class that is not in the input counts as 0, with a
warning.

Offline (`solver.rules.colocation`): a pod is offline when its annotation
`volcano.sh/qos-level` is `BE`, or its PriorityClass — its own `priorityClassName`, else
its PodGroup's, else the global default — carries that annotation. A task is offline when
one of its pods is, and a pending pod is as offline as its task (a task's pods are
interchangeable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from models.dra import DeviceClass, DraObjects, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from models.errors import FieldError, Location
from models.snapshot import Node, Pod, PodGroup, PreemptionPolicy, Snapshot, Task

from .cluster_build import build_nodes, resolve_hypernodes
from .cluster_objects import (
    HyperNodeRecord,
    NodeRecord,
    NumaTopologyRecord,
    PriorityClassRecord,
    QueueRecord,
)
from .dra_objects import DraRecord, DraUnused, check_device_classes
from .exclusive_topology import resolve_exclusive_topologies
from .gpu_assignment import RunningGpuPod, assign_gpus
from .grouping import Workload, add_one_pod_groups, expand_jobs, join_pods
from .kube_workload import PodGroupTemplates, resolve_template_policies
from .owner_gang_groups import add_owner_gang_groups
from .raw import Warnings, build_model, pydantic_message
from .step_memo import NO_STEP_MEMO, StepMemo
from .sub_groups import assign_sub_groups
from .vgpu_workload import apply_vgpu
from .workloads import JobRecord, PodGroupRecord, PodRecord

__all__ = ["Inventory", "assemble"]


@dataclass
class Inventory:
    """Every record read, per kind, in input order (PodGroups, pods and jobs together, so the
    snapshot lists them in the order the input did)."""

    nodes: list[NodeRecord] = field(default_factory=list)
    numa_topologies: list[NumaTopologyRecord] = field(default_factory=list)
    hypernodes: list[HyperNodeRecord] = field(default_factory=list)
    queues: list[QueueRecord] = field(default_factory=list)
    priority_classes: list[PriorityClassRecord] = field(default_factory=list)
    workloads: list[PodGroupRecord | PodRecord | JobRecord] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    pod_count: int = 0  # pods read or expanded so far, checked against the snapshot's limit
    dra: list[DraRecord] = field(default_factory=list)  # DeviceClasses, ResourceSlices, claims, claim templates
    dra_unused: DraUnused = field(default_factory=DraUnused)
    pod_group_templates: list[PodGroupTemplates] = field(default_factory=list)  # templates-shape Workloads


def assemble(inventory: Inventory, warnings: Warnings, steps: StepMemo = NO_STEP_MEMO) -> Snapshot:
    workload = expand_jobs(resolve_template_policies(inventory.workloads, inventory.pod_group_templates), warnings)
    add_owner_gang_groups(workload, warnings)
    add_one_pod_groups(workload)
    assign_sub_groups(workload, warnings)
    apply_vgpu(workload, [record.gpu_memory_mib for record in inventory.nodes], warnings)
    _reject_duplicates(inventory, workload)
    priorities = _Priorities(inventory.priority_classes, warnings)
    nodes = build_nodes(inventory.nodes, inventory.numa_topologies, warnings, steps)
    hypernodes = resolve_hypernodes(inventory.hypernodes, nodes, warnings)
    resolve_exclusive_topologies(workload, nodes, hypernodes, warnings)
    join_pods(workload, nodes, warnings, steps)
    context = _PodContext(
        workload=workload,
        groups={group.key: group for group in workload.groups},
        nodes={node.name: node for node in nodes},
        gpus=_running_pod_gpus(workload, nodes, priorities, steps),
        priorities=priorities,
        steps=steps,
    )
    never_preempting = _never_preempting(workload, priorities)
    _mark_offline(workload, priorities)
    snapshot_fields = {
        "nodes": nodes,
        "hypernodes": hypernodes,
        "queues": [record.queue for record in inventory.queues],
        "pod_groups": [
            _pod_group(group, workload, priorities, never_preempting, steps) for group in workload.groups
        ],
        "pods": [_pod(pod, context) for pod in workload.pods],
        "priority_classes": [record.priority_class for record in inventory.priority_classes],
        "dra": _dra_objects(inventory, warnings),
    }
    try:
        return Snapshot.model_validate(snapshot_fields)
    except ValidationError as error:
        path, message = pydantic_message(error)
        single_source = inventory.sources[0] if len(set(inventory.sources)) == 1 else None
        raise FieldError(message, location=Location(source=single_source), path=path) from None


# ---- DRA ----


def _dra_objects(inventory: Inventory, warnings: Warnings) -> DraObjects:
    """The DRA objects, each request's device class checked, the unused fields said once."""
    check_device_classes(inventory.dra)
    unused = inventory.dra_unused.warning()
    if unused is not None:
        warnings.add(Location(), unused)
    items = [record.item for record in inventory.dra]
    return DraObjects(
        device_classes=tuple(item for item in items if isinstance(item, DeviceClass)),
        resource_slices=tuple(item for item in items if isinstance(item, ResourceSlice)),
        resource_claims=tuple(item for item in items if isinstance(item, ResourceClaim)),
        resource_claim_templates=tuple(item for item in items if isinstance(item, ResourceClaimTemplate)),
    )


def _reject_duplicates(inventory: Inventory, workload: Workload) -> None:
    """Two objects of one kind with one name: an error naming both documents."""
    kinds: list[tuple[str, Iterable[tuple[str, Location]]]] = [
        ("Node", ((r.name, r.location) for r in inventory.nodes)),
        ("Numatopology", ((r.node_name, r.location) for r in inventory.numa_topologies)),
        ("HyperNode", ((r.name, r.location) for r in inventory.hypernodes)),
        ("Queue", ((r.queue.name, r.location) for r in inventory.queues)),
        ("PriorityClass", ((r.priority_class.name, r.location) for r in inventory.priority_classes)),
        ("Pod", ((r.key, r.location) for r in workload.pods)),
        ("PodGroup", ((r.key, r.location) for r in workload.groups)),
        *(
            (kind.__name__, [(r.key, r.obj.location) for r in inventory.dra if type(r.item) is kind])
            for kind in (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate)
        ),
    ]
    for kind, keyed in kinds:
        first: dict[str, Location] = {}
        for key, location in keyed:
            if key in first:
                what = _duplicate_object(kind, key, location, first[key])
                raise FieldError(f"duplicate {what}; the first is in {first[key] or 'the input'}", location=location)
            first[key] = location


def _duplicate_object(kind: str, key: str, location: Location, first: Location) -> str:
    """What the user wrote twice: a pod or PodGroup a job (vcjob, PyTorchJob) expands into is
    named by that job — `Job 'default/train'`, not its pod `default/train-worker-0` — when both
    come from jobs of one kind and name; otherwise the object itself (`Pod 'default/p'`)."""
    ref = location.object_ref or ""
    source_kind, _, name = ref.partition(" ")
    if ref and ref == first.object_ref and source_kind != kind and name:
        return f"{source_kind} {name!r}"
    return f"{kind} {key!r}"


# ---- priorities ----


class _Priorities:
    def __init__(self, classes: Sequence[PriorityClassRecord], warnings: Warnings) -> None:
        self._values = {record.priority_class.name: record.priority_class.value for record in classes}
        self._policies = {record.priority_class.name: record.priority_class.preemption_policy for record in classes}
        self._offline = {record.priority_class.name for record in classes if record.priority_class.offline}
        self._warnings = warnings
        defaults = [record for record in classes if record.priority_class.global_default]
        if len(defaults) > 1:
            raise FieldError(
                f"PriorityClass {defaults[0].priority_class.name!r} ({defaults[0].location}) is already "
                "the global default; Kubernetes allows one",
                location=defaults[1].location,
                path=("globalDefault",),
            )
        self._default = defaults[0].priority_class.value if defaults else 0
        self._default_offline = bool(defaults) and defaults[0].priority_class.offline
        self._default_policy: PreemptionPolicy = defaults[0].priority_class.preemption_policy if defaults else "PreemptLowerPriority"

    def preemption_policy(self, class_name: str | None) -> PreemptionPolicy:
        """The PriorityClass's policy (the global default's when none is named; an unknown
        class preempts, as its priority 0 is already warned about)."""
        if class_name is None:
            return self._default_policy
        return self._policies.get(class_name, "PreemptLowerPriority")

    def offline(self, class_name: str | None) -> bool:
        """Whether the class (the global default when none is named) marks its pods offline."""
        return self._default_offline if class_name is None else class_name in self._offline

    def value(self, class_name: str | None, *, explicit: int | None, location: Location) -> int:
        if explicit is not None:
            return explicit
        if class_name is None:
            return self._default
        if class_name not in self._values:
            self._warnings.add(location, f"priorityClassName {class_name!r} is not in the input; priority 0")
            return 0
        return self._values[class_name]


# ---- GPUs of running pods ----


def _running_pod_gpus(
    workload: Workload, nodes: Sequence[Node], priorities: _Priorities, steps: StepMemo
) -> dict[str, tuple[int, ...]]:
    """The devices each bound GPU pod holds, node by node. A node's assignment reads only the
    node and its pods' records and whether each is offline: built once for the same ones (`steps`)."""
    groups = {group.key: group for group in workload.groups}
    by_node: dict[str, list[tuple[PodRecord, bool]]] = {}
    for pod in workload.pods:
        if pod.node is not None and (pod.template.requests.get("gpu", 0) or pod.gpu_indices is not None):
            member = workload.membership.get(pod.key)
            offline = _pod_offline(pod, groups.get(member[0]) if member else None, priorities)
            by_node.setdefault(pod.node, []).append((pod, offline))
    assigned: dict[str, tuple[int, ...]] = {}
    for node in nodes:
        there = by_node.get(node.name)
        if there:
            records = (node, *(pod for pod, _ in there))
            offline_flags = tuple(offline for _, offline in there)
            assigned.update(steps.built("running pod gpus", records, offline_flags, lambda: _assigned(node, there)))
    return assigned


def _assigned(node: Node, pods: Sequence[tuple[PodRecord, bool]]) -> dict[str, tuple[int, ...]]:
    return assign_gpus(node, [
        RunningGpuPod(key=pod.key, gpu_milli=pod.template.requests.get("gpu", 0), annotated=pod.gpu_indices,
                      location=pod.location, path=pod.path, offline=offline)
        for pod, offline in pods
    ])


# ---- models ----


def _never_preempting(workload: Workload, priorities: _Priorities) -> frozenset[str]:
    """Keys of the PodGroups with a pending pod whose preemptionPolicy is Never — its own, else
    its PriorityClass's, as the API server's Priority admission copies it into the pod."""
    never = set()
    for pod in workload.pods:
        member = workload.membership.get(pod.key)
        if not pod.pending or member is None:
            continue
        policy = pod.template.preemption_policy or priorities.preemption_policy(pod.template.priority_class)
        if policy == "Never":
            never.add(member[0])
    return frozenset(never)


def _pod_offline(pod: PodRecord, group: PodGroupRecord | None, priorities: _Priorities) -> bool:
    if pod.template.offline:
        return True
    class_name = pod.template.priority_class or (group.priority_class if group is not None else None)
    return priorities.offline(class_name)


def _mark_offline(workload: Workload, priorities: _Priorities) -> None:
    """Tasks with an offline pod become offline (module docstring)."""
    groups = {group.key: group for group in workload.groups}
    offline_tasks: set[tuple[str, str]] = set()
    for pod in workload.pods:
        member = workload.membership.get(pod.key)
        if member is not None and _pod_offline(pod, groups.get(member[0]), priorities):
            offline_tasks.add(member)
    for key, tasks in list(workload.tasks.items()):
        if any((key, task.name) in offline_tasks for task in tasks):
            workload.tasks[key] = tuple(
                task.model_copy(update={"offline": True}) if (key, task.name) in offline_tasks else task for task in tasks
            )


def _pod_group(
    group: PodGroupRecord,
    workload: Workload,
    priorities: _Priorities,
    never_preempting: frozenset[str],
    steps: StepMemo,
) -> PodGroup:
    tasks = workload.tasks.get(group.key, ())
    priority = priorities.value(group.priority_class, explicit=group.priority, location=group.location)
    may_preempt = group.key not in never_preempting
    return steps.built(
        "pod group", (group, *tasks), (priority, may_preempt), lambda: _pod_group_model(group, tasks, priority, may_preempt)
    )


def _pod_group_model(group: PodGroupRecord, tasks: tuple[Task, ...], priority: int, may_preempt: bool) -> PodGroup:
    declared_total = sum(group.min_task_member.values())
    return build_model(
        PodGroup,
        group.location,
        namespace=group.namespace,
        name=group.name,
        queue=group.queue,
        priority=priority,
        min_member=group.min_member,
        min_resources=group.min_resources,
        creation_time=group.creation_time,
        preemptable=group.preemptable,
        may_preempt=may_preempt,
        tasks=tasks,
        task_min_available_total=declared_total if declared_total != sum(t.min_available for t in tasks) else None,
        network_topology=group.network_topology,
        sub_groups=group.sub_groups,
        min_sub_groups=group.min_sub_groups,
        sla_waiting_s=group.sla_waiting_s,
    )


@dataclass(frozen=True)
class _PodContext:
    workload: Workload
    groups: Mapping[str, PodGroupRecord]
    nodes: Mapping[str, Node]
    gpus: Mapping[str, tuple[int, ...]]
    priorities: _Priorities
    steps: StepMemo


def _pod(pod: PodRecord, context: _PodContext) -> Pod:
    membership = context.workload.membership.get(pod.key)
    group = context.groups[membership[0]] if membership else None
    preemptable = pod.template.preemptable
    if preemptable is None:
        preemptable = group.preemptable if group is not None else True
    indices = context.gpus.get(pod.key, ())
    if pod.pending and membership is not None:
        task = next(t for t in context.workload.tasks[membership[0]] if t.name == membership[1])
        offline = task.offline
    else:
        offline = _pod_offline(pod, group, context.priorities)
    priority = context.priorities.value(
        pod.template.priority_class, explicit=pod.template.priority, location=pod.location
    )
    numa_cell = _numa_cell(pod, context.nodes, indices)
    values = (membership, preemptable, indices, offline, priority, numa_cell)
    return context.steps.built(
        "pod", (pod,), values, lambda: _pod_model(pod, membership, preemptable, indices, offline, priority, numa_cell)
    )


def _pod_model(
    pod: PodRecord,
    membership: tuple[str, str] | None,
    preemptable: bool,
    indices: tuple[int, ...],
    offline: bool,
    priority: int,
    numa_cell: int | None,
) -> Pod:
    """The Pod a record and what it joined make (the record's fields, the values derived)."""
    return build_model(
        Pod,
        pod.location,
        namespace=pod.namespace,
        name=pod.name,
        phase="pending" if pod.pending else "running",
        pod_group=membership[0] if membership else None,
        task=membership[1] if membership else None,
        sub_group=pod.sub_group if membership else None,
        requests=pod.template.requests,
        node=pod.node,
        gpu_indices=indices,
        numa_cell=numa_cell,
        priority=priority,
        preemptable=preemptable,
        start_time=pod.start_time,
        checkpoint_time=pod.checkpoint_time,
        active_deadline_s=pod.template.active_deadline_s,
        labels=pod.template.labels if not pod.pending else {},
        required_anti_affinity=pod.template.inter_pod.required_anti_affinity if not pod.pending else (),
        offline=offline,
        scheduling_gates=pod.template.scheduling_gates,
        host_ports=pod.template.host_ports,
        resource_claims=pod.template.resource_claims,
        scheduled_reason=pod.scheduled_reason,
    )


def _numa_cell(pod: PodRecord, nodes: Mapping[str, Node], indices: tuple[int, ...]) -> int | None:
    """A running single-numa-node pod holds the one cell its GPUs sit on."""
    if pod.node is None or pod.template.numa_policy != "single-numa-node" or not indices:
        return None
    node = nodes[pod.node]
    cells = {node.gpu_by_index[index].numa_cell for index in indices}
    return cells.pop() if len(cells) == 1 else None
