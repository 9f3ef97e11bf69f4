"""DotProd: the node whose free (CPU, GPU) vector has the smallest dot product with the
pod's request — a Tetris-style alignment score, inverted so that tight nodes win.

Source: Grandl et al., "Multi-Resource Packing for Cluster Schedulers" (Tetris, SIGCOMM
'14), as the FGD paper's baseline (§6.1); artifact `dot_product_score.go` with the
configuration its experiments use (`-dimext merge -norm max -gpusel best`): node vector
(CPU free / 128 cores, GPU milli free / 8000), pod vector (CPU asked / 128 cores, GPU
milli asked / 8000), score = int(100 · (1 − dot / 2)). Devices: best fit.

Worked example: a 4-core, 1-GPU pod; node A free (64 cores, 8 GPUs), node B (8 cores,
1 GPU): dot A = 0.5·0.03125 + 1·0.125 = 0.1406 → 92; dot B = 0.0020 + 0.0156 → 99 → B.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.cluster_state import ClusterState, PodRequest

__all__ = ["DotProduct", "MAX_SPEC_CPU_MILLI", "MAX_SPEC_GPU_MILLI"]

MAX_SPEC_CPU_MILLI = 128_000.0
MAX_SPEC_GPU_MILLI = 8_000.0


class DotProduct(PodByPod):
    name = "dotprod"

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        node_cpu = state.cpu_free[nodes] / MAX_SPEC_CPU_MILLI
        node_gpu = state.left_total[nodes] / MAX_SPEC_GPU_MILLI
        dot = node_cpu * (pod.cpu_milli / MAX_SPEC_CPU_MILLI) + node_gpu * (pod.total_gpu_milli / MAX_SPEC_GPU_MILLI)
        return (100.0 * (1.0 - dot / 2.0)).astype(np.int64)
