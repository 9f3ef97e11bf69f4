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

What happens when the Lease is lost mid-cycle (a renew fails, a network partition, the
process paused): `is_leader()` turns False once `renew_deadline_s` (< `lease_duration_s`)
has passed since the last successful renew — before any standby may take over. A renew
counts from the moment its write was *sent*, not answered: a renew sent, then the process
stopped (SIGSTOP, a frozen VM) and resumed long after, does not count as fresh.

Writes ask more than `is_leader()`: `may_write()` — is the Lease ours, by this replica's
monotonic clock, for `write_budget_s` more seconds, the longest one write call may take
(each bind and eviction gets that as its HTTP timeout). The actuator asks before each
gang's batch and before each write, and the connection asks again right before a bind or an
eviction leaves the process (`controller.write_fence`), so a process resumed after a pause
sees its clock jump past the deadline and sends nothing more of its old plan (it logs the
drop, and counts it in `batchplace_writes_dropped_total{reason="lease"}`).

The residual window: a pause between the connection's last check (before the request's
body is written) and the socket write — a few interpreter steps — sends that one write when
the process resumes: at most one per sending thread. A write sent in time is answered or given up before the renew deadline, and
a standby takes over no earlier than `lease_duration_s` after it saw the renew, so the
margin `lease_duration_s − renew_deadline_s` (5 s by default) covers its time on the wire
and the clocks' drift; an API server that holds a write for longer than that margin plus
the write budget can still apply it late. The API has no fencing tokens to close either
gap. The new leader starts from its own caches, where such binds appear as the watch
delivers them.

Where the Lease lives (`default_lease_namespace`): in cluster, in the pod's own namespace
(`POD_NAMESPACE` from the downward API, else the service account's namespace file), where
deploy/rbac.yaml's Role grants the Lease verbs; out of cluster, in `kube-system`, where
kube-scheduler and kube-controller-manager keep theirs — a namespace every cluster has, so
`batchplace controller --kubeconfig K` leads on a cluster nobody prepared.

When the Lease cannot be used, `status()` says why, for `/readyz`: held by another replica
(a standby: normal), or an API error. An error that retrying cannot fix — RBAC forbids the
call, the namespace does not exist, the Lease is invalid — makes the status `blocked`: an
operator must act, so it is logged at error level, naming the Lease, the call and the API's
reason and message. Every error is logged once per distinct cause, not on every retry, and
a success after one says so.

Not promised: fencing of writes already in flight when the deadline passes or the process
pauses (the residual window above); the renew deadline's margin below the lease duration is
what protects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from controller.errors import ApiError, Conflict, NotFound
from controller.kinds import LEASES, ResourceKind
from controller.timing import Clock, SystemClock, rfc3339_micro

__all__ = [
    "LeaseConfig",
    "LeaseApi",
    "LeaderElector",
    "LeaderStatus",
    "default_lease_namespace",
    "read_service_account_namespace",
    "OUT_OF_CLUSTER_NAMESPACE",
    "SERVICE_ACCOUNT_NAMESPACE_FILE",
]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]

OUT_OF_CLUSTER_NAMESPACE = "kube-system"
SERVICE_ACCOUNT_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
"""Where the kubelet mounts a pod's service account namespace (client-go's in-cluster config reads it too)."""


def default_lease_namespace(*, pod_namespace: str | None, service_account_namespace: str | None) -> str:
    """The pod's namespace in cluster, `kube-system` out of cluster.

    `default_lease_namespace(pod_namespace="batchplace-system", service_account_namespace=None)`
    → "batchplace-system"; both None (a laptop with a kubeconfig) → "kube-system".
    """
    for namespace in (pod_namespace, service_account_namespace):
        if namespace and namespace.strip():
            return namespace.strip()
    return OUT_OF_CLUSTER_NAMESPACE


def read_service_account_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE_FILE) -> str | None:
    """The namespace file of the pod's service account; None out of cluster."""
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


@dataclass(frozen=True)
class LeaseConfig:
    identity: str
    namespace: str
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

    @property
    def write_budget_s(self) -> float:
        """The longest one write may take: a batch starts, and a write is sent, only while the
        Lease stays ours this long. Right before a renew the Lease has `renew_deadline_s −
        retry_period_s` left; half of that keeps writing through one slow renew and stops at a
        second one. 4 s by default (10 s deadline, 2 s period)."""
        return (self.renew_deadline_s - self.retry_period_s) / 2


