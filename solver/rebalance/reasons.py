"""Why a hot node stays hot: one `UncooledNode` per node the advice cannot cool.

Input: the `Instance`, the moves given, the projected levels, the engine's status and the
moves banned by checking. Output: the cause (`models.rebalance.UncooledCause`) and a
sentence with its numbers, asked in this order — the first that holds is the reason:

  no_movable_pod       "no movable pod: 3 of other schedulers, 1 not preemptable"
  not_enough_movable   "its 2 movable pods carry too little: with all of them gone cpu
                        would be 86.25% > 80% (4 pods held: 4 of other schedulers)"
  no_destination       "no cool node can take any of its 2 movable pods (room, placement
                        rules or usage headroom; 5 nodes judged cool)"
  no_joint_plan        "no set of moves cools it with the 3 nodes cooled: the destinations'
                        room and headroom do not hold enough of its 4 movable pods" (CP-SAT
                        proved it), or "... found within the time limit (greedy)" otherwise
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from models.rebalance import UncooledNode
from models.snapshot import NodeName
from solver.rebalance.load import percent_of
from solver.rebalance.movable import Instance

__all__ = ["uncooled_reason"]


def _held(held: Mapping[str, int]) -> str:
    return ", ".join(f"{count} {why}" for why, count in sorted(held.items(), key=lambda item: (-item[1], item[0])))


def uncooled_reason(
    instance: Instance,
    hot: NodeName,
    *,
    cooled_count: int,
    proven: bool,
    engine: str,
    banned: Collection[tuple[int, int]],
) -> UncooledNode:
    table = instance.table
    movers = instance.movable_on[hot]
    held = instance.held.get(hot, {})
    if not movers:
        what = _held(held) if held else "it runs no pod"
        return UncooledNode(node=hot, cause="no_movable_pod", reason=f"no movable pod: {what}")
    rest = dict(table.levels[hot])
    for i in movers:
        for r, share in instance.movers[i].load.leaving.items():
            rest[r] -= share
    still = table.over(rest)
    plural = "s" if len(movers) > 1 else ""
    if still:
        r = sorted(still)[0]
        count = sum(held.values())
        held_note = f" ({count} pod{'s' if count != 1 else ''} held: {_held(held)})" if held else ""
        return UncooledNode(
            node=hot,
            cause="not_enough_movable",
            reason=(
                f"its {len(movers)} movable pod{plural} carry too little: with all of them gone {r} would be "
                f"{percent_of(rest[r]):g}% > {percent_of(table.thresholds[r]):g}%{held_note}"
            ),
        )
    banned_set = set(banned)
    if not table.cool:
        return UncooledNode(
            node=hot, cause="no_destination", reason=f"no node is judged cool to take its {len(movers)} movable pod{plural}"
        )
    if not any((i, n) not in banned_set for i in movers for n in instance.movers[i].candidates):
        return UncooledNode(
            node=hot,
            cause="no_destination",
            reason=(
                f"no cool node can take any of its {len(movers)} movable pod{plural} (room, placement rules "
                f"or usage headroom; {len(table.cool)} nodes judged cool)"
            ),
        )
    gang_only = sum(1 for i in movers if not instance.movers[i].alone)
    gang_note = f"; {gang_only} of them move only with their whole gang" if gang_only else ""
    with_others = f" with the {cooled_count} node{'s' if cooled_count != 1 else ''} cooled" if cooled_count else ""
    if proven:
        reason = (
            f"no set of moves cools it{with_others}: the destinations' room and headroom do not hold enough "
            f"of its {len(movers)} movable pod{plural}{gang_note}"
        )
    else:
        reason = f"no set of moves that cools it{with_others} was found within the time limit ({engine}){gang_note}"
    return UncooledNode(node=hot, cause="no_joint_plan", reason=reason)
