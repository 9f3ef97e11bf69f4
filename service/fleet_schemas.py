"""Request and response shapes of the multi-cluster routes (`/v1/fleet/…`).

A fleet request carries `clusters`, a map from cluster name to that cluster's snapshot in
its JSON form (what `batchplace snapshot` prints for one cluster), and optionally `jobs`, a
snapshot of what is submitted and belongs to no cluster yet (queues, priority classes,
PodGroups with pending pods). `models.clusters` says how they merge: the cluster is the top
network tier, each job lands in one cluster, queues are global. Snapshots are documented as
`Snapshot` but read in the solver pool (`SkipValidation`), as `POST /v1/what-if` reads its base.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, field_validator

from models.placement import Bind, Eviction
from models.snapshot import Snapshot
from service.schemas import Changes, PlacementResponse, SolveOptions, WhatIfOptions
from solver.fleet import FleetJobVerdict

__all__ = [
    "MAX_CLUSTERS",
    "ClusterPlacement",
    "JobDispatchOut",
    "FleetPlacementRequest",
    "FleetPlacementResponse",
    "FleetWhatIfRequest",
    "FleetWhatIfResponse",
    "FLEET_EXAMPLE",
]

MAX_CLUSTERS = 64
"""More clusters than this in one request is refused (422): each is a tree of the merged
snapshot, and a what-if solves once per cluster."""


class _FleetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    clusters: dict[str, Annotated[Snapshot, SkipValidation]] = Field(
        description="cluster name (a DNS label) → that cluster's snapshot in JSON form"
    )
    jobs: Annotated[Snapshot | None, SkipValidation] = Field(
        None, description="what is submitted to the fleet: queues, priority classes, PodGroups with pending pods"
    )

    @field_validator("clusters")
    @classmethod
    def _some_clusters(cls, clusters: dict[str, Any]) -> dict[str, Any]:
        if not clusters:
            raise ValueError("at least one cluster is needed")
        if len(clusters) > MAX_CLUSTERS:
            raise ValueError(f"at most {MAX_CLUSTERS} clusters, got {len(clusters)}")
        return clusters


class FleetPlacementRequest(_FleetBody):
    options: SolveOptions = Field(default_factory=SolveOptions)


class FleetWhatIfRequest(_FleetBody):
    changes: Changes = Field(
        default_factory=Changes, description="as `POST /v1/what-if`; nodes to drain by `cluster/node`"
    )
    options: WhatIfOptions = Field(default_factory=WhatIfOptions)


class ClusterPlacement(BaseModel):
    binds: list[Bind] = Field(description="this cluster's binds, in its own node and pod names")
    evictions: list[Eviction] = Field(description="this cluster's evictions, in its own names")


class JobDispatchOut(BaseModel):
    podgroup: str = Field(description="the submitted job's PodGroup, namespace/name")
    cluster: str | None = Field(description="where the job goes; null: it stays pending")
    reasons: list[str] = Field(description="one sentence per cluster: placed there, or how many GPUs it is short")


class FleetPlacementResponse(PlacementResponse):
    """The one-cluster response over the merged snapshot (names `cluster/node`,
    `namespace/cluster/name`), plus each cluster's binds in its own names and the dispatch."""

    clusters: dict[str, ClusterPlacement] = Field(description="cluster name → its binds and evictions in its own names")
    dispatch: list[JobDispatchOut] = Field(description="per submitted job: the cluster it goes to, and why in each")


class FleetWhatIfResponse(BaseModel):
    jobs: list[FleetJobVerdict] = Field(
        description="per added job: the cluster, and its verdict in every cluster. A job starts in one cluster, "
        "so its GPU figures are per cluster: `clusters[].gpus_short` is what it is short in that cluster alone, "
        "`verdict.gpus_short` the fewest of those (0 when it starts) and `verdict.gpus_free_eligible` the most "
        "free on its eligible nodes in one cluster after the fleet-wide solve"
    )
    placement: FleetPlacementResponse = Field(description="the whole placement of the changed fleet")


_NODE = {"allocatable": {"cpu": 64000, "memory": 549755813888, "gpu": 8000}}
FLEET_EXAMPLE: dict[str, Any] = {
    "clusters": {
        "gpu-west": {"nodes": [{**_NODE, "name": "w0"}]},
        "gpu-east": {"nodes": [{**_NODE, "name": "e0"}, {**_NODE, "name": "e1"}]},
    },
    "jobs": {
        "pod_groups": [
            {"namespace": "default", "name": "llm", "min_member": 2,
             "tasks": [{"name": "worker", "min_available": 2, "requests": {"cpu": 8000, "gpu": 8000}}]}
        ],
        "pods": [
            {"namespace": "default", "name": f"llm-worker-{i}", "phase": "pending", "pod_group": "default/llm",
             "task": "worker", "requests": {"cpu": 8000, "gpu": 8000}}
            for i in range(2)
        ],
    },
    "options": {"engine": "greedy"},
}
