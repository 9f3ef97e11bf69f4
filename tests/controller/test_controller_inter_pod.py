"""Pod anti-affinity and topology spread against the real kube-apiserver: the controller
reads them from the live pods, binds only what keeps them, and says why the rest waits."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from controller.kinds import NODES, PODS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from tests.controller._cluster_queries import bound, events, wait_until
from tests.controller._controller_builders import for_api, node, pod
from tests.controller.conftest import StartController

HOSTNAME = "kubernetes.io/hostname"


def _web(name: str, namespace: str, **spec: object) -> dict:  # type: ignore[type-arg]
    """A pending `app=web` pod kept to this test's nodes (other tests' nodes share the cluster)."""
    body = pod(name, namespace=namespace, app="web")
    body["spec"].update({"nodeSelector": {"pool": namespace}, **spec})
    return body


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_one_replica_per_node_binds_two_of_three_and_says_why_the_third_waits(
    engine: str, namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    nodes = [f"{namespace}-a", f"{namespace}-b"]
    for name in nodes:
        admin.create(NODES, None, for_api(node(name, cpu=8, labels={"pool": namespace, HOSTNAME: name})))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}]}}
    for i in range(3):
        admin.create(PODS, namespace, for_api(_web(f"web-{i}", namespace, affinity=anti)))
    start_controller(ControllerConfig(period_s=0.3, engine=engine, time_limit_s=1.0))  # type: ignore[arg-type]
    placed = wait_until(lambda: len(bound(core, namespace)) == 2 and bound(core, namespace), what="two replicas bound")
    assert sorted(placed.values()) == nodes  # one per node
    (waiting,) = {f"web-{i}" for i in range(3)} - set(placed)
    (event,) = wait_until(lambda: events(core, namespace, name=waiting, reason="FailedScheduling"), what="the third one's reason")
    assert "pod_affinity" in event.message and "anti-affinity {app=web} on kubernetes.io/hostname" in event.message


def test_a_spread_over_zones_fills_the_emptier_zone_first(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    zones = {f"{namespace}-a1": "a", f"{namespace}-a2": "a", f"{namespace}-b1": "b"}
    for name, zone in zones.items():
        admin.create(NODES, None, for_api(node(name, cpu=8, labels={"pool": namespace, "zone": zone})))
    running = _web("web-old", namespace)
    running["spec"]["nodeName"] = f"{namespace}-a1"
    admin.create(PODS, namespace, for_api(running))
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]
    for i in range(2):
        admin.create(PODS, namespace, for_api(_web(f"web-{i}", namespace, topologySpreadConstraints=spread)))
    start_controller(ControllerConfig(period_s=0.3, engine="auto", time_limit_s=1.0))
    placed = wait_until(lambda: len(bound(core, namespace)) == 3 and bound(core, namespace), what="both new pods bound")
    new = [zones[placed[f"web-{i}"]] for i in range(2)]
    assert sorted(new) == ["a", "b"]  # zone a held one already: b first, then one each
