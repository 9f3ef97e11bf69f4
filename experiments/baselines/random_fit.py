"""Random: a feasible node uniformly at random (the artifact's `RandomScore`).

Source: Weng et al., ATC '23, §6.1 baselines; artifact `pkg/simulator/plugin/random_score.go`
(PreScore draws one feasible node, Score gives it the maximum) and Open-Gpu-Share's
"random" device choice used with it: a share goes to a device drawn uniformly among those
with room, whole-GPU pods take the first idle devices.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.cluster_state import ClusterState, PodRequest, first_free_devices

__all__ = ["RandomFit"]


class RandomFit(PodByPod):
    name = "random"

    def choose(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> tuple[int, tuple[int, ...]]:
        node = int(nodes[self.rng.integers(nodes.size)])
        return node, self.devices(state, pod, node)

    def devices(self, state: ClusterState, pod: PodRequest, node: int) -> tuple[int, ...]:
        left = state.gpu_left[node].tolist()
        if pod.fractional:
            fitting = [g for g, free in enumerate(left) if free >= pod.gpu_milli]
            return (fitting[int(self.rng.integers(len(fitting)))],)
        return first_free_devices(left, pod.num_gpu) if pod.num_gpu else ()
