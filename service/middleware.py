"""`RequestMiddleware`: per HTTP request, the body cap, a request id, metrics and an access log line.

Pure ASGI (no `BaseHTTPMiddleware`, which buffers responses and breaks streaming), and the
outermost of ours, so a 413 is counted and logged like any answer.

The body cap: the body is read here, at most `max_body_bytes`, before any route sees it,
and replayed to the app. A declared `Content-Length` past the cap, or a chunked body that
grows past it, is answered 413 with `Connection: close`; the rest of the body is read and
dropped first (up to `_DRAIN_FACTOR` × the cap), so the client, still sending, gets the
413 instead of a reset connection. Route handlers therefore never see an oversized body.

Not promised: a cap on headers or on slow clients — that is uvicorn's job (`--timeout-*`,
h11's header limit) or the ingress's.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

from service.errors import BodyTooLarge, error_response
from service.metrics import ServiceMetrics

__all__ = ["RequestMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

access_log = logging.getLogger("batchplace.service.access")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_DRAIN_FACTOR = 4


class RequestMiddleware:
    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, metrics: ServiceMetrics, route_paths: Collection[str]
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.route_paths = frozenset(route_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = _request_id(scope)
        status = 500  # what ServerErrorMiddleware answers if the app raises before it starts a response

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            replay = await self._read_body(scope, receive)
            if isinstance(replay, BodyTooLarge):
                response, reason = error_response(replay)
                self.metrics.rejected.labels(reason=reason).inc()
                await response(scope, receive, send_with_id)
                return
            await self.app(scope, replay, send_with_id)
        finally:
            elapsed_s = time.perf_counter() - started
            route = self._route_label(scope)
            self.metrics.requests.labels(route=route, method=scope["method"], code=str(status)).inc()
            self.metrics.latency.labels(route=route).observe(elapsed_s)
            access_log.info(
                "%s %s %d", scope["method"], route, status,
                extra={
                    "method": scope["method"], "route": route, "status": status,
                    "duration_ms": round(elapsed_s * 1000, 2), "request_id": request_id,
                    "client": (scope.get("client") or ("", 0))[0],
                },
            )

    def _route_label(self, scope: Scope) -> str:
        return _route_label_of(scope, self.route_paths)

    async def _read_body(self, scope: Scope, receive: Receive) -> Receive | BodyTooLarge:
        """The whole body (≤ cap) as a replaying `receive`, or the `BodyTooLarge` to answer."""
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._drain(receive, already=0)
            return BodyTooLarge(limit_bytes=self.max_body_bytes, received_bytes=declared, declared=True)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # disconnect: let the app see it
                return _replay(b"".join(chunks), then=message, receive=receive)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                if message.get("more_body", False):
                    await self._drain(receive, already=size)
                return BodyTooLarge(limit_bytes=self.max_body_bytes, received_bytes=size, declared=False)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return _replay(b"".join(chunks), then=None, receive=receive)

    async def _drain(self, receive: Receive, *, already: int) -> None:
        limit = _DRAIN_FACTOR * self.max_body_bytes
        while already <= limit:
            message = await receive()
            if message["type"] != "http.request":
                return
            already += len(message.get("body", b""))
            if not message.get("more_body", False):
                return


def _replay(body: bytes, *, then: Message | None, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if then is not None and not body:
                return then
            return {"type": "http.request", "body": body, "more_body": False}
        if then is not None:
            return then
        return await receive()

    return replay


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
    return uuid.uuid4().hex


def _route_label_of(scope: Scope, known: frozenset[str]) -> str:
    """The matched route's path template (routing leaves it in `scope["route"]`), or, for an
    answer given before routing (413), the path when it is a route's; else `unmatched` — so
    labels stay few whatever paths clients send."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    return scope["path"] if scope.get("path") in known else "unmatched"
