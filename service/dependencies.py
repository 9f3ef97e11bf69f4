"""Dependencies of the routes: settings, metrics, the bounded solver pool, auth, options.

The solver pool is the only place work leaves the event loop. It admits at most
`solver_slots + solver_queue` solves at once — `solver_slots` run on threads, the rest wait
in the executor's queue — and refuses the next with `NoSolverSlot` (→ 429 Retry-After) at
once, instead of queueing without bound. A slot is given back when the thread finishes, not
when the client goes away: a cancelled request whose solve already runs still holds its
slot until the solve ends, so disconnecting clients cannot pile work up behind the bound.

Threads, not processes: CP-SAT releases the GIL, and validated snapshots and decisions
need no pickling; scale out with replicas (or `--workers`). Worked example: slots 2,
queue 8, 16 requests at once → 2 solve, 8 wait, 6 get 429 immediately.

Auth: when the server has a token, `/v1/*` wants `Authorization: Bearer <token>`,
compared in constant time (`hmac.compare_digest`); the token is never logged or echoed.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Literal, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from models.snapshot import Snapshot
from models.typical_shapes import TypicalShape
from service.errors import (
    FieldProblem,
    InvalidRequest,
    LiveSnapshotUnavailable,
    NoSolverSlot,
    Unauthorized,
    UnsupportedMedia,
)
from service.live import LiveSnapshotSource
from service.metrics import ServiceMetrics
from service.schemas import SolveOptions, WhatIfRequest
from service.settings import ServiceSettings
from solver.place import SolveConfig

__all__ = [
    "SolverPool",
    "Media",
    "JSON_TYPES",
    "YAML_TYPES",
    "get_settings",
    "get_metrics",
    "get_pool",
    "get_live_source",
    "require_token",
    "body_media",
    "solve_config",
    "live_base",
    "SettingsDep",
    "MetricsDep",
    "PoolDep",
    "LiveDep",
    "AuthDep",
]

T = TypeVar("T")
Media = Literal["json", "yaml"]
JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")


class SolverPool:
    """A thread pool of `slots` solvers with at most `queue` more waiting; see the module docstring."""

    def __init__(self, *, slots: int, queue: int, retry_after_s: int) -> None:
        self.slots = slots
        self.capacity = slots + queue
        self.retry_after_s = retry_after_s
        self._executor = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="batchplace-solve")
        self._admitted = 0  # touched only on the event loop's thread
        self._running = 0
        self._running_lock = threading.Lock()
        self.closed = False

    @property
    def running(self) -> int:
        return self._running

    @property
    def queued(self) -> int:
        return max(0, self._admitted - self._running)

    async def run(self, work: Callable[[], T]) -> T:
        """Run `work` on a solver thread, or raise `NoSolverSlot` now if the pool is full."""
        if self.closed or self._admitted >= self.capacity:
            raise NoSolverSlot(retry_after_s=self.retry_after_s, slots=self.slots, queued=self.queued)
        loop = asyncio.get_running_loop()
        self._admitted += 1
        try:
            future = self._executor.submit(self._counted, work)
        except RuntimeError:  # shut down between the check and the submit
            self._admitted -= 1
            raise NoSolverSlot(retry_after_s=self.retry_after_s, slots=self.slots, queued=self.queued) from None
        future.add_done_callback(lambda _: self._release_from(loop))
        return await asyncio.wrap_future(future, loop=loop)

    def _counted(self, work: Callable[[], T]) -> T:
        with self._running_lock:
            self._running += 1
        try:
            return work()
        finally:
            with self._running_lock:
                self._running -= 1

    def _release_from(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.call_soon_threadsafe(self._release)
        except RuntimeError:  # the loop is closed: the app is gone, nothing to count
            pass

    def _release(self) -> None:
        self._admitted -= 1

    def shutdown(self) -> None:
        self.closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)


def get_settings(request: Request) -> ServiceSettings:
    return request.app.state.settings


def get_metrics(request: Request) -> ServiceMetrics:
    return request.app.state.metrics


def get_pool(request: Request) -> SolverPool:
    return request.app.state.pool


def get_live_source(request: Request) -> LiveSnapshotSource | None:
    return request.app.state.live_snapshot


_bearer = HTTPBearer(auto_error=False, description="Needed only when the server runs with --token-file.")


async def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    token = get_settings(request).token
    if token is None:
        return
    presented = credentials.credentials.encode("utf-8") if credentials is not None else b""
    if not hmac.compare_digest(presented, token.get_secret_value().encode("utf-8")):
        raise Unauthorized()


def body_media(request: Request) -> Media:
    """`json` or `yaml` from Content-Type (none at all is taken as JSON); anything else is 415."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type in ("", *JSON_TYPES) or media_type.endswith("+json"):
        return "json"
    if media_type in YAML_TYPES:
        return "yaml"
    raise UnsupportedMedia(media_type, accepted=(*JSON_TYPES, *YAML_TYPES[:1]))


def solve_config(
    options: SolveOptions, settings: ServiceSettings, *, typical_shapes: tuple[TypicalShape, ...] | None = None
) -> SolveConfig:
    """The `SolveConfig` for `options`: the time limit capped, the objective order completed,
    the request's typical shapes, else the server's."""
    return SolveConfig(
        engine=options.engine,
        time_limit_s=settings.time_limit_for(options.time_limit_s),
        objective_order=options.full_objective_order(),
        memory_limit_bytes=settings.solver_memory_bytes,
        partition_parts=settings.partition_parts,
        ray_address=settings.ray_address,
        typical_shapes=settings.typical_shapes if typical_shapes is None else typical_shapes,
    )


def live_base(request: WhatIfRequest, source: LiveSnapshotSource | None, *, retry_after_s: int) -> Snapshot | None:
    """The live snapshot when the request posts none: 422 at `/snapshot` on a server without a
    live source (the client must post one), 503 + Retry-After while the source has none yet."""
    if request.snapshot is not None or request.snapshot_yaml is not None:
        return None
    if source is None:
        message = "required: this server has no live cluster snapshot, so post `snapshot` or `snapshot_yaml`"
        raise InvalidRequest([FieldProblem(loc=("body", "snapshot"), msg=message, type="missing")])
    live = source.current()
    if live is None:
        raise LiveSnapshotUnavailable(retry_after_s=retry_after_s)
    return live


SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
MetricsDep = Annotated[ServiceMetrics, Depends(get_metrics)]
PoolDep = Annotated[SolverPool, Depends(get_pool)]
LiveDep = Annotated[LiveSnapshotSource | None, Depends(get_live_source)]
AuthDep = Depends(require_token)
