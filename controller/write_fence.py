"""The last lease check of a write, at the moment its bytes go out.

A leader asks whether its Lease still covers a write before sending it (`controller.leader`,
`may_write`). Asked in the actuator, that check comes before the HTTP client's own work —
taking a pooled connection, a TCP connect and TLS handshake when the pool has none idle,
formatting the request — which on a busy machine takes milliseconds while other threads
hold the interpreter. A process stopped (SIGSTOP, a frozen VM) in that span and resumed
after a standby took over would send the write from its old plan. So the connection checks
again before each block it writes to the socket: the request line and headers, then the
body. The API server acts on a request only once its body has arrived, so a write refused
at its body is dropped by the server with the half-sent request (the connection is
closed); what is left between the last check and the socket is a few interpreter steps.

`fenced(may_send)` sets the check for the calling thread (urllib3 sends on the caller's
thread); `install(pool_manager)` makes a urllib3 `PoolManager` build its connections as
`_Fenced…` ones. A write refused here raises `WriteNotSent`. A write whose last check passed
and that finds the lease gone once sent (a pause fell inside those last steps) is logged at
error level: it may land after a standby took over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["WriteLease", "WriteNotSent", "fenced", "install"]

log = logging.getLogger(__name__)

_local = threading.local()


class WriteLease(Protocol):
    """What a write needs of the leader (`controller.leader.LeaderElector`)."""

    @property
    def write_timeout_s(self) -> float | None:
        """The whole call's timeout; None: the client's defaults (no election)."""
        ...

    def may_write(self) -> bool: ...


class WriteNotSent(Exception):
    """The lease no longer covers the write: it was not sent."""


@contextmanager
def fenced(may_send: Callable[[], bool] | None) -> Iterator[None]:
    """Requests sent by this thread inside the block go out only while `may_send()` holds."""
    _local.may_send = may_send
    try:
        yield
    finally:
        _local.may_send = None


def _may_send() -> None:
    may_send: Callable[[], bool] | None = getattr(_local, "may_send", None)
    if may_send is not None and not may_send():
        raise WriteNotSent("the lease no longer covers the write")


def _sent(method: str, url: str) -> None:
    may_send: Callable[[], bool] | None = getattr(_local, "may_send", None)
    if may_send is not None and not may_send():
        log.error("%s %s sent as the lease ran out: it may land after another replica took over", method, url,
                  extra={"method": method, "url": url})


class _Fenced:
    """The checks, before each block a connection writes and after a request went out."""

    def send(self, data: Any) -> None:
        _may_send()
        super().send(data)  # type: ignore[misc]

    def request(self, method: str, url: str, body: Any = None, headers: Any = None, **options: Any) -> None:
        super().request(method, url, body, headers, **options)  # type: ignore[misc]
        _sent(method, url)


class _FencedHTTPConnection(_Fenced, HTTPConnection):
    pass


class _FencedHTTPSConnection(_Fenced, HTTPSConnection):
    pass


class _FencedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _FencedHTTPConnection


class _FencedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _FencedHTTPSConnection


def install(pool_manager: urllib3.PoolManager) -> None:
    """Make `pool_manager`'s new connection pools fenced ones (before its first request)."""
    pool_manager.pool_classes_by_scheme = {"http": _FencedHTTPConnectionPool, "https": _FencedHTTPSConnectionPool}
