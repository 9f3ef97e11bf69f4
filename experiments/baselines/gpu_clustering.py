"""GpuClustering: put pods of the same GPU shape together, emptier nodes last.

Source: the FGD paper's GpuClustering baseline (§6.1, after Gandiva-style affinity);
artifact `gpu_clustering_score.go`. A GPU pod's tag is its shape (`share-gpu`, `1-gpu`,
`2-gpu`, …); with b = ⌊25 · (8000 − GPU milli free) / 8000⌋:
  node runs only pods of the same tag → b + 75; of that tag and others → b + 50;
  no GPU pod at all → b + 25; only other tags → b. CPU-only pods score 0 (random).
Devices: best fit. Example: a 1-GPU pod; node A runs only 1-GPU pods with 4000 free →
12 + 75 = 87; an idle 8-GPU node → 0 + 25 → A.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod
from experiments.cluster_state import ClusterState, PodRequest

__all__ = ["GpuClustering"]


class GpuClustering(PodByPod):
    name = "gpuclustering"

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        tag = pod.affinity
        if tag < 0:
            return np.zeros(nodes.size, dtype=np.int64)
        base = 25 * (8000 - state.left_total[nodes]) // 8000
        tags = state.affinity[nodes]
        distinct = (tags > 0).sum(axis=1)
        same = tags[:, tag] > 0
        bonus = np.where(same, np.where(distinct == 1, 75, 50), np.where(distinct == 0, 25, 0))
        return (base + bonus).astype(np.int64)
