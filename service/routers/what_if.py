"""`POST /v1/what-if`: "if I submit this job now (or drain / add these nodes), what happens?"

The base is the posted snapshot or, when none is posted, the live one a controller in the
same process lends (`service.live.LiveSnapshotSource`); `solver.whatif` applies the
changes and reads the answer per added job. With `rebalance: true`, `solver.rebalance`
advises which running pods to move off hot nodes on the cluster as that solve leaves it
(alone: the base after its own pending pods' solve). Advice only: nothing is evicted.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from service.dependencies import AuthDep, LiveDep, MetricsDep, PoolDep, SettingsDep, live_base, solve_config
from service.jobs import solve_what_if
from service.routers._responses import ERROR_RESPONSES
from service.schemas import WHAT_IF_EXAMPLE, WhatIfRequest, WhatIfResponse

router = APIRouter(
    prefix="/v1",
    tags=["what-if"],
    dependencies=[AuthDep],
    responses={**ERROR_RESPONSES, 503: {"description": "no snapshot posted and the live one is not ready"}},
)


@router.post("/what-if", response_model=WhatIfResponse, summary="Would these jobs start now?")
async def what_if(
    body: Annotated[WhatIfRequest, Body(openapi_examples={"add a vcjob": {"value": WHAT_IF_EXAMPLE}})],
    response: Response,
    pool: PoolDep,
    settings: SettingsDep,
    metrics: MetricsDep,
    live_source: LiveDep,
) -> dict[str, Any]:
    """For each added job: does it start this cycle, on which nodes, whom it preempts — and if
    not, the blocking rules with their numbers and how many GPUs it is short. With
    `rebalance: true`: which running pods to move off hot nodes, and where."""
    live = live_base(body, live_source, retry_after_s=settings.retry_after_s)
    config = solve_config(body.options, settings, typical_shapes=body.options.shapes())
    response.headers["X-Batchplace-Time-Limit-S"] = f"{config.time_limit_s:g}"
    submitted_at_s = time.time()
    return await pool.run(
        lambda: solve_what_if(body, live=live, config=config, metrics=metrics, submitted_at_s=submitted_at_s)
    )
