"""kube-scheduler-like: the default profile's resource scoring, pod by pod, no gangs.

Source: kubernetes/kubernetes `pkg/scheduler/framework/plugins/noderesources/least_allocated.go`
(score per resource = (allocatable − requested after the pod) · 100 / allocatable, integer;
the node score is their weighted mean over cpu and memory, weight 1 each — the default
`NodeResourcesFit` scoring strategy, which does not see GPUs) and `selectHost` (random
among the top scores). It spreads: the emptiest node wins. Devices: best fit.
Worked example: a 4-core pod, node A (4 of 64 cores used) → (64−8)·100/64 = 87, node B
(60 of 64 used) → 0 → A (memory alike).
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.cluster_state import ClusterState, PodRequest

__all__ = ["KubeLike", "least_allocated_score"]


def least_allocated_score(state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
    """`[len(nodes)]` integer LeastAllocated score over cpu and memory."""
    cpu_capacity = state.cpu_capacity[nodes]
    memory_capacity = state.memory_capacity[nodes]
    cpu = (state.cpu_free[nodes] - pod.cpu_milli) * 100 // np.maximum(cpu_capacity, 1)
    memory = (state.memory_free[nodes] - pod.memory_mib) * 100 // np.maximum(memory_capacity, 1)
    return ((cpu + memory) // 2).astype(np.int64)


class KubeLike(PodByPod):
    name = "kube"

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        return least_allocated_score(state, pod, nodes)
