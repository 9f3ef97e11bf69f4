"""Prometheus metrics of one app: a registry per `create_app`, served at `GET /metrics`.

    batchplace_http_requests_total{route,method,code}        every answered request
    batchplace_http_request_duration_seconds{route}          latency, receive to last byte
    batchplace_solve_duration_seconds{engine,status}         the engine's own solve time
    batchplace_engine_fallbacks_total{cause}                 answered with greedy's placement, by cause
    batchplace_rejected_requests_total{reason}               401/413/415/422/429/503, and bugs (500)
    batchplace_solver_slots_in_use / _queued                 the bounded pool right now

`route` is the route's path template (`/v1/placements`), or `unmatched`, so a scanner
probing random paths cannot grow the label set. A registry per app (not the global one)
keeps apps built by tests apart. With `batchplace serve --workers N` every worker process
has its own registry and a scrape reaches one of them; run one worker per replica (or sum
over replicas) when exact totals matter.

Not promised: metric names beyond this list, nor histogram bucket boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

disable_created_metrics()  # no `_created` series: they double every counter for no dashboard

__all__ = ["ServiceMetrics", "CONTENT_TYPE_LATEST"]

_LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(frozen=True)
class ServiceMetrics:
    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    solve_time: Histogram
    fallbacks: Counter
    rejected: Counter
    slots_in_use: Gauge
    queued: Gauge

    @classmethod
    def create(cls) -> "ServiceMetrics":
        registry = CollectorRegistry(auto_describe=True)
        return cls(
            registry=registry,
            requests=Counter(
                "batchplace_http_requests", "HTTP requests answered", ("route", "method", "code"), registry=registry
            ),
            latency=Histogram(
                "batchplace_http_request_duration_seconds", "HTTP request latency", ("route",),
                buckets=_LATENCY_BUCKETS_S, registry=registry,
            ),
            solve_time=Histogram(
                "batchplace_solve_duration_seconds", "Solve time reported by the engine", ("engine", "status"),
                buckets=_LATENCY_BUCKETS_S, registry=registry,
            ),
            fallbacks=Counter(
                "batchplace_engine_fallbacks", "Solves answered by the fallback engine, by cause", ("cause",),
                registry=registry,
            ),
            rejected=Counter(
                "batchplace_rejected_requests", "Requests refused, by reason", ("reason",), registry=registry
            ),
            slots_in_use=Gauge("batchplace_solver_slots_in_use", "Solves running now", registry=registry),
            queued=Gauge("batchplace_solver_queued", "Requests waiting for a solver slot", registry=registry),
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
