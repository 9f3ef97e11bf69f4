"""Colocation live: the controller against the real API server, usage from a real Prometheus.

A colocation node (16 cpu, `volcano.sh/oversubscription: "true"`) runs an online pod
requesting 12 cpu. Prometheus' series (written with promtool when the test starts, at t0) say its online pods
use 25 % of its cpu until t0 + 40 s, then 60 %. Two offline pods (`volcano.sh/qos-level: BE`, 3 and
5 cpu) wait: with online usage at 25 % the node offers them 16 − 4 − 1.6 = 10.4 cpu, so
both are bound although only 4 cpu are unrequested. As the usage (averaged over 6 s)
climbs to 60 % the room falls toward 16 − 9.6 − 1.6 = 4.8 cpu; the first cycle it is below
their 8 the controller evicts the fewest that make room — one pod; of two that each would,
the newer, batch-big — with an OfflineEvicted Event on it and on the node, and batch-small
(3 cpu) stays within the room from then on."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from controller.kinds import NODES, PODS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.prometheus import PrometheusServer
from models.snapshot import UsagePolicy
from tests.controller._cluster_queries import events, wait_until
from tests.controller.conftest import StartController

RISE_S = 40.0
QUERIES = (("cpu", "test_coloc_cpu_percent"), ("memory", "test_coloc_memory_percent"), ("online-cpu", "test_coloc_online_cpu_percent"),
           ("online-memory", "test_coloc_online_memory_percent"))
NODE = "coloc-live-1"


def _samples(t0: float) -> list[tuple[str, dict[str, str], float, float]]:
    """Usage around `t0`, the time the Prometheus starts: online cpu 25 %, then 60 % from t0 + RISE_S."""
    samples = []
    for at in range(int(t0 - 300), int(t0 + 900), 5):
        online = 25.0 if at < t0 + RISE_S else 60.0
        samples += [
            ("test_coloc_online_cpu_percent", {"node": NODE}, online, float(at)),
            ("test_coloc_cpu_percent", {"node": NODE}, 50.0, float(at)),
            ("test_coloc_memory_percent", {"node": NODE}, 10.0, float(at)),
            ("test_coloc_online_memory_percent", {"node": NODE}, 10.0, float(at)),
        ]
    return samples


@pytest.fixture
def prometheus() -> Iterator[tuple[PrometheusServer, float]]:
    t0 = float(int(time.time()))
    with PrometheusServer(_samples(t0)) as server:
        yield server, t0


def _pod(name: str, cpu: str, *, offline: bool, node: str | None = None) -> dict:
    metadata: dict = {"name": name}
    if offline:
        metadata["annotations"] = {"volcano.sh/qos-level": "BE"}
    spec: dict = {"schedulerName": "batchplace", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def test_offline_pods_use_the_online_pods_unused_cpu_and_the_fewest_leave_when_it_rises(
    prometheus: tuple[PrometheusServer, float], admin: KubeClient, namespace: str, start_controller: StartController, core: k8s.CoreV1Api
) -> None:
    server, t0 = prometheus
    admin.create(NODES, None, {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": NODE, "labels": {"volcano.sh/oversubscription": "true"}},
                               "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}})
    admin.create(PODS, namespace, _pod("web", "12", offline=False, node=NODE))
    controller = start_controller(
        ControllerConfig(
            period_s=0.2, engine="greedy", usage_source="prometheus", prometheus_url=server.url, usage_queries=QUERIES,
            usage_poll_s=1, usage_window_s=6, usage_policy=UsagePolicy(cpu_threshold_percent=None, memory_threshold_percent=None),
        )
    )
    admin.create(PODS, namespace, _pod("batch-small", "3", offline=True))
    admin.create(PODS, namespace, _pod("batch-big", "5", offline=True))
    bound = wait_until(
        lambda: (lambda pods: pods if len(pods) == 3 and all(p.spec.node_name == NODE for p in pods) else None)(
            core.list_namespaced_pod(namespace).items
        ),
        what="both offline pods bound next to the online one: 8 cpu where 4 are unrequested",
    )
    assert time.time() < t0 + RISE_S, "the binds came before the rise"
    assert controller.metrics.colocation_nodes.labels(state="fresh")._value.get() >= 1
    assert {p.metadata.name for p in bound} == {"web", "batch-small", "batch-big"}

    evicted = wait_until(
        lambda: events(core, namespace, name="batch-big", reason="OfflineEvicted") or None,
        timeout_s=RISE_S + 15, what="the 5-cpu offline pod evicted once online usage rose",
    )
    assert re.search(r"cpu room \d+m = allocatable 16000m − online usage \d+m − margin 1600m < offline requests 8000m", evicted[0].message)
    assert "evicting 1 of 2 offline pod(s)" in evicted[0].message
    assert not events(core, namespace, name="batch-small", reason="OfflineEvicted")
    # The node's Event is its own write, after the pod's: wait for it as for the pod's.
    node_events = wait_until(
        lambda: [e for e in core.list_namespaced_event("default").items if e.reason == "OfflineEvicted" and e.involved_object.name == NODE] or None,
        what="the OfflineEvicted Event on the node",
    )
    assert f"{namespace}/batch-big" in node_events[0].message
    assert controller.metrics.offline_evictions.labels(resource="cpu")._value.get() == 1
    pod = core.read_namespaced_pod("batch-big", namespace)
    assert pod.metadata.deletion_timestamp is not None
