"""Volcano-like: Volcano's `allocate` action with the gang, proportion and binpack plugins,
pod by pod, no backtracking beyond a gang's own Statement.

Source: volcano-sh/volcano `pkg/scheduler/plugins/binpack/binpack.go` (score = Σ_r w_r ·
(used_r + asked_r) / allocatable_r over the resources the pod asks for, / Σ w_r, × 100;
a node where a resource would overflow scores 0 for it), `SelectBestNode` (random among
the top scores). Weights here: cpu 1, memory 1, GPU 2 (the binpack docs' example of an
extended resource weighted above CPU). Devices: best fit (Volcano's deviceshare packs
shares onto the fullest device).

In the FGD protocol every pod is its own job in one queue, so gang and proportion do not
act and this is binpack pod by pod; the timeline protocol (`experiments.timeline`) adds the
gang Statement and the proportion queue order around the same node score (`binpack_score`).
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.cluster_state import ClusterState, PodRequest

__all__ = ["VolcanoLike", "binpack_score", "BINPACK_WEIGHTS"]

BINPACK_WEIGHTS = {"cpu": 1.0, "memory": 1.0, "gpu": 2.0}


def binpack_score(state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
    """`[len(nodes)]` Volcano binpack score in 0–100 (float, as Volcano keeps it)."""
    total = np.zeros(nodes.size, dtype=np.float64)
    weight_sum = 0.0
    parts = (
        (pod.cpu_milli, state.cpu_capacity[nodes], state.cpu_capacity[nodes] - state.cpu_free[nodes], BINPACK_WEIGHTS["cpu"]),
        (pod.memory_mib, state.memory_capacity[nodes], state.memory_capacity[nodes] - state.memory_free[nodes], BINPACK_WEIGHTS["memory"]),
        (pod.total_gpu_milli, state.gpu_count[nodes] * 1000, state.gpu_count[nodes] * 1000 - state.left_total[nodes], BINPACK_WEIGHTS["gpu"]),
    )  # fmt: skip
    for asked, capacity, used, weight in parts:
        if asked <= 0:
            continue
        final = used + asked
        total += np.where((final <= capacity) & (capacity > 0), final * weight / np.maximum(capacity, 1), 0.0)
        weight_sum += weight
    return total / weight_sum * 100.0 if weight_sum else total


class VolcanoLike(PodByPod):
    name = "volcano"

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        return binpack_score(state, pod, nodes)
