"""Rebalancing advice: which running pods to move off hot nodes, and where (`solver.rebalance`).

An output, like `models.placement`: `solver.rebalance.plan_rebalance` produces it, the CLI
prints it, `POST /v1/what-if` with `rebalance: true` returns it and the dashboard draws it.
Its field names are part of the public API.

Advice is advice: batchplace evicts nothing for balance. A `Move` says "this pod, recreated
on that node, would leave every node at or under its usage thresholds"; an operator (or a
descheduler) acts on it, or not. Percents are of a node's allocatable, as `NodeUsage`'s;
every number after a move is an *estimate* (`solver.rebalance.load` says how it is made).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from models.placement import Fallback
from models.snapshot import NodeName, PodGroupKey, PodKey

__all__ = [
    "UsageResource",
    "RebalanceStatus",
    "NodeVerdict",
    "UncooledCause",
    "MovedUsage",
    "Move",
    "NodeProjection",
    "UncooledNode",
    "RebalanceAdvice",
]

UsageResource = Literal["cpu", "memory", "gpu"]
RebalanceStatus = Literal["OPTIMAL", "FEASIBLE", "GREEDY", "FALLBACK"]
"""OPTIMAL: CP-SAT proved no other set of moves cools more hot nodes, or as many with fewer
moves; FEASIBLE: CP-SAT's best within the time limit; GREEDY: the greedy planner's, asked
for; FALLBACK: the greedy planner's because CP-SAT gave nothing better (`fallback` says why)."""

NodeVerdict = Literal["cooled", "still_hot", "cool"]
"""A judged node after the advice: a hot node the moves bring to its thresholds or under
(`cooled`), one they cannot (`still_hot`), a node that was and stays at or under them
(`cool`, destinations included). Nodes without a fresh reading are not listed, only counted
(`RebalanceAdvice.not_judged`)."""

UncooledCause = Literal["no_movable_pod", "not_enough_movable", "no_destination", "no_joint_plan"]
"""Why a hot node stays hot (`solver.rebalance.reasons` writes the sentence):
  - no_movable_pod: none of its pods may move (other schedulers', not preemptable, or a gang
    that would drop below its minimum);
  - not_enough_movable: even with every movable pod gone, the estimate stays above threshold;
  - no_destination: no cool node can take any of its movable pods (placement rules, room,
    usage headroom);
  - no_joint_plan: pods could leave one by one, but no set of moves found cools it (with the
    other nodes cooled: their destinations' room and headroom are shared)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MovedUsage(_Frozen):
    """One resource's estimated usage that goes with a moved pod."""

    resource: UsageResource = Field(description="cpu, memory or gpu")
    amount: float = Field(description="estimated use in base units: millicores, bytes, milli-GPU")
    from_percent: float = Field(description="percent of the source node's allocatable it takes off")
    to_percent: float = Field(description="percent of the destination's allocatable it adds")


class Move(_Frozen):
    pod: PodKey = Field(description="the running pod to move (evict; its controller recreates it), namespace/name")
    pod_group: PodGroupKey = Field(description="its PodGroup, namespace/name")
    from_node: NodeName = Field(description="the hot node it leaves")
    to_node: NodeName = Field(description="the node it is recreated on")
    gpus: tuple[int, ...] = Field((), description="device indices on the destination (as a Bind's)")
    numa_cell: int | None = Field(None, description="the destination's NUMA cell, for single-numa-node pods")
    whole_gang: bool = Field(False, description="part of a move of every running pod of its PodGroup")
    usage: tuple[MovedUsage, ...] = Field((), description="the estimated usage it takes along, per measured resource")


class NodeProjection(_Frozen):
    """A node whose usage is judged (fresh), before the advice and after it (estimated)."""

    node: NodeName = Field(description="the judged node")
    verdict: NodeVerdict = Field(
        description="cooled: hot, brought to its thresholds or under; still_hot: hot, left hot; cool: not hot before or after"
    )
    before: dict[str, float] = Field(description="measured percents: cpu, memory, gpu (those measured)")
    after: dict[str, float] = Field(description="projected percents after the moves")
    thresholds: dict[str, float] = Field(description="the policy's thresholds for the resources judged here")
    moves_out: int = Field(0, description="moves that take a pod off this node")
    moves_in: int = Field(0, description="moves that bring a pod onto this node")


class UncooledNode(_Frozen):
    node: NodeName = Field(description="the hot node the advice leaves hot")
    cause: UncooledCause = Field(
        description="no_movable_pod, not_enough_movable, no_destination or no_joint_plan (the module says each)"
    )
    reason: str = Field(description="the cause with its numbers, for people")


class RebalanceAdvice(_Frozen):
    """The answer to "which pods to move so that every node ends at or under its thresholds,
    with the fewest moves". Empty `moves` and `uncooled` when nothing is hot."""

    engine: str = Field(description="cpsat, greedy, or none when there was nothing to plan: no node hot, or no pod that may move")
    status: RebalanceStatus = Field(
        description="OPTIMAL (no better set of moves exists), FEASIBLE (CP-SAT's best in the time limit), GREEDY, "
        "or FALLBACK (greedy's because CP-SAT gave nothing better: `fallback` says why)"
    )
    solve_seconds: float = Field(description="wall-clock seconds the advice took")
    moves: tuple[Move, ...] = Field((), description="the pods to move, and where; empty when nothing is hot or nothing helps")
    nodes: tuple[NodeProjection, ...] = Field((), description="every judged node, hottest first")
    uncooled: tuple[UncooledNode, ...] = Field((), description="hot nodes the advice leaves hot, each with its reason")
    hot_before: int = Field(0, description="nodes hot at the snapshot")
    hot_after: int = Field(0, description="nodes still hot after the moves")
    not_judged: dict[str, int] = Field(
        default_factory=dict, description="nodes not judged and why: stale (old reading), missing (none); never moved to"
    )
    fallback: Fallback | None = Field(None, description="set when status is FALLBACK: why CP-SAT's answer was not used")
    notes: tuple[str, ...] = Field((), description="what the advice assumed (e.g. a checker rejection it repaired)")
