"""Prometheus metrics of the controller, on a registry of its own (two controllers in one
test process do not collide). `batchplace controller --port` serves them at `/metrics`.

    batchplace_cycle_duration_seconds            histogram  observe → act, per cycle
    batchplace_solve_duration_seconds            histogram  the solver's share of it
    batchplace_cycles_total{result}              counter    ok, not_leader, not_synced, caches_behind, failed
    batchplace_pods_bound_total                  counter    binds the API server accepted
    batchplace_bind_failures_total{reason}       counter    conflict, not_found, node_gone, node_cordoned,
                                                            unknown (outcome unknown, room held), error
    batchplace_evictions_total{result}           counter    evicted, refused (PDB), failed
    batchplace_pending_podgroups{reason}         gauge      pending PodGroups by condition reason
    batchplace_engine_fallbacks_total{cause}     counter    cycles answered by the fallback engine, by cause
    batchplace_api_errors_total{verb,error}      counter    every ApiError, by call and class
    batchplace_watch_relists_total{resource}     counter    informer relists (start, 410 Gone, errors)
    batchplace_leader                            gauge      1 while this replica holds the Lease
    batchplace_snapshot_objects{kind}            gauge      nodes, pods, podgroups in the last snapshot
    batchplace_usage_nodes{state}                gauge      nodes by usage judgement: hot, cool, stale, missing
    batchplace_usage_source_errors_total{source} counter    usage source polls that failed
    batchplace_colocation_nodes{state}           gauge      colocation nodes: fresh (oversubscribed), stale, missing,
                                                            unmeasured (offline pods' usage not measured apart)
    batchplace_colocation_oversubscribed{resource}  gauge   offline pods' room over what online pods requested,
                                                            summed over fresh colocation nodes (milli-CPU, bytes;
                                                            gpu: milli-GPU over lent devices)
    batchplace_colocation_offline_room{resource} gauge      kubernetes.io/batch-* offered to offline pods, all
                                                            colocation nodes (milli-CPU, bytes; gpu: lent room of
                                                            shared devices, milli-GPU)
    batchplace_colocation_offline_requested{resource} gauge what running offline pods there ask of it
    batchplace_offline_evictions_total{resource} counter    offline pods evicted because online usage rose, by
                                                            the resource that ran short (first one)
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["ControllerMetrics", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram("batchplace_cycle_duration_seconds", "One cycle, observe to act.", buckets=_SECONDS, registry=r)
        self.solve_seconds = Histogram("batchplace_solve_duration_seconds", "The solve within a cycle.", buckets=_SECONDS, registry=r)
        self.cycles = Counter("batchplace_cycles", "Cycles by result.", ["result"], registry=r)
        self.pods_bound = Counter("batchplace_pods_bound", "Pods bound (the API server accepted the binding).", registry=r)
        self.bind_failures = Counter("batchplace_bind_failures", "Binds that failed, by reason.", ["reason"], registry=r)
        self.claim_writes = Counter(
            "batchplace_claim_writes", "DRA ResourceClaim status writes before binds, by result (written, refused, released).",
            ["result"], registry=r,
        )
        self.evictions = Counter("batchplace_evictions", "Evictions by result.", ["result"], registry=r)
        self.writes_dropped = Counter(
            "batchplace_writes_dropped", "Planned binds, evictions and statuses not sent, by reason (lease: it may be lost).", ["reason"], registry=r
        )
        self.pending_podgroups = Gauge("batchplace_pending_podgroups", "Pending PodGroups by reason.", ["reason"], registry=r)
        self.engine_fallbacks = Counter(
            "batchplace_engine_fallbacks", "Cycles the fallback engine answered, by cause.", ["cause"], registry=r
        )
        self.api_errors = Counter("batchplace_api_errors", "API errors by call and class.", ["verb", "error"], registry=r)
        self.relists = Counter("batchplace_watch_relists", "Informer relists by resource.", ["resource"], registry=r)
        self.leader = Gauge("batchplace_leader", "1 while this replica holds the Lease.", registry=r)
        self.snapshot_objects = Gauge("batchplace_snapshot_objects", "Objects in the last snapshot.", ["kind"], registry=r)
        self.usage_nodes = Gauge(
            "batchplace_usage_nodes",
            "Nodes of the last snapshot by usage judgement: hot (takes no new pod), cool, stale, missing.",
            ["state"],
            registry=r,
        )
        self.usage_source_errors = Counter(
            "batchplace_usage_source_errors", "Usage source polls that failed, by source.", ["source"], registry=r
        )

        self.colocation_nodes = Gauge(
            "batchplace_colocation_nodes",
            "Colocation nodes of the last snapshot: fresh (offline pods get oversubscribed room), stale, missing, unmeasured.",
            ["state"],
            registry=r,
        )
        self.colocation_oversubscribed = Gauge(
            "batchplace_colocation_oversubscribed",
            "Room offered to offline pods beyond what online pods have not requested, summed over fresh colocation nodes "
            "(cpu in milli-CPU, memory in bytes).",
            ["resource"],
            registry=r,
        )
        self.colocation_room = Gauge(
            "batchplace_colocation_offline_room",
            "kubernetes.io/batch-cpu / batch-memory offered to offline pods over all colocation nodes (milli-CPU, bytes); "
            "gpu: the lent room of shared GPU devices (milli-GPU).",
            ["resource"],
            registry=r,
        )
        self.colocation_offline_requested = Gauge(
            "batchplace_colocation_offline_requested",
            "What running offline pods on colocation nodes request of that room (milli-CPU, bytes).",
            ["resource"],
            registry=r,
        )
        self.overcommitted_nodes = Gauge(
            "batchplace_overcommitted_nodes",
            "Nodes found over their allocatable or with a GPU held twice in the last cycle (controller.repair).",
            registry=r,
        )
        self.repairs = Counter(
            "batchplace_repairs", "Pods evicted to repair an overcommitted node (controller.repair).", registry=r
        )
        self.offline_evictions = Counter(
            "batchplace_offline_evictions",
            "Offline pods evicted because online usage rose on their colocation node, by the resource short first.",
            ["resource"],
            registry=r,
        )

    def api_error(self, verb: str, error: Exception) -> None:
        self.api_errors.labels(verb=verb or "unknown", error=type(error).__name__).inc()

    def set_pending(self, counts: dict[str, int]) -> None:
        self.pending_podgroups.clear()
        for reason, count in counts.items():
            self.pending_podgroups.labels(reason=reason).set(count)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
