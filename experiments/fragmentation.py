"""GPU fragmentation as the FGD paper measures it, vectorized over nodes.

Definition (Weng et al., "Beware of Fragmentation", USENIX ATC '23, §3; the public
artifact `hkust-adsl/kubernetes-scheduler-simulator`, `pkg/utils/frag.go`, read and
re-derived here, not copied):

- *Typical pods* are the workload's most common pod shapes (CPU, milli-GPU per device,
  device count, allowed GPU models — memory is not part of a shape), most frequent first,
  taken one by one until they cover ≥ 95 % of the pods (CPU-only pods included), their
  frequencies renormalized to sum to 1. Ties in count go to the larger shape first.
- For one node and one typical pod t the node's free GPU milli is split:
  - t asks for no GPU, or the node's model is not allowed to t → all of it is fragment
    (a CPU-only pod cannot use a GPU; a pod cannot use a model it excludes);
  - t fits (enough CPU, and ≥ `num_gpu` devices each with ≥ `gpu_milli` free) → only the
    devices with less than t's `gpu_milli` free are fragment;
  - t does not fit → all of it is fragment.
- A node's fragmentation is the frequency-weighted sum over typical pods; the cluster's
  is the sum over nodes. Reported as % of total GPU capacity ("fragmented GPU") and as a
  share of idle GPU milli ("fragmentation rate").

Worked example: a node with 8 CPUs free and devices (1000, 300) free, typical pods
a = 1 × 500 milli, 4 CPUs (freq 0.5) and b = CPU-only (freq 0.5): for a the 300 device
is fragment (300); for b everything (1300) → 0.5·300 + 0.5·1300 = 800 milli.

`FragTracker` keeps every node's value and recomputes a node only after it changed
(`ClusterState.version`), so a per-event cluster total costs O(changed nodes).

Not promised: the artifact's memoized Bellman variant ("frag bellman"), which the paper
does not report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from experiments.cluster_state import WHOLE, ClusterState
from experiments.trace_openb import OpenbPods

__all__ = ["TypicalPods", "typical_pods", "node_fragmentation", "FragTracker", "POPULARITY_THRESHOLD"]

POPULARITY_THRESHOLD = 0.95
"""Typical pods cover at least this share of all pods (the artifact's experiments use 95)."""


@dataclass(frozen=True, eq=False)
class TypicalPods:
    """Typical pod shapes as columns; `freq` sums to 1."""

    cpu_milli: np.ndarray  # [T]
    gpu_milli: np.ndarray  # [T] per device, 0 for CPU-only
    num_gpu: np.ndarray  # [T]
    spec: np.ndarray  # [T] allowed-model bitmask, 0 = any
    freq: np.ndarray  # [T] float

    @property
    def count(self) -> int:
        return len(self.freq)


def typical_pods(pods: OpenbPods, *, threshold: float = POPULARITY_THRESHOLD) -> TypicalPods:
    """The typical pods of a pod list; see the module docstring.

    Example: shapes A×6, B×3, C×1 with threshold 0.8 → A then B (90 % ≥ 80 %) →
    frequencies 6/9 and 3/9."""
    spec_text = [text if gpus else "" for text, gpus in zip(pods.gpu_spec_text, pods.num_gpu.tolist())]
    shapes = list(
        zip(pods.cpu_milli.tolist(), pods.gpu_milli.tolist(), pods.num_gpu.tolist(), spec_text, pods.gpu_spec.tolist())
    )
    counts = Counter(shape[:4] for shape in shapes)
    mask_of = {shape[:4]: (shape[4] if shape[2] else 0) for shape in shapes}
    # Most pods first; equal counts: the larger shape first (cpu, then milli, count, model text).
    order = sorted(counts, key=lambda s: (counts[s], s[0], s[1], s[2], s[3]), reverse=True)
    total = float(len(shapes))
    chosen, covered = [], 0.0
    for shape in order:
        if covered >= threshold * total:
            break
        chosen.append(shape)
        covered += counts[shape]
    weights = np.array([counts[s] for s in chosen], dtype=np.float64)
    return TypicalPods(
        cpu_milli=np.array([s[0] for s in chosen], dtype=np.int64),
        gpu_milli=np.array([s[1] for s in chosen], dtype=np.int64),
        num_gpu=np.array([s[2] for s in chosen], dtype=np.int64),
        spec=np.array([mask_of[s] for s in chosen], dtype=np.int64),
        freq=weights / weights.sum(),
    )


class _Prepared:
    """Typical pods split for the vectorized formula: CPU-only weight, and per GPU pod the
    column of its distinct milli threshold."""

    def __init__(self, typical: TypicalPods):
        gpu = typical.num_gpu > 0
        self.cpu_only_weight = float(typical.freq[~gpu].sum())
        self.cpu = typical.cpu_milli[gpu]
        self.num = typical.num_gpu[gpu]
        self.spec = typical.spec[gpu]
        self.freq = typical.freq[gpu]
        milli = np.where(typical.gpu_milli[gpu] >= WHOLE, WHOLE, typical.gpu_milli[gpu])
        self.thresholds, self.column = np.unique(milli, return_inverse=True)


def node_fragmentation(
    cpu_left: np.ndarray, gpu_left: np.ndarray, model_bit: np.ndarray, typical: TypicalPods | _Prepared
) -> np.ndarray:
    """`[M]` fragmented milli-GPU of M node states (`cpu_left [M]`, device table
    `gpu_left [M, G]` with 0 padding, `model_bit [M]` = 1 << model index)."""
    prepared = typical if isinstance(typical, _Prepared) else _Prepared(typical)
    total = gpu_left.sum(axis=1).astype(np.float64)
    result = total * prepared.cpu_only_weight
    if prepared.freq.size == 0:
        return result
    thresholds = prepared.thresholds
    at_least = gpu_left[:, :, None] >= thresholds[None, None, :]  # [M, G, D]
    count_ge = at_least.sum(axis=1)  # [M, D]
    below = np.where(at_least, 0, gpu_left[:, :, None]).sum(axis=1).astype(np.float64)  # [M, D]
    fits = count_ge[:, prepared.column] >= prepared.num[None, :]  # [M, T]
    fits &= cpu_left[:, None] >= prepared.cpu[None, :]
    allowed = (prepared.spec[None, :] == 0) | ((model_bit[:, None] & prepared.spec[None, :]) != 0)
    fits &= allowed
    value = np.where(fits, below[:, prepared.column], total[:, None])
    return result + value @ prepared.freq


class FragTracker:
    """Each node's fragmentation for one `ClusterState`, recomputed only where it changed."""

    def __init__(self, typical: TypicalPods, state: ClusterState):
        self.typical = typical
        self.prepared = _Prepared(typical)
        self.state = state
        self._version = np.full(state.node_count, -1, dtype=np.int64)
        self._values = np.zeros(state.node_count, dtype=np.float64)

    def per_node(self) -> np.ndarray:
        """`[N]` fragmented milli-GPU of every node now (read-only view)."""
        state = self.state
        stale = np.flatnonzero(state.version != self._version)
        if stale.size:
            self._values[stale] = node_fragmentation(
                state.cpu_free[stale], state.gpu_left[stale], state.model_bit[stale], self.prepared
            )
            self._version[stale] = state.version[stale]
        return self._values

    def total(self) -> float:
        """Cluster fragmentation in milli-GPU."""
        return float(self.per_node().sum())

    def of_states(self, cpu_left: np.ndarray, gpu_left: np.ndarray, model_bit: np.ndarray) -> np.ndarray:
        """Fragmentation of hypothetical node states (FGD's "after this pod")."""
        return node_fragmentation(cpu_left, gpu_left, model_bit, self.prepared)
