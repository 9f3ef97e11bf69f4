"""Leader election through a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it.

Several replicas run; each keeps its caches warm, only the one holding the Lease evicts,
binds and writes status. Every `retry_period_s` each replica reads the Lease:
- nobody holds it, or its holder has not renewed it for `lease_duration_s` *as observed by
  this replica's own monotonic clock* (the time since the Lease record last changed, so a
  skewed wall clock on another machine cannot steal or keep it) → take it: an update
  conditional on the resourceVersion read, so of two replicas racing exactly one wins (409);
- we hold it → renew (`renewTime` = now).
A standby therefore takes over at most `lease_duration_s + retry_period_s` after the leader
stopped renewing. A leader that shuts down cleanly releases the Lease (empty holder), and a
standby takes it at its next try.

What happens when the Lease is lost mid-cycle (a renew fails, or a network partition):
`is_leader()` turns False once `renew_deadline_s` (< `lease_duration_s`) has passed since
the last successful renew — before any standby may take over. The actuator asks before
every gang and before every single write, so a deposed leader stops within one API call:
the calls already sent stand (a bind is atomic on the server — a pod is never bound twice,
a second bind gets 409), and the rest of the cycle's plan is dropped. The new leader starts
from its own caches, where those binds appear as the watch delivers them; a gang left half
bound is completed or reported by its first cycle, like any other half-bound gang.

Not promised: fencing of writes already in flight when the deadline passes (the API has no
fencing tokens); the renew deadline's margin below the lease duration is what protects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from controller.errors import ApiError, Conflict, NotFound
from controller.kinds import LEASES, ResourceKind
from controller.timing import Clock, SystemClock, rfc3339_micro

__all__ = ["LeaseConfig", "LeaseApi", "LeaderElector"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class LeaseConfig:
    identity: str
    namespace: str = "batchplace-system"
    name: str = "batchplace"
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise ValueError(
                "need retry period < renew deadline < lease duration, got "
                f"{self.retry_period_s} / {self.renew_deadline_s} / {self.lease_duration_s} s"
            )


class LeaseApi(Protocol):
    def get_lease(self, namespace: str, name: str) -> JsonObject | None: ...

    def create(self, kind: ResourceKind, namespace: str | None, body: JsonObject) -> JsonObject: ...

    def replace(self, kind: ResourceKind, namespace: str | None, name: str, body: JsonObject) -> JsonObject: ...


class LeaderElector:
    def __init__(
        self,
        api: LeaseApi,
        config: LeaseConfig,
        *,
        clock: Clock | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.config = config
        self._api = api
        self._clock = clock or SystemClock()
        self._on_change = on_change
        self._last_renew: float | None = None  # monotonic time of our last successful write
        self._observed: tuple[object, ...] | None = None
        self._observed_at = 0.0
        self._lock = threading.Lock()
        self._was_leader = False

    # ---- asked by the controller before every write ----

    def is_leader(self) -> bool:
        with self._lock:
            return self._last_renew is not None and self._clock.monotonic() - self._last_renew < self.config.renew_deadline_s

    # ---- the loop ----

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.try_acquire_or_renew()
            except ApiError as error:
                log.warning("lease %s/%s: %s", self.config.namespace, self.config.name, error)
            self._notify()
            if self._clock.sleep(self.config.retry_period_s, stop):
                break
        self.release()
        self._notify()

    def try_acquire_or_renew(self) -> bool:
        """One round; True when we hold the Lease after it."""
        config = self.config
        now = rfc3339_micro(self._clock.now())
        lease = self._api.get_lease(config.namespace, config.name)
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": config.name, "namespace": config.namespace},
                "spec": self._spec(acquire_time=now, renew_time=now, transitions=0),
            }
            try:
                self._api.create(LEASES, config.namespace, body)
            except Conflict:  # another replica created it first
                return False
            self._renewed()
            log.info("lease %s/%s created; %s leads", config.namespace, config.name, config.identity)
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("acquireTime"), spec.get("leaseTransitions"))
        mono = self._clock.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, mono
        duration = float(spec.get("leaseDurationSeconds") or config.lease_duration_s)
        if holder and holder != config.identity and mono - self._observed_at < duration:
            self._lost()
            return False
        ours = holder == config.identity
        transitions = int(spec.get("leaseTransitions") or 0)
        updated = {
            **lease,
            "spec": self._spec(
                acquire_time=spec.get("acquireTime") if ours else now,
                renew_time=now,
                transitions=transitions if ours else transitions + 1,
            ),
        }
        try:
            self._api.replace(LEASES, config.namespace, config.name, updated)
        except (Conflict, NotFound):
            self._lost()
            return False
        if not ours:
            log.info("lease %s/%s taken over by %s (was %r)", config.namespace, config.name, config.identity, holder)
        self._renewed()
        return True

    def release(self) -> None:
        """Give the Lease up (a clean shutdown), so a standby need not wait for it to expire."""
        if not self.is_leader():
            return
        config = self.config
        try:
            lease = self._api.get_lease(config.namespace, config.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != config.identity:
                return
            spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
            self._api.replace(LEASES, config.namespace, config.name, {**lease, "spec": spec})
            log.info("lease %s/%s released by %s", config.namespace, config.name, config.identity)
        except ApiError as error:
            log.warning("releasing lease %s/%s: %s", config.namespace, config.name, error)
        finally:
            self._lost()

    # ---- helpers ----

    def _spec(self, *, acquire_time: object, renew_time: str, transitions: int) -> JsonObject:
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, round(self.config.lease_duration_s)),
            "acquireTime": acquire_time,
            "renewTime": renew_time,
            "leaseTransitions": transitions,
        }

    def _renewed(self) -> None:
        with self._lock:
            self._last_renew = self._clock.monotonic()

    def _lost(self) -> None:
        with self._lock:
            self._last_renew = None

    def _notify(self) -> None:
        leading = self.is_leader()
        if leading != self._was_leader:
            self._was_leader = leading
            log.info("%s %s leading", self.config.identity, "started" if leading else "stopped")
            if self._on_change is not None:
                self._on_change(leading)
