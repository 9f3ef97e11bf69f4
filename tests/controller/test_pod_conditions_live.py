"""The PodScheduled condition on pending pods, live against the session's API server
(`controller.plan` rule 7): written with the reason of what blocks each pod — capacity
`Unschedulable`, a queue at its capability `QueueQuotaExceeded` — changed when the cause
changes, set to True by the binding itself, and not written again while nothing changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, QUEUES, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.testing.control_plane import ControlPlane
from tests.controller._cluster_queries import wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController
from tests.controller.fault_proxy import FaultProxy, Faults


def _scheduled(core: k8s.CoreV1Api, namespace: str, name: str) -> tuple[str, str, str] | None:
    """(status, reason, message) of the pod's PodScheduled condition, None when it has none."""
    for condition in core.read_namespaced_pod(name, namespace).status.conditions or ():
        if condition.type == "PodScheduled":
            return condition.status, condition.reason or "", condition.message or ""
    return None


def _transition(core: k8s.CoreV1Api, namespace: str, name: str) -> Any:
    conditions = core.read_namespaced_pod(name, namespace).status.conditions or ()
    return next(c.last_transition_time for c in conditions if c.type == "PodScheduled")


def _queue(name: str, *, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "capability": {"cpu": cpu}}, "status": {"state": "Open"}}


def _cycles(controller: Controller, count: int) -> None:
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + count, what=f"{count} cycles")


def test_live_conditions_by_cause_changed_when_it_changes_and_true_once_bound(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(QUEUES, None, _queue("capped", cpu="1"))
    for name, queue in (("big", "default"), ("capped", "capped")):
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(name, namespace=namespace, queue=queue)))
    admin.create(PODS, namespace, for_api(pod("big-0", namespace=namespace, group="big", cpu="6")))
    admin.create(PODS, namespace, for_api(pod("capped-0", namespace=namespace, group="capped", cpu="2")))
    controller = start_controller(ControllerConfig(period_s=0.3, engine="greedy"))

    big = wait_until(lambda: _scheduled(core, namespace, "big-0"), what="big-0's condition")
    capped = wait_until(lambda: _scheduled(core, namespace, "capped-0"), what="capped-0's condition")
    assert big[:2] == ("False", "Unschedulable") and "capacity: task" in big[2], big
    assert capped[:2] == ("False", "QueueQuotaExceeded") and "quota: queue capped capability 1 cpu" in capped[2], capped

    # Nothing changes: two more cycles write neither pod again.
    versions = {name: core.read_namespaced_pod(name, namespace).metadata.resource_version for name in ("big-0", "capped-0")}
    _cycles(controller, 3)
    assert {name: core.read_namespaced_pod(name, namespace).metadata.resource_version for name in versions} == versions
    assert controller.last_report and controller.last_report.act and controller.last_report.act.pod_conditions_written == 0

    # The cause changes: the queue's capability is raised, capped-0 fits and binds, and the
    # binding itself sets PodScheduled=True (kube-apiserver's pod binding storage): nothing to clear.
    since = _transition(core, namespace, "capped-0")
    admin.patch(QUEUES, None, "capped", {"spec": {"capability": {"cpu": "3"}}})
    bound = wait_until(lambda: (s := _scheduled(core, namespace, "capped-0")) and s[0] == "True" and s, what="capped-0 bound")
    assert core.read_namespaced_pod("capped-0", namespace).spec.node_name == "n1"
    assert bound[1:] == ("", ""), "the binding's own PodScheduled=True carries no reason"
    assert _transition(core, namespace, "capped-0") >= since

    assert _scheduled(core, namespace, "big-0") == big, "big-0 is held by capacity as before"


def test_live_a_capability_lowered_turns_unschedulable_into_the_quota_word(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(QUEUES, None, _queue("team", cpu="16"))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("wide", namespace=namespace, queue="team")))
    admin.create(PODS, namespace, for_api(pod("wide-0", namespace=namespace, group="wide", cpu="8")))
    start_controller(ControllerConfig(period_s=0.3, engine="greedy"))
    assert wait_until(lambda: _scheduled(core, namespace, "wide-0"), what="wide-0's condition")[1] == "Unschedulable"
    since = _transition(core, namespace, "wide-0")
    admin.patch(QUEUES, None, "team", {"spec": {"capability": {"cpu": "2"}}})
    quota = wait_until(
        lambda: (s := _scheduled(core, namespace, "wide-0")) and s[1] == "QueueQuotaExceeded" and s, what="the quota word"
    )
    assert quota[0] == "False"
    assert _transition(core, namespace, "wide-0") == since, "False stays False: no transition"


def test_live_a_refused_condition_write_is_retried_the_next_cycle_and_the_loop_goes_on(
    namespace: str,
    control_plane: ControlPlane,
    admin: KubeClient,
    core: k8s.CoreV1Api,
    fault_proxy: FaultProxy,
    start_controller: StartController,
    tmp_path: Path,
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("big", namespace=namespace)))
    admin.create(PODS, namespace, for_api(pod("big-0", namespace=namespace, group="big", cpu="6")))
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "proxied", token=control_plane.controller_token, server=fault_proxy.url)
    fault_proxy.faults = Faults(fail_rate=1.0, match=lambda method, path: method == "PATCH" and path.endswith("/status"))
    controller = start_controller(ControllerConfig(period_s=0.3, engine="greedy"), kubeconfig=kubeconfig)
    wait_until(lambda: fault_proxy.counts.failed >= 2, what="condition writes refused")
    _cycles(controller, 2)  # the loop goes on
    assert _scheduled(core, namespace, "big-0") is None
    fault_proxy.heal()
    assert wait_until(lambda: _scheduled(core, namespace, "big-0"), what="the condition written once healed")[1] == "Unschedulable"
