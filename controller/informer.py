"""One kind's cache: list, then watch from the list's resourceVersion, forever.

Input: a `WatchSource` (the edge, `controller.kube.KubeClient`) and a `ResourceKind`.
Output: an in-memory store of the kind's objects as raw JSON dicts, keyed `ns/name`,
readable from any thread (`items()`), plus `synced` once the first list landed, and an
`on_change(event_type, old, new)` callback for the controller's early wake-up.

The loop, as client-go's reflector runs it:
- list (paged) → replace the store → watch from the list's resourceVersion with
  `allowWatchBookmarks` (a BOOKMARK only moves the resourceVersion forward);
- the server ends a watch after `timeoutSeconds`, or a proxy cuts it: watch again from the
  last resourceVersion seen, the store stays as it is;
- 410 Gone (the version was compacted): relist at once;
- any other API error: wait (injected backoff) and watch again, relisting after the third
  failure in a row since a gap in events may have opened.

Objects are never mutated after they enter the store (an update replaces the dict), so
`items()` hands out the same dicts without copying. `keep(obj)` filters what is stored:
pods of other schedulers that are still pending are not the controller's business.

Not promised: that the store is current. It lags the server by the watch's latency; the
controller's assumed-pod cache covers its own binds until the watch shows them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from controller.errors import ApiError, Gone
from controller.kinds import ResourceKind
from controller.timing import BackoffPolicy, Clock, SystemClock

__all__ = ["Informer", "WatchSource", "ChangeCallback", "object_key"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
ChangeCallback = Callable[[str, "JsonObject | None", "JsonObject | None"], None]
RELIST_AFTER_FAILURES = 3


class _ListResult(Protocol):
    items: list[JsonObject]
    resource_version: str


class _WatchEvent(Protocol):
    type: str
    object: JsonObject


class WatchSource(Protocol):
    def list(self, kind: ResourceKind) -> _ListResult: ...

    def watch(self, kind: ResourceKind, *, resource_version: str, timeout_s: int = 300) -> Iterator[_WatchEvent]: ...


def object_key(obj: JsonObject) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


class Informer:
    def __init__(
        self,
        source: WatchSource,
        kind: ResourceKind,
        *,
        keep: Callable[[JsonObject], bool] = lambda obj: True,
        on_change: ChangeCallback | None = None,
        on_error: Callable[[ResourceKind, ApiError], None] | None = None,
        on_relist: Callable[[ResourceKind], None] | None = None,
        backoff: BackoffPolicy = BackoffPolicy(base_s=0.2, cap_s=5.0),
        clock: Clock | None = None,
        watch_timeout_s: int = 240,
    ) -> None:
        self.kind = kind
        self._source = source
        self._keep = keep
        self._on_change = on_change
        self._on_error = on_error
        self._on_relist = on_relist
        self._backoff = backoff.start()
        self._clock = clock or SystemClock()
        self._watch_timeout_s = watch_timeout_s
        self._store: dict[str, JsonObject] = {}
        self._lock = threading.Lock()
        self.synced = threading.Event()
        self.resource_version = ""

    # ---- reading (any thread) ----

    def items(self) -> list[JsonObject]:
        with self._lock:
            return list(self._store.values())

    def get(self, key: str) -> JsonObject | None:
        with self._lock:
            return self._store.get(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    # ---- the loop (its own thread) ----

    def run(self, stop: threading.Event) -> None:
        failures = 0
        relist = True
        while not stop.is_set():
            try:
                if relist:
                    self._relist()
                    relist = False
                for event in self._source.watch(
                    self.kind, resource_version=self.resource_version, timeout_s=self._watch_timeout_s
                ):
                    if stop.is_set():
                        return
                    self._apply(event.type, event.object)
                    failures = 0
                    self._backoff.reset()
            except Gone:
                log.info("watch of %s: resourceVersion %s is gone; relisting", self.kind, self.resource_version)
                relist = True
            except ApiError as error:
                if stop.is_set():
                    return
                failures += 1
                if self._on_error is not None:
                    self._on_error(self.kind, error)
                relist = relist or failures >= RELIST_AFTER_FAILURES
                delay = self._backoff.next_delay_s()
                log.warning("%s informer: %s; retrying in %.2f s", self.kind, error, delay)
                if self._clock.sleep(delay, stop):
                    return
            except Exception:  # a bug must not silently kill the cache: log, back off, relist
                log.exception("%s informer failed unexpectedly; relisting", self.kind)
                relist = True
                if self._clock.sleep(self._backoff.next_delay_s(), stop):
                    return

    def _relist(self) -> None:
        result = self._source.list(self.kind)
        fresh = {object_key(obj): obj for obj in result.items if self._keep(obj)}
        with self._lock:
            old = self._store
            self._store = fresh
            self.resource_version = result.resource_version
        if self._on_relist is not None:
            self._on_relist(self.kind)
        if self._on_change is not None:
            for key, obj in fresh.items():
                if key not in old:
                    self._on_change("ADDED", None, obj)
            for key, obj in old.items():
                if key not in fresh:
                    self._on_change("DELETED", obj, None)
        self.synced.set()
        self._backoff.reset()

    def _apply(self, event_type: str, obj: JsonObject) -> None:
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if event_type == "BOOKMARK":
            if version:
                self.resource_version = version
            return
        key = object_key(obj)
        with self._lock:
            old = self._store.get(key)
            if event_type == "DELETED" or not self._keep(obj):
                self._store.pop(key, None)
                new = None
            else:
                self._store[key] = obj
                new = obj
            if version:
                self.resource_version = version
        if self._on_change is not None and (old is not None or new is not None):
            self._on_change("DELETED" if new is None else event_type, old, new)
