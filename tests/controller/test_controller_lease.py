"""Where `batchplace controller` puts its Lease, and what it says when it cannot have one.

Out of the box: on a cluster nobody prepared for batchplace (no `kubectl apply -k deploy/`,
so no batchplace-system namespace and no RBAC), `batchplace controller --kubeconfig K` with
the admin kubeconfig a new user has, and no other flag, leads from a Lease in kube-system
and binds. When the Lease cannot be used — RBAC forbids it, or its namespace does not
exist — the controller says so once at error level, and `/readyz` answers 503 with
`leader: false` and the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.kinds import LEASES, NAMESPACES, PODS
from controller.kube import KubeClient
from controller.leader import SERVICE_ACCOUNT_NAMESPACE_FILE
from controller.testing.control_plane import ControlPlane, free_port
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects
from tests.controller._cluster_queries import http_get, stop_controllers, wait_until

CONTROLLER = [sys.executable, "-c", "from batchplace.cli import main; main()", "controller"]


def _environment() -> dict[str, str]:
    """This process's environment, out of cluster: no POD_NAMESPACE."""
    return {name: value for name, value in os.environ.items() if name != "POD_NAMESPACE"}


@pytest.fixture
def fresh_cluster() -> Iterator[ControlPlane]:
    """A control plane with Volcano's CRDs (the hello job is a vcjob) and nothing of deploy/."""
    with ControlPlane() as plane:
        yield plane


def test_with_only_a_kubeconfig_the_controller_leads_from_kube_system_and_binds(fresh_cluster: ControlPlane, tmp_path: Path) -> None:
    if SERVICE_ACCOUNT_NAMESPACE_FILE.exists():
        pytest.skip("inside a pod the default Lease namespace is the pod's, not kube-system")
    admin = KubeClient.from_kubeconfig(fresh_cluster.admin_kubeconfig)
    assert "batchplace-system" not in {n["metadata"]["name"] for n in admin.list(NAMESPACES).items}
    create_all(admin, seed_objects(EXAMPLES_DIR / "hello-volcano-job.yaml", namespace="default"))
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*CONTROLLER, "--kubeconfig", str(fresh_cluster.admin_kubeconfig)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_environment(),
        )

    def bound() -> dict[str, str]:
        pods = admin.list(PODS, namespace="default").items
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}

    try:
        wait_until(lambda: bound() or process.poll() is not None, timeout_s=60, what="the hello job's pod bound")
        assert process.poll() is None, log.read_text()
        assert list(bound()) == ["hello-volcano-job-nginx-0"]
        lease = admin.get(LEASES, "kube-system", "batchplace")
        assert lease["spec"]["holderIdentity"].endswith(f"_{process.pid}")
    finally:
        stop_controllers(process, logs=tmp_path)
        admin.close()


def _api_errors(metrics: bytes, *, verb: str, error: str) -> float:
    pattern = rf'batchplace_api_errors_total\{{error="{error}",verb="{verb}"\}} ([0-9.]+)'
    found = re.search(pattern, metrics.decode())
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize(
    "user, lease_namespace, verb, error, reason",
    [
        pytest.param(
            "controller", None, "get", "Forbidden",
            'Lease kube-system/batchplace cannot be read: Forbidden (HTTP 403) on get: leases.coordination.k8s.io '
            '"batchplace" is forbidden: User "system:serviceaccount:batchplace-system:batchplace" cannot get resource '
            '"leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
            id="out of cluster as batchplace's ServiceAccount: RBAC grants no Lease in kube-system",
        ),
        pytest.param(
            "admin", "missing", "create", "NotFound",
            'Lease {namespace}/batchplace cannot be written: NotFound (HTTP 404) on create: namespaces "{namespace}" not found',
            id="a Lease namespace that does not exist",
        ),
    ],
)
def test_a_lease_it_cannot_use_is_one_error_line_and_readyz_says_why(
    control_plane: ControlPlane, controller_kubeconfig: Path, tmp_path: Path,
    user: str, lease_namespace: str | None, verb: str, error: str, reason: str,
) -> None:
    kubeconfig = controller_kubeconfig if user == "controller" else control_plane.admin_kubeconfig
    args = [*CONTROLLER, "--kubeconfig", str(kubeconfig), "--retry-period", "0.2", "--engine", "greedy"]
    if lease_namespace is not None:
        lease_namespace = f"{lease_namespace}-{uuid.uuid4().hex[:6]}"
        args += ["--lease-namespace", lease_namespace]
        reason = reason.format(namespace=lease_namespace)
    port = free_port()
    args += ["--port", str(port), "--host", "127.0.0.1"]
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_environment())
    try:
        def readyz() -> dict[str, object] | None:
            if process.poll() is not None:
                raise AssertionError(log.read_text())
            status, body = http_get(f"{base}/readyz")
            answer = json.loads(body) if status else None
            return answer if answer and answer["synced"] and answer["leader_reason"] and status == 503 else None

        answer = wait_until(readyz, timeout_s=30, what="/readyz 503 with a leader reason")
        assert {key: answer[key] for key in ("status", "leader", "leader_reason")} == {
            "status": "unavailable", "leader": False, "leader_reason": reason,
        }
        wait_until(lambda: _api_errors(http_get(f"{base}/metrics")[1], verb=verb, error=error) >= 5, what="five failed tries")
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        errors = [line for line in lines if line["level"] == "error"]
        assert len(errors) == 1, errors
        assert errors[0]["message"] == f"{reason}; this replica will not lead until that is fixed"
        assert (errors[0]["lease_namespace"], errors[0]["lease_name"], errors[0]["api_reason"]) == (
            lease_namespace or "kube-system", "batchplace", error,
        )
    finally:
        stop_controllers(process, logs=tmp_path)
