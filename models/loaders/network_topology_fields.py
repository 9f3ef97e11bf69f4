"""Read a `networkTopology` field (Volcano's `NetworkTopologySpec`), wherever it sits: a
PodGroup's or vcjob's `spec`, a sub-group policy, a vcjob task's `partitionPolicy`.

Mode hard (the default) or soft; `highestTierAllowed` >= 1 (a HyperNode tier). Its own
module because the PodGroup readers (`workloads`) and the sub-group policy reader
(`sub_group_policy`), which the former imports, both read it.
"""

from __future__ import annotations

from models.snapshot import NetworkTopology

from .raw import RawObject

__all__ = ["read_network_topology"]


def read_network_topology(spec: RawObject) -> NetworkTopology | None:
    """`spec.networkTopology`: mode hard (default) or soft, `highestTierAllowed` >= 1."""
    if not spec.has("networkTopology"):
        return None
    topology = spec.child("networkTopology")
    mode = topology.string("mode", "hard")
    if mode not in ("hard", "soft"):
        raise topology.error("mode", f"must be hard or soft, got {mode!r}")
    return NetworkTopology(
        mode="hard" if mode == "hard" else "soft",
        highest_tier_allowed=topology.optional_integer("highestTierAllowed", minimum=1),
    )
