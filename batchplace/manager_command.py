"""`batchplace controller --manager-kubeconfig M --cluster NAME=KUBECONFIG …`: the manager controller.

Composes `controller.fleet_manager`: the manager cluster's client (where vcjobs are
submitted, with the Queues and PriorityClasses that hold for the whole fleet and the Lease),
and one client per worker cluster. Each worker runs its own `batchplace controller`, which
binds what the manager dispatches there (docs/multi-cluster.md).

Errors: a malformed `--cluster`, a cluster named twice or not a DNS label, an unreadable
kubeconfig: one line on stderr, exit 2.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import typer

from batchplace.shutdown import stop_on_signals
from controller.timing import wait_in_main_thread
from models.clusters import ClusterName, check_cluster_name
from models.errors import SnapshotError

__all__ = ["run_manager", "parse_worker_options"]

EXIT_USAGE = 2


def parse_worker_options(values: list[str]) -> dict[str, Path]:
    """`["gpu-west=w.kubeconfig"]` → `{"gpu-west": Path("w.kubeconfig")}`; ValueError naming the problem."""
    workers: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--cluster: expected NAME=KUBECONFIG, got {value!r}")
        if name in workers:
            raise ValueError(f"--cluster: cluster {name!r} given twice")
        try:
            check_cluster_name(name)
        except SnapshotError as error:
            raise ValueError(f"--cluster: {error.message}") from None
        workers[name] = Path(path)
    if not workers:
        raise ValueError("--manager-kubeconfig needs at least one --cluster NAME=KUBECONFIG (a worker)")
    return workers


def run_manager(
    *,
    manager_kubeconfig: Path,
    clusters: list[str],
    scheduler_names: tuple[str, ...],
    period_s: float,
    time_limit_s: float,
    engine: str,
    worker_lost_s: float,
    lease: object,
    identity: str,
) -> None:
    from controller.fleet_manager import FleetManager, ManagerConfig, WorkerCluster
    from controller.kube import KubeClient

    log = logging.getLogger("batchplace.manager")
    try:
        workers = parse_worker_options(clusters)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        manager = KubeClient.from_kubeconfig(manager_kubeconfig)
        worker_clients = [WorkerCluster(name=ClusterName(n), client=KubeClient.from_kubeconfig(p)) for n, p in workers.items()]
    except Exception as error:  # the client library raises several kinds for a bad config
        typer.echo(f"error: cannot load a kubeconfig: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    config = ManagerConfig(
        scheduler_names=scheduler_names,
        period_s=period_s,
        time_limit_s=time_limit_s,
        engine=engine,  # type: ignore[arg-type]
        worker_lost_s=worker_lost_s,
        lease=lease,  # type: ignore[arg-type]
        identity=identity,
    )
    fleet = FleetManager(manager, worker_clients, config)
    stop = threading.Event()
    stop_on_signals(stop)
    log.info("manager %s starting against %s: workers %s", identity, manager.host, ", ".join(workers))
    fleet.start(stop)
    wait_in_main_thread(stop)
    fleet.join()
    log.info("manager %s stopped", identity)
