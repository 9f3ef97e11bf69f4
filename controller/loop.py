"""The controller: caches, leader election and the cycle observe → decide → plan → act.

`Controller.run(stop)` starts the informers and the elector, waits for the caches to sync,
then runs a cycle every `period_s` — sooner when the caches see new work (a new pending
pod, a pod or node gone, a pod turned Running: `wake()`), but never two cycles closer than
`min_gap_s`. Only the leader decides and acts; a standby keeps its caches and its
snapshot (for `/v1/what-if`) warm and takes over when the Lease says so (`controller.leader`).
`ready()` is the caches synced and current and, with election, a Lease this replica can
use: one that RBAC or a missing namespace keeps from the Lease can never take over, so it
is not ready.

No cycle plans from caches that are behind: after a watch error or an API outage an
informer is behind until it has listed again (`controller.informer`). Each cycle first
waits up to `caches_wait_s` (5 s: an informer's backoff cap, so one relist attempt fits)
for none to be behind; when some still are, the cycle is skipped — counted as
`batchplace_cycles_total{result="caches_behind"}`, logged with the kinds and why — and the
next one tries again a period later. Meanwhile `/readyz` is 503 and names them
(`not_ready_reason`). Binds of unknown outcome are re-read before the cycle observes
(`Actuator.reread_unknown`); those the API server does not answer for stay held.

    observe  caches → Observation (Snapshot + what acting needs)     pure, controller.observe
             + node usage from the usage source, judged by the clock  controller.usage
    decide   Snapshot → checked Decision                              solver.place
    plan     Observation + Decision → ordered actions per gang        pure, controller.plan
    act      actions → API calls                                      controller.act

A cycle that fails (the snapshot cannot be built, the solver raises) is logged and
counted (`batchplace_cycles_total{result="failed"}`) and the next cycle starts from fresh
caches; nothing is half-applied by a failure before `act`.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from controller.act import EVENT_SENDERS, GANGS_AT_ONCE, ActReport, Actuator
from controller.assumed import AssumedPods
from controller.caches import ClusterCaches
from controller.kinds import (
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    VOLCANO_PODGROUPS,
    WATCHED,
    XK8S_PODGROUPS,
    ResourceKind,
)
from controller.kube import KubeClient
from controller.leader import LeaderElector, LeaderStatus, LeaseConfig
from controller.metrics import ControllerMetrics
from controller.observe import ClusterView, Observation, ObserveError, observe
from controller.plan import Plan, forget_gone, offline_plan, plan
from controller.provisioning import Provisioner
from controller.shape_history import DEFAULT_HALF_LIFE_S, ShapeHistory
from controller.status import condition_reason
from controller.reads import CycleReads
from controller.timing import Clock, SystemClock, join_within, wait_in_main_thread
from controller.usage import UsageSource, UsageTracker
from models.placement import Decision
from models.snapshot import ColocationPolicy, PodGroupKey, ReservationPolicy, Snapshot, UsagePolicy
from models.typical_shapes import TypicalShape
from solver.isolation import DEFAULT_MEMORY_LIMIT_BYTES
from solver.offline_evictions import OfflineEviction, offline_evictions
from solver.place import EngineName, SolveConfig, place
from solver.rules import colocation
from solver.rules import usage as usage_rule
from solver.rules.gang import is_partly_bound
from solver.rules.reservation import DEFAULT_SLA_WAITING_S

__all__ = ["ControllerConfig", "CycleReport", "Controller", "decide"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


PARTIAL_GANG_RELEASE_S = 60.0
"""How long a partly bound gang may hold its pods' room while it waits to be completed
(`controller.plan` rule 6), counted from when this process first saw it so — a new leader
gives an inherited half gang the whole time. 60 s as scheduler-plugins' coscheduling lets a
gang's bound pods wait at Permit (`permitWaitingTimeSeconds`): long enough for the room of
pods terminating, a retried bind or the next cycles' completion; short against the minutes
of GPU time a half gang would otherwise hold idle."""


@dataclass(frozen=True)
class ControllerConfig:
    scheduler_names: tuple[str, ...] = ("batchplace",)
    period_s: float = 1.0
    time_limit_s: float = 2.0
    engine: EngineName = "auto"
    dry_run: bool = False
    lease: LeaseConfig | None = None  # None: no election, this replica always acts (tests, demo)
    bind_workers: int = 16
    min_gap_s: float = 0.05
    standby_observe_s: float = 5.0
    identity: str = "batchplace"
    solver_memory_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES  # what one CP-SAT search may allocate
    partition_parts: int = 1  # solve each cycle in this many parts (`SolveConfig.partition_parts`)
    ray_address: str | None = None  # the parts of a partitioned cycle on this Ray cluster (`SolveConfig.ray_address`)
    typical_shapes: tuple[TypicalShape, ...] = ()  # fixed typical shapes; () = learn them (`ShapeHistory`)
    shape_half_life_s: float = DEFAULT_HALF_LIFE_S
    usage_policy: UsagePolicy = UsagePolicy()  # thresholds, weights, max age (`solver.rules.usage`)
    colocation_policy: ColocationPolicy = ColocationPolicy()  # offline pods' margin (`solver.rules.colocation`)
    usage_source: str = "none"  # `controller.usage_sources.SOURCES`: none, metrics-server, prometheus
    prometheus_url: str | None = None  # for usage_source "prometheus"
    usage_queries: tuple[tuple[str, str], ...] = ()  # (resource, PromQL) replacing the default queries
    usage_window_s: float = 300.0  # readings averaged over this
    usage_poll_s: float = 15.0  # the source read at most this often
    sla_waiting_s: float | None = DEFAULT_SLA_WAITING_S  # default `sla-waiting-time` (`solver.rules.reservation`); None: none
    caches_wait_s: float = 5.0  # how long a cycle waits for caches behind to relist before it is skipped
    partial_gang_release_s: float | None = PARTIAL_GANG_RELEASE_S  # a partly bound gang's time to complete; None: forever
    provisioning_class: str | None = None  # a ProvisioningRequest per gang waiting for capacity (`controller.provisioning`); None: off
    provisioning_backoff_s: float = 60.0  # first wait before a Failed request is tried again (doubling)

    def api_connections(self) -> int:
        """Connections to the API server the controller may use at once: a watch per watched
        kind, each bind worker, each gang's thread (its status), each Event sender, the Lease
        and the cycle's own reads. Make the client's pool this size (`KubeClient(pool_size=…)`):
        past it, urllib3 opens a connection for one request and throws it away — a TLS
        handshake per bind."""
        return len(WATCHED) + self.bind_workers + GANGS_AT_ONCE + EVENT_SENDERS + 2


@dataclass(frozen=True)
class CycleReport:
    number: int
    skipped: str = ""  # why nothing was decided ("" when a decision was made)
    pending_pods: int = 0
    decision: Decision | None = None
    plan: Plan | None = None
    act: ActReport | None = None
    seconds: float = 0.0
    solve_seconds: float = 0.0
    rejected: tuple[str, ...] = field(default=())


def usage_source(config: ControllerConfig, client: KubeClient) -> UsageSource | None:
    """The source `config.usage_source` names; None for "none" (annotations only)."""
    from controller.usage_sources import DEFAULT_QUERIES, SOURCES, MetricsApiSource, PrometheusSource

    if config.usage_source not in SOURCES:
        raise ValueError(f"usage source {config.usage_source!r}: one of {', '.join(SOURCES)}")
    if config.usage_source == "metrics-server":
        return MetricsApiSource(client)
    if config.usage_source == "prometheus":
        if not config.prometheus_url:
            raise ValueError("usage source prometheus needs a Prometheus URL")
        queries = {**DEFAULT_QUERIES, **dict(config.usage_queries)}
        return PrometheusSource(config.prometheus_url, queries=queries, step_s=config.usage_poll_s)
    return None


def decide(snapshot: Snapshot, config: SolveConfig) -> Decision:
    """The solver behind the one entry point: a placement the checker accepted, or an exception."""
    return place(snapshot, config)


class Controller:
    def __init__(
        self,
        client: KubeClient,
        config: ControllerConfig,
        *,
        clock: Clock | None = None,
        metrics: ControllerMetrics | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.clock = clock or SystemClock()
        self.metrics = metrics or ControllerMetrics()
        self.assumed = AssumedPods(clock=self.clock)
        self.reads = CycleReads()  # only run_cycle's thread reads through it
        self.caches = ClusterCaches(
            client,
            scheduler_names=config.scheduler_names,
            on_change=self._on_change,
            on_error=lambda kind, error: self.metrics.api_error(error.verb, error),
            on_relist=lambda kind: self.metrics.relists.labels(resource=str(kind)).inc(),
            clock=self.clock,
        )
        self.elector = (
            LeaderElector(
                client,
                config.lease,
                clock=self.clock,
                on_change=self._on_leadership,
                on_error=lambda error: self.metrics.api_error(error.verb, error),
            )
            if config.lease is not None
            else None
        )
        self.actuator = Actuator(
            client,
            assumed=self.assumed,
            metrics=self.metrics,
            leader=self.elector,
            clock=self.clock,
            identity=config.identity,
            dry_run=config.dry_run,
            workers=config.bind_workers,
        )
        self._solve_config = SolveConfig(
            engine=config.engine,
            time_limit_s=config.time_limit_s,
            memory_limit_bytes=config.solver_memory_bytes,
            typical_shapes=config.typical_shapes,
            partition_parts=config.partition_parts,
            ray_address=config.ray_address,
        )
        self.shapes = ShapeHistory(half_life_s=config.shape_half_life_s)
        self.provisioner = (
            Provisioner(client, config.provisioning_class, backoff_s=config.provisioning_backoff_s)
            if config.provisioning_class and not config.dry_run
            else None
        )
        self.usage = UsageTracker(
            usage_source(config, client), policy=config.usage_policy, window_s=config.usage_window_s, poll_s=config.usage_poll_s
        )
        self._wake = threading.Event()
        self._numbers = itertools.count(1)
        self._latest: Snapshot | None = None
        self._latest_at = 0.0
        self._partial_since: dict[PodGroupKey, float] = {}  # partly bound gang → when this process first saw it so
        self._released: dict[PodGroupKey, str] = {}  # gang released, not placed again yet → why (its status says so)
        self._heartbeat = self.clock.monotonic()
        self._threads: list[threading.Thread] = []
        self.last_report: CycleReport | None = None
        if self.elector is None:
            self.metrics.leader.set(1)
        pool = client.configuration.connection_pool_maxsize
        if pool < config.api_connections():
            log.warning(
                "the API client's pool holds %d connections, the controller may use %d at once: "
                "past the pool each request opens its own", pool, config.api_connections(),
                extra={"pool_size": pool, "api_connections": config.api_connections()},
            )

    # ---- lifecycle ----

    def start(self, stop: threading.Event) -> None:
        """Start caches, elector and the cycle loop in background threads."""
        self.caches.start(stop)
        if self.elector is not None:
            elector = threading.Thread(target=self.elector.run, args=(stop,), name="leader-election", daemon=True)
            elector.start()
            self._threads.append(elector)
        loop = threading.Thread(target=self.run_loop, args=(stop,), name="cycle-loop", daemon=True)
        loop.start()
        self._threads.append(loop)

    def run(self, stop: threading.Event) -> None:
        """Start everything and block until `stop` is set; then release the Lease and return."""
        self.start(stop)
        wait_in_main_thread(stop)
        self.join()

    def join(self, timeout_s: float = 10.0) -> None:
        """Wait for the loop and the elector (which releases the Lease), `timeout_s` in all,
        then cut the watches and give the informers 2 s: every thread is a daemon, so one
        stuck in a request ends with the process rather than holding its shutdown past a
        Deployment's grace period."""
        join_within(self._threads, timeout_s)
        self.client.close()
        self.caches.join(2.0)
        self.actuator.close()

    def wake(self) -> None:
        self._wake.set()

    # ---- what the HTTP side asks ----

    def current(self) -> Snapshot | None:
        """`LiveSnapshotSource`: the latest snapshot (None before the caches synced)."""
        return self._latest

    def healthy(self) -> bool:
        """The loop is alive: it ticked within the last few periods (or minute, whichever is longer)."""
        return self.clock.monotonic() - self._heartbeat < max(60.0, 10 * self.config.period_s)

    def synced(self) -> bool:
        return self.caches.synced()

    def ready(self) -> bool:
        return not self.not_ready_reason()

    def not_ready_reason(self) -> str:
        """Why this replica is not ready ("" when it is): caches not synced or behind, or a
        Lease it can never use."""
        if not self.synced():
            return "caches not synced yet"
        behind = self.caches.behind()
        if behind:
            return "caches behind: " + "; ".join(f"{kind} {why}" for kind, why in sorted(behind.items(), key=str))
        leader = self.leader_status()
        return (leader.reason or "the Lease cannot be used") if leader.blocked else ""

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def leader_status(self) -> LeaderStatus:
        """Leading, or why not (`/readyz`); always leading without election."""
        return self.elector.status() if self.elector is not None else LeaderStatus(leading=True)

    def solve_config(self) -> SolveConfig:
        """This cycle's solve settings: the typical shapes given, else those learnt so far."""
        if self._solve_config.typical_shapes:
            return self._solve_config
        return dataclasses.replace(self._solve_config, typical_shapes=self.shapes.typical())

    # ---- the loop ----

    def run_loop(self, stop: threading.Event) -> None:
        last_start = 0.0
        while not stop.is_set():
            self._heartbeat = self.clock.monotonic()
            woken = self._wake.wait(max(0.0, self.config.period_s - (self.clock.monotonic() - last_start)))
            if stop.is_set():
                return
            if woken:
                gap = self.config.min_gap_s - (self.clock.monotonic() - last_start)
                if gap > 0 and self.clock.sleep(gap, stop):
                    return
            self._wake.clear()
            last_start = self.clock.monotonic()
            if not self.caches.synced():
                self.metrics.cycles.labels(result="not_synced").inc()
                continue
            if not self.caches.wait_current(self.config.caches_wait_s, stop):
                if stop.is_set():
                    return
                self.metrics.cycles.labels(result="caches_behind").inc()
                log.warning("cycle skipped: %s", self.not_ready_reason())
                continue
            try:
                self.last_report = self.run_cycle()
            except Exception:
                self.metrics.cycles.labels(result="failed").inc()
                log.exception("cycle failed")

    def run_cycle(self) -> CycleReport:
        number = next(self._numbers)
        started = self.clock.monotonic()
        leading = self.is_leader()
        if not leading and started - self._latest_at < self.config.standby_observe_s:
            self.metrics.cycles.labels(result="not_leader").inc()
            return CycleReport(number=number, skipped="not leader")
        self.actuator.reread_unknown()
        self.assumed.prune(self.caches.pod)
        view = self.caches.view()
        view = dataclasses.replace(view, resource_claims=self.actuator.assumed_claims.overlay(view.resource_claims))
        try:
            observation = observe(
                view, scheduler_names=self.config.scheduler_names, assumed=self.assumed.state(), reads=self.reads
            )
        except ObserveError as error:
            self.metrics.cycles.labels(result="failed").inc()
            log.error("cycle %d: %s", number, error)
            return CycleReport(number=number, skipped=str(error))
        observation = self._with_usage(observation)
        self._latest, self._latest_at = observation.snapshot, started
        self._count(observation)
        self.shapes.observe(observation.snapshot, started)
        if not leading:
            self.metrics.cycles.labels(result="not_leader").inc()
            return CycleReport(number=number, skipped="not leader")
        pending = sum(1 for pod in observation.snapshot.pods if pod.phase == "pending")
        offline = self._offline_evictions(observation)
        self._report_repairs(number, observation)
        if not observation.snapshot.pod_groups:
            acted = None
            if offline or observation.repairs:  # nothing to place, but a node to repair or online usage rose under offline pods
                acted = self.actuator.act(offline_plan(observation, offline), now=self.clock.now(), transition_id=f"{self.config.identity}-{number}")
                self._count_repaired(observation, acted)
            self._provision(observation, None, view)
            self.metrics.cycles.labels(result="ok").inc()
            return CycleReport(number=number, seconds=self.clock.monotonic() - started, act=acted)
        solve_started = self.clock.monotonic()
        decision = decide(observation.snapshot, self.solve_config())
        solve_seconds = self.clock.monotonic() - solve_started
        self.metrics.solve_seconds.observe(solve_seconds)
        if decision.fallback is not None:
            self.metrics.engine_fallbacks.labels(cause=decision.fallback.cause).inc()
        release = self._partial_past_due(observation.snapshot, started)
        forget_gone(self.actuator.reported, pods=view.pods, pod_groups=observation.pod_groups.keys())
        the_plan = plan(
            observation, decision, reported=self.actuator.reported, offline=offline, release=release, released=self._released
        )
        self._remember_releases(observation.snapshot, decision, the_plan)
        act_started = self.clock.monotonic()
        acted = self.actuator.act(the_plan, now=self.clock.now(), transition_id=f"{self.config.identity}-{number}")
        act_seconds = self.clock.monotonic() - act_started
        self._count_repaired(observation, acted)
        self._provision(observation, decision, view)
        seconds = self.clock.monotonic() - started
        self._finish(number, observation, decision, acted, seconds, observe_seconds=solve_started - started, act_seconds=act_seconds)
        return CycleReport(
            number=number,
            pending_pods=pending,
            decision=decision,
            plan=the_plan,
            act=acted,
            seconds=seconds,
            solve_seconds=solve_seconds,
            rejected=tuple(r.message for r in observation.rejected),
        )

    def _finish(
        self,
        number: int,
        observation: Observation,
        decision: Decision,
        acted: ActReport,
        seconds: float,
        *,
        observe_seconds: float,
        act_seconds: float,
    ) -> None:
        self.metrics.cycle_seconds.observe(seconds)
        self.metrics.cycles.labels(result="ok").inc()
        pending_by_reason = Counter(condition_reason(o.reasons) for o in decision.podgroups if o.state == "pending")
        self.metrics.set_pending(dict(pending_by_reason))
        for rejected in observation.rejected:
            log.warning(
                "left out of cycle %d: %s",
                number,
                rejected.message,
                extra={"cycle": number, "left_out": rejected.what, "kind": rejected.kind, "field": rejected.field},
            )
        if acted.bound or acted.evicted or acted.bind_failures or acted.evictions_refused or acted.stopped:
            log.info(
                "cycle %d: bound %d, evicted %d, bind failures %d, evictions refused %d, %.3f s (solve %s %.3f s)%s",
                number,
                len(acted.bound),
                len(acted.evicted),
                len(acted.bind_failures),
                len(acted.evictions_refused),
                seconds,
                decision.engine,
                decision.solve_seconds,
                f"; {acted.stopped}" if acted.stopped else "",
                extra={
                    "cycle": number,
                    "bound": len(acted.bound),
                    "evicted": len(acted.evicted),
                    "bind_failures": len(acted.bind_failures),
                    "seconds": round(seconds, 4),
                    "observe_seconds": round(observe_seconds, 4),  # caches → Snapshot
                    "act_seconds": round(act_seconds, 4),  # binds, statuses, events sent
                    "engine": decision.engine,
                    "solve_seconds": round(decision.solve_seconds, 4),
                    "pending_pods": sum(1 for pod in observation.snapshot.pods if pod.phase == "pending"),
                    "finished_unix": round(time.time(), 3),
                    "dry_run": acted.dry_run,
                },
            )

    def _provision(self, observation: Observation, decision: Decision | None, view: ClusterView) -> None:
        """With --provisioning-class: ProvisioningRequests for the gangs waiting for capacity
        (`controller.provisioning`). Its failures are its own: the cycle's binds are done."""
        if self.provisioner is None:
            return
        try:
            answer = self.provisioner.sync(observation, decision, view.pods, now=self.clock.now(), monotonic_s=self.clock.monotonic())
        except Exception:
            log.exception("provisioning requests not reconciled")
            return
        if answer is not None:
            self.actuator.emit(answer.events, now=self.clock.now())

    def _with_usage(self, observation: Observation) -> Observation:
        """The observation with node usage and its policy, judged by this clock (`controller.usage`),
        and the reservation policy's clock and default waiting time."""
        failures = self.usage.failures
        now_s = self.clock.now().timestamp()
        snapshot = self.usage.apply(observation.snapshot, now_s)
        # Waiting times are counted by this clock, and PodGroups without one get the default.
        reservation = ReservationPolicy(sla_waiting_s=self.config.sla_waiting_s, judged_at_s=now_s)
        snapshot = snapshot.model_copy(
            update={"reservation_policy": reservation, "colocation_policy": self.config.colocation_policy}
        )
        if self.usage.failures > failures and self.usage.source is not None:
            self.metrics.usage_source_errors.labels(source=self.usage.source.name).inc()
        states = Counter(judgement.state for judgement in usage_rule.judgements(snapshot).values())
        for state in ("hot", "cool", "stale", "missing"):
            self.metrics.usage_nodes.labels(state=state).set(states.get(state, 0))
        self._colocation_metrics(snapshot)
        return dataclasses.replace(observation, snapshot=snapshot)

    def _offline_evictions(self, observation: Observation) -> list[OfflineEviction]:
        """Offline pods to evict from colocation nodes whose online usage rose (`solver.offline_evictions`)."""
        evictions = offline_evictions(observation.snapshot)
        for eviction in evictions:
            self.metrics.offline_evictions.labels(resource=next(iter(eviction.short_by))).inc(len(eviction.pods))
            log.info("colocation: %s", eviction.message, extra={"node": eviction.node, "offline_evictions": len(eviction.pods)})
        return evictions

    def _colocation_metrics(self, snapshot: Snapshot) -> None:
        """The rule's own numbers (`solver.rules.colocation.totals`), exported as they are."""
        totals = colocation.totals(snapshot)
        for state, count in totals.nodes.items():
            self.metrics.colocation_nodes.labels(state=state).set(count)
        for resource, room in totals.room.items():
            self.metrics.colocation_oversubscribed.labels(resource=resource).set(totals.oversubscribed[resource])
            self.metrics.colocation_room.labels(resource=resource).set(room)
            self.metrics.colocation_offline_requested.labels(resource=resource).set(totals.offline[resource])

    def _partial_past_due(self, snapshot: Snapshot, now: float) -> dict[PodGroupKey, float]:
        """Partly bound gangs (`solver.rules.gang.is_partly_bound`) waiting longer than
        `partial_gang_release_s` → seconds waited; the clock of the others is kept or started."""
        partial = {group.key for group in snapshot.pod_groups if is_partly_bound(snapshot, group)}
        self._partial_since = {key: self._partial_since.get(key, now) for key in partial}
        limit = self.config.partial_gang_release_s
        if limit is None:
            return {}
        return {key: now - since for key, since in self._partial_since.items() if now - since >= limit}

    def _remember_releases(self, snapshot: Snapshot, decision: Decision, the_plan: Plan) -> None:
        """Gangs released this cycle are remembered until placed again (or gone)."""
        placed = {outcome.name for outcome in decision.podgroups if outcome.state == "scheduled"}
        self._released = {
            key: why for key, why in self._released.items() if key in snapshot.pod_group_by_key and key not in placed
        }
        for gang in the_plan.gangs:
            if gang.evictions and all(evict.reason == "release" for evict in gang.evictions):
                self._released[gang.group] = gang.note

    def _report_repairs(self, number: int, observation: Observation) -> None:
        """The overcommitted nodes this cycle repairs: the metrics and one log line each."""
        by_node: dict[str, list[str]] = {}
        for repair in observation.repairs:
            by_node.setdefault(repair.overcommitted, []).append(repair.pod)
        self.metrics.overcommitted_nodes.set(len(by_node))
        for node, pods in sorted(by_node.items()):
            overflow = next(r.overflow for r in observation.repairs if r.overcommitted == node)
            log.warning(
                "cycle %d: node %s is overcommitted (%s): evicting %s",
                number, node, overflow, ", ".join(pods),
                extra={"cycle": number, "node": node, "repair_evictions": len(pods)},
            )

    def _count_repaired(self, observation: Observation, acted: ActReport) -> None:
        if observation.repairs:
            victims = {repair.pod for repair in observation.repairs}
            self.metrics.repairs.inc(sum(1 for pod in acted.evicted if pod in victims))

    def _count(self, observation: Observation) -> None:
        snapshot = observation.snapshot
        self.metrics.snapshot_objects.labels(kind="nodes").set(len(snapshot.nodes))
        self.metrics.snapshot_objects.labels(kind="pods").set(len(snapshot.pods))
        self.metrics.snapshot_objects.labels(kind="podgroups").set(len(snapshot.pod_groups))

    # ---- wake-ups ----

    def _on_change(self, kind: ResourceKind, event: str, old: JsonObject | None, new: JsonObject | None) -> None:
        if kind == PODS:
            if new is not None and old is None and not (new.get("spec") or {}).get("nodeName"):
                self.wake()  # a new pending pod of ours
            elif new is None and old is not None and (old.get("spec") or {}).get("nodeName"):
                self.wake()  # a bound pod left: its room is free
            elif old is not None and new is not None:
                if (old.get("status") or {}).get("phase") != "Running" and (new.get("status") or {}).get("phase") == "Running":
                    self.wake()  # a dependency may be met now
        elif kind in (NODES, VOLCANO_PODGROUPS, XK8S_PODGROUPS, RESOURCE_SLICES, RESOURCE_CLAIMS) and event == "ADDED":
            self.wake()
        elif kind == RESOURCE_CLAIMS and old is not None and (old.get("status") or {}).get("allocation") and not (
            (new or {}).get("status") or {}
        ).get("allocation"):
            self.wake()  # a claim deallocated or gone: its devices are free

    def _on_leadership(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        if leading:
            self.wake()


def wait_for(predicate: Any, timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll `predicate()` until true or `timeout_s` (a helper for demos and tests)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())

