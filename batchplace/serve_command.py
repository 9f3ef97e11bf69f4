"""`batchplace serve`: run the HTTP service (service/) under uvicorn.

Settings go to every uvicorn worker process through `BATCHPLACE_SERVICE_*` environment
variables (`ServiceSettings.to_env`); the token does not — only the path of the token file,
which each worker reads. Logs are JSON lines on stderr (`service.logs`). The service and
uvicorn are imported when the command runs, so other commands start without them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from batchplace.options import (
    PartitionPartsOption,
    RayAddressOption,
    SolverMemoryOption,
    TypicalShapesOption,
    ray_address_of,
    solver_memory_bytes,
    typical_shapes_of_file,
)

__all__ = ["serve"]

EXIT_SETTINGS_ERROR = 2


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0 inside a container).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8000,
    token_file: Annotated[
        Optional[Path],
        typer.Option("--token-file", help="File holding the bearer token /v1/* requires. Default: no auth."),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="uvicorn worker processes.")] = 1,
    solver_slots: Annotated[int, typer.Option(min=1, max=256, help="Solves at once per worker.")] = 2,
    solver_queue: Annotated[
        int, typer.Option(min=0, max=10_000, help="Requests that may wait for a slot per worker; more get 429.")
    ] = 8,
    max_body_bytes: Annotated[int, typer.Option(min=1024, help="Larger request bodies get 413.")] = 16 * 2**20,
    max_time_limit: Annotated[
        float, typer.Option("--max-time-limit", min=0.01, max=3600, help="Cap on a request's time_limit_s.")
    ] = 30.0,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "info",
    solver_memory: SolverMemoryOption = None,
    partition_parts: PartitionPartsOption = 1,
    ray_address: RayAddressOption = None,
    typical_shapes: TypicalShapesOption = None,
) -> None:
    """Serve POST /v1/placements, POST /v1/what-if, /healthz, /readyz, /metrics, /docs and the dashboard at /ui."""
    import uvicorn

    from service.logs import uvicorn_log_config
    from service.settings import ENV_PREFIX, ServiceSettings, SettingsError

    token_path = token_file.resolve() if token_file is not None else None
    try:
        settings = ServiceSettings(
            max_body_bytes=max_body_bytes,
            max_time_limit_s=max_time_limit,
            default_time_limit_s=min(5.0, max_time_limit),
            solver_slots=solver_slots,
            solver_queue=solver_queue,
            solver_memory_bytes=solver_memory_bytes(solver_memory),
            partition_parts=partition_parts,
            ray_address=ray_address_of(ray_address),
            typical_shapes=typical_shapes_of_file(typical_shapes),
        )
        os.environ.pop(ENV_PREFIX + "TOKEN_FILE", None)  # only --token-file turns auth on
        os.environ.update(settings.to_env(token_file=token_path))
        ServiceSettings.from_env()  # fail here, once (an unreadable token file), not in every worker
    except (SettingsError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_SETTINGS_ERROR) from None
    uvicorn.run(
        "service.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=uvicorn_log_config(log_level),
        access_log=False,
        proxy_headers=False,
        server_header=False,
    )
