"""`batchplace controller`: run the in-cluster controller (controller/), and its HTTP side.

This module composes the layers, so `controller` and `service` never import each other:
with `--port`, one uvicorn server answers `/metrics` (the controller's metrics, then the
service's), `/healthz` (the cycle loop is alive) and `/readyz` (the caches have synced, none is
behind — re-listing after a watch error or an outage — and the Lease is usable;
`not_ready_reason` says which is not; `leader` and `leader_reason` say whether this replica leads and, when
not, why: "Lease kube-system/batchplace is held by …", or the API error that keeps it from
the Lease) itself, and hands every other path to the HTTP service's app
(`service.app.create_app`) built with the controller as its `live_snapshot` — so
`POST /v1/what-if` without a posted snapshot answers on the controller's live one.

Logs are structured: JSON lines on stderr (`--log-format json`, the default) with the
fields a cycle logs (`cycle`, `bound`, `evicted`, `seconds`, …), or plain text.
SIGTERM and SIGINT stop the controller cleanly: the Lease is released, so a standby takes
over at its next try instead of waiting for the Lease to expire; a shutdown still running
15 s later writes every thread's stack to stderr (`batchplace.shutdown`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from batchplace.options import (
    ColocationMarginOption,
    ColocationOption,
    PartitionPartsOption,
    RayAddressOption,
    SolverMemoryOption,
    TypicalShapesOption,
    UsageMaxAgeOption,
    UsageThresholdOption,
    UsageWeightOption,
    colocation_policy_of,
    ray_address_of,
    scheduler_names_of,
    solver_memory_bytes,
    typical_shapes_of_file,
    usage_policy_of,
)
from batchplace.shutdown import stop_on_signals
from models.duration import DurationError, parse_go_duration
from solver.place import ENGINES
from solver.rules.reservation import DEFAULT_SLA_WAITING_S

if TYPE_CHECKING:
    from controller.loop import Controller

__all__ = ["controller", "build_http_app", "JsonLogFormatter"]

EXIT_USAGE = 2
USAGE_SOURCES = ("none", "metrics-server", "prometheus")  # `controller.usage_sources.SOURCES`, without importing it
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")  # a class name, as the CRD checks it
_STANDARD_LOG_FIELDS = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and every `extra` field."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD_LOG_FIELDS})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def _configure_logging(log_format: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter() if log_format == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(logging.ERROR)


def controller(
    kubeconfig: Annotated[
        Optional[Path], typer.Option("--kubeconfig", help="Kubeconfig file. Default: the in-cluster service account.")
    ] = None,
    scheduler_name: Annotated[
        Optional[list[str]],
        typer.Option("--scheduler-name", help="Place pending pods with this spec.schedulerName (repeatable). Default: batchplace."),
    ] = None,
    period: Annotated[float, typer.Option("--period", min=0.05, max=3600, help="Seconds between cycles (new pending pods wake it sooner).")] = 1.0,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.01, max=3600, help="Solver time budget per cycle, seconds.")] = 2.0,
    engine: Annotated[str, typer.Option(help=f"Placement engine: {', '.join(ENGINES)}.")] = "auto",
    solver_memory: SolverMemoryOption = None,
    partition_parts: PartitionPartsOption = 1,
    ray_address: RayAddressOption = None,
    typical_shapes: TypicalShapesOption = None,
    shape_half_life: Annotated[
        float,
        typer.Option(
            "--shape-half-life",
            min=1,
            help="Seconds after which a pod shape seen pending weighs half in the learnt typical shapes "
            "(without --typical-shapes the controller keeps room for the shapes it has seen).",
        ),
    ] = 3600.0,
    usage_source: Annotated[
        str,
        typer.Option(
            "--usage-source",
            help="Where node usage comes from: none (the batchplace.io/usage annotation only), metrics-server "
            "(metrics.k8s.io NodeMetrics: cpu, memory) or prometheus (--prometheus-url: cpu, memory, gpu).",
        ),
    ] = "none",
    prometheus_url: Annotated[
        Optional[str], typer.Option("--prometheus-url", help="Prometheus server for --usage-source prometheus.")
    ] = None,
    usage_query: Annotated[
        Optional[list[str]],
        typer.Option(
            "--usage-query",
            help="RESOURCE=PROMQL replacing the default query for cpu, memory or gpu, or adding online-cpu, "
            "online-memory or online-gpu (colocation): percents, one series per node with label `node`; online-gpu "
            "one per device, its index in label `gpu` (repeatable).",
        ),
    ] = None,
    usage_window: Annotated[
        float, typer.Option("--usage-window", min=1, help="Seconds node usage is averaged over.")
    ] = 300.0,
    usage_poll: Annotated[
        float, typer.Option("--usage-poll", min=1, help="Seconds between reads of the usage source.")
    ] = 15.0,
    sla_waiting_time: Annotated[
        Optional[str],
        typer.Option(
            "--sla-waiting-time",
            help="Default waiting time (a Go duration, e.g. 30m) after which a pending PodGroup gets nodes held "
            "for it, for PodGroups whose job, PodGroup or Queue sets no sla-waiting-time annotation "
            "(as Volcano's sla plugin argument). A PodGroup with a waiting time evicts nobody: it waits, then "
            "holds room. `none`: only annotated PodGroups are guarded, and the others preempt and reclaim "
            "as Volcano's preempt and reclaim actions.",
        ),
    ] = f"{DEFAULT_SLA_WAITING_S / 60:g}m",
    partial_gang_release: Annotated[
        Optional[float],
        typer.Option(
            "--partial-gang-release",
            min=1,
            help="Seconds a partly bound gang (some pods bound, fewer than minMember) may hold its bound pods "
            "while it waits to be completed; then they are evicted and it is placed again whole. Default 60.",
        ),
    ] = None,
    provisioning_class: Annotated[
        Optional[str],
        typer.Option(
            "--provisioning-class",
            help="Ask Cluster Autoscaler for the nodes of each gang that waits for capacity alone: a ProvisioningRequest "
            "of this class (best-effort-atomic-scale-up.autoscaling.x-k8s.io, check-capacity.autoscaling.x-k8s.io, or a "
            "cloud's own), with its PodTemplates, and its pods annotated as consuming it (docs/provisioning.md). Off by default.",
        ),
    ] = None,
    provisioning_backoff: Annotated[
        float,
        typer.Option("--provisioning-backoff", min=1, help="Seconds before a Failed ProvisioningRequest is asked again, "
                     "doubling with each attempt (at most 30 min)."),
    ] = 60.0,
    usage_threshold: UsageThresholdOption = None,
    usage_weight: UsageWeightOption = None,
    usage_max_age: UsageMaxAgeOption = None,
    colocation_margin: ColocationMarginOption = None,
    colocation: ColocationOption = True,
    port: Annotated[
        Optional[int], typer.Option("--port", min=0, max=65535, help="Serve /metrics, /healthz, /readyz and the HTTP API here.")
    ] = None,
    host: Annotated[str, typer.Option(help="Address the HTTP side listens on.")] = "0.0.0.0",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Decide and log every cycle, but bind, evict and write nothing.")] = False,
    leader_elect: Annotated[bool, typer.Option("--leader-elect/--no-leader-elect", help="Elect a leader through a Lease (run 2+ replicas).")] = True,
    lease_namespace: Annotated[
        Optional[str],
        typer.Option(
            "--lease-namespace",
            help="Namespace of the Lease. Default: the pod's namespace in cluster ($POD_NAMESPACE, else the service "
            "account's), kube-system out of cluster.",
        ),
    ] = None,
    lease_name: Annotated[
        Optional[str],
        typer.Option(
            "--lease-name",
            help="Name of the Lease. Default: batchplace, or batchplace-manager for the manager controller, so a "
            "cluster can run both.",
        ),
    ] = None,
    lease_duration: Annotated[float, typer.Option("--lease-duration", min=1, help="Seconds a standby waits on a silent leader.")] = 15.0,
    renew_deadline: Annotated[float, typer.Option("--renew-deadline", min=0.5, help="Seconds the leader may fail to renew before it stops acting.")] = 10.0,
    retry_period: Annotated[float, typer.Option("--retry-period", min=0.1, help="Seconds between Lease tries.")] = 2.0,
    identity: Annotated[Optional[str], typer.Option("--identity", help="This replica's name in the Lease. Default: hostname_pid.")] = None,
    log_format: Annotated[str, typer.Option("--log-format", help="json or text.")] = "json",
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning, error.")] = "info",
    manager_kubeconfig: Annotated[
        Optional[Path],
        typer.Option(
            "--manager-kubeconfig",
            help="Run as the multi-cluster manager: place the vcjobs submitted to this cluster over the --cluster "
            "workers (docs/multi-cluster.md).",
        ),
    ] = None,
    cluster: Annotated[
        Optional[list[str]],
        typer.Option("--cluster", help="With --manager-kubeconfig: NAME=KUBECONFIG of a worker cluster (repeatable)."),
    ] = None,
    worker_lost: Annotated[
        float,
        typer.Option("--worker-lost", min=1, help="With --manager-kubeconfig: seconds a worker may not answer before "
                     "its jobs are placed elsewhere."),
    ] = 300.0,
) -> None:
    """Run the controller: place pods whose schedulerName is batchplace, each cycle as one optimization problem."""
    if engine not in ENGINES:
        typer.echo(f"error: --engine: unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", err=True)
        raise typer.Exit(EXIT_USAGE)
    if log_format not in ("json", "text"):
        typer.echo(f"error: --log-format: must be json or text, got {log_format!r}", err=True)
        raise typer.Exit(EXIT_USAGE)
    shapes = typical_shapes_of_file(typical_shapes)
    scheduler_names = scheduler_names_of(scheduler_name, default=("batchplace",))
    try:
        sla_waiting_s = None if sla_waiting_time in (None, "none") else parse_go_duration(sla_waiting_time)
    except DurationError as error:
        typer.echo(f"error: --sla-waiting-time: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if provisioning_class is not None and not _DNS_SUBDOMAIN.fullmatch(provisioning_class):
        typer.echo(f"error: --provisioning-class: {provisioning_class!r} is not a DNS subdomain name "
                   "(lower-case letters, digits, '-' and '.')", err=True)
        raise typer.Exit(EXIT_USAGE)
    usage_policy = usage_policy_of(usage_threshold, usage_weight, usage_max_age)
    queries = _usage_queries(usage_query)
    if usage_source not in USAGE_SOURCES:
        typer.echo(f"error: --usage-source: one of {', '.join(USAGE_SOURCES)}, got {usage_source!r}", err=True)
        raise typer.Exit(EXIT_USAGE)
    if usage_source == "prometheus" and not prometheus_url:
        typer.echo("error: --usage-source prometheus needs --prometheus-url", err=True)
        raise typer.Exit(EXIT_USAGE)
    from controller.heap import tune_collector
    from controller.kube import KubeClient  # here, so other commands start without the Kubernetes client
    from controller.leader import LeaseConfig, default_lease_namespace, read_service_account_namespace
    from controller.loop import Controller, ControllerConfig

    _configure_logging(log_format, log_level)
    log = logging.getLogger("batchplace.controller")
    name = identity or f"{socket.gethostname()}_{os.getpid()}"
    try:
        lease = (
            LeaseConfig(
                identity=name,
                namespace=lease_namespace
                or default_lease_namespace(
                    pod_namespace=os.environ.get("POD_NAMESPACE"), service_account_namespace=read_service_account_namespace()
                ),
                name=lease_name or ("batchplace-manager" if manager_kubeconfig is not None else "batchplace"),
                lease_duration_s=lease_duration,
                renew_deadline_s=renew_deadline,
                retry_period_s=retry_period,
            )
            if leader_elect
            else None
        )
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if manager_kubeconfig is not None or cluster:
        if manager_kubeconfig is None:
            typer.echo("error: --cluster needs --manager-kubeconfig (the manager controller)", err=True)
            raise typer.Exit(EXIT_USAGE)
        from batchplace.manager_command import run_manager

        run_manager(
            manager_kubeconfig=manager_kubeconfig, clusters=cluster or [],
            scheduler_names=scheduler_names, period_s=period,
            time_limit_s=time_limit, engine=engine, worker_lost_s=worker_lost, lease=lease, identity=name,
        )
        return
    config = ControllerConfig(
        scheduler_names=scheduler_names,
        period_s=period,
        time_limit_s=time_limit,
        engine=engine,  # type: ignore[arg-type]
        dry_run=dry_run,
        lease=lease,
        identity=name,
        solver_memory_bytes=solver_memory_bytes(solver_memory),
        partition_parts=partition_parts,
        ray_address=ray_address_of(ray_address),
        typical_shapes=shapes,
        shape_half_life_s=shape_half_life,
        usage_policy=usage_policy,
        colocation_policy=colocation_policy_of(colocation_margin, colocation),
        usage_source=usage_source,
        prometheus_url=prometheus_url,
        usage_queries=queries,
        usage_window_s=usage_window,
        usage_poll_s=usage_poll,
        sla_waiting_s=sla_waiting_s,
        **({"partial_gang_release_s": partial_gang_release} if partial_gang_release is not None else {}),
        provisioning_class=provisioning_class,
        provisioning_backoff_s=provisioning_backoff,
    )
    try:
        client = KubeClient.from_kubeconfig(kubeconfig, pool_size=config.api_connections())
    except Exception as error:  # the client library raises several kinds for a bad config
        typer.echo(f"error: cannot load {'kubeconfig ' + str(kubeconfig) if kubeconfig else 'the in-cluster config'}: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    ctrl = Controller(client, config)
    tune_collector()  # a long-running process over a cluster's worth of objects (controller.heap)
    stop = threading.Event()
    stop_on_signals(stop)
    server = _start_http(ctrl, host, port) if port is not None else None
    log.info(
        "controller %s starting against %s: schedulers %s, period %.2f s, time limit %.2f s%s%s",
        name, client.host, ", ".join(config.scheduler_names), period, time_limit,
        ", dry run" if dry_run else "", f", leader election through Lease {lease.namespace}/{lease.name}" if lease else "",
    )
    try:
        ctrl.run(stop)
    finally:
        if server is not None:
            server.should_exit = True
        log.info("controller %s stopped", name)


def _usage_queries(texts: list[str] | None) -> tuple[tuple[str, str], ...]:
    from controller.usage_sources import QUERY_RESOURCES

    queries = []
    for text in texts or ():
        resource, equals, query = text.partition("=")
        if not equals or resource.strip() not in QUERY_RESOURCES or not query.strip():
            raise typer.BadParameter(
                f"expected RESOURCE=PROMQL, RESOURCE one of {', '.join(QUERY_RESOURCES)}, got {text!r}", param_hint="--usage-query"
            )
        queries.append((resource.strip(), query.strip()))
    return tuple(queries)


# ---- the HTTP side ----


def build_http_app(ctrl: "Controller") -> Any:
    """An ASGI app: our three paths, then the HTTP service's app (when it can be built)."""
    service_app = _service_app(ctrl)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in ("/metrics", "/healthz", "/readyz"):
            status, content_type, body = _answer(scope["path"], ctrl, service_app)
            await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type.encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if service_app is not None:
            await service_app(scope, receive, send)
            return
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"not found\n"})

    return app


