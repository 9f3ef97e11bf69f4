"""`batchplace controller` as operators run it: least-privilege RBAC, `--dry-run`, and the
HTTP side (`/healthz`, `/readyz`, `/metrics`, and `/v1/what-if` on the live snapshot)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from controller.kinds import VERBS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.control_plane import REPO_ROOT, ControlPlane, free_port
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects
from tests.controller._cluster_queries import bound, events, http_get, log_tails, pg_status, stop_controllers, wait_until
from tests.controller.conftest import StartController


def test_rbac_grants_exactly_the_verbs_the_controller_uses() -> None:
    granted: dict[tuple[str, str], set[str]] = {}
    for document in yaml.safe_load_all((REPO_ROOT / "deploy" / "rbac.yaml").read_text()):
        if document and document["kind"] in ("ClusterRole", "Role"):
            for rule in document["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        granted.setdefault((group, resource), set()).update(rule["verbs"])
    assert granted == {key: set(verbs) for key, verbs in VERBS.items()}


def test_dry_run_decides_but_binds_evicts_and_writes_nothing(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    create_all(admin, seed_objects(EXAMPLES_DIR / "gang-min-available-4.yaml", namespace=namespace))
    controller = start_controller(ControllerConfig(period_s=0.2, engine="greedy", dry_run=True))
    report = wait_until(lambda: controller.last_report if controller.last_report and controller.last_report.act else None,
                        what="a dry-run cycle")
    assert report.act is not None and report.act.dry_run and len(report.act.bound) == 8
    wait_until(lambda: controller.last_report and controller.last_report.number >= report.number + 2, what="two more cycles")
    assert bound(core, namespace) == {}
    assert events(core, namespace) == []
    assert pg_status(custom, namespace, "gang-job") == {"phase": "Pending"}


def test_the_http_side_serves_health_metrics_and_what_if_on_the_live_snapshot(
    namespace: str, admin: KubeClient, controller_kubeconfig: Path, tmp_path: Path
) -> None:
    create_all(admin, seed_objects(EXAMPLES_DIR / "hello-volcano-job.yaml", namespace=namespace))
    port = free_port()
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", "from batchplace.cli import main; main()", "controller",
             "--kubeconfig", str(controller_kubeconfig), "--no-leader-elect", "--port", str(port), "--host", "127.0.0.1",
             "--period", "0.3", "--engine", "greedy"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: http_get(f"{base}/readyz")[0] == 200 if process.poll() is None else True, timeout_s=30, what="/readyz 200")
        assert process.poll() is None, log.read_text()
        status, body = http_get(f"{base}/healthz")
        assert status == 200 and json.loads(body)["status"] == "ok"
        wait_until(lambda: b"batchplace_pods_bound_total 1.0" in http_get(f"{base}/metrics")[1], what="a bind counted")
        metrics = http_get(f"{base}/metrics")[1].decode()
        for name in ("batchplace_cycle_duration_seconds", "batchplace_solve_duration_seconds", "batchplace_evictions_total",
                     "batchplace_pending_podgroups", "batchplace_engine_fallbacks_total", "batchplace_api_errors_total"):
            assert name in metrics
        request = urllib.request.Request(f"{base}/v1/what-if", data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        assert answer["base"] == "live"
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        assert any(line.get("bound") == 1 and line.get("cycle") for line in lines), "structured cycle log"
    finally:
        stop_controllers(process, logs=tmp_path)


def test_the_deploy_manifests_are_accepted_by_the_api_server(control_plane: ControlPlane, api_client: k8s.ApiClient) -> None:
    for name in ("configmap.yaml", "deployment.yaml", "service.yaml"):
        control_plane.apply_yaml(REPO_ROOT / "deploy" / name)
    deployment = k8s.AppsV1Api(api_client).read_namespaced_deployment("batchplace", "batchplace-system")
    assert deployment.spec.replicas == 2
    assert deployment.spec.template.spec.service_account_name == "batchplace"
    args = deployment.spec.template.spec.containers[0].args[0]
    assert "--leader-elect" in args and "--port 8080" in args


def test_in_cluster_the_lease_goes_to_the_deployments_namespace_where_rbac_grants_it(api_client: k8s.ApiClient) -> None:
    deployment = yaml.safe_load((REPO_ROOT / "deploy" / "deployment.yaml").read_text())
    namespace = deployment["metadata"]["namespace"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {variable["name"]: variable for variable in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert "--lease-namespace" not in container["args"][0], "the default (the pod's namespace) applies"
    user = f"system:serviceaccount:{namespace}:{pod['serviceAccountName']}"
    authorization = k8s.AuthorizationV1Api(api_client)
    for lease_namespace, allowed in ((namespace, True), ("kube-system", False)):
        for verb in ("get", "create", "update"):
            review = authorization.create_subject_access_review(k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
                user=user,
                resource_attributes=k8s.V1ResourceAttributes(
                    namespace=lease_namespace, verb=verb, group="coordination.k8s.io", resource="leases", name="batchplace"
                ),
            )))
            assert review.status.allowed is allowed, (lease_namespace, verb)


def test_the_controller_says_when_its_client_pool_is_smaller_than_the_connections_it_uses(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past the pool, urllib3 opens a connection per request and throws it away: a TLS
    handshake per bind. The command sizes the pool from the config; anyone else is told."""
    from controller.loop import Controller

    config = ControllerConfig(bind_workers=16)
    assert config.api_connections() > 16 + 9  # every bind worker and every watch, at least
    with caplog.at_level(logging.WARNING, logger="controller.loop"):
        Controller(KubeClient(k8s.Configuration(host="https://127.0.0.1:1"), pool_size=config.api_connections()), config)
        assert not [r for r in caplog.records if "pool" in r.getMessage()]
        Controller(KubeClient(k8s.Configuration(host="https://127.0.0.1:1"), pool_size=8), config)
    (warning,) = [r for r in caplog.records if "pool" in r.getMessage()]
    assert warning.levelno == logging.WARNING and warning.pool_size == 8  # type: ignore[attr-defined]


