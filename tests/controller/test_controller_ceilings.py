"""A quantity above its ceiling against the real kube-apiserver: the object is left out of
the cycle with a Warning Event naming the field, and everything else is still scheduled.

The apiserver accepts both values used here: `memory: 10E` in a pod's requests (1e19 bytes,
past int64) and `cpu: "1e16"` in a node's allocatable (it stores it as `10P`).
"""

from __future__ import annotations

import logging

import pytest
from kubernetes import client as k8s

from controller.kinds import NODES, PODS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from tests.controller._cluster_queries import bound, events, wait_until
from tests.controller._controller_builders import for_api, node, pod
from tests.controller.conftest import StartController


def test_a_pod_and_a_node_above_the_ceiling_are_left_out_and_the_rest_is_scheduled(
    namespace: str,
    admin: KubeClient,
    core: k8s.CoreV1Api,
    start_controller: StartController,
    caplog: pytest.LogCaptureFixture,
) -> None:
    huge_node = node(f"huge-{namespace}", cpu=64)
    huge_node["status"]["allocatable"]["cpu"] = huge_node["status"]["capacity"]["cpu"] = "1e16"
    admin.create(NODES, None, for_api(huge_node))
    admin.create(NODES, None, for_api(node(f"small-{namespace}", cpu=4)))
    huge_pod = pod("huge-memory", namespace=namespace)
    huge_pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "10E"
    admin.create(PODS, namespace, for_api(huge_pod))
    for name in ("good-0", "good-1"):
        admin.create(PODS, namespace, for_api(pod(name, namespace=namespace, cpu="1")))
    caplog.set_level(logging.WARNING, logger="controller")
    controller = start_controller(ControllerConfig(period_s=0.3, engine="greedy"))

    nodes = wait_until(lambda: len(bound(core, namespace)) == 2 and bound(core, namespace), what="the good pods bound")
    assert nodes == {"good-0": f"small-{namespace}", "good-1": f"small-{namespace}"}
    (on_pod,) = wait_until(lambda: events(core, namespace, name="huge-memory", reason="FailedScheduling"), what="the pod's event")
    assert on_pod.type == "Warning"
    assert "spec.containers[0].resources.requests.memory: 10E: " in on_pod.message
    assert "above the ceiling of 4398046511104 bytes (4Ti)" in on_pod.message
    (on_node,) = wait_until(lambda: events(core, "default", name=f"huge-{namespace}", reason="Invalid"), what="the node's event")
    assert (on_node.type, on_node.involved_object.kind) == ("Warning", "Node")
    assert "status.allocatable.cpu: " in on_node.message and "above the ceiling" in on_node.message

    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 2, what="two more cycles")
    assert "huge-memory" not in bound(core, namespace)
    assert len(events(core, namespace, name="huge-memory", reason="FailedScheduling")) == 1  # once, not every cycle
    left_out = {(r.left_out, r.field) for r in caplog.records if hasattr(r, "left_out")}
    assert left_out == {
        (f"Pod {namespace}/huge-memory", "spec.containers[0].resources.requests.memory"),
        (f"Node huge-{namespace}", "status.allocatable.cpu"),
    }
