"""Which GPU devices each running pod holds on its node.

Input: a node and the running pods on it that use GPUs, with the device indices from the
`batchplace.io/gpus` annotation where a pod has one. Output: indices for every such pod.

Kubernetes does not record which device a pod got (the device plugin knows), so a pod
without the annotation is given devices by a fixed rule, after every annotated pod is
placed: whole-GPU pods (largest first, then by name) take the lowest free indices; then
fractional pods (largest first, then by name) each take the device with the most milli-GPU
already used that still fits them, the lowest index among equals — best fit, so whole
devices stay free. Example: 8 GPUs, pod a annotated "0,1", pod b asking 2 GPUs and pod c
asking 500 milli → a holds 0,1, b gets 2,3, c gets 4.

It raises `FieldError` for what cannot be true of a running node: an index the node lacks,
an annotation listing the wrong number of devices, a device held twice, or more GPUs in
use than the node has. Annotated offline pods with a fraction of a device are counted
apart from the others: they may borrow what online pods requested but do not use
(`solver.rules.colocation`), so each of the two sums fits the device on its own. Example:
GPU 0 annotated on an online 600-milli pod and offline 300- and 200-milli pods holds
600 + 500, both within 1000.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.errors import FieldError, Location, PathPart
from models.snapshot import GPU_MILLI_PER_DEVICE, Node, gpu_devices, is_fractional_gpu

from .workloads import GPUS_PATH

__all__ = ["RunningGpuPod", "assign_gpus"]


@dataclass(frozen=True)
class RunningGpuPod:
    key: str
    gpu_milli: int
    annotated: tuple[int, ...] | None
    location: Location
    path: tuple[PathPart, ...] = ()
    offline: bool = False

    def error(self, message: str, *, annotation: bool) -> FieldError:
        path = (*self.path, *GPUS_PATH) if annotation else self.path
        return FieldError(message, location=self.location, path=path)

    @property
    def devices_needed(self) -> int:
        """How many device indices the pod holds: 1 for a fraction of one GPU."""
        return 1 if is_fractional_gpu(self.gpu_milli) else gpu_devices(self.gpu_milli)

    @property
    def milli_per_device(self) -> int:
        return self.gpu_milli if is_fractional_gpu(self.gpu_milli) else GPU_MILLI_PER_DEVICE


def assign_gpus(node: Node, pods: Sequence[RunningGpuPod]) -> dict[str, tuple[int, ...]]:
    """Device indices per pod key; pods that use no GPU and carry no annotation are left out."""
    used = {gpu.index: gpu.used_milli for gpu in node.gpus}
    borrowed = dict(used)  # annotated offline fractions, counted apart (module docstring)
    assigned: dict[str, tuple[int, ...]] = {}
    for pod in pods:
        if pod.annotated is not None:
            lends = pod.offline and is_fractional_gpu(pod.gpu_milli)
            assigned[pod.key] = _take_annotated(node, borrowed if lends else used, pod)
    implicit = [pod for pod in pods if pod.annotated is None and pod.gpu_milli > 0]
    implicit.sort(key=lambda pod: (is_fractional_gpu(pod.gpu_milli), -pod.gpu_milli, pod.key))
    for pod in implicit:
        if is_fractional_gpu(pod.gpu_milli):
            assigned[pod.key] = (_best_fit_device(node, used, pod),)
        else:
            assigned[pod.key] = _lowest_free_devices(node, used, pod)
    return assigned


def _describe_request(gpu_milli: int) -> str:
    if gpu_milli == 0:
        return "no GPU"
    if is_fractional_gpu(gpu_milli):
        return f"{gpu_milli} milli-GPU of one device"
    return f"{gpu_devices(gpu_milli)} whole GPU(s)"


def _take_annotated(node: Node, used: dict[int, int], pod: RunningGpuPod) -> tuple[int, ...]:
    indices = pod.annotated or ()
    unknown = [index for index in indices if index not in used]
    if unknown:
        message = f"node {node.name} has no GPU {unknown[0]} (it has {len(used)} GPUs)"
        raise pod.error(message, annotation=True)
    if len(indices) != pod.devices_needed:
        message = f"lists {len(indices)} GPU(s) but the pod requests {_describe_request(pod.gpu_milli)}"
        raise pod.error(message, annotation=True)
    for index in indices:
        if used[index] + pod.milli_per_device > GPU_MILLI_PER_DEVICE:
            message = (
                f"GPU {index} of node {node.name} is already taken by other pods "
                f"({used[index]} of {GPU_MILLI_PER_DEVICE} milli-GPU in use)"
            )
            raise pod.error(message, annotation=True)
        used[index] += pod.milli_per_device
    return indices


def _lowest_free_devices(node: Node, used: dict[int, int], pod: RunningGpuPod) -> tuple[int, ...]:
    free = [index for index in sorted(used) if used[index] == 0]
    needed = pod.devices_needed
    if len(free) < needed:
        message = (
            f"runs on node {node.name} with {needed} GPU(s), but only {len(free)} of its "
            f"{len(used)} GPUs are free after the other running pods"
        )
        raise pod.error(message, annotation=False)
    for index in free[:needed]:
        used[index] = GPU_MILLI_PER_DEVICE
    return tuple(free[:needed])


def _best_fit_device(node: Node, used: dict[int, int], pod: RunningGpuPod) -> int:
    fitting = [index for index in sorted(used) if used[index] + pod.gpu_milli <= GPU_MILLI_PER_DEVICE]
    if not fitting:
        message = (
            f"runs on node {node.name} with {pod.gpu_milli} milli-GPU, but no GPU of the node "
            "has that much left after the other running pods"
        )
        raise pod.error(message, annotation=False)
    index = max(fitting, key=lambda candidate: (used[candidate], -candidate))
    used[index] += pod.gpu_milli
    return index
