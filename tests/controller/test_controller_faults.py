"""API faults between the controller and the real API server: nothing bound twice, no gang
left half bound, the caches recover.

The controller talks to the API server through `FaultProxy` (real HTTP on 127.0.0.1) that
answers writes with 500s, loses the answers of writes that landed, delays every request,
cuts every watch stream and answers watches with 410 Gone. Then the faults stop and the
controller must reach the same state a fault-free run reaches.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.control_plane import ControlPlane
from tests.controller._cluster_queries import bound, condition, events, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController
from tests.controller.fault_proxy import FaultProxy, Faults

GANGS = 6  # 6 gangs × 3 pods × 1 cpu on 4 nodes × 4 cpu: five gangs fit (15 of 16 cpu), one cannot


def _cluster(admin: KubeClient, namespace: str) -> None:
    for i in range(4):
        admin.create(NODES, None, for_api(node(f"n{i}", cpu=4)))
    for g in range(GANGS):
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(f"g{g}", namespace=namespace, min_member=3)))
        for i in range(3):
            admin.create(PODS, namespace, for_api(pod(f"g{g}-{i}", namespace=namespace, group=f"g{g}")))


def _assert_whole_gangs_within_capacity(core: k8s.CoreV1Api, namespace: str) -> dict[str, str]:
    nodes = bound(core, namespace)
    per_gang = Counter(name.split("-")[0] for name in nodes)
    assert all(count == 3 for count in per_gang.values()), f"a gang is half bound: {dict(per_gang)}"
    per_node = Counter(nodes.values())
    assert all(count <= 4 for count in per_node.values()), f"a node is overfilled: {dict(per_node)}"
    return nodes


def test_faults_bind_nothing_twice_and_leave_no_gang_half_bound(
    namespace: str,
    control_plane: ControlPlane,
    admin: KubeClient,
    core: k8s.CoreV1Api,
    custom: k8s.CustomObjectsApi,
    fault_proxy: FaultProxy,
    start_controller: StartController,
    tmp_path: Path,
) -> None:
    _cluster(admin, namespace)
    proxy = fault_proxy
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "proxied", token=control_plane.controller_token, server=proxy.url)
    proxy.faults = Faults(
        fail_rate=0.3, lose_rate=0.2, delay_s=0.02, gone_watches=4,
        match=lambda method, path: method in ("POST", "PATCH", "PUT") or "watch" in path,
    )
    controller = start_controller(ControllerConfig(period_s=0.3, engine="greedy"), kubeconfig=kubeconfig)
    wait_until(lambda: proxy.counts.lost >= 2 and proxy.counts.failed >= 2, timeout_s=30, what="faults injected")
    proxy.drop_watches()
    proxy.faults.gone_watches = 3
    proxy.drop_watches()
    proxy.heal()
    wait_until(lambda: len(bound(core, namespace)) == 15, timeout_s=30, what="the five gangs that fit bound")
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three calm cycles")
    nodes = _assert_whole_gangs_within_capacity(core, namespace)
    assert len(nodes) == 15
    bound_total = controller.metrics.pods_bound._value.get()  # noqa: SLF001 (the counter's value)
    assert bound_total == 15, f"the controller counted {bound_total} binds for 15 bound pods"
    assert proxy.counts.lost >= 2 and proxy.counts.gone >= 1 and proxy.counts.dropped_watches >= 1
    relists = sum(s.value for m in controller.metrics.relists.collect() for s in m.samples if s.name.endswith("_total"))
    assert relists > 9, "a 410 Gone must make an informer relist"
    unplaced = {f"g{g}" for g in range(GANGS)} - {name.split("-")[0] for name in nodes}
    (left,) = unplaced
    status = wait_until(lambda: condition(pg_status(custom, namespace, left)).get("type") == "Unschedulable"
                        and pg_status(custom, namespace, left), what="the unplaced gang's status")
    assert status["phase"] == "Pending"
    for gang in {name.split("-")[0] for name in nodes}:
        wait_until(lambda: pg_status(custom, namespace, gang).get("phase") == "Running", what=f"{gang} Running")


def test_a_gang_whose_pod_vanishes_during_its_bind_is_reported_not_left_silently_half_bound(
    namespace: str,
    control_plane: ControlPlane,
    admin: KubeClient,
    core: k8s.CoreV1Api,
    custom: k8s.CustomObjectsApi,
    fault_proxy: FaultProxy,
    start_controller: StartController,
    tmp_path: Path,
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=8)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("pair", namespace=namespace, min_member=2)))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"pair-{i}", namespace=namespace, group="pair")))
    proxy = fault_proxy
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "proxied", token=control_plane.controller_token, server=proxy.url)
    proxy.faults = Faults(delay_s=1.5, match=lambda method, path: method == "POST" and path.endswith("/pair-1/binding"))
    start_controller(ControllerConfig(period_s=0.3, engine="greedy"), kubeconfig=kubeconfig)
    wait_until(lambda: proxy.counts.delayed >= 1, what="the second bind in flight")
    core.delete_namespaced_pod("pair-1", namespace, grace_period_seconds=0)
    proxy.heal()
    (rejected,) = wait_until(lambda: events(core, namespace, name="pair", reason="FailedScheduling"), what="the failed bind reported")
    assert rejected.message.startswith("binding rejected: 1/2 tasks in gang unschedulable: bind failed for 1 pod(s)")
    assert "the pod is gone" in rejected.message
    status = wait_until(  # the next cycle: the gang cannot be completed, and says so
        lambda: condition(pg_status(custom, namespace, "pair")).get("message", "").startswith("1/1 tasks in gang unschedulable")
        and pg_status(custom, namespace, "pair"),
        what="the half gang reported by the next cycle",
    )
    assert status["phase"] == "Inqueue" and condition(status)["type"] == "Unschedulable"
    assert bound(core, namespace) == {"pair-0": "n1"}
