"""The pool work of the multi-cluster routes: read each cluster's snapshot, merge, solve, answer.

Runs on a solver thread, as `service.jobs` does for one cluster, and shapes its answer with
the same `placement_response`. Input errors leave as `InvalidRequest` whose `loc` points
into the request: `["body", "clusters", "gpu-west", "nodes", 3, …]` for one cluster's
snapshot or a merge error about it (a queue declared differently), `["body", "jobs", …]`
for the submitted jobs.
"""

from __future__ import annotations

from typing import Any

from models.clusters import Fleet
from models.errors import SnapshotError
from models.loaders.fleet_json import load_fleet_json
from service.errors import InvalidRequest, LocPart, problem_from_snapshot_error
from service.fleet_schemas import FleetPlacementRequest, FleetWhatIfRequest
from service.jobs import change_problem, placement_response, request_changes
from service.metrics import ServiceMetrics
from solver.fleet import FleetDecision, fleet_what_if, place_fleet
from solver.place import SolveConfig

__all__ = ["solve_fleet", "solve_fleet_what_if"]


def solve_fleet(request: FleetPlacementRequest, *, config: SolveConfig, metrics: ServiceMetrics) -> dict[str, Any]:
    """`POST /v1/fleet/placements`."""
    fleet = _fleet(request)
    return _response(fleet, place_fleet(fleet, config), metrics)


def solve_fleet_what_if(
    request: FleetWhatIfRequest, *, config: SolveConfig, metrics: ServiceMetrics, submitted_at_s: float
) -> dict[str, Any]:
    """`POST /v1/fleet/what-if`."""
    fleet = _fleet(request)
    changes = request_changes(request.changes)
    try:
        answer = fleet_what_if(fleet, changes, config=config, submitted_at_s=submitted_at_s)
    except SnapshotError as error:
        raise InvalidRequest([change_problem(error)]) from None
    added = Fleet(snapshot=answer.changed.snapshot, clusters=fleet.clusters, cluster_tier=fleet.cluster_tier, jobs=fleet.jobs)
    return {
        "jobs": [job.model_dump(by_alias=True) for job in answer.jobs],
        "placement": _response(added, answer.decision, metrics, warnings=answer.changed.warnings),
    }


def _fleet(request: FleetPlacementRequest | FleetWhatIfRequest) -> Fleet:
    try:
        return load_fleet_json({"clusters": dict(request.clusters), "jobs": request.jobs})  # type: ignore[dict-item]
    except SnapshotError as error:
        raise InvalidRequest([problem_from_snapshot_error(error, at=_merge_at(error))]) from None


def _merge_at(error: SnapshotError) -> tuple[LocPart, ...]:
    """`clusters.gpu-east` → `("body", "clusters", "gpu-east")`; `jobs` → `("body", "jobs")`."""
    source = error.location.source or "clusters"
    head, _, cluster = source.partition(".")
    return ("body", head, cluster) if cluster else ("body", head)


def _response(fleet: Fleet, decided: FleetDecision, metrics: ServiceMetrics, *, warnings: tuple[str, ...] = ()) -> dict[str, Any]:
    contract = decided.to_contract()
    return {
        **placement_response(fleet.snapshot, decided.decision, metrics, warnings=warnings),
        "clusters": contract["clusters"],
        "dispatch": contract["dispatch"],
    }
