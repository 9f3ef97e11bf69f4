"""Kubernetes field types several kinds share: resource lists, a pod's effective requests,
taints, tolerations.

Input: `RawObject`s (`status.allocatable`, `spec.containers[]`, `spec.taints`, …).
Output: `ResourceList`s in batchplace's base units and `Taint` / `Toleration` models.

Resource names become batchplace's: `cpu` in millicores, `memory` and every other resource
in its own integer unit (bytes, counts), `nvidia.com/gpu` devices times 1000 into `gpu`
milli-GPUs, and `batchplace.io/gpu-milli` (a fraction of one device) added to `gpu` as it is.
Worked example: a container asking `cpu: 500m, memory: 1Gi, nvidia.com/gpu: 2` becomes
`{"cpu": 500, "memory": 1073741824, "gpu": 2000}`. A container may not request `pods`
(Kubernetes refuses it too): a pod takes one of its node's `pods` by being there.

Every amount is checked against its ceiling (`models.quantity`) here, so the error names the
manifest's field (`spec.containers[0].resources.requests.memory`); a sum of containers
that passes it is caught when the Pod model is built, at `requests.memory`.

Not promised: pod-level `spec.resources` (alpha in Kubernetes 1.32) and in-place resize
status are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from models.duration import DurationError, parse_go_duration
from models.errors import format_path
from models.quantity import QuantityError, ceiling_problem, to_base_units
from models.snapshot import (
    CPU,
    GPU,
    GPU_MILLI_PER_DEVICE,
    PODS,
    PreemptionPolicy,
    ResourceList,
    Taint,
    Toleration,
)

from .extended_resources import check_requests_equal_limits, check_whole
from .keys import GPU_MILLI_RESOURCE, NVIDIA_GPU_RESOURCE, SLA_WAITING_TIME_ANNOTATION, VGPU_RESOURCES
from .raw import Metadata, RawObject, Warnings, describe

__all__ = [
    "read_sla_waiting",
    "ResourceRole",
    "read_resources",
    "container_requests",
    "pod_requests",
    "read_taints",
    "read_tolerations",
    "read_preemption_policy",
    "add_resources",
]

ResourceRole = Literal["node", "request", "quota"]
"""Where a resource list sits: node capacity, a container's request, or a queue's quota."""

_SCALE = {CPU: 1000, NVIDIA_GPU_RESOURCE: GPU_MILLI_PER_DEVICE}
_RENAME = {NVIDIA_GPU_RESOURCE: GPU}
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
_TAINT_EFFECTS: dict[str, TaintEffect] = {
    "NoSchedule": "NoSchedule",
    "PreferNoSchedule": "PreferNoSchedule",
    "NoExecute": "NoExecute",
}
_OPERATORS: dict[str, Literal["Equal", "Exists"]] = {"Equal": "Equal", "Exists": "Exists"}


def _quantity(obj: RawObject, name: str, value: object, *, role: ResourceRole) -> int:
    """One entry in base units, within its resource's ceiling (`models.quantity`)."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise obj.error(name, f"expected a quantity such as 500m or 1Gi, got {describe(value)}")
    try:
        amount = to_base_units(value, scale=_SCALE.get(name, 1))
    except QuantityError as error:
        raise obj.error(name, str(error)) from None
    if amount < 0:
        raise obj.error(name, f"must be >= 0, got {value}")
    problem = ceiling_problem(_snapshot_name(name), amount, quota=role == "quota")
    if problem is not None:
        raise obj.error(name, f"{value}: {problem}")
    if role != "quota":
        check_whole(obj, name, value)
    return amount


def _snapshot_name(name: str) -> str:
    """`nvidia.com/gpu` and `batchplace.io/gpu-milli` → `gpu`; every other name stays."""
    return _RENAME.get(name, GPU if name == GPU_MILLI_RESOURCE else name)


def read_resources(obj: RawObject, key: str, *, role: ResourceRole) -> ResourceList:
    """The resource list under `key` in base units; absent reads as empty.

    `batchplace.io/gpu-milli` is a per-pod request: on a node it is ignored (nodes count
    whole devices), in a request it must be 1-999 and not mixed with `nvidia.com/gpu`.
    """
    resources: ResourceList = {}
    entries = obj.entries(key)
    mapping = obj.child(key)
    names = {name for name, _ in entries}
    for name, value in entries:
        if name == PODS and role == "request":
            raise mapping.error(name, f"a container does not request {PODS}: every pod takes one of its node's {PODS}")
        amount = _quantity(mapping, name, value, role=role)
        if name == GPU_MILLI_RESOURCE:
            if role == "node":
                continue
            if role == "request":
                _check_gpu_fraction(mapping, amount, mixed=NVIDIA_GPU_RESOURCE in names)
        target = _snapshot_name(name)
        resources[target] = resources.get(target, 0) + amount
    if role == "request":
        resources = {name: amount for name, amount in resources.items() if amount}
    return resources


def _check_gpu_fraction(mapping: RawObject, gpu_milli: int, *, mixed: bool) -> None:
    if mixed:
        raise mapping.error(
            GPU_MILLI_RESOURCE, f"ask for whole GPUs ({NVIDIA_GPU_RESOURCE}) or a fraction of one, not both"
        )
    if not 0 < gpu_milli < GPU_MILLI_PER_DEVICE:
        raise mapping.error(GPU_MILLI_RESOURCE, f"must be 1-999 milli-GPU (part of one device), got {gpu_milli}")


