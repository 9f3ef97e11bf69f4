"""FGD, Fragmentation Gradient Descent: the node (and device) where the pod grows the
cluster's GPU fragmentation the least.

Source: Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC '23, §4 (Algorithm 1); artifact
`fgd_score.go`. Fragmentation is `experiments.fragmentation` (typical pods of the
workload). For each feasible node: Δ = frag(node now) − frag(node with the pod);
score = int(100 · sigmoid(Δ / 1000)). A share pod tries every device with room and keeps
its best (lowest index on ties) — that is also the device it gets; a whole-GPU pod takes
the first idle devices (which idle devices does not change fragmentation); a CPU-only pod
changes only the node's free CPU. Ties between nodes: `select_host`.

Worked example: typical pods = one 500-milli share (freq 1); node A devices (1000, 600),
node B (1000, 1000); a 100-milli pod → on A's 600 device: frag 0 → 0 on A… on B's device:
(900 → still ≥ 500) frag 0 → 0; both Δ = 0, score 50; a 200-milli pod on A's 600 device
leaves 400 < 500: Δ = −400 → 40; on A's idle device: 800 ≥ 500, Δ = 0 → 50 (that device).

Speed: candidate states are built as arrays — one per feasible node, or per (node, distinct
free value) for shares — and scored with one vectorized fragmentation call.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import PodByPod, select_host
from experiments.cluster_state import WHOLE, ClusterState, PodRequest, first_free_devices
from experiments.fragmentation import FragTracker

__all__ = ["FragmentationGradientDescent", "fgd_scores"]


def _sigmoid_score(delta_milli: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-delta_milli / 1000.0)) * 100.0).astype(np.int64)


def fgd_scores(
    state: ClusterState, tracker: FragTracker, pod: PodRequest, nodes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(`[len(nodes)]` FGD scores, `[len(nodes)]` device column a share pod would take, −1 otherwise)."""
    before = tracker.per_node()[nodes]
    cpu_after = state.cpu_free[nodes] - pod.cpu_milli
    left = state.gpu_left[nodes]
    bits = state.model_bit[nodes]
    if not pod.fractional:
        after_left = left
        if pod.num_gpu:
            idle = left == WHOLE
            taken = idle & (np.cumsum(idle, axis=1) <= pod.num_gpu)
            after_left = np.where(taken, 0, left)
        after = tracker.of_states(cpu_after, after_left, bits)
        return _sigmoid_score(before - after), np.full(nodes.size, -1, dtype=np.int64)
    # One candidate per (node, distinct free value with room): equal values give equal states.
    slots = left.shape[1]
    earlier_same = (left[:, :, None] == left[:, None, :]) & np.tri(slots, k=-1, dtype=bool).T[None, :, :]
    duplicate = earlier_same.any(axis=1)
    rows, cols = np.nonzero((left >= pod.gpu_milli) & ~duplicate)
    states = left[rows].copy()
    states[np.arange(rows.size), cols] -= pod.gpu_milli
    after = tracker.of_states(cpu_after[rows], states, bits[rows])
    option = _sigmoid_score(before[rows] - after)
    # Per node the best option, the lowest device on ties: sort by (row, −score, col).
    order = np.lexsort((cols, -option, rows))
    first = np.ones(order.size, dtype=bool)
    first[1:] = rows[order][1:] != rows[order][:-1]
    pick = order[first]
    scores = np.full(nodes.size, np.iinfo(np.int64).min, dtype=np.int64)
    device = np.full(nodes.size, -1, dtype=np.int64)
    scores[rows[pick]] = option[pick]
    device[rows[pick]] = cols[pick]
    return scores, device


class FragmentationGradientDescent(PodByPod):
    name = "fgd"

    def __init__(self, rng: np.random.Generator, tracker: FragTracker):
        super().__init__(rng)
        self.tracker = tracker

    def choose(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> tuple[int, tuple[int, ...]]:
        scores, device = fgd_scores(state, self.tracker, pod, nodes)
        at = select_host(scores, state.tie_rank[nodes])
        node = int(nodes[at])
        if pod.fractional:
            return node, (int(device[at]),)
        return node, first_free_devices(state.gpu_left[node].tolist(), pod.num_gpu) if pod.num_gpu else ()
