"""Every policy the trace experiments compare, by name: the published baselines
(`experiments.baselines`) and batchplace's engines (`experiments.batchplace_policy`).

`make_policy(config, rng, tracker, state)` is the one factory the FGD protocol and the
sweeps use; `POLICIES` lists the names in the order tables and plots show them.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from experiments.baselines import BASELINES, Policy, make_baseline
from experiments.cluster_state import ClusterState
from experiments.fragmentation import FragTracker

__all__ = ["POLICIES", "BATCHPLACE_POLICIES", "PolicyConfig", "make_policy", "policy_label"]

BATCHPLACE_POLICIES: tuple[str, ...] = ("greedy", "cpsat", "auto", "greedy-large-first", "greedy-bestfit", "greedy-pending", "greedy-frag")
POLICIES: tuple[str, ...] = (*BASELINES, *BATCHPLACE_POLICIES)

_LABELS = {
    "random": "Random", "dotprod": "DotProd", "gpuclustering": "GpuClustering", "gpupacking": "GpuPacking",
    "bestfit": "BestFit", "fgd": "FGD", "volcano": "Volcano-like", "kube": "kube-like",
    "volcano-sla": "Volcano-like with sla (2 h)", "kueue": "Kueue-like (BestEffortFIFO)", "kueue-strict": "Kueue-like (StrictFIFO)", "kueue-binpack": "Kueue-like, MostAllocated",
    "easy": "Slurm-like EASY backfill",
    "greedy": "batchplace greedy", "cpsat": "batchplace cpsat", "auto": "batchplace auto (default)", "greedy-large-first": "batchplace greedy, whole GPUs first in a batch", "greedy-bestfit": "batchplace greedy, best fit only",
    "greedy-pending": "batchplace greedy, shapes from pending pods", "greedy-frag": "greedy + frag score (prototype)",
}  # fmt: skip


def policy_label(name: str) -> str:
    """Display name: `fgd` → `FGD`, `greedy` → `batchplace greedy`."""
    return _LABELS.get(name, name)


class PolicyConfig(Protocol):
    """What `make_policy` reads of a run's config (`FgdConfig`, `TimelineConfig`)."""

    @property
    def policy(self) -> str: ...

    @property
    def time_limit_s(self) -> float: ...


def make_policy(
    config: PolicyConfig, rng: np.random.Generator, tracker: FragTracker, state: ClusterState, *, partition_parts: int = 1
) -> Policy:
    """The policy `config.policy` names, ready for one run; batchplace's CP-SAT policies solve
    each batch in `partition_parts` parts (`SolveConfig.partition_parts`; the FGD protocol's
    `--partition-parts`)."""
    name = config.policy
    if name in BASELINES:
        return make_baseline(name, rng=rng, tracker=tracker)
    if name in BATCHPLACE_POLICIES:
        from experiments.batchplace_policy import make_batchplace_policy

        return make_batchplace_policy(
            name, state=state, tracker=tracker, time_limit_s=config.time_limit_s, partition_parts=partition_parts
        )
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
