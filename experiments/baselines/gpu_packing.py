"""GpuPacking: fill partly used devices first, then partly used nodes, idle nodes last.

Source: the FGD paper's GpuPacking baseline (§6.1: "prioritizes GPUs that are already
in use, then idle GPUs on occupied nodes, then idle nodes"); artifact `gpu_packing_score.go`.
Scores for a GPU pod (CPU-only pods score 0 everywhere, i.e. random):
  - idle node (every device idle): max(33 − idle devices, idle devices) — 8 idle → 25;
  - otherwise take the devices it would use (ascending free milli, first that fit):
    if any of them is idle → max(50 − idle devices used, 33);
    else (a share on a used device) → max(100 − ⌊⌊free·100/1000⌋/10⌋, 50) — the fuller
    the device, the higher.
Devices: best fit. Example: a 300-milli share; node A devices (1000, 400), node B all 8
idle → A: device with 400 → 100 − 4 = 96; B: 25 → A.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.cluster_state import WHOLE, ClusterState, PodRequest

__all__ = ["GpuPacking"]


class GpuPacking(PodByPod):
    name = "gpupacking"

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        if pod.num_gpu == 0:
            return np.zeros(nodes.size, dtype=np.int64)
        idle = state.full_free[nodes]
        all_idle = idle == state.gpu_count[nodes]
        idle_node_score = np.maximum(33 - idle, idle)
        if pod.fractional:
            left = state.gpu_left[nodes]
            tightest = np.where(left >= pod.gpu_milli, left, WHOLE + 1).min(axis=1)
            shared_score = np.maximum(100 - (tightest * 100 // WHOLE) // 10, 50)
            used_score = np.where(tightest >= WHOLE, 50 - 1, shared_score)
        else:
            used_score = np.full(nodes.size, max(50 - pod.num_gpu, 33), dtype=np.int64)
        return np.where(all_idle, idle_node_score, used_score).astype(np.int64)
