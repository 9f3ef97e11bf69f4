"""The manager's shutdown waits its grace once, however many of its threads are stuck in a
request: joined one after the other with the grace each, an election and a loop both
waiting on an API server that stopped answering held SIGTERM for twice the grace — past a
Deployment's grace period, and past the 20 s the command tests allow a replica to stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from controller.fleet_manager import FleetManager, ManagerConfig, WorkerCluster
from controller.kube import KubeClient
from controller.leader import LeaseConfig
from controller.testing.control_plane import ControlPlane
from models.clusters import ClusterName
from tests.controller._cluster_queries import wait_until
from tests.controller.fault_proxy import FaultProxy

JOIN_S = 1.0


def test_stop_with_the_election_and_the_loop_stuck_in_requests_returns_within_one_grace(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    proxy = FaultProxy(control_plane.url, ca_file=str(control_plane.ca_file)).start()
    stop = threading.Event()
    try:
        kubeconfig = control_plane.write_kubeconfig(tmp_path / "via-proxy", token=control_plane.admin_token, server=proxy.url)
        client = KubeClient.from_kubeconfig(kubeconfig)
        lease = LeaseConfig(identity="manager-0", namespace=namespace, name="shutdown-test", retry_period_s=0.1,
                            renew_deadline_s=20.0, lease_duration_s=30.0)
        fleet = FleetManager(client, [WorkerCluster(name=ClusterName("west"), client=client)],
                             ManagerConfig(period_s=0.05, lease=lease))
        fleet.start(stop)
        wait_until(fleet.is_leader, timeout_s=30, what="the manager leading")
        proxy.faults.delay_s = 60.0  # the API server stops answering: every thread waits in its next request
        wait_until(lambda: proxy.counts.delayed >= 2, timeout_s=10, what="the election and the loop both waiting")
        stop.set()
        started = time.monotonic()
        fleet.join(JOIN_S)
        assert time.monotonic() - started < 1.5 * JOIN_S
    finally:
        stop.set()
        proxy.stop()
