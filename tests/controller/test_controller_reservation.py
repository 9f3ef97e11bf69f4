"""The starvation guard against the real API server: a PodGroup past its `sla-waiting-time`
holds its node, a later small job does not take the room that frees there, the PodGroup's
status says it is reserved, and it starts once the node drains.

The cluster: one node of 4 cpu; a 1-pod filler of 2 cpu runs on it; a 2 × 2-cpu gang
annotated `sla-waiting-time: 1ms` waits (2 cpu free). A 2-cpu job that comes later would
fit the free half — without the guard it would bind and the gang would wait again.
"""

from __future__ import annotations

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.kubelet import KubeletStandIn
from tests.controller._cluster_queries import bound, condition, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController

CONFIG = ControllerConfig(period_s=0.3, engine="greedy")


def test_an_overdue_gang_holds_its_node_against_later_jobs_and_starts_when_it_drains(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("filler", namespace=namespace)))
    admin.create(PODS, namespace, for_api(pod("filler-0", namespace=namespace, group="filler", cpu="2")))
    controller = start_controller(CONFIG)
    wait_until(lambda: "filler-0" in bound(core, namespace), what="the filler bound")
    KubeletStandIn(admin, namespace=namespace).mark_running()

    big = pod_group("big", namespace=namespace, min_member=2)
    big["metadata"]["annotations"] = {"sla-waiting-time": "1ms"}
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(big))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"big-{i}", namespace=namespace, group="big", cpu="2")))
    reserved = wait_until(
        lambda: (status := pg_status(custom, namespace, "big")) and condition(status).get("reason") == "Reserved" and status,
        what="the gang's status saying it is reserved",
    )
    assert "reservation: waiting" in condition(reserved)["message"] and "holding cluster (1 node)" in condition(reserved)["message"]

    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("small", namespace=namespace)))
    admin.create(PODS, namespace, for_api(pod("small-0", namespace=namespace, group="small", cpu="2")))
    wait_until(lambda: "held for" in condition(pg_status(custom, namespace, "small")).get("message", ""),
               what="the small job's status naming the hold")  # fmt: skip
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    assert "small-0" not in bound(core, namespace), "a later job took the room held for the overdue gang"

    core.delete_namespaced_pod("filler-0", namespace, grace_period_seconds=0)
    wait_until(lambda: {"big-0", "big-1"} <= set(bound(core, namespace)), what="the gang bound once its node drained")
    assert "small-0" not in bound(core, namespace)
