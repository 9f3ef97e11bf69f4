"""`POST /v1/fleet/placements` and `POST /v1/fleet/what-if`: one decision over several clusters.

The body names each cluster's snapshot (`clusters`) and what is submitted to the fleet
(`jobs`); `models.clusters` merges them the one way the CLI and the manager controller do.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from service.dependencies import AuthDep, MetricsDep, PoolDep, SettingsDep, solve_config
from service.fleet_jobs import solve_fleet, solve_fleet_what_if
from service.fleet_schemas import (
    FLEET_EXAMPLE,
    FleetPlacementRequest,
    FleetPlacementResponse,
    FleetWhatIfRequest,
    FleetWhatIfResponse,
)
from service.routers._responses import ERROR_RESPONSES

router = APIRouter(prefix="/v1/fleet", tags=["fleet"], dependencies=[AuthDep], responses=ERROR_RESPONSES)


@router.post("/placements", response_model=FleetPlacementResponse, summary="Place jobs over several clusters")
async def create_fleet_placement(
    body: Annotated[FleetPlacementRequest, Body(openapi_examples={"two clusters": {"value": FLEET_EXAMPLE}})],
    response: Response,
    pool: PoolDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> dict[str, Any]:
    """One solve over every cluster: each job in one cluster, each cluster's binds in its own
    names, and per job a sentence per cluster (placed there, or how many GPUs short)."""
    config = solve_config(body.options, settings)
    response.headers["X-Batchplace-Time-Limit-S"] = f"{config.time_limit_s:g}"
    return await pool.run(lambda: solve_fleet(body, config=config, metrics=metrics))


@router.post("/what-if", response_model=FleetWhatIfResponse, summary="Which cluster would these jobs start in?")
async def fleet_what_if(
    body: FleetWhatIfRequest, response: Response, pool: PoolDep, settings: SettingsDep, metrics: MetricsDep
) -> dict[str, Any]:
    """For each added job: the cluster it goes to, where inside it, whom it preempts — and for
    every other cluster, what it would do there (a solve with the job pinned to it) or why not."""
    config = solve_config(body.options, settings, typical_shapes=body.options.shapes())
    response.headers["X-Batchplace-Time-Limit-S"] = f"{config.time_limit_s:g}"
    submitted_at_s = time.time()
    return await pool.run(
        lambda: solve_fleet_what_if(body, config=config, metrics=metrics, submitted_at_s=submitted_at_s)
    )
