"""Read a `networkTopology` field (Volcano's `NetworkTopologySpec`), wherever it sits: a
PodGroup's or vcjob's `spec`, a sub-group policy, a vcjob task's `partitionPolicy`.

Mode hard (the default) or soft; `highestTierAllowed` >= 1 (a HyperNode tier).
`highestTierName` (Volcano 1.14: a tier by its name) is not read yet: a warning names it,
and without `highestTierAllowed` the constraint is not enforced. Its own
module because the PodGroup readers (`workloads`) and the sub-group policy reader
(`sub_group_policy`), which the former imports, both read it.
"""

from __future__ import annotations

from models.errors import format_path
from models.snapshot import NetworkTopology

from .raw import RawObject, Warnings

__all__ = ["read_network_topology"]


def read_network_topology(spec: RawObject, *, warnings: Warnings) -> NetworkTopology | None:
    """`spec.networkTopology`: mode hard (default) or soft, `highestTierAllowed` >= 1."""
    if not spec.has("networkTopology"):
        return None
    topology = spec.child("networkTopology")
    if topology.optional_string("highestTierName") is not None:
        warnings.add(
            spec.location,
            f"{format_path((*topology.path, 'highestTierName'))} is not used yet (tiers are read by number): "
            "set highestTierAllowed, else the constraint is not enforced",
            like="networkTopology.highestTierName is not used yet",
        )
    mode = topology.string("mode", "hard")
    if mode not in ("hard", "soft"):
        raise topology.error("mode", f"must be hard or soft, got {mode!r}")
    return NetworkTopology(
        mode="hard" if mode == "hard" else "soft",
        highest_tier_allowed=topology.optional_integer("highestTierAllowed", minimum=1),
    )
