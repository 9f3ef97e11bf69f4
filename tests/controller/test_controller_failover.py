"""Leader failover with two controller processes (`batchplace controller`, as a Deployment's
two replicas run it: batchplace's ServiceAccount, POD_NAMESPACE from the downward API): only
the Lease holder binds; when it is killed (SIGKILL, no clean release) the standby takes the
Lease and binds within the lease duration; a clean stop (SIGTERM) releases the Lease."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from tests.controller._cluster_queries import bound, lease_holder, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group

LEASE_DURATION_S = 4.0
POD_NAMESPACE = "batchplace-system"  # the Deployment's namespace, where deploy/rbac.yaml grants the Lease verbs


def _controller(kubeconfig: Path, identity: str, lease: str, log: Path) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-c", "from batchplace.cli import main; main()", "controller",
        "--kubeconfig", str(kubeconfig), "--identity", identity, "--lease-name", lease,
        "--lease-duration", str(LEASE_DURATION_S), "--renew-deadline", "3", "--retry-period", "0.5",
        "--period", "0.3", "--engine", "greedy", "--log-format", "text",
    ]
    environment = {**os.environ, "POD_NAMESPACE": POD_NAMESPACE}
    with log.open("wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment)


def _gang(admin: KubeClient, namespace: str, name: str) -> None:
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(name, namespace=namespace, min_member=2)))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"{name}-{i}", namespace=namespace, group=name)))


def test_the_standby_binds_within_the_lease_duration_after_the_leader_dies(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, api_client: k8s.ApiClient, controller_kubeconfig: Path, tmp_path: Path
) -> None:
    coordination = k8s.CoordinationV1Api(api_client)
    lease = f"failover-{namespace}"
    admin.create(NODES, None, for_api(node("n1", cpu=8)))
    first = _controller(controller_kubeconfig, "replica-a", lease, tmp_path / "a.log")
    second: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: lease_holder(coordination, lease, POD_NAMESPACE) == "replica-a", timeout_s=30, what="replica-a to lead")
        second = _controller(controller_kubeconfig, "replica-b", lease, tmp_path / "b.log")
        _gang(admin, namespace, "before")
        wait_until(lambda: len(bound(core, namespace)) == 2, timeout_s=30, what="the leader to bind")
        time.sleep(3.0)  # replica-b is up and synced by now (it imports and lists in ~2 s)
        assert lease_holder(coordination, lease, POD_NAMESPACE) == "replica-a"
        before = bound(core, namespace)

        first.kill()
        first.wait(10)
        killed_at = time.monotonic()
        _gang(admin, namespace, "after")
        wait_until(lambda: len(bound(core, namespace)) == 4, timeout_s=30, what="the standby to bind")
        took_s = time.monotonic() - killed_at
        assert took_s < LEASE_DURATION_S + 2.0, f"the standby took {took_s:.1f} s"
        assert lease_holder(coordination, lease, POD_NAMESPACE) == "replica-b"
        assert {p: n for p, n in bound(core, namespace).items() if p.startswith("before-")} == before

        second.terminate()
        assert second.wait(20) == 0
        assert lease_holder(coordination, lease, POD_NAMESPACE) == "", "a clean stop releases the Lease"
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)
        for name in ("a", "b"):
            log = tmp_path / f"{name}.log"
            if log.exists():
                sys.stderr.write(f"--- replica-{name} ---\n{log.read_text()[-3000:]}\n")
