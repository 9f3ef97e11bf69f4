"""The controller's view of the cluster: one informer per watched kind, read as one `ClusterView`.

Input: the edge client (list, watch, discovery). Output: `view()` — plain tuples of raw
objects per kind, what `controller.observe` turns into a Snapshot — `synced()`, true
once every informer has listed (the controller never decides on a half-filled cache), and
`behind()`, the informers that may have missed events (a watch error or an outage since
their last list) and why: the controller waits for none to be behind before it observes.

Kinds of CRDs (Volcano's PodGroup, Queue, HyperNode, Numatopology, Job; scheduler-plugins'
PodGroup) are watched only where the server serves them; discovery runs again every
`rediscover_s`, so a CRD installed later is picked up without a restart. So are the DRA
kinds (`resource.k8s.io/v1`, Kubernetes ≥ 1.34): a server that does not serve the group has
no DRA devices, said once in the log, and nothing of it is read. And the Kubernetes Workload
API (`scheduling.k8s.io` Workload and PodGroup), each at the newest version served
(`controller.kinds.OLDER_VERSIONS`); its objects reach the view with their `apiVersion`, so
the loader reads each version's fields.

Pods kept: every pod bound to a node (it takes capacity, whatever its scheduler) and pending
pods whose `spec.schedulerName` is one of ours; finished pods are filtered by the server
(`status.phase!=Succeeded,status.phase!=Failed`, as kube-scheduler watches them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

from controller.errors import ApiError
from controller.informer import ChangeCallback, Informer, WatchSource, object_key
from controller.kinds import (
    DEVICE_CLASSES,
    DRA_KINDS,
    HYPERNODES,
    KUBE_PODGROUPS,
    KUBE_PODGROUPS_V1ALPHA2,
    KUBE_WORKLOADS,
    KUBE_WORKLOADS_V1ALPHA1,
    KUBE_WORKLOADS_V1ALPHA2,
    NODES,
    NUMATOPOLOGIES,
    OLDER_VERSIONS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    VCJOBS,
    VOLCANO_PODGROUPS,
    WATCHED,
    WORKLOAD_API_KINDS,
    XK8S_PODGROUPS,
    ResourceKind,
)
from controller.observe import ClusterView
from controller.timing import Clock, SystemClock, join_within

__all__ = ["ClusterCaches", "DiscoverySource", "pod_is_kept"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


class DiscoverySource(WatchSource, Protocol):
    def served(self, kinds: Sequence[ResourceKind]) -> set[ResourceKind]: ...


def pod_is_kept(pod: JsonObject, scheduler_names: Collection[str]) -> bool:
    """Bound pods take capacity whoever placed them; pending ones matter only when ours."""
    spec = pod.get("spec") or {}
    return bool(spec.get("nodeName")) or spec.get("schedulerName", "default-scheduler") in scheduler_names


class ClusterCaches:
    def __init__(
        self,
        source: DiscoverySource,
        *,
        scheduler_names: Collection[str],
        on_change: Callable[[ResourceKind, str, JsonObject | None, JsonObject | None], None] | None = None,
        on_error: Callable[[ResourceKind, ApiError], None] | None = None,
        on_relist: Callable[[ResourceKind], None] | None = None,
        clock: Clock | None = None,
        rediscover_s: float = 30.0,
        watch_timeout_s: int = 240,
    ) -> None:
        self._source = source
        self._scheduler_names = frozenset(scheduler_names)
        self._on_change = on_change
        self._on_error = on_error
        self._on_relist = on_relist
        self._clock = clock or SystemClock()
        self._rediscover_s = rediscover_s
        self._watch_timeout_s = watch_timeout_s
        self._informers: dict[ResourceKind, Informer] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._discovered = threading.Event()
        self._said_no_dra = False
        self._said_no_workload_api = False

    # ---- lifecycle ----

    def start(self, stop: threading.Event) -> None:
        """Start informers for what is served now, and a thread that looks again periodically."""
        thread = threading.Thread(target=self._discovery_loop, args=(stop,), name="discovery", daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self, timeout_s: float = 5.0) -> None:
        """Wait for the discovery and informer threads, `timeout_s` in all, not each: they are
        daemons, and one still inside a request (an informer's first LIST on a slow API
        server, which closing the client does not cut) ends with the process. Per thread, a
        controller stopped while its two dozen informers were listing waited for each in
        turn, past its grace period."""
        join_within(self._threads, timeout_s)

    def _discovery_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self._start_served(stop)
                self._discovered.set()
            except ApiError as error:
                log.warning("discovery failed: %s", error)
                if self._on_error is not None:
                    self._on_error(NODES, error)
                if self._clock.sleep(1.0, stop):
                    return
                continue
            if self._clock.sleep(self._rediscover_s, stop):
                return

    def _start_served(self, stop: threading.Event) -> None:
        missing = [kind for kind in WATCHED if kind not in self._informers]
        if not missing:
            return
        crds = [kind for kind in missing if kind.crd]
        served = self._source.served(crds) if crds else set()
        if not self._said_no_dra and any(kind in crds for kind in DRA_KINDS) and not served & set(DRA_KINDS):
            self._said_no_dra = True
            log.info("resource.k8s.io/v1 is not served: the cluster has no DRA devices, none are read")
        workload_api = set(WORKLOAD_API_KINDS)
        if not self._said_no_workload_api and workload_api & set(crds) and not served & workload_api:
            self._said_no_workload_api = True
            log.info("the Workload API (scheduling.k8s.io Workload, PodGroup) is not served: none of its gangs are read")
        for kind in missing:
            if kind.crd and kind not in served:
                continue
            if any(newer in served or self.informer(newer) is not None for newer in OLDER_VERSIONS.get(kind, ())):
                continue
            informer = Informer(
                self._source,
                kind,
                keep=self._keep_for(kind),
                on_change=self._change_callback(kind),
                on_error=self._on_error,
                on_relist=self._on_relist,
                clock=self._clock,
                watch_timeout_s=self._watch_timeout_s,
            )
            with self._lock:
                self._informers[kind] = informer
            thread = threading.Thread(target=informer.run, args=(stop,), name=f"informer-{kind}", daemon=True)
            thread.start()
            self._threads.append(thread)
            log.info("watching %s", kind)

    def _keep_for(self, kind: ResourceKind) -> Callable[[JsonObject], bool]:
        if kind == PODS:
            names = self._scheduler_names
            return lambda pod: pod_is_kept(pod, names)
        return lambda obj: True

    def _change_callback(self, kind: ResourceKind) -> ChangeCallback | None:
        if self._on_change is None:
            return None
        callback = self._on_change
        return lambda event, old, new: callback(kind, event, old, new)

    # ---- reading ----

    def synced(self) -> bool:
        if not self._discovered.is_set():
            return False
        with self._lock:
            informers = list(self._informers.values())
        return all(informer.synced.is_set() for informer in informers)

    def behind(self) -> dict[ResourceKind, str]:
        """The informers not current (`Informer.current`) and why; {} when all are. Before
        discovery answered, every watched kind is behind."""
        if not self._discovered.is_set():
            return {kind: "discovery has not answered yet" for kind in WATCHED if not kind.crd}
        with self._lock:
            informers = list(self._informers.values())
        return {informer.kind: informer.behind for informer in informers if not informer.current}

    def wait_synced(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        return self._wait(self.synced, timeout_s, stop)

    def wait_current(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Wait up to `timeout_s` for no informer to be behind; False when some still are."""
        return self._wait(lambda: not self.behind(), timeout_s, stop)

    def _wait(self, done: Callable[[], bool], timeout_s: float, stop: threading.Event | None) -> bool:
        deadline = self._clock.monotonic() + timeout_s
        while self._clock.monotonic() < deadline:
            if done():
                return True
            if self._clock.sleep(0.05, stop):
                return False
        return done()

    def informer(self, kind: ResourceKind) -> Informer | None:
        with self._lock:
            return self._informers.get(kind)

    def _items(self, kind: ResourceKind) -> tuple[JsonObject, ...]:
        informer = self.informer(kind)
        return tuple(informer.items()) if informer is not None else ()

    def view(self) -> ClusterView:
        return ClusterView(
            pods=self._items(PODS),
            nodes=self._items(NODES),
            priority_classes=self._items(PRIORITY_CLASSES),
            volcano_pod_groups=self._items(VOLCANO_PODGROUPS),
            xk8s_pod_groups=self._items(XK8S_PODGROUPS),
            queues=self._items(QUEUES),
            hypernodes=self._items(HYPERNODES),
            numatopologies=self._items(NUMATOPOLOGIES),
            vcjobs=self._items(VCJOBS),
            device_classes=self._items(DEVICE_CLASSES),
            resource_slices=self._items(RESOURCE_SLICES),
            resource_claims=self._items(RESOURCE_CLAIMS),
            resource_claim_templates=self._items(RESOURCE_CLAIM_TEMPLATES),
            kube_workloads=self._versioned(KUBE_WORKLOADS, KUBE_WORKLOADS_V1ALPHA2, KUBE_WORKLOADS_V1ALPHA1),
            kube_pod_groups=self._versioned(KUBE_PODGROUPS, KUBE_PODGROUPS_V1ALPHA2),
        )

    def _versioned(self, *kinds: ResourceKind) -> tuple[JsonObject, ...]:
        """One resource read at several versions, newest first: each object once, with the
        `apiVersion` and `kind` it was read at (list items come without them)."""
        found: dict[str, JsonObject] = {}
        for kind in kinds:
            for obj in self._items(kind):
                found.setdefault(object_key(obj), {**obj, "apiVersion": kind.api_version, "kind": kind.kind})
        return tuple(found.values())

    def pod(self, key: str) -> JsonObject | None:
        informer = self.informer(PODS)
        return informer.get(key) if informer is not None else None
