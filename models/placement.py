"""What a solve returns: a `Placement` (binds and evictions) wrapped in a `Decision`.

Engines produce it, the checker judges it, the CLI prints it, the HTTP service will
return it and the controller will act on it. `Decision.to_contract()` is the JSON output
contract (docs/output.md); its field names are part of the public API.

A `Placement` is a pure proposal: it says which pending pods go where (with GPU device
indices and, for single-numa-node pods, the NUMA cell) and which running pods must leave
to make room. It does not promise that it is valid — `solver.checker` says that.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from models.dra import DeviceResult
from models.reason import Reason
from models.snapshot import NodeName, PodGroupKey, PodKey, QueueName

__all__ = [
    "Bind",
    "ClaimAllocation",
    "devices_by_request",
    "Eviction",
    "Placement",
    "PodGroupOutcome",
    "UnplacedPod",
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
    pod: PodKey = Field(description="the pending pod to bind, namespace/name")
    node: NodeName = Field(description="the node it goes to")
    gpus: tuple[int, ...] = Field((), description="device indices; a fractional pod lists its one shared device")
    numa_cell: int | None = Field(None, description="set for single-numa-node pods")


class Eviction(_Frozen):
    pod: PodKey = Field(description="the running pod to evict, namespace/name")
    node: NodeName = Field(description="the node it runs on, where its room comes free")
    reason: Literal["preempt", "reclaim"] = Field(
        description="preempt: for a higher-priority PodGroup of its own queue; reclaim: for another queue, "
        "taken from this queue's use above its deserved share"
    )
    for_: PodGroupKey = Field(alias="for", description="the PodGroup the room is made for")


class ClaimAllocation(_Frozen):
    """The devices one DRA ResourceClaim gets this cycle: what the scheduler writes to the
    claim's `status.allocation` (and `status.reservedFor`) before it binds the pods
    (`solver.rules.dra`). A claim is allocated once, whoever shares it."""

    claim: str | None = Field(
        description="the ResourceClaim, namespace/name; null for a claim a template makes for a pod that the "
        "snapshot does not hold yet (found by the pod's `status.resourceClaimStatuses`)"
    )
    pod: PodKey = Field(description="the pod whose `spec.resourceClaims` entry asks it (the first, when shared)")
    pod_claim: str = Field(description="that entry's name")
    template: str | None = Field(None, description="the ResourceClaimTemplate that makes it, when one does")
    node: NodeName = Field(description="the node its devices are used from")
    devices: tuple[DeviceResult, ...] = Field(description="`status.allocation.devices.results`, in request order")
    reserved_for: tuple[PodKey, ...] = Field(description="the pods bound this cycle that use it (`status.reservedFor`)")

    @property
    def label(self) -> str:
        """The claim's `namespace/name`; a claim its template has not made yet reads as what
        will make it: `ml/llm-train-worker-0 gpus (template eight-gpus)` — the controller
        finds it by the pod's `status.resourceClaimStatuses` when it writes the allocation."""
        if self.claim is not None:
            return self.claim
        template = f" (template {self.template})" if self.template else ""
        return f"{self.pod} {self.pod_claim}{template}"

    @property
    def devices_by_request(self) -> str:
        """`gpus: gpu-0, gpu-1; nic: nic-0` (`devices_by_request`)."""
        return devices_by_request(self.devices, node=self.node)


def devices_by_request(results: Iterable[DeviceResult], *, node: str | None) -> str:
    """Devices by request, in request order: `gpus: gpu-0, gpu-1; nic: nic-0`, as people read
    them (CLI, dashboard). A device of a pool other than `node`'s own (a network-attached
    pool) is `pool/device`; an admin-access result (monitoring, not taken) ends in ` (admin)`."""
    by_request: dict[str, list[str]] = {}
    for result in results:
        name = result.device if result.pool == node else f"{result.pool}/{result.device}"
        by_request.setdefault(result.request, []).append(name + (" (admin)" if result.admin_access else ""))
    return "; ".join(f"{request}: {', '.join(devices)}" for request, devices in by_request.items())


class Placement(_Frozen):
    binds: tuple[Bind, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    claims: tuple[ClaimAllocation, ...] = Field((), description="DRA claims allocated this cycle, for the binds")


class UnplacedPod(_Frozen):
    """A pending pod of a started PodGroup that this cycle does not place, and why (the
    sentence Volcano's FailedScheduling Event on the pod carries)."""

    pod: PodKey = Field(description="the pending pod, namespace/name")
    reason: Reason = Field(description="the rule and the numbers, as a PodGroup's reasons")


class PodGroupOutcome(_Frozen):
    name: PodGroupKey = Field(description="the PodGroup, namespace/name (a Volcano Job's is the Job's)")
    queue: QueueName = Field(description="its queue")
    placed: int = Field(description="pods running (and not evicted) or bound this cycle")
    min_member: int = Field(description="pods it needs running at once to start (its gang minimum)")
    state: Literal["scheduled", "pending"] = Field(
        description="scheduled: its gang minimum is met after this cycle; pending: it waits (`reasons` say why)"
    )
    reasons: tuple[Reason, ...] = Field((), description="why it stays pending: the rule and the numbers")
    unplaced_pods: tuple[UnplacedPod, ...] = Field(
        (), description="scheduled only: each of its pending pods this cycle leaves unplaced, with why"
    )


class QueueShare(_Frozen):
    name: QueueName = Field(description="the queue")
    allocated: dict[str, int] = Field(
        description="what its pods hold after this cycle, per resource in base units: cpu millicores, memory bytes, "
        "gpu milli-GPU (1000 = one device); and devices per DRA device class its pods' claims ask, when some do"
    )
    deserved: dict[str, int] = Field(
        description="its fair share by weight, as Volcano's proportion plugin deals it (at most its capability and "
        "what it asks, at least its guarantee), in the same units"
    )


FallbackCause = Literal["no_time", "no_solution", "greedy_better", "engine_error", "rejected", "crashed", "memory", "timeout"]
"""Why CP-SAT's answer was not the one returned: no time left after greedy; no solution in
time; greedy's placement scored better; the engine raised; the checker rejected its
placement; its process crashed, hit the memory ceiling, or overran its deadline."""


class Fallback(_Frozen):
    cause: FallbackCause = Field(
        description="no_time, no_solution, greedy_better, engine_error, rejected (by the checker), crashed, "
        "memory (past the search's ceiling), timeout"
    )
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
            "claims": [claim.model_dump() for claim in self.placement.claims],
            "podgroups": [outcome.model_dump() for outcome in self.podgroups],
            "queues": [share.model_dump() for share in self.queues],
        }