@dataclass(frozen=True)
class LeaderStatus:
    """Whether this replica leads and, when it does not, why (for `/readyz` and the logs)."""

    leading: bool
    reason: str | None = None  # None while leading
    blocked: bool = False  # the Lease cannot be used until an operator acts (RBAC, missing namespace)


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
        on_error: Callable[[ApiError], None] | None = None,
    ) -> None:
        self.config = config
        self._api = api
        self._clock = clock or SystemClock()
        self._on_change = on_change
        self._on_error = on_error
        self._last_renew: float | None = None  # monotonic time of our last successful write
        self._observed: tuple[object, ...] | None = None
        self._observed_at = 0.0
        self._lock = threading.Lock()
        self._was_leader = False
        self._why_not = f"Lease {config.namespace}/{config.name} not tried yet"
        self._blocked = False
        self._reported: tuple[object, ...] | None = None  # the last error cause logged

    @property
    def lease_ref(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    # ---- asked by the controller before every write ----

    def is_leader(self) -> bool:
        return self.lease_left_s() > 0

    def may_write(self) -> bool:
        """True while the Lease stays ours, by this replica's clock, for one write's budget
        more (`LeaseConfig.write_budget_s`): asked before each batch and each write."""
        return self.lease_left_s() > self.config.write_budget_s

    def lease_left_s(self) -> float:
        """Seconds until the renew deadline by this replica's monotonic clock; ≤ 0 when not leading."""
        with self._lock:
            if self._last_renew is None:
                return 0.0
            return self._last_renew + self.config.renew_deadline_s - self._clock.monotonic()

    @property
    def write_timeout_s(self) -> float:
        return self.config.write_budget_s

    def status(self) -> LeaderStatus:
        leading = self.is_leader()
        if leading:
            return LeaderStatus(leading=True)
        with self._lock:
            return LeaderStatus(leading=False, reason=self._why_not, blocked=self._blocked)

    # ---- the loop ----

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.step()
            if self._clock.sleep(self.config.retry_period_s, stop):
                break
        self.release()
        self._notify()

    def step(self) -> None:
        """One round as the loop runs it: try the Lease, record an API error, report a change."""
        try:
            self.try_acquire_or_renew()
        except ApiError as error:
            self._failed(error)
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
            sent_at = self._clock.monotonic()
            try:
                self._api.create(LEASES, config.namespace, body)
            except Conflict:  # another replica created it first
                self._standby(f"Lease {self.lease_ref} was just created by another replica")
                return False
            self._renewed(sent_at)
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
            self._standby(f"Lease {self.lease_ref} is held by {holder}")
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
        sent_at = self._clock.monotonic()
        try:
            self._api.replace(LEASES, config.namespace, config.name, updated)
        except (Conflict, NotFound):
            self._lost()
            self._standby(f"Lease {self.lease_ref} changed under us: another replica took it")
            return False
        if not ours:
            log.info("lease %s/%s taken over by %s (was %r)", config.namespace, config.name, config.identity, holder)
        self._renewed(sent_at)
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

    def _renewed(self, sent_at: float) -> None:
        """A renew landed; it counts from when it was sent (a standby counts from when it saw
        it, later), so a process paused between sending and reading the answer is not fresh."""
        with self._lock:
            self._last_renew = sent_at
        self._recovered()

    def _standby(self, why: str) -> None:
        with self._lock:
            self._why_not, self._blocked = why, False
        self._recovered()

    def _recovered(self) -> None:
        """The Lease answered as it should: say so once after an error."""
        if self._reported is not None:
            self._reported = None
            extra = {"lease_namespace": self.config.namespace, "lease_name": self.config.name}
            log.info("lease %s usable again", self.lease_ref, extra=extra)

    def _failed(self, error: ApiError) -> None:
        """Record why the Lease could not be used; log it when the cause is new.

        A cause is the error's class, status and call, and — for an error retrying cannot
        fix — its message: e.g. `Forbidden (HTTP 403) on get: leases.coordination.k8s.io
        "batchplace" is forbidden: User "…" cannot get resource "leases" … in the namespace
        "kube-system"`. A transient error's message (a socket's text) varies between tries,
        so it is left out of the key.
        """
        if self._on_error is not None:
            self._on_error(error)
        blocked = not error.retry and not isinstance(error, Conflict)
        reason = type(error).__name__
        status = f" (HTTP {error.status})" if error.status is not None else ""
        call = f" on {error.verb}" if error.verb else ""
        cause = f"{reason}{status}{call}: {error.message}"
        action = "read" if error.verb == "get" else "written"
        why = f"Lease {self.lease_ref} cannot be {action}: {cause}" if blocked else f"Lease {self.lease_ref}: {cause}"
        with self._lock:
            self._why_not, self._blocked = why, blocked
        key = (reason, error.status, error.verb, error.message if blocked else "")
        if key == self._reported:
            return
        self._reported = key
        extra = {
            "lease_namespace": self.config.namespace,
            "lease_name": self.config.name,
            "api_reason": reason,
            "http_status": error.status,
            "verb": error.verb,
        }
        if blocked:
            log.error("%s; this replica will not lead until that is fixed", why, extra=extra)
        else:
            log.warning("%s; retrying every %.1f s", why, self.config.retry_period_s, extra=extra)

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