def add_resources(*lists: Mapping[str, int]) -> ResourceList:
    total: ResourceList = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total.get(name, 0) + amount
    return total


def _max_resources(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    return {name: max(left.get(name, 0), right.get(name, 0)) for name in {*left, *right}}


def container_requests(container: RawObject) -> ResourceList:
    """Requests, with a limit standing in for each request left out (Kubernetes' defaulting);
    Volcano's vGPU resources included, as they are written (`models.loaders.vgpu` reads them).
    Extended resources requested as the API server allows (`extended_resources`)."""
    resources = container.child("resources")
    requests = read_resources(resources, "requests", role="request")
    limits = read_resources(resources, "limits", role="request")
    check_requests_equal_limits(resources)
    return {**limits, **requests}


def _without_vgpu(requests: ResourceList) -> ResourceList:
    """Volcano's vGPU asks are GPU shares, added to `gpu` once the device memory is known."""
    return {name: amount for name, amount in requests.items() if name not in VGPU_RESOURCES}


def _sorted(resources: Mapping[str, int]) -> ResourceList:
    return {name: resources[name] for name in sorted(resources) if resources[name]}


def pod_requests(spec: RawObject) -> ResourceList:
    """What the scheduler reserves for a pod: Kubernetes' effective request rule.

    Sum of the app containers (plus restartable "sidecar" init containers, which keep
    running), at least the largest one-off init container (plus the sidecars started
    before it), plus `spec.overhead`; Volcano's vGPU resources left out (`models.loaders.vgpu`).
    Example: containers of 1 and 2 CPU, an init container
    of 4 CPU → 4 CPU; the same with the init container at 2 CPU → 3 CPU.
    """
    app = add_resources(*(_without_vgpu(container_requests(c)) for c in spec.children("containers")))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for init in spec.children("initContainers"):
        requests = _without_vgpu(container_requests(init))
        if init.optional_string("restartPolicy") == "Always":
            app = add_resources(app, requests)
            sidecars = add_resources(sidecars, requests)
            running = sidecars
        else:
            running = add_resources(requests, sidecars)
        init_peak = _max_resources(init_peak, running)
    effective = _max_resources(app, init_peak)
    return _sorted(add_resources(effective, read_resources(spec, "overhead", role="request")))


def _effect(obj: RawObject, text: str) -> TaintEffect:
    effect = _TAINT_EFFECTS.get(text)
    if effect is None:
        raise obj.error("effect", f"must be one of {', '.join(_TAINT_EFFECTS)}, got {text!r}")
    return effect


def read_taints(spec: RawObject) -> tuple[Taint, ...]:
    taints = []
    for taint in spec.children("taints"):
        effect = _effect(taint, taint.required_string("effect"))
        taints.append(Taint(key=taint.required_string("key"), value=taint.string("value", ""), effect=effect))
    return tuple(taints)


def read_preemption_policy(obj: RawObject) -> PreemptionPolicy | None:
    """`preemptionPolicy` of a pod spec or a PriorityClass; None when unset."""
    text = obj.optional_string("preemptionPolicy")
    if text is None:
        return None
    if text not in ("PreemptLowerPriority", "Never"):
        raise obj.error("preemptionPolicy", f"must be PreemptLowerPriority or Never, got {text!r}")
    return text  # type: ignore[return-value]


def read_tolerations(spec: RawObject) -> tuple[Toleration, ...]:
    """`tolerationSeconds` is not read: batchplace places, it does not evict on taints."""
    tolerations = []
    for toleration in spec.children("tolerations"):
        operator_text = toleration.string("operator", "Equal")
        operator = _OPERATORS.get(operator_text)
        if operator is None:
            raise toleration.error("operator", f"must be Equal or Exists, got {operator_text!r}")
        key = toleration.optional_string("key")
        if key is None and operator != "Exists":
            raise toleration.error("operator", "must be Exists when key is empty")
        effect_text = toleration.optional_string("effect")
        tolerations.append(
            Toleration(
                key=key,
                operator=operator,
                value=toleration.string("value", ""),
                effect=None if effect_text is None else _effect(toleration, effect_text),
            )
        )
    return tuple(tolerations)


def read_sla_waiting(obj: RawObject, meta: Metadata, warnings: Warnings) -> float | None:
    """`sla-waiting-time` (a Go duration) in seconds, None when absent. A value that is not a
    positive duration is ignored with a warning naming the annotation — Volcano's `sla`
    plugin logs and ignores it too, and one bad annotation must not stop a cycle. Example:
    `"30m"` → 1800.0; `"banana"` → None and "…metadata.annotations.sla-waiting-time: not a
    duration: 'banana' … (ignored)"."""
    text = meta.annotations.get(SLA_WAITING_TIME_ANNOTATION)
    if text is None:
        return None
    try:
        return parse_go_duration(text)
    except DurationError as error:
        path = format_path((*obj.path, "metadata", "annotations", SLA_WAITING_TIME_ANNOTATION))
        warnings.add(obj.location, f"{path}: {error} (ignored)", like=f"{SLA_WAITING_TIME_ANNOTATION}: ignored")
        return None
