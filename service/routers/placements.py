"""`POST /v1/placements`: a snapshot in, the checked placement (the output contract) out.

The body is read raw (not by a pydantic body parameter) so that JSON and YAML share the
route and parsing happens in the solver pool, off the event loop; its schema is declared
in `openapi_extra` for `/docs` and for schemathesis.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from service.dependencies import AuthDep, MetricsDep, PoolDep, SettingsDep, body_media, solve_config
from service.jobs import solve_posted
from service.routers._responses import ERROR_RESPONSES
from service.schemas import PLACEMENT_EXAMPLE_SNAPSHOT, PlacementResponse, SolveOptions

router = APIRouter(prefix="/v1", tags=["placements"], dependencies=[AuthDep], responses=ERROR_RESPONSES)

_BODY = {
    "requestBody": {
        "required": True,
        "description": "A snapshot as `batchplace snapshot` prints it (JSON), or Kubernetes / Volcano "
        "YAML manifests with `Content-Type: application/yaml`.",
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/Snapshot"},
                "example": PLACEMENT_EXAMPLE_SNAPSHOT,
            },
            "application/yaml": {"schema": {"type": "string"}},
        },
    }
}


@router.post("/placements", response_model=PlacementResponse, openapi_extra=_BODY, summary="Place a snapshot")
async def create_placement(
    request: Request,
    response: Response,
    options: Annotated[SolveOptions, Query()],
    pool: PoolDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> dict[str, Any]:
    """Solve one scheduling cycle of the posted snapshot: binds, evictions, a reason for every
    PodGroup left pending, queue shares, and the independent checker's verdict."""
    media = body_media(request)
    config = solve_config(options, settings)
    body = await request.body()
    response.headers["X-Batchplace-Time-Limit-S"] = f"{config.time_limit_s:g}"
    return await pool.run(lambda: solve_posted(body, media=media, config=config, metrics=metrics))
