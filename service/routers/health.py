"""`GET /healthz` (the process answers), `GET /readyz` (it takes solves), `GET /metrics` (Prometheus).

No auth on these: probes and scrapers reach them inside the cluster; they reveal counts,
never snapshots. `/readyz` is 503 only while the app shuts down — a full solver pool is
not "unready" (that would make replicas flap under load; the 429s say it instead).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from service.dependencies import LiveDep, MetricsDep, PoolDep
from service.metrics import CONTENT_TYPE_LATEST
from service.schemas import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz() -> dict[str, Any]:
    return {"status": "ok"}


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(response: Response, pool: PoolDep, live_source: LiveDep) -> dict[str, Any]:
    if pool.closed:
        response.status_code = 503
    live = "none" if live_source is None else "ready" if live_source.current() is not None else "waiting"
    return {
        "status": "stopping" if pool.closed else "ready",
        "solver_slots": pool.slots,
        "solver_slots_in_use": pool.running,
        "solver_queued": pool.queued,
        "live_snapshot": live,
    }


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(metrics: MetricsDep) -> Response:
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
