"""Request and response shapes of the HTTP API, with the examples `/docs` shows.

The placement response is the output contract of `Decision.to_contract()` (README,
"Output contract") plus the checker's verdict — `valid` and `violations` — and the
loader's `warnings`; its row types (`Bind`, `Eviction`, `PodGroupOutcome`, `QueueShare`)
are `models.placement`'s own, so the schema cannot drift from the contract.

Request envelopes forbid unknown fields, so a typo (`time_limt_s`) is a 422 naming it,
not a silently ignored option. The snapshot inside a what-if request is documented as
`Snapshot` but not validated here (`SkipValidation`): it is read in the solver pool by
`models.loaders.load_snapshot_json`, off the event loop, whose errors carry the field path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, StrictBool, field_validator, model_validator

from models.errors import SnapshotError, format_path
from models.node_templates import MAX_TEMPLATES
from models.placement import Bind, ClaimAllocation, Decision, Eviction, Fallback, PodGroupOutcome, QueueShare, SolveStatus
from models.rebalance import RebalanceAdvice
from models.scale_up_plan import ScaleUpPlan
from models.snapshot import Snapshot
from models.typical_shapes import MAX_TYPICAL_SHAPES, TypicalShape, read_typical_shapes
from solver.objective import TIERS, objective_order
from solver.place import EngineName
from solver.whatif import DrainedNode, JobVerdict

__all__ = [
    "ObjectiveTier",
    "SolveOptions",
    "WhatIfOptions",
    "ViolationOut",
    "PlacementResponse",
    "Changes",
    "WhatIfRequest",
    "WhatIfResponse",
    "Health",
    "Readiness",
    "PLACEMENT_EXAMPLE_SNAPSHOT",
    "WHAT_IF_EXAMPLE",
]

ObjectiveTier = Literal["fairness", "throughput", "disruption", "locality", "usage", "packing"]
"""DESIGN.md's soft rules, most important first."""

MAX_ADDED_OBJECTS = 10_000
MAX_DRAINED_NODES = 50_000


