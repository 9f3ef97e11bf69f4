"""What a solve returns: a `Placement` (binds and evictions) wrapped in a `Decision`.

Engines produce it, the checker judges it, the CLI prints it, the HTTP service will
return it and the controller will act on it. `Decision.to_contract()` is the JSON output
contract of the README; its field names are part of the public API.

A `Placement` is a pure proposal: it says which pending pods go where (with GPU device
indices and, for single-numa-node pods, the NUMA cell) and which running pods must leave
to make room. It does not promise that it is valid — `solver.checker` says that.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from models.snapshot import NodeName, PodGroupKey, PodKey, QueueName

__all__ = [
    "Bind",
    "Eviction",
    "Placement",
    "PodGroupOutcome",
    "QueueShare",
    "SolveStatus",
    "Fallback",
    "FallbackCause",
    "Decision",
]

SolveStatus = Literal["OPTIMAL", "FEASIBLE", "FALLBACK", "GREEDY", "INVALID"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Bind(_Frozen):
    pod: PodKey
    node: NodeName
    gpus: tuple[int, ...] = Field((), description="device indices; a fractional pod lists its one shared device")
    numa_cell: int | None = Field(None, description="set for single-numa-node pods")


class Eviction(_Frozen):
    pod: PodKey
    node: NodeName
    reason: Literal["preempt", "reclaim"]
    for_: PodGroupKey = Field(alias="for", description="the PodGroup the room is made for")


class Placement(_Frozen):
    binds: tuple[Bind, ...] = ()
    evictions: tuple[Eviction, ...] = ()


class PodGroupOutcome(_Frozen):
    name: PodGroupKey
    queue: QueueName
    placed: int = Field(description="pods running (and not evicted) or bound this cycle")
    min_member: int
    state: Literal["scheduled", "pending"]
    reasons: tuple[str, ...] = Field((), description="why it stays pending: the rule and the numbers")


class QueueShare(_Frozen):
    name: QueueName
    allocated: dict[str, int]
    deserved: dict[str, int]


FallbackCause = Literal["no_time", "no_solution", "greedy_better", "engine_error", "rejected", "crashed", "memory", "timeout"]
"""Why CP-SAT's answer was not the one returned: no time left after greedy; no solution in
time; greedy's placement scored better; the engine raised; the checker rejected its
placement; its process crashed, hit the memory ceiling, or overran its deadline."""


class Fallback(_Frozen):
    cause: FallbackCause
    reason: str = Field(description="what happened, for people: the signal, the ceiling, the scores")


class Decision(_Frozen):
    """One solve's answer. `objective`, `bound` and `gap` are None where an engine has none."""

    engine: str
    status: SolveStatus
    solve_seconds: float
    placement: Placement
    podgroups: tuple[PodGroupOutcome, ...] = ()
    queues: tuple[QueueShare, ...] = ()
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    fallback: Fallback | None = Field(None, description="set when status is FALLBACK: why CP-SAT's answer was not used")
    reproducible: bool = Field(
        True,
        description="the same input gives this answer every run; false when the wall-clock safety net cut the "
        "search short (or the search ran by the wall clock), so the answer depended on the machine's load",
    )

    def to_contract(self) -> dict[str, Any]:
        """The JSON output contract: binds and evictions at the top level."""
        return {
            "engine": self.engine,
            "status": self.status,
            "solve_seconds": round(self.solve_seconds, 6),
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "fallback": None if self.fallback is None else self.fallback.model_dump(),
            "reproducible": self.reproducible,
            "binds": [bind.model_dump() for bind in self.placement.binds],
            "evictions": [eviction.model_dump(by_alias=True) for eviction in self.placement.evictions],
            "podgroups": [outcome.model_dump() for outcome in self.podgroups],
            "queues": [share.model_dump() for share in self.queues],
        }
