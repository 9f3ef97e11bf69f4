"""Stopping the caches while their informers are still inside their first LIST (a slow API
server at start-up; closing the client does not cut a request in flight): `join` waits its
timeout in all, not per informer, so a controller stopped then exits within its grace
period — one such stop took over 20 s at 2 s an informer."""

from __future__ import annotations

import threading
import time

from controller.caches import ClusterCaches
from controller.kube import ListResult
from controller.loop import wait_for


class _SlowServer:
    """Serves every kind; each LIST blocks until `release` is set, then lists nothing."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.listing = 0
        self._lock = threading.Lock()

    def served(self, kinds):  # noqa: ANN001, ANN201
        return set(kinds)

    def list(self, kind):  # noqa: ANN001, ANN201
        with self._lock:
            self.listing += 1
        self.release.wait(30)
        return ListResult(items=[], resource_version="1")

    def watch(self, kind, *, resource_version, timeout_s=300):  # noqa: ANN001, ANN201
        return iter(())


def test_join_waits_its_timeout_in_all_while_informers_are_stuck_listing() -> None:
    server = _SlowServer()
    caches = ClusterCaches(server, scheduler_names=("batchplace",), rediscover_s=60)
    stop = threading.Event()
    caches.start(stop)
    try:
        assert wait_for(lambda: server.listing >= 4, 5), "informers listing"
        stop.set()
        started = time.monotonic()
        caches.join(0.5)
        waited = time.monotonic() - started
        # Four threads stuck at 0.5 s each would be 2 s; in all, 0.5 s and the scheduler's slack.
        assert waited < 1.5, f"join waited {waited:.2f} s for {server.listing} stuck informers"
    finally:
        server.release.set()
