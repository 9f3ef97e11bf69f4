"""Volcano's vGPU resources (HAMi's device plugin) read as batchplace's fractional GPUs.

Volcano users share a GPU by asking, per container, `volcano.sh/vgpu-number` (how many
virtual GPUs, each on its own device), `volcano.sh/vgpu-memory` (MiB of device memory per
vGPU) and `volcano.sh/vgpu-cores` (percent of a device's cores per vGPU). batchplace has
one GPU unit, the milli-GPU, so each vGPU becomes the share of a device it takes:

    share = max(⌈1000 · vgpu-memory / device memory⌉, 10 · vgpu-cores)   (≤ 1000)

and a whole device (1000) when it states neither. Worked example: vgpu-memory 8000 on a
32000-MiB device → 250 milli; with vgpu-cores 30 as well → max(250, 300) = 300; four pods
of 250 fill one device. A container asking vgpu-number 2 with a share of 1000 takes two
whole devices; vgpu-number 2 with a share below 1000 is refused, because batchplace puts
a fraction on one device only (ask vgpu-number 1, or whole devices).

Device memory, per node: the label `nvidia.com/gpu.memory` (MiB, GPU feature discovery),
else the node's allocatable `volcano.sh/vgpu-memory` divided by its devices (what HAMi's
plugin advertises). A pod's request is one number on every node, so the share is taken
against the *smallest* device memory any node states: exact on the smallest devices,
more than needed on larger ones — a vGPU never gets less memory than it asked. A pod
asking more memory than that smallest device is refused (it fits only some GPUs, which one
share cannot say). When no node states its device memory, a vGPU that asks for memory
takes a whole device, with a warning: never too little, at the price of sharing.

Nodes: a node without `nvidia.com/gpu` whose allocatable has `volcano.sh/vgpu-number`
has GPUs: `nvidia.com/gpu.count` of them when that label (GPU feature discovery) says,
else vgpu-number read as GPUs — a plugin splitting each device into N slots advertises N
per device, so label such nodes with their count. The node's vGPU figures are not kept as
resources of their own.

Not read: vGPU asks of init containers; other vGPU keys (memory percentage, device type).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.errors import FieldError, Location, PathPart
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, ResourceList

from .keys import GPU_COUNT_LABEL, GPU_MEMORY_LABEL, VGPU_CORES, VGPU_MEMORY, VGPU_NUMBER, VGPU_RESOURCES
from .raw import RawObject, Warnings

__all__ = ["VgpuAsk", "vgpu_ask", "node_vgpu", "device_memory_mib", "vgpu_milli"]

_PERCENT = 100


@dataclass(frozen=True)
class VgpuAsk:
    """One container's vGPU request, before the device memory is known."""

    number: int
    memory_mib: int
    cores_percent: int
    location: Location
    path: tuple[PathPart, ...]


def vgpu_ask(container: RawObject, requests: Mapping[str, int]) -> VgpuAsk | None:
    """The vGPU part of a container's `requests` (already in base units), or None."""
    if not VGPU_RESOURCES & requests.keys():
        return None
    cores = requests.get(VGPU_CORES, 0)
    path = (*container.path, "resources", "requests")
    if cores > _PERCENT:
        message = f"must be a percent of one GPU's cores, 0-100, got {cores}"
        raise FieldError(message, location=container.location, path=(*path, VGPU_CORES))
    return VgpuAsk(
        number=requests.get(VGPU_NUMBER, 1),
        memory_mib=requests.get(VGPU_MEMORY, 0),
        cores_percent=cores,
        location=container.location,
        path=path,
    )


def node_vgpu(
    obj: RawObject, labels: Mapping[str, str], allocatable: ResourceList
) -> tuple[ResourceList, int | None]:
    """The node's allocatable with vGPU slots read as GPUs (module docstring), and the memory
    of one of its devices in MiB (None when the node does not say)."""
    kept = {name: amount for name, amount in allocatable.items() if name not in VGPU_RESOURCES}
    slots = allocatable.get(VGPU_NUMBER, 0)
    if not kept.get(GPU) and slots:
        kept[GPU] = _label_integer(obj, labels, GPU_COUNT_LABEL, default=slots) * GPU_MILLI_PER_DEVICE
    devices = kept.get(GPU, 0) // GPU_MILLI_PER_DEVICE
    if not devices:
        return kept, None
    memory = _label_integer(obj, labels, GPU_MEMORY_LABEL, default=None)
    if memory is None and allocatable.get(VGPU_MEMORY):
        memory = allocatable[VGPU_MEMORY] // devices
    return kept, memory


def _label_integer(obj: RawObject, labels: Mapping[str, str], key: str, *, default: int | None) -> int | None:
    text = labels.get(key)
    if text is None:
        return default
    if not text.isdigit() or int(text) == 0:
        message = f"expected a positive whole number, got {text!r}"
        raise FieldError(message, location=obj.location, path=(*obj.path, "metadata", "labels", key))
    return int(text)


def device_memory_mib(memories: Sequence[int | None]) -> int | None:
    """The device memory shares are taken against: the smallest a node states."""
    known = [memory for memory in memories if memory]
    return min(known) if known else None


def _share_milli(ask: VgpuAsk, memory_mib: int | None, warnings: Warnings) -> int:
    """One vGPU's share of a device, in milli-GPU (module docstring)."""
    if not ask.memory_mib and not ask.cores_percent:
        return GPU_MILLI_PER_DEVICE
    if ask.memory_mib and memory_mib is None:
        message = (
            f"asks {VGPU_MEMORY} but no node states its GPU memory (label {GPU_MEMORY_LABEL}); "
            "each vGPU takes a whole GPU"
        )
        warnings.add(ask.location, message)
        return GPU_MILLI_PER_DEVICE
    if ask.memory_mib and memory_mib is not None and ask.memory_mib > memory_mib:
        message = (
            f"{ask.memory_mib} MiB is more than the smallest GPU here ({memory_mib} MiB): "
            "a vGPU's share must fit every GPU"
        )
        raise FieldError(message, location=ask.location, path=(*ask.path, VGPU_MEMORY))
    by_memory = -(-ask.memory_mib * GPU_MILLI_PER_DEVICE // memory_mib) if ask.memory_mib and memory_mib else 0
    return max(by_memory, ask.cores_percent * GPU_MILLI_PER_DEVICE // _PERCENT)


def vgpu_milli(asks: Sequence[VgpuAsk], memory_mib: int | None, warnings: Warnings) -> int:
    """What a pod's containers' vGPUs take together, in milli-GPU: 4 × 250 → 1000 is not
    4 devices but one device's worth — so only one fractional vGPU per pod, or whole ones."""
    total = 0
    for ask in asks:
        share = _share_milli(ask, memory_mib, warnings)
        if ask.number > 1 and share < GPU_MILLI_PER_DEVICE:
            message = (
                f"asks {ask.number} vGPUs of {share} milli-GPU each: batchplace shares one device per pod; "
                f"ask {VGPU_NUMBER} 1, or whole GPUs"
            )
            raise FieldError(message, location=ask.location, path=(*ask.path, VGPU_NUMBER))
        total += ask.number * share
    return total
