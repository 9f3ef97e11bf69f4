"""Preemption against the real API server: victims evicted through the Eviction API, the
preemptor bound only once they are gone (pipelined), and a PodDisruptionBudget's refusal
respected (nothing evicted, nothing bound, the status says why).

The cluster: one node of 4 cpu, a low-priority gang of 4 × 1 cpu running on it, then a
high-priority gang of 2 × 2 cpu in the same queue: the solver evicts the whole low gang
(a gang is never cut below its minMember) and places the high one on the room.
"""

from __future__ import annotations

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, PRIORITY_CLASSES, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from solver.rules.reservation import DEFAULT_SLA_WAITING_S
from controller.testing.kubelet import KubeletStandIn
from tests.controller._cluster_queries import bound, condition, events, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group, priority_class
from tests.controller.conftest import StartController

CONFIG = ControllerConfig(period_s=0.3, engine="greedy", sla_waiting_s=None)
"""`--sla-waiting-time none`: by default every PodGroup has a waiting time and evicts nobody
(`solver.rules.reservation.DEFAULT_SLA_WAITING_S`); these tests are of the preempt and
reclaim actions, which a user gets with the guard off (`test_the_default_guard_evicts_nobody`)."""


def _low_gang_running(admin: KubeClient, core: k8s.CoreV1Api, namespace: str, start_controller: StartController,  # type: ignore[no-untyped-def]
                      config: ControllerConfig = CONFIG):
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    for name, value in (("low", 10), ("high", 1000)):
        admin.create(PRIORITY_CLASSES, None, for_api(priority_class(name, value)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("low", namespace=namespace, min_member=4, priority_class="low")))
    for i in range(4):
        admin.create(PODS, namespace, for_api(pod(f"low-{i}", namespace=namespace, group="low", priority_class="low", app="low")))
    controller = start_controller(config)
    wait_until(lambda: len(bound(core, namespace)) == 4, what="the low gang bound")
    KubeletStandIn(admin, namespace=namespace).mark_running()
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("high", namespace=namespace, min_member=2, priority_class="high")))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"high-{i}", namespace=namespace, group="high", cpu="2", priority_class="high")))
    return controller


def test_victims_are_evicted_and_the_preemptor_binds_only_once_they_are_gone(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    controller = _low_gang_running(admin, core, namespace, start_controller)
    preempted = wait_until(lambda: len(events(core, namespace, reason="Preempted")) == 4 and events(core, namespace, reason="Preempted"),
                           what="four Preempted events")
    assert {e.involved_object.name for e in preempted} == {f"low-{i}" for i in range(4)}
    assert all(f"podgroup {namespace}/high" in e.message for e in preempted)
    terminating = [p for p in core.list_namespaced_pod(namespace).items if p.metadata.deletion_timestamp]
    assert len(terminating) == 4, "the victims were evicted (they terminate; no kubelet finishes them yet)"
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 4, what="four more cycles")
    assert not any(name.startswith("high-") for name in bound(core, namespace)), "bound onto a node its victims still hold"
    status = pg_status(custom, namespace, "high")
    assert (status["phase"], condition(status)["reason"]) == ("Inqueue", "Pipelined")
    assert KubeletStandIn(admin, namespace=namespace).finish_terminating()
    nodes = wait_until(  # the gang's binds go out in parallel: wait for both
        lambda: len(high := {p: n for p, n in bound(core, namespace).items() if p.startswith("high-")}) == 2 and high,
        what="the preemptor's two pods bound",
    )
    assert nodes == {"high-0": "n1", "high-1": "n1"}
    wait_until(lambda: pg_status(custom, namespace, "high").get("phase") == "Running", what="the preemptor Running")


def test_an_eviction_a_disruption_budget_refuses_is_not_forced(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi,
    api_client: k8s.ApiClient, start_controller: StartController
) -> None:
    budget = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep-low", "namespace": namespace},
        "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "low"}}},
    }
    k8s.CustomObjectsApi(api_client).create_namespaced_custom_object("policy", "v1beta1", namespace, "poddisruptionbudgets", budget)
    controller = _low_gang_running(admin, core, namespace, start_controller)
    status = wait_until(
        lambda: condition(pg_status(custom, namespace, "high")).get("reason") == "EvictionRefused" and pg_status(custom, namespace, "high"),
        what="the refusal in the preemptor's status",
    )
    assert "disruption budget" in condition(status)["message"]
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    pods = core.list_namespaced_pod(namespace).items
    assert not any(p.metadata.deletion_timestamp for p in pods), "a pod the budget protects was evicted"
    assert not any(name.startswith("high-") for name in bound(core, namespace))
    assert events(core, namespace, reason="Preempted") == []


def test_the_default_guard_evicts_nobody(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """The controller as shipped: the high-priority gang has the default waiting time, so it
    waits for room (and would get it held past 30 min) instead of evicting the low gang."""
    config = ControllerConfig(period_s=0.3, engine="greedy")
    assert config.sla_waiting_s == DEFAULT_SLA_WAITING_S
    controller = _low_gang_running(admin, core, namespace, start_controller, config)
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 4, what="four more cycles")
    assert events(core, namespace, reason="Preempted") == []
    assert not any(p.metadata.deletion_timestamp for p in core.list_namespaced_pod(namespace).items)
    assert not any(name.startswith("high-") for name in bound(core, namespace))
    assert pg_status(custom, namespace, "high").get("phase") != "Running"
