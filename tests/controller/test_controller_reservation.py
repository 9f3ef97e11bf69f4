"""The starvation guard against the real API server: a PodGroup past its `sla-waiting-time`
holds the node that is free for it, a later small job is kept off that node, the
PodGroup's status says it is reserved, and it starts once the other node drains.

The cluster: nodes n1 and n2 of 4 cpu; a 1-pod filler of 2 cpu runs on n1; a 2 × 4-cpu
gang annotated `sla-waiting-time: 1ms` waits. The guard holds n2 (free) for it; n1 still
has to drain, so it is not held. A 2-cpu job that comes later binds to n1, never to n2.

Backfill: when the filler states `activeDeadlineSeconds: 3600`, n1 is empty within the hour,
so a 3-cpu job with a 10-min deadline takes the held n2, one with 2 h does not, and the gang
still starts on n1 and n2 once both drain.
"""

from __future__ import annotations

import re

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.kubelet import KubeletStandIn
from tests.controller._cluster_queries import bound, condition, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController

CONFIG = ControllerConfig(period_s=0.3, engine="greedy")


def test_an_overdue_gang_holds_its_free_node_against_later_jobs_and_starts_when_the_rest_drains(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("filler", namespace=namespace)))
    admin.create(PODS, namespace, for_api(pod("filler-0", namespace=namespace, group="filler", cpu="2")))
    controller = start_controller(CONFIG)
    wait_until(lambda: bound(core, namespace).get("filler-0") == "n1", what="the filler bound to n1")
    KubeletStandIn(admin, namespace=namespace).mark_running()
    admin.create(NODES, None, for_api(node("n2", cpu=4)))

    big = pod_group("big", namespace=namespace, min_member=2)
    big["metadata"]["annotations"] = {"sla-waiting-time": "1ms"}
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(big))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"big-{i}", namespace=namespace, group="big", cpu="4")))
    reserved = wait_until(
        lambda: (status := pg_status(custom, namespace, "big")) and condition(status).get("reason") == "Reserved" and status,
        what="the gang's status saying it is reserved",
    )
    message = condition(reserved)["message"]
    assert "reservation: waiting" in message and "(1 node held, 0 GPUs to drain)" in message

    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("small", namespace=namespace)))
    admin.create(PODS, namespace, for_api(pod("small-0", namespace=namespace, group="small", cpu="2")))
    wait_until(lambda: bound(core, namespace).get("small-0") == "n1", what="the small job bound beside the filler")
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    assert not any(name.startswith("big-") for name in bound(core, namespace))

    for name in ("filler-0", "small-0"):
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    placed = wait_until(lambda: len(b := {p: n for p, n in bound(core, namespace).items() if p.startswith("big-")}) == 2 and b,
                        what="the gang bound once n1 drained")  # fmt: skip
    assert sorted(placed.values()) == ["n1", "n2"]


def _with_deadline(obj: dict, seconds: int) -> dict:
    obj["spec"]["activeDeadlineSeconds"] = seconds
    return obj


def test_a_short_job_backfills_the_held_node_and_the_overdue_gang_still_starts_when_the_domain_drains(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    kubelet = KubeletStandIn(admin, namespace=namespace)
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("filler", namespace=namespace)))
    filler = pod("filler-0", namespace=namespace, group="filler", cpu="2")
    admin.create(PODS, namespace, for_api(_with_deadline(filler, 3600)))
    controller = start_controller(CONFIG)
    wait_until(lambda: bound(core, namespace).get("filler-0") == "n1", what="the filler bound to n1")
    kubelet.mark_running()
    admin.create(NODES, None, for_api(node("n2", cpu=4)))

    big = pod_group("big", namespace=namespace, min_member=2)
    big["metadata"]["annotations"] = {"sla-waiting-time": "1ms"}
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(big))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"big-{i}", namespace=namespace, group="big", cpu="4")))
    reserved = wait_until(
        lambda: (status := pg_status(custom, namespace, "big")) and condition(status).get("reason") == "Reserved" and status,
        what="the gang's status saying it is reserved",
    )
    message = condition(reserved)["message"]
    assert "(1 node held, 0 GPUs to drain)" in message
    assert re.search(r"; backfill allowed for jobs ending within (59|60) min\b", message)  # the filler's start + 3600 s

    for name, deadline in (("long", 7200), ("short", 600)):  # 3 cpu: only the held n2 has room
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(name, namespace=namespace)))
        job = pod(f"{name}-0", namespace=namespace, group=name, cpu="3")
        admin.create(PODS, namespace, for_api(_with_deadline(job, deadline)))
    wait_until(lambda: bound(core, namespace).get("short-0") == "n2", what="the 10-min job backfilling the held n2")
    kubelet.mark_running()
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    placed = bound(core, namespace)
    assert "long-0" not in placed and not any(name.startswith("big-") for name in placed)

    for name in ("filler-0", "short-0"):  # both end (well within their deadlines): the domain drains
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    started = wait_until(lambda: len(b := {p: n for p, n in bound(core, namespace).items() if p.startswith("big-")}) == 2 and b,
                         what="the gang bound once n1 and n2 drained")  # fmt: skip
    assert sorted(started.values()) == ["n1", "n2"]
    assert "long-0" not in bound(core, namespace)
