"""Prototype of a fragmentation-aware batch engine, kept for comparison: the engine now
has the same idea (`solver.fragmentation`, the greedy engine's default packing; policy
`greedy`), and this prototype is what motivated it. It is *not* `solver.place` — results
from it are labelled "prototype" everywhere.

Question: can a batch scheduler beat FGD (ATC '23) on the openb trace, and with what?
Rule, per batch of arrivals (defaults = the variant we report):
1. serve the batch in arrival order (`sort="arrival"`);
2. score every feasible node (and, for a share, every device with room) by the growth
   of the cluster's fragmentation (`experiments.fragmentation`, the paper's measure over
   typical pods), as FGD's integer score int(100·sigmoid(−growth/1000)) (`score="fgd"`);
3. per node keep the device with the least growth, then the tightest one (least free);
   between nodes, ties go to the run's node order (`ties="rank"`) — first fit.

Why these are the defaults: on the default trace at 130 %, exact growth instead of the
integer score allocated less, and so did finer buckets, best fit instead of node order
among ties, and every batch order but arrival (measured: docs/results.md, "The
fragmentation-aware prototype"). Coarse scores with a fixed first-fit order among
near-equal nodes are what make FGD strong; exact greed on a few milli is not.

Not promised: optimality over the batch (no lookahead between pods beyond the order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments.cluster_state import WHOLE, Assignment, ClusterState, PodRequest, first_free_devices
from experiments.fragmentation import FragTracker

__all__ = ["FragAwareBatch", "frag_deltas"]


def frag_deltas(
    state: ClusterState, tracker: FragTracker, pod: PodRequest, nodes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(`[len(nodes)]` fragmentation growth in milli-GPU if `pod` goes there — its best
    device for a share —, that device (−1 otherwise), GPU milli left on the node after)."""
    before = tracker.per_node()[nodes]
    cpu_after = state.cpu_free[nodes] - pod.cpu_milli
    left = state.gpu_left[nodes]
    bits = state.model_bit[nodes]
    gpu_after = state.left_total[nodes] - pod.total_gpu_milli
    if not pod.fractional:
        after_left = left
        if pod.num_gpu:
            idle = left == WHOLE
            after_left = np.where(idle & (np.cumsum(idle, axis=1) <= pod.num_gpu), 0, left)
        growth = tracker.of_states(cpu_after, after_left, bits) - before
        return growth, np.full(nodes.size, -1, dtype=np.int64), gpu_after
    slots = left.shape[1]
    earlier_same = (left[:, :, None] == left[:, None, :]) & np.tri(slots, k=-1, dtype=bool).T[None, :, :]
    rows, cols = np.nonzero((left >= pod.gpu_milli) & ~earlier_same.any(axis=1))
    states = left[rows].copy()
    states[np.arange(rows.size), cols] -= pod.gpu_milli
    growth_option = tracker.of_states(cpu_after[rows], states, bits[rows]) - before[rows]
    # per node: least growth, then the tightest device (least free), then lowest index
    order = np.lexsort((cols, left[rows, cols], growth_option, rows))
    first = np.ones(order.size, dtype=bool)
    first[1:] = rows[order][1:] != rows[order][:-1]
    pick = order[first]
    growth = np.full(nodes.size, np.inf)
    device = np.full(nodes.size, -1, dtype=np.int64)
    growth[rows[pick]] = growth_option[pick]
    device[rows[pick]] = cols[pick]
    return growth, device, gpu_after


class FragAwareBatch:
    """The prototype policy; see the module docstring."""

    name = "greedy-frag"

    def __init__(self, tracker: FragTracker, *, sort: str = "arrival", score: str = "fgd", ties: str = "rank", bucket_milli: float = 1e-6):
        self.tracker = tracker
        self.sort = sort
        self.score = score
        self.ties = ties
        self.bucket_milli = bucket_milli

    def schedule(self, state: ClusterState, pods: Sequence[PodRequest]) -> list[Assignment | None]:
        order = list(range(len(pods)))
        if self.sort == "largest":
            order.sort(key=lambda i: (-pods[i].total_gpu_milli, -pods[i].cpu_milli, i))
        elif self.sort == "smallest":
            order.sort(key=lambda i: (pods[i].total_gpu_milli, pods[i].cpu_milli, i))
        elif self.sort == "gpu-first":
            order.sort(key=lambda i: (pods[i].num_gpu == 0, i))
        result: list[Assignment | None] = [None] * len(pods)
        for i in order:
            result[i] = self._place(state, pods[i])
        return result

    def _place(self, state: ClusterState, pod: PodRequest) -> Assignment | None:
        nodes = np.flatnonzero(state.feasible(pod))
        if not nodes.size:
            return None
        growth, device, gpu_after = frag_deltas(state, self.tracker, pod, nodes)
        if self.score == "fgd":
            growth = -(1.0 / (1.0 + np.exp(growth / 1000.0)) * 100.0).astype(np.int64)
        else:
            growth = np.floor(growth / self.bucket_milli)
        cpu_after = state.cpu_free[nodes] - pod.cpu_milli
        if self.ties == "bestfit":
            at = int(np.lexsort((state.tie_rank[nodes], cpu_after, gpu_after, growth))[0])
        elif self.ties == "worstfit":
            at = int(np.lexsort((state.tie_rank[nodes], -cpu_after, -gpu_after, growth))[0])
        else:
            at = int(np.lexsort((state.tie_rank[nodes], growth))[0])
        node = int(nodes[at])
        if pod.fractional:
            devices: tuple[int, ...] = (int(device[at]),)
        else:
            devices = first_free_devices(state.gpu_left[node].tolist(), pod.num_gpu) if pod.num_gpu else ()
        return state.bind(pod, node, devices)
