"""The assumed-pod cache: binds and evictions this controller made that the watch may not show yet.

kube-scheduler "assumes" a pod on its node the moment it sends the bind, so the next cycle
does not place it again while the watch event is in flight; Volcano's cache does the same.
Here: `bound()` after a bind the API server accepted, `evicted()` after an eviction it
accepted; `state()` is what `observe` overlays on the caches; `prune()` forgets an entry once
the informer's copy of the pod shows it (bound to a node, or terminating, or gone), and
after `ttl_s` in any case, so a lost watch event cannot pin a stale assumption for ever
(the informer relists long before that).

Thread-safe: the actuator's bind threads write, the cycle reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from controller.observe import AssumedBind, AssumedState
from controller.timing import Clock, SystemClock
from models.snapshot import NodeName, PodKey

__all__ = ["AssumedPods"]


class AssumedPods:
    def __init__(self, *, clock: Clock | None = None, ttl_s: float = 300.0) -> None:
        self._clock = clock or SystemClock()
        self._ttl_s = ttl_s
        self._binds: dict[PodKey, tuple[AssumedBind, float]] = {}
        self._evictions: dict[PodKey, float] = {}
        self._lock = threading.Lock()

    def bound(self, pod: PodKey, node: NodeName, gpus: tuple[int, ...] = ()) -> None:
        with self._lock:
            self._binds[pod] = (AssumedBind(node=node, gpus=gpus), self._clock.monotonic())

    def evicted(self, pod: PodKey) -> None:
        with self._lock:
            self._evictions[pod] = self._clock.monotonic()

    def node_of(self, pod: PodKey) -> NodeName | None:
        with self._lock:
            entry = self._binds.get(pod)
            return entry[0].node if entry else None

    def state(self) -> AssumedState:
        with self._lock:
            return AssumedState(
                binds={pod: bind for pod, (bind, _) in self._binds.items()},
                evictions=frozenset(self._evictions),
            )

    def prune(self, lookup: Callable[[str], dict[str, Any] | None]) -> None:
        """Forget what the caches now show; `lookup(pod_key)` is the informer's copy or None."""
        now = self._clock.monotonic()
        with self._lock:
            for pod, (_, since) in list(self._binds.items()):
                cached = lookup(pod)
                if cached is None or (cached.get("spec") or {}).get("nodeName") or now - since > self._ttl_s:
                    del self._binds[pod]
            for pod, since in list(self._evictions.items()):
                cached = lookup(pod)
                if cached is None or (cached.get("metadata") or {}).get("deletionTimestamp") or now - since > self._ttl_s:
                    del self._evictions[pod]

    def __len__(self) -> int:
        with self._lock:
            return len(self._binds) + len(self._evictions)
