"""act: carry a `Plan` out against the API server, gang by gang. The only stage with writes.

Input: a `Plan`; an `ActApi` (the edge client); the leader check; the assumed-pod cache.
Output: an `ActReport` of what happened; the assumed cache learns every accepted bind and
eviction; `reported` (the controller's memory of Events and statuses written) is updated.

Per gang, in this order, asking `may_write()` (the Lease stays ours, by this replica's
clock, for one write's timeout more: `controller.leader`) before the gang and before each
write — and the connection asks again as each bind or eviction try goes out
(`controller.write_fence`) — so a leader paused and resumed sends nothing of its old plan:
1. evictions through the Eviction API. A PodDisruptionBudget refusal (429) is final for
   this cycle: the gang's status says which victim was refused, and nothing of it binds.
2. binds: first every target node is read from the API server (one GET per distinct node,
   just before the gang's binds, from the server's watch cache — milliseconds behind etcd,
   where our informer may be a relist behind — not from our cache): a node gone, being
   deleted or cordoned since the snapshot fails the gang before anything of it is bound,
   and the next cycle places it from a snapshot without that node. Then the DRA claims
   the gang's pods use are written — allocation and reservedFor, as kube-scheduler writes
   them (`controller.dra_claims`); a claim not found or not written fails the gang before
   anything of it is bound, its claims already written put back. Then all binds go out
   together (a thread pool), one write per pod: the Binding carries the GPU devices the
   solver chose as the `batchplace.io/gpus` annotation, which the API server writes onto
   the pod together with its node, so no pod is ever bound without its devices on record.
   Each bind is retried with backoff on retryable errors. A 409 is checked against the
   pod: bound already (an earlier try landed and its answer was lost, or another cycle's
   bind) is learnt as that bind — node and GPUs as the pod says — on our node it counts
   as bound, elsewhere as a failure. A bind whose outcome stays unknown (no answer, a 5xx)
   is re-read once; when that fails too the pod is held as possibly bound on the planned
   node and GPUs (`AssumedPods.maybe_bound`) until `reread_unknown()` or the informer
   settles it, so no cycle places it or other pods on its room meanwhile.
3. the status: as planned when every bind landed; else `status.bind_failed` says how many
   landed and why the rest did not, and the next cycle completes the gang (its bound pods
   count toward it) or reports it.
4. the PodScheduled condition of each of its pods left pending (`controller.plan` rule 7),
   a strategic merge patch of pods/status each, sent together (the bind pool); one the API
   server refuses is logged and not remembered, so the next cycle writes it again.
5. Events: the gang's one Scheduled Event on its PodGroup when every bind landed (a pod
   without a PodGroup object: its own, after its bind); Preempted after each eviction;
   FailedScheduling as planned, or on the PodGroup when a bind was rejected.

Nothing is bound twice: a pod is bound only from the Snapshot's pending pods, the
assumed-pod cache keeps an accepted bind in every later Snapshot, and the API server
refuses a second binding of a pod (409) whoever sends it.

`dry_run`: every action is logged and none is sent.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from controller import status as status_text
from controller.assumed import AssumedPods, bound_to
from controller.dra_claims import AssumedClaims, ClaimWrite, ClaimWriter
from controller.errors import ApiError, Conflict, NotFound, ServerError, TooManyRequests, Unavailable
from controller.kinds import NODES, PODS, ResourceKind
from controller.metrics import ControllerMetrics
from controller.plan import (
    BindPod, EmitEvent, Evict, GangPlan, Plan, SetPodCondition, pod_condition_key, podgroup_event, podgroup_status_key,
    status_reported_as,
)
from controller.timing import BackoffPolicy, Clock, SystemClock, rfc3339
from controller.write_fence import WriteLease, WriteNotSent
from models.loaders.keys import GPUS_ANNOTATION
from models.snapshot import NodeName, PodKey
from solver.reasons import EVENT_MESSAGE_CHARS, eviction_refused

__all__ = ["ActApi", "LeaderCheck", "ActReport", "Actuator", "GANGS_AT_ONCE", "EVENT_SENDERS"]

log = logging.getLogger(__name__)
CLUSTER_EVENTS_NAMESPACE = "default"
"""Where an Event about a cluster-scoped object (a Node, a Queue) goes: Kubernetes accepts
such an Event only in `default` (or no namespace), and the kubelet puts its Node events there."""

T = TypeVar("T")
JsonObject = dict[str, Any]


class ActApi(Protocol):
    def bind(
        self, namespace: str, name: str, node: str, *, annotations: Mapping[str, str] = {}, lease: WriteLease | None = None
    ) -> None: ...

    def evict(self, namespace: str, name: str, *, lease: WriteLease | None = None) -> None: ...

    def get(self, kind: ResourceKind, namespace: str | None, name: str, *, from_watch_cache: bool = False) -> JsonObject: ...

    def patch(
        self, kind: ResourceKind, namespace: str | None, name: str, body: JsonObject, *,
        subresource: str | None = None, strategic: bool = False,
    ) -> JsonObject: ...

    def create_event(self, namespace: str, body: JsonObject) -> None: ...

    def replace(
        self, kind: ResourceKind, namespace: str | None, name: str, body: JsonObject, *, subresource: str | None = None
    ) -> JsonObject: ...


class LeaderCheck(WriteLease, Protocol):
    def lease_left_s(self) -> float: ...


class _AlwaysLeader:
    write_timeout_s = None  # the client's own timeouts

    def may_write(self) -> bool:
        return True

    def lease_left_s(self) -> float:
        return float("inf")


class LeadershipLost(Exception):
    """Raised inside act when the Lease is gone; the rest of the plan is dropped."""


@dataclass
class ActReport:
    bound: list[PodKey] = field(default_factory=list)
    bind_failures: list[tuple[PodKey, str]] = field(default_factory=list)
    evicted: list[PodKey] = field(default_factory=list)
    evictions_refused: list[tuple[PodKey, str]] = field(default_factory=list)
    statuses_written: int = 0
    pod_conditions_written: int = 0
    events_written: int = 0
    stopped: str = ""  # why the plan was not finished ("" when it was)
    writes_dropped: int = 0  # binds, evictions and statuses not sent because the Lease may be lost
    dry_run: bool = False


class Actuator:
    def __init__(
        self,
        api: ActApi,
        *,
        assumed: AssumedPods,
        metrics: ControllerMetrics,
        leader: LeaderCheck | None = None,
        clock: Clock | None = None,
        backoff: BackoffPolicy = BackoffPolicy(base_s=0.1, cap_s=2.0, attempts=4),
        identity: str = "batchplace",
        dry_run: bool = False,
        workers: int = 16,
    ) -> None:
        self._api = api
        self._assumed = assumed
        self._metrics = metrics
        self._leader = leader or _AlwaysLeader()
        self._clock = clock or SystemClock()
        self._backoff = backoff
        self._identity = identity
        self._dry_run = dry_run
        self.assumed_claims = AssumedClaims()
        self._claims = ClaimWriter(api, self.assumed_claims)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")
        self._gang_pool = ThreadPoolExecutor(max_workers=GANGS_AT_ONCE, thread_name_prefix="gang")
        self._event_pool = ThreadPoolExecutor(max_workers=EVENT_SENDERS, thread_name_prefix="event")
        self._count_lock = threading.Lock()
        self.reported: MutableMapping[str, str] = {}

    def close(self) -> None:
        for pool in (self._gang_pool, self._pool, self._event_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    # ---- the plan ----

    def act(self, plan: Plan, *, now: datetime, transition_id: str) -> ActReport:
        report = ActReport(dry_run=self._dry_run)
        try:
            # Gangs that evict go one by one, first; the binding gangs then go GANGS_AT_ONCE
            # at a time: plan already made sure they fit together, so their order is free.
            evicting = [gang for gang in plan.gangs if gang.evictions]
            others = [gang for gang in plan.gangs if not gang.evictions]
            for gang in evicting:
                self._gang_if_leading(gang, report, now=now, transition_id=transition_id)
            gang_if_leading = self._gang_if_leading
            futures = [self._gang_pool.submit(gang_if_leading, gang, report, now=now, transition_id=transition_id) for gang in others]
            lost = False
            for future in futures:  # every gang thread done before act returns: none writes on into the next cycle
                try:
                    future.result()
                except LeadershipLost:
                    lost = True
            if lost:
                raise LeadershipLost()
            for event in plan.events:
                self._event(event, report, now=now)
        except LeadershipLost:
            report.stopped = "the lease may be lost; the rest of the plan is dropped"
            left_s = self._leader.lease_left_s()
            log.warning(
                "the lease may be lost (%.1f s left by this replica's clock): %d writes of the plan dropped, "
                "%d bound, %d evicted before stopping",
                max(left_s, 0.0), report.writes_dropped, len(report.bound), len(report.evicted),
                extra={
                    "writes_dropped": report.writes_dropped,
                    "lease_left_s": round(left_s, 3),
                    "bound": len(report.bound),
                    "evicted": len(report.evicted),
                },
            )
        return report

    def _gang_if_leading(self, gang: GangPlan, report: ActReport, *, now: datetime, transition_id: str) -> None:
        """The gang's batch only while the Lease covers its writes (they go out at once, each
        within one write timeout); else the whole gang is dropped, none of it half sent."""
        self._require_leader(report, dropping=len(gang.binds) + len(gang.evictions))
        self._gang(gang, report, now=now, transition_id=transition_id)

    def _gang(self, gang: GangPlan, report: ActReport, *, now: datetime, transition_id: str) -> None:
        if self._dry_run:
            self._log_dry_run(gang)
            report.bound.extend(bind.pod for bind in gang.binds)
            report.evicted.extend(evict.pod for evict in gang.evictions)
            return
        planned = gang.status
        refused = self._evictions(gang.evictions, report, now=now)
        if refused:
            self._write_status(gang, self._refused_status(gang, refused), report, now=now, transition_id=transition_id)
            return
        if gang.binds:
            failures = self._binds(gang.binds, gang.claims, report, now=now)
            if failures:
                status = status_text.bind_failed(
                    min_member=gang.min_member,
                    placed=gang.placed_before,
                    total_pods=gang.total_pods,
                    running=gang.running,
                    bound=len(gang.binds) - len(failures),
                    failures=failures,
                )
                log.warning("gang %s: %d of %d binds failed: %s", gang.group, len(failures), len(gang.binds), "; ".join(failures[:3]))
                self._write_status(gang, status, report, now=now, transition_id=transition_id)
                if gang.ref is not None:  # as kube-scheduler reports a rejected binding
                    message = f"binding rejected: {status.message}"
                    self._event(podgroup_event(gang.ref, type_="Warning", reason="FailedScheduling", message=message), report, now=now)
                return
        if planned is not None:
            self._write_status(
                gang, planned.status, report, now=now, transition_id=transition_id, sub_groups=planned.sub_groups
            )
        self._pod_conditions(gang.pod_conditions, report, now=now)
        for event in gang.events:
            self._event(event, report, now=now)

    def _log_dry_run(self, gang: GangPlan) -> None:
        for evict in gang.evictions:
            log.info("dry-run: would evict %s from %s for %s (%s)", evict.pod, evict.node, evict.for_group, evict.reason)
        for claim in gang.claims:
            log.info("dry-run: would allocate and reserve claim %s for %s", claim.claim, ", ".join(c.pod for c in claim.consumers))
        for bind in gang.binds:
            log.info("dry-run: would bind %s to %s%s", bind.pod, bind.node, f" gpus {list(bind.gpus)}" if bind.gpus else "")
        if gang.status is not None:
            log.info("dry-run: would set %s to %s", gang.group, gang.status.status.describe())
        for write in gang.pod_conditions:
            log.info("dry-run: would set %s PodScheduled=False %s", write.pod, write.desired.reason)

    # ---- evictions ----

    def _evictions(self, evictions: tuple[Evict, ...], report: ActReport, *, now: datetime) -> list[tuple[PodKey, str]]:
        refused: list[tuple[PodKey, str]] = []
        for index, evict in enumerate(evictions):
            self._require_leader(report, dropping=len(evictions) - index)
            namespace, _, name = evict.pod.partition("/")
            try:
                self._call("evict", lambda: self._api.evict(namespace, name, lease=self._leader), retry_throttle=False)
            except WriteNotSent:
                self._dropped(report, len(evictions) - index)
                raise LeadershipLost() from None
            except NotFound:
                pass  # already gone: the room is coming free all the same
            except TooManyRequests as error:
                refused.append((evict.pod, error.message))
                report.evictions_refused.append((evict.pod, error.message))
                self._metrics.evictions.labels(result="refused").inc()
                continue
            except ApiError as error:
                refused.append((evict.pod, str(error)))
                self._metrics.evictions.labels(result="failed").inc()
                continue
            self._assumed.evicted(evict.pod)
            report.evicted.append(evict.pod)
            self._metrics.evictions.labels(result="evicted").inc()
            log.info("evicted %s from %s for %s (%s)", evict.pod, evict.node, evict.for_group, evict.reason)
            self._event(evict.event, report, now=now)
        return refused

    def _refused_status(self, gang: GangPlan, refused: list[tuple[PodKey, str]]) -> status_text.GroupStatus:
        why = [eviction_refused(pod, message=message) for pod, message in refused[:3]]
        return status_text.unschedulable(
            min_member=gang.min_member, placed=gang.placed_before, total_pods=gang.total_pods, running=gang.running, reasons=why
        )

    # ---- binds ----

    def _binds(self, binds: tuple[BindPod, ...], claims: tuple[ClaimWrite, ...], report: ActReport, *, now: datetime) -> list[str]:
        """Bind the gang, its DRA claims written first; the failures, one line each ([] when every bind landed)."""
        refusing = self._nodes_refusing(sorted({bind.node for bind in binds}))
        if refusing:
            failures = [f"node {node} {why}" for node, why in refusing]
            report.bind_failures.extend((bind.pod, failures[0]) for bind in binds)
            return failures
        if claims:
            self._require_leader(report, dropping=len(claims) + len(binds))
        written, refused = self._claims.write(claims) if claims else ([], "")
        if refused:
            self._metrics.claim_writes.labels(result="refused").inc()
            self._metrics.bind_failures.labels(reason="claim").inc(len(binds))
            log.warning("claim not written, %d bind(s) not sent: %s", len(binds), refused, extra={"claim_refused": refused})
            report.bind_failures.extend((bind.pod, refused) for bind in binds)
            return [refused]
        self._metrics.claim_writes.labels(result="written").inc(len(written))
        results = list(self._pool.map(self._bind_one, binds))
        maybe_bound = set(self._assumed.unknown()) if written else set()
        unbound = [bind.pod for bind, failure in zip(binds, results) if failure and bind.pod not in maybe_bound]
        if written and unbound:  # kube-scheduler's Unreserve: no claim stays reserved for a pod not bound
            # (one whose bind may have landed keeps its claims: a bound pod without them would never start)
            self._claims.release(written, unbound)
            self._metrics.claim_writes.labels(result="released").inc()
        self._dropped(report, sum(failure == _LOST for failure in results))
        failures = []
        for bind, failure in zip(binds, results):
            if failure:
                failures.append(f"{bind.pod}: {failure}")
                report.bind_failures.append((bind.pod, failure))
            else:
                report.bound.append(bind.pod)
                if bind.event is not None:
                    self._event(bind.event, report, now=now)
        if any(failure == _LOST for failure in results):
            raise LeadershipLost()
        return failures

    def _nodes_refusing(self, nodes: list[str]) -> list[tuple[str, str]]:
        """(node, why) for each target node the API server says takes no pods now: gone, being
        deleted, cordoned — or unreadable, since a bind to a node not seen is a guess."""
        refusing = []
        for name in nodes:
            try:
                node = self._call("get", lambda: self._api.get(NODES, None, name, from_watch_cache=True))
            except NotFound:
                refusing.append((name, "is gone"))
                self._metrics.bind_failures.labels(reason="node_gone").inc()
                continue
            except ApiError as error:
                refusing.append((name, f"could not be read: {error}"))
                self._metrics.bind_failures.labels(reason="error").inc()
                continue
            if (node.get("metadata") or {}).get("deletionTimestamp"):
                refusing.append((name, "is being deleted"))
                self._metrics.bind_failures.labels(reason="node_gone").inc()
            elif (node.get("spec") or {}).get("unschedulable"):
                refusing.append((name, "is cordoned"))
                self._metrics.bind_failures.labels(reason="node_cordoned").inc()
        return refusing

    def _bind_one(self, bind: BindPod) -> str:
        """"" when the pod is bound to `bind.node`; else why not."""
        if not self._leader.may_write():
            return _LOST
        namespace, _, name = bind.pod.partition("/")
        annotations = {GPUS_ANNOTATION: ",".join(map(str, bind.gpus))} if bind.gpus else {}
        try:
            self._call("bind", lambda: self._api.bind(namespace, name, bind.node, annotations=annotations, lease=self._leader))
        except WriteNotSent:
            return _LOST
        except Conflict as error:
            return self._learn(bind, f"conflict ({error.message})", assigned=_assigned_node(error.message))
        except NotFound:
            self._metrics.bind_failures.labels(reason="not_found").inc()
            return "the pod is gone"
        except (ServerError, Unavailable) as error:
            return self._learn(bind, f"outcome unknown ({error})")
        except ApiError as error:
            self._metrics.bind_failures.labels(reason="error").inc()
            return str(error)
        self._assumed.bound(bind.pod, bind.node, bind.gpus)
        self._metrics.pods_bound.inc()
        return ""

    def _learn(self, bind: BindPod, answer: str, *, assigned: str | None = None) -> str:
        """After a 409 or a bind of unknown outcome: read the pod and learn where it is bound.
        "" when on `bind.node` (an earlier try landed); else why the bind counts as failed.
        When the read fails the pod is held where the 409 said it is (`assigned`), else where
        the bind sent it; GPUs are known only on the node the bind named."""
        namespace, _, name = bind.pod.partition("/")
        try:
            pod = self._call("get", lambda: self._api.get(PODS, namespace, name), attempts=1)
        except NotFound:
            self._metrics.bind_failures.labels(reason="not_found").inc()
            return "the pod is gone"
        except ApiError as lookup:
            node = NodeName(assigned or bind.node)
            self._assumed.maybe_bound(bind.pod, node, bind.gpus if node == bind.node else ())
            self._metrics.bind_failures.labels(reason="unknown").inc()
            return f"{answer}; re-reading the pod failed ({lookup}): its room on {node} is held until it is read again"
        where = bound_to(pod)
        if where is None:
            self._metrics.bind_failures.labels(reason="conflict" if answer.startswith("conflict") else "error").inc()
            return answer
        self._assumed.bound(bind.pod, where.node, where.gpus)
        if where.node != bind.node:
            self._metrics.bind_failures.labels(reason="conflict").inc()
            return f"{answer}: it is bound to {where.node}"
        log.info("bind %s to %s: an earlier try had landed", bind.pod, bind.node)
        self._metrics.pods_bound.inc()
        return ""

    def reread_unknown(self) -> int:
        """Read every pod whose bind outcome is unknown and settle it; the number still unknown
        (the read failed: the room stays held)."""
        for key in self._assumed.unknown():
            namespace, _, name = key.partition("/")
            try:
                self._assumed.settle(key, self._api.get(PODS, namespace, name))
            except NotFound:
                self._assumed.settle(key, None)
            except ApiError as error:
                self._metrics.api_error("get", error)
                log.info("bind of %s still of unknown outcome: %s", key, error)
        return len(self._assumed.unknown())

    # ---- status and events ----

    def _write_status(
        self, gang: GangPlan, status: status_text.GroupStatus, report: ActReport, *, now: datetime, transition_id: str,
        sub_groups: str | None = None,
    ) -> None:
        """`sub_groups`: the per-sub-group annotation planned (`SetStatus.sub_groups`), None to
        leave it — after a refused eviction or a failed bind it would claim binds that did not land.
        Not written when the copy read says it already, nor when this status was written over
        that very copy (`reported`: the watch has not shown the write yet)."""
        ref = gang.ref
        if ref is None or status_text.is_current(
            status, flavor=ref.flavor, min_member=gang.min_member, observed=ref.status,
            sub_groups=sub_groups, observed_sub_groups=ref.sub_groups, api_version=ref.api_version,
        ):
            return
        written_as = status_reported_as(ref, status, gang.min_member, sub_groups) if ref.resource_version else None
        if written_as is not None and self.reported.get(podgroup_status_key(ref.key)) == written_as:
            return
        self._require_leader(report, dropping=1)
        body = status_text.status_patch(
            status, flavor=ref.flavor, min_member=gang.min_member, observed=ref.status, now=now, transition_id=transition_id,
            sub_groups=sub_groups, api_version=ref.api_version,
        )
        kind, subresource = ref.kind, (None if ref.flavor == "volcano" else "status")
        try:
            self._call("patch", lambda: self._api.patch(kind, ref.namespace, ref.name, body, subresource=subresource))
            if written_as is not None:
                self.reported[podgroup_status_key(ref.key)] = written_as
            with self._count_lock:
                report.statuses_written += 1
        except NotFound:
            pass
        except ApiError as error:
            log.warning("status of %s not written: %s", ref.key, error)

    def _pod_conditions(self, writes: tuple[SetPodCondition, ...], report: ActReport, *, now: datetime) -> None:
        """Each pod's PodScheduled condition, sent together; each only while the Lease covers it."""
        if not writes:
            return
        self._require_leader(report, dropping=len(writes))
        lost = sum(not sent for sent in self._pool.map(lambda write: self._pod_condition(write, report, now=now), writes))
        self._dropped(report, lost)

    def _pod_condition(self, write: SetPodCondition, report: ActReport, *, now: datetime) -> bool:
        """Write one pod's condition; False when it was not sent because the Lease may be lost."""
        if not self._leader.may_write():
            return False
        namespace, _, name = write.pod.partition("/")
        observed_status = write.observed.status if write.observed is not None else None
        body = status_text.pod_condition_patch(write.desired, observed_status=observed_status, now=now)
        try:
            self._call("patch", lambda: self._api.patch(PODS, namespace, name, body, subresource="status", strategic=True))
        except NotFound:
            return True  # the pod is gone
        except ApiError as error:
            log.warning("PodScheduled condition of %s not written: %s", write.pod, error)
            return True
        self.reported[pod_condition_key(write.pod)] = write.reported_as()
        with self._count_lock:
            report.pod_conditions_written += 1
        return True

    def emit(self, events: Sequence[EmitEvent], *, now: datetime) -> None:
        """Events from outside a plan (`controller.provisioning`), deduplicated and sent as a plan's."""
        report = ActReport(dry_run=self._dry_run)
        for event in events:
            self._event(event, report, now=now)

    def _event(self, event: EmitEvent, report: ActReport, *, now: datetime) -> None:
        if self._dry_run:
            return
        if event.dedupe_key is not None and self.reported.get(event.dedupe_key) == event.message:
            return
        # Events are best effort and never hold up a bind: they go out on their own threads.
        # Marked reported now, so the next cycle does not send it again while it is in flight.
        if event.dedupe_key is not None:
            self.reported[event.dedupe_key] = event.message
        try:
            self._event_pool.submit(self._send_event, event, report, now)
        except RuntimeError:  # shutting down
            pass

    def _send_event(self, event: EmitEvent, report: ActReport, now: datetime) -> None:
        timestamp = rfc3339(now)
        home = event.namespace or CLUSTER_EVENTS_NAMESPACE
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{event.name}.", "namespace": home},
            "involvedObject": {
                "kind": event.kind,
                "apiVersion": event.api_version,
                "namespace": event.namespace,
                "name": event.name,
                **({"uid": event.uid} if event.uid else {}),
            },
            "type": event.type,
            "reason": event.reason,
            "message": event.message[:EVENT_MESSAGE_CHARS],
            "source": {"component": "batchplace"},
            "reportingComponent": "batchplace",
            "reportingInstance": self._identity,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
        }
        try:
            self._call("create", lambda: self._api.create_event(home, body), attempts=2)
        except ApiError as error:
            log.debug("event %s on %s/%s not written: %s", event.reason, event.namespace, event.name, error)
            if event.dedupe_key is not None and self.reported.get(event.dedupe_key) == event.message:
                del self.reported[event.dedupe_key]  # a later cycle tries again
            return
        with self._count_lock:
            report.events_written += 1

    # ---- calls with retries ----

    def _require_leader(self, report: ActReport, *, dropping: int) -> None:
        """Stop here unless the Lease covers one more write; count the `dropping` writes not sent."""
        if not self._leader.may_write():
            self._dropped(report, dropping)
            raise LeadershipLost()

    def _dropped(self, report: ActReport, writes: int) -> None:
        if writes:
            with self._count_lock:
                report.writes_dropped += writes
            self._metrics.writes_dropped.labels(reason="lease").inc(writes)

    def _call(self, verb: str, fn: Callable[[], T], *, attempts: int | None = None, retry_throttle: bool = True) -> T:
        backoff = None  # made on the first failure only: seeding a generator for every call is not free
        tries = attempts or self._backoff.attempts
        for attempt in range(tries):
            try:
                return fn()
            except ApiError as error:
                self._metrics.api_error(verb, error)
                final = attempt == tries - 1 or not error.retry or (isinstance(error, TooManyRequests) and not retry_throttle)
                if final or not self._leader.may_write():  # a bind's or eviction's retry is asked again as it goes out
                    raise
                backoff = backoff or self._backoff.start()
                delay = backoff.next_delay_s(at_least_s=getattr(error, "retry_after_s", None))
                log.info("%s: %s; try %d of %d in %.2f s", verb, error, attempt + 2, tries, delay)
                self._clock.sleep(delay)
        raise AssertionError("unreachable")


def _assigned_node(message: str) -> str | None:
    """The node of a 409 `pod p is already assigned to node "n"` (the API server's words), else None."""
    match = _ASSIGNED.search(message)
    return match.group(1) if match else None


_ASSIGNED = re.compile(r'already assigned to node "([^"]+)"')
_LOST = "lost the lease before sending"
GANGS_AT_ONCE = 8
EVENT_SENDERS = 4
