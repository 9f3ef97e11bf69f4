"""What the scale-up plan returns (`solver.scale_up.plan_scale_up`): which nodes to buy,
where, at what price, and what follows — the binds on the cluster with those nodes, the
waiting PodGroups they start and those that still wait, with why.

Every number here is of the cluster *with* the bought nodes, as the ordinary solve and the
checker judged it: a PodGroup listed in `started` started there (`solver.place`), it is
not a promise of the model that chose the nodes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from models.placement import Bind, Eviction
from models.reason import Reason
from models.snapshot import NodeName, PodGroupKey

__all__ = ["BoughtNodes", "WaitingGroup", "ScaleUpPlan", "PlanEngine"]

PlanEngine = Literal["cpsat", "greedy", "none"]
"""Who chose the nodes: CP-SAT (OPTIMAL or FEASIBLE), greedy (CP-SAT gave no answer in its
time, or the model was too large), or none (nothing to plan for)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class BoughtNodes(_Frozen):
    template: str = Field(description="the node template")
    domain: str | None = Field(description="the HyperNode they join (a new one is created), None: no HyperNode")
    nodes: tuple[NodeName, ...] = Field(description="the names the bought nodes have in the plan")
    price_per_hour: float = Field(description="what they cost together per hour")


class WaitingGroup(_Frozen):
    pod_group: PodGroupKey = Field(description="namespace/name")
    reasons: tuple[Reason, ...] = Field(description="why it still waits on the cluster with the bought nodes")
    plan_note: str | None = Field(
        None, description="why the plan bought no nodes that start it: no template holds a task's pod (each "
        "template's refusal), or the max counts"
    )


class ScaleUpPlan(_Frozen):
    engine: PlanEngine = Field(description="who chose the nodes: cpsat, greedy (its fallback), none")
    status: str = Field(description="CP-SAT's status (OPTIMAL, FEASIBLE), GREEDY, or NOTHING_TO_PLAN")
    bought: tuple[BoughtNodes, ...] = Field((), description="the nodes to buy, per template and domain")
    price_per_hour: float = Field(0.0, description="what all bought nodes cost per hour")
    started: tuple[PodGroupKey, ...] = Field((), description="waiting PodGroups the bought nodes start")
    still_waiting: tuple[WaitingGroup, ...] = Field(
        (), description="waiting PodGroups nodes could help that still wait, with why (no template hosts them, max counts, …)"
    )
    not_planned: tuple[WaitingGroup, ...] = Field(
        (), description="waiting PodGroups no node helps (queue capability, dependency, gates, …): never bought for"
    )
    binds: tuple[Bind, ...] = Field((), description="the binds the solve makes on the cluster with the bought nodes")
    evictions: tuple[Eviction, ...] = Field((), description="the evictions that solve makes")

    def to_contract(self) -> dict[str, Any]:
        """The JSON form (`batchplace solve --scale-up … --output json`'s `scale_up`, what-if's `scale_up`)."""
        return self.model_dump(mode="json", by_alias=True)
