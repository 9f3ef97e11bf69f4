"""The metrics.k8s.io usage source against a real kube-apiserver's aggregation layer.

`controller.testing.metrics_api` serves NodeMetrics over HTTPS and registers it with an
APIService; the controller reads it through the API server with the official client, as
batchplace's ServiceAccount user (so deploy/rbac.yaml's grant is exercised too)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
from fastapi.testclient import TestClient  # noqa: E402
from kubernetes import client as k8s

from controller.errors import NotFound
from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.control_plane import ControlPlane
from controller.testing.metrics_api import NodeMetricsServer, register, unregister
from controller.usage import UsageTracker
from controller.usage_sources import MetricsApiSource
from models.rebalance import RebalanceAdvice
from models.snapshot import NodeName, Snapshot, UsagePolicy
from service.app import create_app
from service.settings import ServiceSettings
from solver.rules import usage
from tests.builders import make_node, make_snapshot
from tests.controller._cluster_queries import wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController


@pytest.fixture(scope="module")
def node_metrics(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeMetricsServer]:
    with NodeMetricsServer(Path(tmp_path_factory.mktemp("metrics"))) as server:
        register(control_plane, server)
        yield server
        unregister(control_plane)


def test_node_metrics_are_served_through_the_aggregation_layer(node_metrics: NodeMetricsServer, api_client: k8s.ApiClient) -> None:
    node_metrics.set_usage("metrics-a", cpu="6", memory="4Gi")
    custom = k8s.CustomObjectsApi(api_client)
    one = custom.get_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes", "metrics-a")
    assert one["usage"] == {"cpu": "6", "memory": "4Gi"}
    listed = custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
    assert "metrics-a" in {item["metadata"]["name"] for item in listed["items"]}


def test_the_source_reads_percents_as_the_controllers_user(node_metrics: NodeMetricsServer, controller_kubeconfig: Path) -> None:
    node_metrics.set_usage("metrics-hot", cpu="7500m", memory="4Gi")
    node_metrics.set_usage("metrics-cool", cpu="1", memory="2Gi")
    node_metrics.set_usage("metrics-old", cpu="8", memory="16Gi", at=datetime.now(timezone.utc) - timedelta(minutes=20))
    nodes = [make_node(name, cpu=8, memory=16) for name in ("metrics-hot", "metrics-cool", "metrics-old", "metrics-none")]
    snapshot = make_snapshot(nodes=nodes)
    source = MetricsApiSource(KubeClient.from_kubeconfig(controller_kubeconfig))
    samples = {s.node: s for s in source.read(since_s=0, now_s=0, nodes=snapshot.node_by_name)}
    assert samples["metrics-hot"].cpu_percent == pytest.approx(93.75) and samples["metrics-hot"].memory_percent == 25
    assert samples["metrics-cool"].cpu_percent == 12.5 and samples["metrics-cool"].gpu_percent is None
    tracker = UsageTracker(source, policy=UsagePolicy(), window_s=300)
    judged = tracker.apply(snapshot, datetime.now(timezone.utc).timestamp())
    states = {name: judgement.state for name, judgement in usage.judgements(judged).items()}
    assert states == {"metrics-hot": "hot", "metrics-cool": "cool", "metrics-old": "stale", "metrics-none": "missing"}


def test_without_the_api_the_source_raises_not_found(
    node_metrics: NodeMetricsServer, control_plane: ControlPlane, admin: KubeClient
) -> None:
    unregister(control_plane)
    try:
        deadline = time.monotonic() + 10
        with pytest.raises(NotFound):
            while time.monotonic() < deadline:  # the aggregator drops the route a moment after the APIService
                admin.list_node_metrics()
                time.sleep(0.2)
    finally:
        register(control_plane, node_metrics)


def test_the_controller_keeps_new_pods_off_the_node_metrics_server_reports_hot(
    node_metrics: NodeMetricsServer, control_plane: ControlPlane, admin: KubeClient, namespace: str,
    start_controller: StartController, core: k8s.CoreV1Api,
) -> None:
    for name, cpu in (("usage-hot", "7900m"), ("usage-cool", "500m")):
        admin.create(NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                   "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}})
        node_metrics.set_usage(name, cpu=cpu, memory="1Gi")
    controller = start_controller(ControllerConfig(period_s=0.2, engine="greedy", usage_source="metrics-server", usage_poll_s=1))
    for i in range(3):
        admin.create(PODS, namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}"},
                                                 "spec": {"schedulerName": "batchplace", "containers": [
                                                     {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m"}}}]}})
    pods = wait_until(
        lambda: (lambda items: items if all(p.spec.node_name for p in items) and len(items) == 3 else None)(
            core.list_namespaced_pod(namespace).items),
        what="three pods bound",
    )
    assert {pod.spec.node_name for pod in pods} == {"usage-cool"}
    assert controller.metrics.usage_nodes.labels(state="hot")._value.get() >= 1


def test_what_if_rebalance_on_the_live_snapshot_moves_a_pod_off_the_node_metrics_server_reports_hot(
    node_metrics: NodeMetricsServer, admin: KubeClient, namespace: str, start_controller: StartController,
) -> None:
    """The service in the controller's process, as `batchplace controller --port` runs it: its
    what-if with `rebalance: true` and no snapshot posted advises on the live one, whose usage
    came from NodeMetrics through the aggregation layer. rebal-hot runs two pods of the PodGroup
    web (minMember 1) at 95 % cpu, 47.5 % each; moving one leaves it at 47.5 %."""
    for name, cpu in (("rebal-hot", "7600m"), ("rebal-cool", "2")):
        admin.create(NODES, None, for_api(node(name, cpu=8)))
        node_metrics.set_usage(name, cpu=cpu, memory="1Gi")
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("web", namespace=namespace, min_member=1)))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"web-{i}", namespace=namespace, group="web", cpu="2", node_name="rebal-hot")))
    controller = start_controller(ControllerConfig(period_s=0.2, engine="greedy", usage_source="metrics-server", usage_poll_s=1))

    def hot_with_both_pods() -> Snapshot | None:
        snapshot = controller.current()
        if snapshot is None or usage.judgements(snapshot).get(NodeName("rebal-hot"), None) is None:
            return None
        running = [p for p in snapshot.pods if p.node == "rebal-hot" and p.pod_group is not None]
        hot = usage.judgements(snapshot)[NodeName("rebal-hot")].state == "hot"
        return snapshot if hot and len(running) == 2 else None

    wait_until(hot_with_both_pods, what="rebal-hot judged hot with both web pods running")
    app = create_app(ServiceSettings(), live_snapshot=controller)
    with TestClient(app) as client:
        response = client.post("/v1/what-if", json={"rebalance": True, "options": {"engine": "auto", "time_limit_s": 5}})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["base"] == "live"
    advice = RebalanceAdvice.model_validate(answer["rebalance"])
    (move,) = [move for move in advice.moves if move.from_node == "rebal-hot"]
    assert move.pod in (f"{namespace}/web-0", f"{namespace}/web-1") and move.usage[0].from_percent == 47.5
    rows = {row.node: row for row in advice.nodes}
    assert rows["rebal-hot"].verdict == "cooled" and rows["rebal-hot"].after["cpu"] == 47.5
    assert rows[move.to_node].verdict == "cool" and rows[move.to_node].after["cpu"] <= 80
    assert "rebal-hot" not in {row.node for row in advice.uncooled}


def _offline_pod(name: str, cpu: str, namespace: str, group: str) -> dict:
    body = for_api(pod(name, namespace=namespace, cpu=cpu, group=group))
    body["metadata"]["annotations"]["volcano.sh/qos-level"] = "BE"
    return body


def test_colocation_from_node_metrics_lends_while_only_online_pods_run_then_fails_safe(
    node_metrics: NodeMetricsServer, admin: KubeClient, namespace: str, start_controller: StartController,
    core: k8s.CoreV1Api,
) -> None:
    """metrics-server's NodeMetrics is the node's whole usage. While no offline pod runs on
    coloc-metrics (16 cpu, online web requesting 12, using 4 = 25 %), all of it is online
    usage: the node offers offline pods 16 − 4 − 1.6 = 10.4 cpu, so batch-a (3) and batch-b (5)
    both bind where only 4 cpu are unrequested. Once they run, nobody says how much of the
    usage is theirs (metrics-server has no online/offline split): the node is "unmeasured",
    offers only what online pods have not requested (4 cpu, all taken), evicts nothing, and
    batch-c (1 cpu) waits. (batch-a and batch-b are one PodGroup, so one cycle binds both: the
    first bound alone would already make the node unmeasured for the second.)"""
    admin.create(NODES, None, for_api(node("coloc-metrics", cpu=16, memory="64Gi", labels={"volcano.sh/oversubscription": "true"})))
    node_metrics.set_usage("coloc-metrics", cpu="4", memory="8Gi")
    admin.create(PODS, namespace, for_api(pod("web", namespace=namespace, cpu="12", node_name="coloc-metrics", phase="Running")))
    controller = start_controller(
        ControllerConfig(
            period_s=0.2, engine="greedy", usage_source="metrics-server", usage_poll_s=1,
            usage_policy=UsagePolicy(cpu_threshold_percent=None, memory_threshold_percent=None),
        )
    )
    wait_until(
        lambda: (lambda s: s if s is not None and any(n.usage is not None for n in s.nodes if n.name == "coloc-metrics") else None)(
            controller.current()
        ),
        what="coloc-metrics' usage read from NodeMetrics",
    )
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("batch", namespace=namespace, min_member=2)))
    for name, cpu in (("batch-a", "3"), ("batch-b", "5")):
        admin.create(PODS, namespace, _offline_pod(name, cpu, namespace, "batch"))
    wait_until(
        lambda: all(core.read_namespaced_pod(name, namespace).spec.node_name == "coloc-metrics" for name in ("batch-a", "batch-b"))
        or None,
        what="both offline pods bound on the oversubscribed room: 8 cpu where 4 are unrequested",
    )
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("later", namespace=namespace, min_member=1)))
    admin.create(PODS, namespace, _offline_pod("batch-c", "1", namespace, "later"))
    waiting = wait_until(
        lambda: (lambda s: s if s is not None and controller.metrics.colocation_nodes.labels(state="unmeasured")._value.get() >= 1
                 and any(p.name == "batch-c" for p in s.pods) else None)(controller.current()),
        what="coloc-metrics judged unmeasured with batch-c pending",
    )
    assert waiting is not None
    time.sleep(2)  # several cycles: nothing is evicted on a reading that cannot be split
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}
    assert pods["batch-c"].spec.node_name is None
    assert all(pods[name].metadata.deletion_timestamp is None for name in ("batch-a", "batch-b"))
    assert controller.metrics.offline_evictions.labels(resource="cpu")._value.get() == 0