class SolveOptions(BaseModel):
    """How to solve. Query parameters of `POST /v1/placements`; `options` of `POST /v1/what-if`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: EngineName = Field("auto", description="auto = CP-SAT with the greedy fallback; cpsat; greedy")
    time_limit_s: float | None = Field(
        None, gt=0, le=3600, allow_inf_nan=False,
        description="solver time limit in seconds; default and cap are the server's (capped, never refused)",
    )
    objective_order: list[ObjectiveTier] | None = Field(
        None, max_length=len(TIERS),
        description="objective tiers, most important first; unlisted tiers follow in the default order "
        "(fairness, throughput, disruption, locality, usage, packing)",
    )

    @field_validator("objective_order")
    @classmethod
    def _tiers_once(cls, order: list[ObjectiveTier] | None) -> list[ObjectiveTier] | None:
        if order is not None and len(set(order)) != len(order):
            raise ValueError(f"a tier is listed twice: {order}")
        return order

    def full_objective_order(self) -> tuple[ObjectiveTier, ...]:
        """`["throughput"]` → `("throughput", "fairness", "disruption", "locality", "usage", "packing")`."""
        return objective_order(self.objective_order or ())  # type: ignore[return-value]


class WhatIfOptions(SolveOptions):
    """`options` of `POST /v1/what-if`: how to solve, and the workload to keep room for."""

    typical_shapes: list[dict[str, Any]] | None = Field(
        None, max_length=MAX_TYPICAL_SHAPES,
        description="the pod shapes the cluster expects, e.g. [{\"cpu\": \"8\", \"gpu\": 1, \"weight\": 40}, "
        "{\"cpu\": \"500m\", \"gpu\": 0.25, \"weight\": 35}]: the packing keeps room for them "
        "(README, Typical shapes); default: the server's, else the snapshot's pending pods",
    )

    @field_validator("typical_shapes")
    @classmethod
    def _shapes_read(cls, shapes: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if shapes is not None:
            try:
                read_typical_shapes(shapes, source="typical_shapes")
            except SnapshotError as error:
                raise ValueError(f"{format_path(error.path)}: {error.message}") from None
        return shapes

    def shapes(self) -> tuple[TypicalShape, ...] | None:
        """The shapes given, read; None when the request names none."""
        return None if self.typical_shapes is None else read_typical_shapes(self.typical_shapes, source="typical_shapes")


class ViolationOut(BaseModel):
    rule: str = Field(description="the hard rule: capacity, eligibility, gang, quota, …")
    subject: str = Field(description="pod, PodGroup, node or queue it is about")
    message: str = Field(description="what is broken, with the numbers")


class PlacementResponse(BaseModel):
    """The output contract, the checker's verdict, and the loader's warnings."""

    engine: str = Field(description="the engine whose placement this is: cpsat or greedy")
    status: SolveStatus = Field(
        description="OPTIMAL (CP-SAT proved it), FEASIBLE (CP-SAT's best in the time limit), GREEDY (greedy asked for), "
        "FALLBACK (greedy's, CP-SAT's answer not used: `fallback` says why)"
    )
    solve_seconds: float = Field(description="wall-clock seconds of the solve (the one field that varies with the machine's load)")
    objective: float | None = Field(
        None, description="the placement's throughput tier (priority-weighted pods held, GPUs dominating); "
        "null when the engine computed none"
    )
    bound: float | None = Field(None, description="an upper bound on that throughput (CP-SAT's or the LP's); null when none")
    gap: float | None = Field(None, description="(bound − objective) / bound, a fraction (0.01 = 1 %); null without a bound")
    fallback: Fallback | None = Field(None, description="set when status is FALLBACK: why CP-SAT's answer was not used")
    reproducible: bool = Field(True, description=Decision.model_fields["reproducible"].description)
    binds: list[Bind] = Field(description="pending pods to bind, with their nodes and GPU devices")
    evictions: list[Eviction] = Field(description="running pods to evict to make room (preempt or reclaim)")
    claims: list[ClaimAllocation] = Field(
        default_factory=list,
        description="DRA ResourceClaims allocated for the binds: per claim, its node, its devices by request and the "
        "pods it is reserved for (what the scheduler writes to the claim's status)",
    )
    podgroups: list[PodGroupOutcome] = Field(description="every PodGroup of the snapshot, by name: scheduled or pending, and why")
    queues: list[QueueShare] = Field(description="each queue's allocation after this cycle and its deserved share")
    valid: bool = Field(description="the independent checker found no broken hard rule")
    violations: list[ViolationOut] = Field(description="each broken hard rule; empty when valid")
    warnings: list[str] = Field(default_factory=list, description="what the loader skipped or assumed")


class Changes(BaseModel):
    """What to change in the base snapshot (`solver.whatif` says what each change means)."""

    model_config = ConfigDict(extra="forbid")

    add_jobs: list[dict[str, Any]] = Field(
        default_factory=list, max_length=MAX_ADDED_OBJECTS,
        description="Kubernetes objects as JSON: Volcano Jobs (batch.volcano.sh), Kubeflow PyTorchJobs "
        "(kubeflow.org), PodGroups (scheduling.volcano.sh or scheduling.x-k8s.io) with their pending Pods, "
        "or bare pending Pods; and the DRA ResourceClaims / ResourceClaimTemplates (resource.k8s.io/v1) their "
        "pods' spec.resourceClaims name",
    )
    add_jobs_yaml: str | None = Field(None, description="the same, as multi-document YAML (what `kubectl apply -f` takes)")
    add_nodes: list[dict[str, Any]] = Field(
        default_factory=list, max_length=MAX_ADDED_OBJECTS, description="v1 Node objects (and Numatopology) as JSON"
    )
    add_nodes_yaml: str | None = Field(None, description="the same, as multi-document YAML")
    drain_nodes: list[str] = Field(
        default_factory=list, max_length=MAX_DRAINED_NODES,
        description="nodes to drain: cordoned, their running pods evicted (PodGroup pods pending again)",
    )


class WhatIfRequest(BaseModel):
    """A base snapshot (posted as JSON or YAML, or omitted for the live one) and the changes."""

    model_config = ConfigDict(extra="forbid")

    snapshot: Annotated[Snapshot | None, SkipValidation] = Field(
        None, description="the base in the snapshot's JSON form (as `batchplace snapshot` prints)"
    )
    snapshot_yaml: str | None = Field(None, description="the base as Kubernetes / Volcano YAML")
    changes: Changes = Field(default_factory=Changes)
    rebalance: StrictBool = Field(
        False,
        description="also advise which running pods to move off hot nodes, and where (README, Load-aware "
        "placement): on the cluster as this what-if's solve leaves it — changes applied, its binds running, "
        "its evictions gone; alone, on the base after its pending pods' solve. Advice only: nothing is evicted",
    )
    scale_up: list[dict[str, Any]] | None = Field(
        None, max_length=MAX_TEMPLATES,
        description="node templates the cluster may buy (docs/scale-up.md: name, labels, taints, allocatable in "
        "base units, price_per_hour, max_count, hypernodes / new_hypernode): also answer with `scale_up`, the "
        "cheapest nodes that start the waiting gangs the queues allow, on the cluster as the changes leave it",
    )
    options: WhatIfOptions = Field(default_factory=WhatIfOptions)

    @model_validator(mode="after")
    def _one_base(self) -> "WhatIfRequest":
        if self.snapshot is not None and self.snapshot_yaml is not None:
            raise ValueError("send `snapshot` or `snapshot_yaml`, not both (neither: the live cluster)")
        return self


class WhatIfResponse(BaseModel):
    base: Literal["posted", "posted_yaml", "live"] = Field(description="where the base snapshot came from")
    jobs: list[JobVerdict] = Field(description="one verdict per added job, in the order added")
    drained: list[DrainedNode] = Field(description="per drained node: the running pods pending again and those dropped")
    added_nodes: list[str] = Field(description="the names of the nodes added")
    placement: PlacementResponse = Field(description="the whole placement of the changed snapshot")
    rebalance: RebalanceAdvice | None = Field(
        None, description="with `rebalance: true`: the moves advised, each judged node before and after, the hot "
        "nodes that cannot be cooled with the reason"
    )
    scale_up: ScaleUpPlan | None = Field(
        None, description="with `scale_up` templates: the nodes to buy, the waiting PodGroups they start and those "
        "that still wait with why, and the binds of the solve with the bought nodes (docs/scale-up.md)"
    )


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "stopping"]
    solver_slots: int
    solver_slots_in_use: int
    solver_queued: int
    live_snapshot: Literal["none", "waiting", "ready"]


# ---- examples for /docs ----

_GPU_NODE = {
    "name": "gpu-0",
    "allocatable": {"cpu": 64000, "memory": 549755813888, "gpu": 8000},
    "labels": {"nvidia.com/gpu.product": "H100"},
}

PLACEMENT_EXAMPLE_SNAPSHOT: dict[str, Any] = {
    "nodes": [_GPU_NODE, {**_GPU_NODE, "name": "gpu-1"}],
    "queues": [{"name": "ml-team", "weight": 1, "capability": {"gpu": 16000}}],
    "pod_groups": [
        {
            "namespace": "default",
            "name": "llm",
            "queue": "ml-team",
            "min_member": 2,
            "tasks": [{"name": "worker", "min_available": 2, "requests": {"cpu": 8000, "gpu": 8000}}],
        }
    ],
    "pods": [
        {"namespace": "default", "name": f"llm-worker-{i}", "phase": "pending", "pod_group": "default/llm",
         "task": "worker", "requests": {"cpu": 8000, "gpu": 8000}}
        for i in range(2)
    ],
}

_EXAMPLE_VCJOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "finetune", "namespace": "default"},
    "spec": {
        "minAvailable": 2,
        "schedulerName": "batchplace",
        "queue": "ml-team",
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "w", "image": "trainer",
                                                      "resources": {"requests": {"cpu": "8", "nvidia.com/gpu": "8"},
                                                                    "limits": {"nvidia.com/gpu": "8"}}}]}},
            }
        ],
    },
}

WHAT_IF_EXAMPLE: dict[str, Any] = {
    "snapshot": PLACEMENT_EXAMPLE_SNAPSHOT,
    "changes": {"add_jobs": [_EXAMPLE_VCJOB], "drain_nodes": []},
    "options": {"engine": "greedy"},
}
