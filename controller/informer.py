"""One kind's cache: list, then watch from the list's resourceVersion, forever.

Input: a `WatchSource` (the edge, `controller.kube.KubeClient`) and a `ResourceKind`.
Output: an in-memory store of the kind's objects as raw JSON dicts, keyed `ns/name`,
readable from any thread (`items()`), plus `synced` once the first list landed, `current`
while no error has opened a gap since the last list (`behind` says why not), and an
`on_change(event_type, old, new)` callback for the controller's early wake-up.

The loop, as client-go's reflector runs it:
- list (paged) → replace the store → watch from the list's resourceVersion with
  `allowWatchBookmarks` (a BOOKMARK only moves the resourceVersion forward);
- the server ends a watch after `timeoutSeconds`, or a proxy cuts it: watch again from the
  last resourceVersion seen, the store stays as it is;
- 410 Gone (the version was compacted): relist at once;
- any other API error (the stream cut, the server down): the store may have missed events,
  so it is no longer `current`; wait (injected backoff) and relist. Only a completed list
  makes it current again: a resumed watch replays what happened after the version it
  resumes from, but a client cannot tell when it has caught up — resourceVersions are
  opaque, not ordered, by the API's contract — while a list (no resourceVersion: a quorum
  read) is as new as the server by construction. A CRD answered 404 (uninstalled) is an
  empty store and current: no object of it exists to miss.

Objects are never mutated after they enter the store (an update replaces the dict), so
`items()` hands out the same dicts without copying. `keep(obj)` filters what is stored:
pods of other schedulers that are still pending are not the controller's business.

Not promised: that a `current` store equals the server. It lags by the watch's latency; the
controller's assumed-pod cache covers its own binds until the watch shows them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from controller.errors import ApiError, Gone, NotFound
from controller.kinds import ResourceKind
from controller.timing import BackoffPolicy, Clock, SystemClock

__all__ = ["Informer", "WatchSource", "ChangeCallback", "object_key"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
ChangeCallback = Callable[[str, "JsonObject | None", "JsonObject | None"], None]


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
        self.behind = "not listed yet"  # why the store may miss events ("" when current)

    @property
    def current(self) -> bool:
        """Listed, and no error since the last list: no event can have been missed."""
        return not self.behind

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
                    self._backoff.reset()
            except Gone:
                log.info("watch of %s: resourceVersion %s is gone; relisting", self.kind, self.resource_version)
                self.behind = f"relisting: resourceVersion {self.resource_version} is gone"
                relist = True
            except ApiError as error:
                if stop.is_set():
                    return
                self.behind = f"relisting after: {error}"
                if isinstance(error, NotFound) and self.kind.crd:
                    self._unserved()
                if self._on_error is not None:
                    self._on_error(self.kind, error)
                relist = True
                delay = self._backoff.next_delay_s()
                log.warning("%s informer: %s; retrying in %.2f s", self.kind, error, delay)
                if self._clock.sleep(delay, stop):
                    return
            except Exception:  # a bug must not silently kill the cache: log, back off, relist
                log.exception("%s informer failed unexpectedly; relisting", self.kind)
                self.behind = "relisting after an unexpected failure"
                relist = True
                if self._clock.sleep(self._backoff.next_delay_s(), stop):
                    return

    def _relist(self) -> None:
        result = self._source.list(self.kind)
        for obj in result.items:  # a list's items come without them; a watch's objects carry them
            obj.setdefault("apiVersion", self.kind.api_version)
            obj.setdefault("kind", self.kind.kind)
        fresh = {object_key(obj): obj for obj in result.items if self._keep(obj)}
        with self._lock:
            old = self._store
            self._store = fresh
            self.resource_version = result.resource_version
            self.behind = ""
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

    def _unserved(self) -> None:
        """The CRD is no longer served (404): none of its objects exist, so nothing can be
        missed — an empty store is current, and the loop keeps trying in case it returns."""
        with self._lock:
            old, self._store = self._store, {}
            self.behind = ""
        if self._on_change is not None:
            for obj in old.values():
                self._on_change("DELETED", obj, None)

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
