"""Readers for the cluster side: v1 Node, Volcano Numatopology and HyperNode, Volcano Queue,
scheduling.k8s.io PriorityClass.

Input: one `RawObject` per Kubernetes object. Output: a record per object, still unresolved
where it refers to other objects (a Node's NUMA cells wait for its Numatopology, a
HyperNode's selectors wait for all nodes); `assemble` resolves them.

What is read:
- Node: `status.allocatable` (`status.capacity` when allocatable is absent; Volcano vGPU
  slots read as GPUs and the memory of a GPU, `models.loaders.vgpu`), labels,
  `spec.taints`, `spec.unschedulable`, GPU model from label `nvidia.com/gpu.product`, GPU
  NUMA cells from annotation `batchplace.io/gpu-numa`, measured load from annotation
  `batchplace.io/usage` (`models.loaders.node_usage`). At most 1024 GPUs per node.
- Numatopology (`nodeinfo.volcano.sh`, named after its node): per NUMA cell, CPUs =
  the `spec.cpuDetail` entries (`{cpu id: {numa, socket, core}}`) of that cell, kept to the
  `spec.numares.cpu.allocatable` cpuset when one is given; memory =
  `spec.MemoryDetail[cell].memoryMap.memory.allocatable` (else `.total`) in bytes.
  Volcano's resource exporter writes these fields; `numares` alone is per node, not per
  cell, so it only filters.
- HyperNode: `spec.tier` (an integer, or the digit string of older API versions) and
  `spec.members[]` with exactly one of `selector.exactMatch.name`,
  `selector.regexMatch.pattern` (unanchored, as Go's `regexp.MatchString`) or
  `selector.labelMatch` (`matchLabels` / `matchExpressions`, Node members only).
- Queue: `spec.weight` (1), `capability`, `deserved`, `guarantee.resource`,
  `reclaimable` (true), `priority` (0), `parent` ("root" → none), state Closed/Closing
  from `status.state` or `spec.state` → closed. The `root` Queue object itself is implicit
  in the snapshot and is not read.
- PriorityClass: `value`, `globalDefault`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from models.errors import FieldError, Location, PathPart
from models.snapshot import (
    GPU,
    GPU_MILLI_PER_DEVICE,
    NodeUsage,
    NumaCell,
    PriorityClass,
    Queue,
    ResourceList,
    Taint,
)

from .keys import GPU_NUMA_ANNOTATION, GPU_PRODUCT_LABEL, OFFLINE_QOS_LEVELS, QOS_LEVEL_ANNOTATION
from .kube_fields import read_preemption_policy, read_resources, read_sla_waiting, read_taints
from .node_usage import read_node_usage
from .raw import Metadata, RawObject, Warnings, build_model
from .vgpu import node_vgpu

__all__ = [
    "NodeRecord",
    "NumaTopologyRecord",
    "LabelSelector",
    "read_label_selector",
    "MemberRecord",
    "HyperNodeRecord",
    "QueueRecord",
    "PriorityClassRecord",
    "read_node",
    "read_numatopology",
    "read_hypernode",
    "read_queue",
    "read_priority_class",
    "GPU_NUMA_PATH",
]

GPU_NUMA_PATH: tuple[PathPart, ...] = ("metadata", "annotations", GPU_NUMA_ANNOTATION)
"""Each GPU becomes one device entry; a bound keeps a typo (`1e9`) from exhausting memory."""
ROOT_QUEUE_NAME = "root"


# ---- Node ----


@dataclass(frozen=True)
class NodeRecord:
    name: str
    allocatable: ResourceList
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    gpu_model: str | None
    gpu_numa_cells: tuple[int, ...] | None
    location: Location
    path: tuple[PathPart, ...] = ()
    gpu_memory_mib: int | None = None  # per device, for vGPU shares (`models.loaders.vgpu`)
    usage: NodeUsage | None = None


def read_node(obj: RawObject, meta: Metadata) -> NodeRecord:
    status = obj.child("status")
    key = "allocatable" if status.has("allocatable") else "capacity"
    allocatable, gpu_memory_mib = node_vgpu(obj, meta.labels, read_resources(status, key, role="node"))
    gpu_milli = allocatable.get(GPU, 0)  # whole devices: `nvidia.com/gpu` is an extended resource
    spec = obj.child("spec")
    return NodeRecord(
        name=meta.name,
        allocatable=allocatable,
        labels=meta.labels,
        taints=read_taints(spec),
        unschedulable=spec.boolean("unschedulable", False),
        gpu_model=meta.labels.get(GPU_PRODUCT_LABEL),
        gpu_numa_cells=_gpu_numa_cells(obj, meta, gpu_milli // GPU_MILLI_PER_DEVICE),
        location=obj.location,
        path=obj.path,
        gpu_memory_mib=gpu_memory_mib,
        usage=read_node_usage(obj, meta, gpu_milli // GPU_MILLI_PER_DEVICE),
    )


def _gpu_numa_cells(obj: RawObject, meta: Metadata, gpu_count: int) -> tuple[int, ...] | None:
    """`"0,0,0,0,1,1,1,1"` → `(0, 0, 0, 0, 1, 1, 1, 1)`: the cell of GPU 0, 1, …"""
    text = meta.annotations.get(GPU_NUMA_ANNOTATION)
    if text is None:
        return None
    path = (*obj.path, *GPU_NUMA_PATH)
    parts = [part.strip() for part in text.split(",")] if text.strip() else []
    if not all(part.isdigit() for part in parts):
        message = f"expected comma-separated NUMA cell numbers such as 0,0,1,1, got {text!r}"
        raise FieldError(message, location=obj.location, path=path)
    if len(parts) != gpu_count:
        message = f"lists {len(parts)} NUMA cells but the node has {gpu_count} GPUs"
        raise FieldError(message, location=obj.location, path=path)
    return tuple(int(part) for part in parts)


# ---- Numatopology ----


@dataclass(frozen=True)
class NumaTopologyRecord:
    node_name: str
    cells: tuple[NumaCell, ...]
    location: Location


def read_numatopology(obj: RawObject, meta: Metadata) -> NumaTopologyRecord:
    spec = obj.child("spec")
    allowed = _allocatable_cpus(spec)
    cpus_per_cell: dict[int, int] = {}
    for cpu_id, info in spec.numbered_children("cpuDetail"):
        cell = info.integer("numa", 0, minimum=0)  # omitempty: cell 0 is written as nothing
        usable = allowed is None or any(low <= cpu_id <= high for low, high in allowed)
        cpus_per_cell[cell] = cpus_per_cell.get(cell, 0) + (1 if usable else 0)
    memory_per_cell = _memory_per_cell(spec)
    cells = sorted({*cpus_per_cell, *memory_per_cell})
    return NumaTopologyRecord(
        node_name=meta.name,
        cells=tuple(
            NumaCell(
                id=cell,
                cpu_milli=cpus_per_cell[cell] * 1000 if cell in cpus_per_cell else None,
                memory_bytes=memory_per_cell.get(cell),
            )
            for cell in cells
        ),
        location=obj.location,
    )


def _allocatable_cpus(spec: RawObject) -> list[tuple[int, int]] | None:
    """The cpuset in `numares.cpu.allocatable` as ranges (`"0-3,8"` → `[(0, 3), (8, 8)]`),
    or None when not given. Kept as ranges: a cpuset is short text for many CPUs."""
    cpu = spec.child("numares").child("cpu")
    text = cpu.optional_string("allocatable")
    if text is None:
        return None
    ranges = []
    for part in text.split(","):
        bounds = part.strip().split("-")
        if not 1 <= len(bounds) <= 2 or not all(bound.isdigit() for bound in bounds):
            raise cpu.error("allocatable", f"expected a cpuset such as 0-3,8-11, got {text!r}")
        ranges.append((int(bounds[0]), int(bounds[-1])))
    return ranges


def _memory_per_cell(spec: RawObject) -> dict[int, int]:
    memory: dict[int, int] = {}
    for cell, table in spec.numbered_children("MemoryDetail"):
        figures = table.child("memoryMap").child("memory")
        amount = figures.optional_integer("allocatable", minimum=0)
        if amount is None:
            amount = figures.optional_integer("total", minimum=0)
        if amount is not None:
            memory[cell] = amount
    return memory


# ---- HyperNode ----


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelector: every `matchLabels` pair and every expression must hold."""

    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.match_labels):
            return False
        for key, operator, values in self.expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True)