def _answer(path: str, ctrl: "Controller", service_app: Any) -> tuple[int, str, bytes]:
    if path == "/metrics":
        body = ctrl.metrics.exposition()
        service_metrics = getattr(getattr(service_app, "state", None), "metrics", None)
        if service_metrics is not None and hasattr(service_metrics, "exposition"):
            body += service_metrics.exposition()
        return 200, "text/plain; version=0.0.4; charset=utf-8", body
    ok = ctrl.healthy() if path == "/healthz" else ctrl.ready()
    leader = ctrl.leader_status()
    detail = {
        "status": "ok" if ok else "unavailable",
        "leader": leader.leading,
        "leader_reason": leader.reason,
        "synced": ctrl.synced(),
        "not_ready_reason": ctrl.not_ready_reason(),
        "snapshot": ctrl.current() is not None,
    }
    return (200 if ok else 503), "application/json", json.dumps(detail).encode()


def _service_app(ctrl: "Controller") -> Any:
    try:
        from service.app import create_app
        from service.settings import ServiceSettings
    except ImportError:
        return None
    try:
        return create_app(ServiceSettings.from_env(), live_snapshot=ctrl)
    except Exception as error:  # the service is an extra here; the controller runs without it
        logging.getLogger("batchplace.controller").warning("HTTP API not served: %s", error)
        return None


def _start_http(ctrl: "Controller", host: str, port: int) -> Any:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(build_http_app(ctrl), host=host, port=port, log_level="warning", lifespan="on"))
    threading.Thread(target=server.run, name="http", daemon=True).start()
    return server
