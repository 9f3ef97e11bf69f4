"""Put the parts' placements together into one placement of the whole snapshot.

Input: the parts' placements, in part order. Output: one `Placement`, their binds, evictions
and DRA claims in that order. The parts share no node and no pending pod
(`solver.partition.split`), so no two binds name the same pod and no two evictions the
same running pod; whatever the parts could not see of each other — one queue's capability
spent twice, an inter-pod rule across parts — is `solver.partition.repair`'s to undo.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.placement import Placement

__all__ = ["merge_placements"]


def merge_placements(placements: Sequence[Placement]) -> Placement:
    """The union of `placements`. Example: part 0 binds a/p0, part 1 binds b/p0 and evicts
    c/r1 → one placement binding a/p0 and b/p0 and evicting c/r1."""
    return Placement(
        binds=tuple(bind for placement in placements for bind in placement.binds),
        evictions=tuple(eviction for placement in placements for eviction in placement.evictions),
        claims=tuple(claim for placement in placements for claim in placement.claims),
    )
