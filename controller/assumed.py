"""The assumed-pod cache: binds and evictions this controller made that the watch may not show yet.

kube-scheduler "assumes" a pod on its node the moment it sends the bind, so the next cycle
does not place it again while the watch event is in flight; Volcano's cache does the same.
Here: `bound()` after a bind the API server accepted, `evicted()` after an eviction it
accepted; `state()` is what `observe` overlays on the caches; `prune()` forgets an entry once
the informer's copy of the pod shows it (bound to a node, or terminating, or gone), and
after `ttl_s` in any case, so a lost watch event cannot pin a stale assumption for ever
(the informer relists long before that).

A bind of unknown outcome — the connection reset or refused, a timeout, a 5xx: anything
but a definite refusal — may have landed. `maybe_bound()` holds such a pod on the node and
GPUs it was sent to, exactly like an accepted bind, so no later cycle plans the pod again
nor other pods onto its room. Only a fresh read settles it (`settle()`, from a GET of the
pod: bound somewhere → learnt as that bind, with the GPUs its `batchplace.io/gpus`
annotation names; pending or gone → released), or the informer showing the pod bound or
gone (`prune()`). A pod the informer still shows pending is not proof: that copy may be
older than the bind. No `ttl_s` for these: an API server down for longer than that must
not free a room that may be taken.

Thread-safe: the actuator's bind threads write, the cycle reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from controller.observe import AssumedBind, AssumedState
from controller.timing import Clock, SystemClock
from models.loaders.keys import GPUS_ANNOTATION
from models.snapshot import NodeName, PodKey

__all__ = ["AssumedPods", "bound_to"]

JsonObject = dict[str, Any]


def bound_to(pod: JsonObject) -> AssumedBind | None:
    """Where a pod read from the API server is bound, with the GPUs its annotation names; None when pending."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        return None
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(GPUS_ANNOTATION) or ""
    # A malformed annotation is the loader's to report (it reads the informer's copy); the room held here is the node's.
    gpus = tuple(int(part) for part in text.split(",") if part.strip().isdigit())
    return AssumedBind(node=NodeName(node), gpus=gpus)


class AssumedPods:
    def __init__(self, *, clock: Clock | None = None, ttl_s: float = 300.0) -> None:
        self._clock = clock or SystemClock()
        self._ttl_s = ttl_s
        self._binds: dict[PodKey, tuple[AssumedBind, float]] = {}
        self._unknown: dict[PodKey, AssumedBind] = {}  # binds of unknown outcome, held until settled
        self._evictions: dict[PodKey, float] = {}
        self._lock = threading.Lock()

    def bound(self, pod: PodKey, node: NodeName, gpus: tuple[int, ...] = ()) -> None:
        with self._lock:
            self._unknown.pop(pod, None)
            self._binds[pod] = (AssumedBind(node=node, gpus=gpus), self._clock.monotonic())

    def maybe_bound(self, pod: PodKey, node: NodeName, gpus: tuple[int, ...] = ()) -> None:
        """A bind was sent and its outcome is unknown: hold the room until a read settles it."""
        with self._lock:
            if pod not in self._binds:
                self._unknown[pod] = AssumedBind(node=node, gpus=gpus)

    def evicted(self, pod: PodKey) -> None:
        with self._lock:
            self._evictions[pod] = self._clock.monotonic()

    def unknown(self) -> list[PodKey]:
        """The pods whose bind outcome is still unknown (to be re-read)."""
        with self._lock:
            return list(self._unknown)

    def settle(self, pod: PodKey, read: JsonObject | None) -> None:
        """What a fresh read of `pod` shows (None: it is gone) replaces what was held for it."""
        where = bound_to(read) if read is not None else None
        with self._lock:
            self._unknown.pop(pod, None)
            if where is not None:
                self._binds[pod] = (where, self._clock.monotonic())

    def state(self) -> AssumedState:
        with self._lock:
            return AssumedState(
                binds={**self._unknown, **{pod: bind for pod, (bind, _) in self._binds.items()}},
                evictions=frozenset(self._evictions),
            )

    def prune(self, lookup: Callable[[str], JsonObject | None]) -> None:
        """Forget what the caches now show; `lookup(pod_key)` is the informer's copy or None."""
        now = self._clock.monotonic()
        with self._lock:
            for pod, (_, since) in list(self._binds.items()):
                cached = lookup(pod)
                if cached is None or (cached.get("spec") or {}).get("nodeName") or now - since > self._ttl_s:
                    del self._binds[pod]
            for pod in list(self._unknown):
                cached = lookup(pod)
                if cached is None or (cached.get("spec") or {}).get("nodeName"):
                    del self._unknown[pod]
            for pod, since in list(self._evictions.items()):
                cached = lookup(pod)
                if cached is None or (cached.get("metadata") or {}).get("deletionTimestamp") or now - since > self._ttl_s:
                    del self._evictions[pod]

    def __len__(self) -> int:
        with self._lock:
            return len(self._binds) + len(self._unknown) + len(self._evictions)
