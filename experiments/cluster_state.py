"""The trace simulator's cluster: free CPU, memory and per-device milli-GPU as numpy arrays,
changed one bind (or release) at a time.

Input: an `OpenbNodes` node list. Every policy (baselines and the batchplace adapter)
reads it through vectorized Filter helpers and changes it only through `bind` and
`release`, which check capacity themselves — a bind that does not fit raises
`OverCommit` (a bug in the policy, never a pod that "fails"). Output: the arrays the
metrics read (`allocated_gpu_milli`, the per-node device table for fragmentation).

Layout: nodes are rows in node-list order; `gpu_left[n, g]` is the free milli of device g
on node n (1000 = idle), with 0 as padding beyond the node's device count — padding
counts as neither free nor fitting, so no mask is needed on the hot path. Summaries
(`full_free`, `max_left`, `left_total`) are refreshed for the one node a bind touches.
`version[n]` grows on every change of node n, so caches (the fragmentation of each node)
recompute only what changed.

GPU devices are chosen by the caller (`best_fit_devices` & co. are the artifact's
device-selection rules); a pod with no GPU holds none. Memory is in MiB as the trace.

Not promised: anything about order or fairness — that is the policy's business.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from experiments.trace_openb import OpenbNodes, OpenbPods

__all__ = [
    "WHOLE",
    "AFFINITY_TAGS",
    "GpusFree",
    "PodRequest",
    "Assignment",
    "OverCommit",
    "ClusterState",
    "requests_of",
    "best_fit_devices",
    "first_free_devices",
]

WHOLE = 1000
AFFINITY_TAGS: tuple[str, ...] = ("share-gpu", "1-gpu", "2-gpu", "4-gpu", "8-gpu")
"""GPU affinity tags of the artifact's GpuClustering policy: a pod's GPU shape."""


class OverCommit(Exception):
    """A policy bound a pod where it does not fit: a bug in that policy, report it."""


GpusFree = Literal["its model", "other models", "nowhere"]
"""Where the devices a pod asks are free (`ClusterState.gpus_free_for`)."""


@dataclass(frozen=True)
class PodRequest:
    """One pod of the trace as a policy sees it. `spec` is a bitmask over GPU models
    (0 = any); `index` is its position in the arrival order (a stable id)."""

    index: int
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per device
    spec: int = 0

    @property
    def whole_devices(self) -> int:
        """Whole devices it takes: 2 × 1000 → 2; a share (1 × 460) → 0."""
        return self.num_gpu if self.gpu_milli == WHOLE else 0

    @property
    def fractional(self) -> bool:
        return 0 < self.gpu_milli < WHOLE

    @property
    def total_gpu_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def affinity(self) -> int:
        """Column of `AFFINITY_TAGS`, −1 for a pod without GPUs. 1 × 460 → share-gpu; 4 × 1000 → 4-gpu."""
        if self.num_gpu == 0:
            return -1
        if self.fractional:
            return 0
        return {1: 1, 2: 2, 4: 3, 8: 4}.get(self.num_gpu, -1)


@dataclass(frozen=True)
class Assignment:
    """Where a pod went: node row and device columns (a fractional pod lists its one device)."""

    node: int
    devices: tuple[int, ...]


def requests_of(pods: OpenbPods) -> list[PodRequest]:
    """One `PodRequest` per pod, `index` = position in `pods`."""
    spec = np.where(pods.num_gpu > 0, pods.gpu_spec, 0)
    return [
        PodRequest(index=i, cpu_milli=c, memory_mib=m, num_gpu=g, gpu_milli=milli, spec=s)
        for i, (c, m, g, milli, s) in enumerate(
            zip(
                pods.cpu_milli.tolist(),
                pods.memory_mib.tolist(),
                pods.num_gpu.tolist(),
                pods.gpu_milli.tolist(),
                spec.tolist(),
            )
        )
    ]


def best_fit_devices(left: Sequence[int], pod: PodRequest) -> tuple[int, ...]:
    """The artifact's "best" device choice: a share goes to the device with the least free
    milli that still fits (lowest index on ties); whole-GPU pods take the first idle
    devices by index. Example: left (1000, 300, 600), a 250-milli pod → (1,)."""
    if pod.num_gpu == 0:
        return ()
    if pod.fractional:
        best, best_left = -1, WHOLE + 1
        for g, free in enumerate(left):
            if pod.gpu_milli <= free < best_left:
                best, best_left = g, free
        return (best,) if best >= 0 else ()
    return first_free_devices(left, pod.num_gpu)


def first_free_devices(left: Sequence[int], count: int) -> tuple[int, ...]:
    """The first `count` idle devices by index, () if there are fewer."""
    chosen = tuple(g for g, free in enumerate(left) if free == WHOLE)[:count]
    return chosen if len(chosen) == count else ()


class ClusterState:
    """Free capacity of every node, changed by `bind` / `release`; see the module docstring."""

    def __init__(self, nodes: OpenbNodes):
        self.nodes = nodes
        count = nodes.count
        slots = int(nodes.gpus.max(initial=0))
        self.cpu_capacity = nodes.cpu_milli.copy()
        self.memory_capacity = nodes.memory_mib.copy()
        self.gpu_count = nodes.gpus.copy()
        self.model = nodes.model.copy()
        self.model_bit = np.where(nodes.model >= 0, np.left_shift(1, np.maximum(nodes.model, 0)), 0).astype(np.int64)
        self.cpu_free = nodes.cpu_milli.copy()
        self.memory_free = nodes.memory_mib.copy()
        self.gpu_left = np.where(np.arange(slots)[None, :] < nodes.gpus[:, None], WHOLE, 0).astype(np.int64)
        self.full_free = nodes.gpus.copy()
        self.max_left = np.where(nodes.gpus > 0, WHOLE, 0).astype(np.int64)
        self.left_total = nodes.gpus * WHOLE
        self.affinity = np.zeros((count, len(AFFINITY_TAGS)), dtype=np.int64)
        self.pod_count = np.zeros(count, dtype=np.int64)
        self.version = np.zeros(count, dtype=np.int64)
        self.gpu_capacity_milli = int(nodes.gpus.sum()) * WHOLE
        self.allocated_gpu_milli = 0
        self._spec_masks: dict[int, np.ndarray] = {}
        self.tie_rank = np.arange(count, dtype=np.int64)
        """Order in which equal-score nodes win (lower first); the FGD protocol draws it per seed."""

    @property
    def node_count(self) -> int:
        return self.nodes.count

    # ---- Filter ----

    def model_ok(self, spec: int) -> np.ndarray:
        """`[N]` bool: nodes whose GPU model the spec allows (all for spec 0)."""
        if spec == 0:
            return np.ones(self.node_count, dtype=bool)
        mask = self._spec_masks.get(spec)
        if mask is None:
            mask = self._spec_masks[spec] = (self.model_bit & spec) != 0
        return mask

    def feasible(self, pod: PodRequest) -> np.ndarray:
        """`[N]` bool: nodes where `pod` fits now — kube-scheduler's NodeResourcesFit (CPU,
        memory) plus the artifact's Open-Gpu-Share filter (GPU model, and `num_gpu`
        devices with `gpu_milli` free each)."""
        mask = (self.cpu_free >= pod.cpu_milli) & (self.memory_free >= pod.memory_mib)
        if pod.num_gpu == 0:
            return mask
        mask &= self.model_ok(pod.spec)
        if pod.fractional:
            return mask & (self.max_left >= pod.gpu_milli)
        return mask & (self.full_free >= pod.num_gpu)

    def gpus_free_for(self, pod: PodRequest) -> GpusFree:
        """Where the devices `pod` asks (`num_gpu` idle devices, or one with `gpu_milli` left)
        are free, whatever the nodes' CPU and memory: on a node of a GPU model it allows, only
        on other models, or nowhere. When `feasible` finds no node, "its model" means CPU or
        memory kept the pod off idle GPUs, "other models" that its GPU model did."""
        if pod.num_gpu == 0:
            return "nowhere"
        free = self.max_left >= pod.gpu_milli if pod.fractional else self.full_free >= pod.num_gpu
        if (free & self.model_ok(pod.spec)).any():
            return "its model"
        return "other models" if free.any() else "nowhere"

    def fits(self, pod: PodRequest, node: int, devices: Sequence[int]) -> bool:
        """Whether `pod` fits on `node` on exactly `devices` (the check `bind` makes)."""
        if self.cpu_free[node] < pod.cpu_milli or self.memory_free[node] < pod.memory_mib:
            return False
        if pod.num_gpu == 0:
            return not devices
        if pod.spec and not (int(self.model_bit[node]) & pod.spec):
            return False
        if len(set(devices)) != pod.num_gpu or any(g < 0 or g >= self.gpu_count[node] for g in devices):
            return False
        need = WHOLE if pod.whole_devices else pod.gpu_milli
        return all(self.gpu_left[node, g] >= need for g in devices)

    # ---- change ----

    def bind(self, pod: PodRequest, node: int, devices: Sequence[int]) -> Assignment:
        """Take `pod`'s resources on `node` and `devices`; `OverCommit` if they are not free."""
        if not self.fits(pod, node, devices):
            raise OverCommit(
                f"pod #{pod.index} (cpu {pod.cpu_milli}m, mem {pod.memory_mib}Mi, gpu {pod.num_gpu}×{pod.gpu_milli}m) "
                f"does not fit node {self.nodes.names[node]} on devices {tuple(devices)}: cpu free "
                f"{self.cpu_free[node]}m, mem free {self.memory_free[node]}Mi, devices {self.gpu_left[node].tolist()}"
            )
        self._change(pod, node, devices, sign=1)
        return Assignment(node=node, devices=tuple(devices))

    def release(self, pod: PodRequest, assignment: Assignment) -> None:
        """Give back what `bind` took (a pod that ends)."""
        self._change(pod, assignment.node, assignment.devices, sign=-1)

    def _change(self, pod: PodRequest, node: int, devices: Sequence[int], *, sign: int) -> None:
        self.cpu_free[node] -= sign * pod.cpu_milli
        self.memory_free[node] -= sign * pod.memory_mib
        if pod.num_gpu:
            per_device = WHOLE if pod.whole_devices else pod.gpu_milli
            for g in devices:
                self.gpu_left[node, g] -= sign * per_device
            row = self.gpu_left[node, : self.gpu_count[node]]
            self.full_free[node] = int((row == WHOLE).sum())
            self.max_left[node] = int(row.max(initial=0))
            self.left_total[node] = int(row.sum())
            self.allocated_gpu_milli += sign * pod.total_gpu_milli
            if pod.affinity >= 0:
                self.affinity[node, pod.affinity] += sign
        self.pod_count[node] += sign
        self.version[node] += 1
