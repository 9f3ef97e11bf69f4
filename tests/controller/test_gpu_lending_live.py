"""GPU lending live: the controller against the real API server, per-device GPU usage from a
real Prometheus.

A colocation node (one GPU, `volcano.sh/oversubscription: "true"`) runs an online pod
holding 600 milli of GPU 0. Prometheus' series (written with promtool when the test
starts, at t0, one per device with DCGM's label `gpu`) say online work uses 30 % of GPU 0
until t0 + 40 s, then 55 %. Two offline pods (`volcano.sh/qos-level: BE`, 300 and 200
milli) wait: only 1000 − 600 = 400 milli are unrequested, but the device's lent room is
1000 − 300 − 100 (margin) = 600, so both are bound to GPU 0. As the usage (averaged over
6 s) climbs to 55 % the room falls toward 1000 − 550 − 100 = 350 < 500: the controller
evicts the fewest that make room — one pod — with an OfflineEvicted Event whose message
has the numbers, and the other stays."""

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
QUERIES = (
    ("cpu", "test_lend_cpu_percent"),
    ("memory", "test_lend_memory_percent"),
    ("online-cpu", "test_lend_cpu_percent"),
    ("online-memory", "test_lend_memory_percent"),
    ("online-gpu", "test_lend_online_gpu_percent"),
)
NODE = "lend-live-1"


def _samples(t0: float) -> list[tuple[str, dict[str, str], float, float]]:
    """GPU 0's online use around `t0`: 30 %, then 55 % from t0 + RISE_S; cpu and memory low."""
    samples = []
    for at in range(int(t0 - 300), int(t0 + 900), 5):
        samples += [
            ("test_lend_online_gpu_percent", {"node": NODE, "gpu": "0"}, 30.0 if at < t0 + RISE_S else 55.0, float(at)),
            ("test_lend_cpu_percent", {"node": NODE}, 10.0, float(at)),
            ("test_lend_memory_percent", {"node": NODE}, 10.0, float(at)),
        ]
    return samples


@pytest.fixture
def prometheus() -> Iterator[tuple[PrometheusServer, float]]:
    t0 = float(int(time.time()))
    with PrometheusServer(_samples(t0)) as server:
        yield server, t0


def _pod(name: str, gpu_milli: int, *, offline: bool, node: str | None = None) -> dict:
    annotations = {"volcano.sh/qos-level": "BE"} if offline else {"batchplace.io/gpus": "0"}
    requests = {"cpu": "1", "batchplace.io/gpu-milli": str(gpu_milli)}
    limits = {"batchplace.io/gpu-milli": str(gpu_milli)}  # an extended resource is never overcommitted: limit = request
    resources = {"requests": requests, "limits": limits}
    spec: dict = {"schedulerName": "batchplace", "containers": [{"name": "c", "image": "x", "resources": resources}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations}, "spec": spec}


def test_offline_pods_borrow_a_shared_gpus_unused_part_and_the_fewest_leave_when_online_use_rises(
    prometheus: tuple[PrometheusServer, float], admin: KubeClient, namespace: str, start_controller: StartController, core: k8s.CoreV1Api
) -> None:
    server, t0 = prometheus
    admin.create(NODES, None, {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": NODE, "labels": {"volcano.sh/oversubscription": "true"}},
                               "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"}}})
    admin.create(PODS, namespace, _pod("infer", 600, offline=False, node=NODE))
    controller = start_controller(
        ControllerConfig(
            period_s=0.2, engine="greedy", usage_source="prometheus", prometheus_url=server.url, usage_queries=QUERIES,
            usage_poll_s=1, usage_window_s=6, usage_policy=UsagePolicy(cpu_threshold_percent=None, memory_threshold_percent=None),
        )
    )
    admin.create(PODS, namespace, _pod("train-a", 300, offline=True))
    admin.create(PODS, namespace, _pod("train-b", 200, offline=True))
    bound = wait_until(
        lambda: (lambda pods: pods if len(pods) == 3 and all(p.spec.node_name == NODE for p in pods) else None)(
            core.list_namespaced_pod(namespace).items
        ),
        what="both offline pods bound to GPU 0 next to the online one: 500 milli where 400 are unrequested",
    )
    assert time.time() < t0 + RISE_S, "the binds came before the rise"
    offline = [p for p in bound if p.metadata.name.startswith("train-")]
    assert {p.metadata.annotations.get("batchplace.io/gpus") for p in offline} == {"0"}
    assert controller.metrics.colocation_room.labels(resource="gpu")._value.get() == 600

    evicted = wait_until(
        lambda: [e for name in ("train-a", "train-b") for e in events(core, namespace, name=name, reason="OfflineEvicted")] or None,
        timeout_s=RISE_S + 20, what="an offline pod evicted once GPU 0's online use rose",
    )
    assert len(evicted) == 1
    assert re.search(r"gpu 0 of lend-live-1: offline 500m > room \d+m = 1000 − online usage \d+m − margin 100m", evicted[0].message)
    assert "evicting 1 of 2 offline pod(s)" in evicted[0].message
    assert controller.metrics.offline_evictions.labels(resource="gpu")._value.get() == 1
    kept = {"train-a", "train-b"} - {evicted[0].involved_object.name}
    (survivor,) = kept
    time.sleep(3)
    assert core.read_namespaced_pod(survivor, namespace).metadata.deletion_timestamp is None
    assert not events(core, namespace, name=survivor, reason="OfflineEvicted")