def test_a_manager_and_a_worker_controller_on_one_cluster_each_lead_through_their_own_lease(
    namespace: str, control_plane: ControlPlane, api_client: k8s.ApiClient, tmp_path: Path
) -> None:
    """The manager's default Lease is `batchplace-manager`, the worker controller's `batchplace`:
    one cluster may be the fleet's manager and one of its workers, and both must lead."""
    kubeconfig = str(control_plane.admin_kubeconfig)
    common = ["--lease-namespace", namespace, "--period", "0.3", "--engine", "greedy"]
    commands = {
        "worker": ["controller", "--kubeconfig", kubeconfig, *common],
        "manager": ["controller", "--manager-kubeconfig", kubeconfig, "--cluster", f"here={kubeconfig}", *common],
    }
    processes = []
    try:
        for role, command in commands.items():
            with (tmp_path / f"{role}.log").open("wb") as out:
                processes.append(subprocess.Popen([sys.executable, "-c", "from batchplace.cli import main; main()", *command],
                                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        leases = k8s.CoordinationV1Api(api_client)

        def holders() -> dict[str, str] | None:
            held = {lease.metadata.name: lease.spec.holder_identity for lease in leases.list_namespaced_lease(namespace).items}
            return held if len(held) == 2 and all(held.values()) else None

        held = wait_until(lambda: holders() or any(process.poll() is not None for process in processes),
                          timeout_s=30, what="two Leases held")
        assert held is not True and all(process.poll() is None for process in processes), log_tails(tmp_path, 2000)
        assert sorted(held) == ["batchplace", "batchplace-manager"]
    finally:
        stop_controllers(*processes, logs=tmp_path)
