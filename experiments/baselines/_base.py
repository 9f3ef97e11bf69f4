"""What every trace policy is, and the pod-by-pod loop the published baselines share.

A policy (`Policy`) takes the cluster and the pods that arrived in one batch and places
what it can, changing the cluster only through `ClusterState.bind` (which refuses an
over-commit); it returns, per pod, where it went or None. The simulator (`experiments.fgd`,
`experiments.timeline`) never places anything itself — as every Volcano action is just
`Execute(ssn)`, every policy here is just `schedule(state, pods)`.

`PodByPod` is kube-scheduler's scheduling cycle for one pod at a time, as the FGD
artifact runs it: Filter (`ClusterState.feasible`), Score (the policy's integer score per
feasible node, higher is better), `selectHost`, then the policy's device choice (the
artifact's Open-Gpu-Share `Reserve`).

`selectHost` among equal top scores: upstream kube-scheduler draws one uniformly; the
artifact's fork (`mental2008/kubernetes v1.20.5-minor`, vendored in the artifact,
`core/generic_scheduler.go`) takes the lexicographically smallest node name "for
reproducibility", and the simulator prefixes every node name with a 4-digit position from
a seeded random permutation (`syncClusterResourceList`). So ties go to the node first in
a random order fixed for the whole run — which packs: the same few nodes win every tie.
`ClusterState.tie_rank` is that order; we keep it for every pod-by-pod policy. A pod that no node passes stays unplaced and,
in the FGD protocol, is not retried.

Integer scores matter: the artifact's plugins truncate to `int64` in 0–100, so nodes
whose exact scores differ by less than a point tie and are drawn at random. Faithful
baselines keep that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from experiments.cluster_state import Assignment, ClusterState, PodRequest, best_fit_devices

__all__ = ["Policy", "PodByPod", "select_host"]


class Policy(Protocol):
    """A placement policy for the trace simulator."""

    name: str

    def schedule(self, state: ClusterState, pods: Sequence[PodRequest]) -> list[Assignment | None]:
        """Place what fits of `pods` (in this order for pod-by-pod policies) on `state`."""
        ...


def select_host(scores: np.ndarray, rank: np.ndarray) -> int:
    """Position of a top score, the lowest `rank` among ties. Example: scores (3, 7, 7),
    ranks (0, 9, 4) → 2."""
    top = np.flatnonzero(scores == scores.max())
    return int(top[0]) if top.size == 1 else int(top[np.argmin(rank[top])])


class PodByPod:
    """Filter → Score → selectHost → device choice, one pod at a time; subclasses give `score`."""

    name = "pod-by-pod"

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def schedule(self, state: ClusterState, pods: Sequence[PodRequest]) -> list[Assignment | None]:
        return [self.place_one(state, pod) for pod in pods]

    def place_one(self, state: ClusterState, pod: PodRequest) -> Assignment | None:
        nodes = np.flatnonzero(state.feasible(pod))
        if not nodes.size:
            return None
        node, devices = self.choose(state, pod, nodes)
        return state.bind(pod, node, devices)

    def choose(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> tuple[int, tuple[int, ...]]:
        """The node (and its devices) for `pod` among the feasible `nodes`."""
        node = int(nodes[select_host(self.score(state, pod, nodes), state.tie_rank[nodes])])
        return node, self.devices(state, pod, node)

    def score(self, state: ClusterState, pod: PodRequest, nodes: np.ndarray) -> np.ndarray:
        """`[len(nodes)]` integer scores, higher is better."""
        return np.zeros(nodes.size, dtype=np.int64)

    def devices(self, state: ClusterState, pod: PodRequest, node: int) -> tuple[int, ...]:
        """Open-Gpu-Share's default device choice ("best"): tightest share, first idle devices."""
        return best_fit_devices(state.gpu_left[node].tolist(), pod)
