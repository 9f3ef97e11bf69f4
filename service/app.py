"""`create_app`: the FastAPI app of batchplace's HTTP service (DESIGN.md, "Service").

Stateless: each request carries its snapshot (or reads the live one a controller lends),
so replicas scale out behind a Service. Everything per app — settings, the bounded solver
pool, the Prometheus registry — hangs on `app.state`, so tests build as many apps as they
like. The read-only dashboard (`service.ui`) is mounted under `/ui` on the same app, and
`/docs` serves Swagger UI from local files (`service.docs`), so both work offline.
`create_app_from_env` is the factory `batchplace serve` hands uvicorn (one call per
worker process, settings from `BATCHPLACE_SERVICE_*`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from service.dependencies import SolverPool
from service.docs import install_docs
from service.errors import install_error_handlers
from service.live import LiveSnapshotSource
from service.metrics import ServiceMetrics
from service.middleware import RequestMiddleware
from service.routers import fleet, health, placements, what_if
from service.settings import ServiceSettings
from service.ui import install_ui
from service.ui import router as ui_router

__all__ = ["create_app", "create_app_from_env"]

DESCRIPTION = """Batch placement for Kubernetes GPU clusters over HTTP: post a snapshot, get the
placement (binds, evictions, why each pending job waits) checked against every hard rule;
or ask what-if: would this job start now, where, whom would it preempt, and if not, why."""


def create_app(settings: ServiceSettings, live_snapshot: LiveSnapshotSource | None = None) -> FastAPI:
    def new_pool() -> SolverPool:
        return SolverPool(slots=settings.solver_slots, queue=settings.solver_queue, retry_after_s=settings.retry_after_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if app.state.pool.closed:  # a second lifespan of the same app (test clients) gets a fresh pool
            app.state.pool = new_pool()
        yield
        app.state.pool.shutdown()

    app = FastAPI(
        title="batchplace", version="0.1.0", description=DESCRIPTION, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.state.settings = settings
    app.state.pool = new_pool()  # also serves apps run without lifespan events
    app.state.metrics = metrics = ServiceMetrics.create()
    metrics.slots_in_use.set_function(lambda: app.state.pool.running)
    metrics.queued.set_function(lambda: app.state.pool.queued)
    app.state.live_snapshot = live_snapshot
    app.include_router(placements.router)
    app.include_router(what_if.router)
    app.include_router(fleet.router)
    app.include_router(health.router)
    install_docs(app)
    install_ui(app)
    install_error_handlers(app)
    routes = (placements.router, what_if.router, fleet.router, health.router, ui_router)
    paths = {route.path for router in routes for route in router.routes}  # type: ignore[attr-defined]
    app.add_middleware(RequestMiddleware, max_body_bytes=settings.max_body_bytes, metrics=metrics, route_paths=paths)
    return app


def create_app_from_env() -> FastAPI:
    return create_app(ServiceSettings.from_env())
