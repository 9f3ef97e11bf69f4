"""batchplace's HTTP service: `POST /v1/placements`, `POST /v1/what-if`, health and metrics.

    app           create_app(settings, live_snapshot) — the FastAPI app
    settings      ServiceSettings — body cap, time-limit cap, solver slots, token
    dependencies  the bounded solver pool (429 when full), bearer auth, options
    routers/      placements, what_if, health: handlers of a few lines each
    jobs          what runs in the pool: read input → solver.place → checker → response
    whatif        apply changes to a snapshot, read the verdict per added job (pure)
    schemas       request / response shapes and the examples of /docs
    docs          /docs: Swagger UI from local files (works offline)
    errors        the error tree and the one table mapping errors to HTTP
    middleware    body cap (413), request id, metrics, access log
    metrics, logs Prometheus registry per app; JSON-lines logging
    live          LiveSnapshotSource, the seam a controller plugs its snapshot into

It imports `models` and `solver`, never `controller` or `experiments`.
"""

from service.app import create_app, create_app_from_env
from service.live import LiveSnapshotSource
from service.settings import ServiceSettings

__all__ = ["create_app", "create_app_from_env", "LiveSnapshotSource", "ServiceSettings"]
