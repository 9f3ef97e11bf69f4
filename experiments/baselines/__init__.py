"""Baseline placement policies for the trace simulator, one file per published rule.

| name            | rule (source)                                                    |
|-----------------|------------------------------------------------------------------|
| `random`        | uniformly random feasible node (FGD artifact `random_score.go`)  |
| `dotprod`       | smallest free·request dot product (Tetris; `dot_product_score.go`) |
| `gpuclustering` | same GPU shape together (`gpu_clustering_score.go`)              |
| `gpupacking`    | used devices, then used nodes, then idle nodes (`gpu_packing_score.go`) |
| `bestfit`       | least CPU+GPU left after the pod (`best_fit_score.go`)            |
| `fgd`           | least fragmentation growth (Weng et al., ATC '23; `fgd_score.go`) |
| `volcano`       | Volcano binpack, pod by pod (`binpack.go`)                        |
| `kube`          | kube-scheduler LeastAllocated spread (`least_allocated.go`)       |

The sub-group experiment (`experiments.subgroup_stream`) has its own Volcano-like policy,
`volcano_subgroups.VolcanoSubGroups`: Volcano 1.14's allocate action with sub-group
policies and the network-topology-aware plugin (sub-groups placed one after another).

`BASELINES` is an explicit tuple (no registration by import side effect); `make_baseline`
builds one with its random generator (tie-breaks) and, for FGD, the fragmentation tracker.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines._base import Policy, PodByPod, select_host
from experiments.baselines.best_fit import BestFit
from experiments.baselines.dot_product import DotProduct
from experiments.baselines.fgd import FragmentationGradientDescent
from experiments.baselines.gpu_clustering import GpuClustering
from experiments.baselines.gpu_packing import GpuPacking
from experiments.baselines.kube_like import KubeLike
from experiments.baselines.random_fit import RandomFit
from experiments.baselines.volcano_like import VolcanoLike
from experiments.fragmentation import FragTracker

__all__ = ["BASELINES", "PAPER_BASELINES", "Policy", "PodByPod", "select_host", "make_baseline"]

BASELINES: tuple[str, ...] = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "volcano", "kube")
PAPER_BASELINES: tuple[str, ...] = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")
"""The six policies of the FGD paper's Figure 7, whose published numbers gate our reproduction."""

_CLASSES = {
    "random": RandomFit,
    "dotprod": DotProduct,
    "gpuclustering": GpuClustering,
    "gpupacking": GpuPacking,
    "bestfit": BestFit,
    "volcano": VolcanoLike,
    "kube": KubeLike,
}


def make_baseline(name: str, *, rng: np.random.Generator, tracker: FragTracker) -> Policy:
    """The baseline called `name` (one of `BASELINES`)."""
    if name == "fgd":
        return FragmentationGradientDescent(rng, tracker)
    if name not in _CLASSES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    return _CLASSES[name](rng)