class MemberRecord:
    member_type: Literal["Node", "HyperNode"]
    exact_name: str | None
    pattern: re.Pattern[str] | None
    labels: LabelSelector | None
    path: tuple[PathPart, ...]

    def selects(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.exact_name is not None:
            return name == self.exact_name
        if self.pattern is not None:
            return self.pattern.search(name) is not None
        return self.labels is not None and self.labels.matches(labels)


@dataclass(frozen=True)
class HyperNodeRecord:
    name: str
    tier: int
    members: tuple[MemberRecord, ...]
    location: Location


def read_hypernode(obj: RawObject, meta: Metadata) -> HyperNodeRecord:
    spec = obj.child("spec")
    return HyperNodeRecord(
        name=meta.name,
        tier=_tier(spec),
        members=tuple(_member(member) for member in spec.children("members")),
        location=obj.location,
    )


def _tier(spec: RawObject) -> int:
    """An integer; older HyperNode versions wrote it as a string ("1")."""
    text = spec.raw("tier")
    if isinstance(text, str) and text.strip().isdigit():
        tier: int | None = int(text)
    else:
        tier = spec.optional_integer("tier")
    if tier is None:
        raise spec.error("tier", "required, got nothing")
    if tier < 1:
        raise spec.error("tier", f"must be >= 1, got {tier}")
    return tier


_MEMBER_TYPES: dict[str, Literal["Node", "HyperNode"]] = {"Node": "Node", "HyperNode": "HyperNode"}
_SELECTOR_KEYS = ("exactMatch", "regexMatch", "labelMatch")


def _member(member: RawObject) -> MemberRecord:
    type_text = member.required_string("type")
    member_type = _MEMBER_TYPES.get(type_text)
    if member_type is None:
        raise member.error("type", f"must be Node or HyperNode, got {type_text!r}")
    selector = member.child("selector")
    given = [key for key in _SELECTOR_KEYS if selector.has(key)]
    if len(given) != 1:
        raise selector.error(None, f"needs exactly one of exactMatch, regexMatch, labelMatch, got {len(given)}")
    exact = selector.child("exactMatch").required_string("name") if given == ["exactMatch"] else None
    pattern = _pattern(selector.child("regexMatch")) if given == ["regexMatch"] else None
    labels = read_label_selector(selector.child("labelMatch")) if given == ["labelMatch"] else None
    return MemberRecord(member_type, exact, pattern, labels, member.path)


def _pattern(regex: RawObject) -> re.Pattern[str]:
    text = regex.required_string("pattern")
    try:
        return re.compile(text)
    except re.error as error:
        raise regex.error("pattern", f"not a valid regular expression: {error}") from None


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def read_label_selector(selector: RawObject) -> LabelSelector:
    """A `metav1.LabelSelector` (a HyperNode's `labelMatch`, a sub-group policy's `labelSelector`)."""
    expressions = []
    for expression in selector.children("matchExpressions"):
        operator = expression.required_string("operator")
        if operator not in _SELECTOR_OPERATORS:
            raise expression.error("operator", f"must be one of {', '.join(_SELECTOR_OPERATORS)}, got {operator!r}")
        expressions.append((expression.required_string("key"), operator, expression.string_list("values")))
    return LabelSelector(tuple(sorted(selector.string_map("matchLabels").items())), tuple(expressions))


# ---- Queue and PriorityClass ----


@dataclass(frozen=True)
class QueueRecord:
    queue: Queue
    location: Location


def read_queue(obj: RawObject, meta: Metadata, *, warnings: Warnings) -> QueueRecord | None:
    """None for the `root` queue, which the snapshot keeps implicit."""
    if meta.name == ROOT_QUEUE_NAME:
        return None
    spec = obj.child("spec")
    state = obj.child("status").optional_string("state") or spec.optional_string("state")
    parent = spec.optional_string("parent")
    queue = build_model(
        Queue,
        obj.location,
        name=meta.name,
        parent=None if parent == ROOT_QUEUE_NAME else parent,
        weight=spec.integer("weight", 1, minimum=1),
        capability=read_resources(spec, "capability", role="quota") if spec.has("capability") else None,
        deserved=read_resources(spec, "deserved", role="quota") if spec.has("deserved") else None,
        guarantee=read_resources(spec.child("guarantee"), "resource", role="quota"),
        reclaimable=spec.boolean("reclaimable", True),
        priority=spec.integer("priority", 0),
        state="closed" if state in ("Closed", "Closing") else "open",
        sla_waiting_s=read_sla_waiting(obj, meta, warnings),
    )
    return QueueRecord(queue, obj.location)


@dataclass(frozen=True)
class PriorityClassRecord:
    priority_class: PriorityClass
    location: Location


def read_priority_class(obj: RawObject, meta: Metadata) -> PriorityClassRecord:
    value = obj.optional_integer("value")
    if value is None:
        raise obj.error("value", "required, got nothing")
    priority_class = build_model(
        PriorityClass,
        obj.location,
        name=meta.name,
        value=value,
        global_default=obj.boolean("globalDefault", False),
        preemption_policy=read_preemption_policy(obj) or "PreemptLowerPriority",
        offline=meta.annotations.get(QOS_LEVEL_ANNOTATION) in OFFLINE_QOS_LEVELS,
    )
    return PriorityClassRecord(priority_class, obj.location)
