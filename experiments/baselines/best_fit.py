"""BestFit: the node with the least free CPU and GPU left after the pod, weighted equally.

Source: the FGD paper's BestFit baseline (§6.1, after Kubernetes' MostAllocated); artifact
`best_fit_score.go`: with free CPU and GPU milli after the pod normalized by the largest
node (128 cores, 8 GPUs), score = int(100 · (1 − (½·cpu_left/128000 + ½·gpu_left/8000))),
then min–max normalized over the feasible nodes (which keeps the top set). Devices: best
fit. Worked example: a 1-GPU, 8-core pod; node A (16 cores, 1 GPU free) → left (8 cores,
0) → int(100·(1 − 0.03125)) = 96; node B (96 cores, 8 GPUs) → left (88, 7000) →
int(100·(1 − 0.34375 − 0.4375)) = 21 → A.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.baselines.dot_product import MAX_SPEC_CPU_MILLI, MAX_SPEC_GPU_MILLI
from experiments.cluster_state import ClusterState, PodRequest

__all__ = ["BestFit"]


class BestFit(PodByPod):
    name = "bestfit"

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        left = (state.cpu_free[nodes] - pod.cpu_milli) / MAX_SPEC_CPU_MILLI * 0.5
        left = left + (state.left_total[nodes] - pod.total_gpu_milli) / MAX_SPEC_GPU_MILLI * 0.5
        return ((1.0 - left) * 100.0).astype(np.int64)
