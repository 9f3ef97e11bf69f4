"""Faults found when the controller starts, against the real API server: an overcommitted
node (as a restarted API server or a paused leader leaves it) and half gangs inherited (as a
crash mid-gang leaves them). Each asserts, once settled (`_settled`): no node over its
allocatable, no GPU index held twice, no half gang, nothing pending that fits.

Pods are bound before the controller starts, through the binding subresource (the API
server sets their PodScheduled time: the repair's "bound last"); a kubelet stand-in marks
bound pods Running and finishes evicted ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.plan import OVERCOMMITTED
from controller.testing.kubelet import KubeletStandIn
from tests.controller._cluster_queries import bound, condition, events, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller._settled import settled_problems
from tests.controller.conftest import StartController

CONFIG = ControllerConfig(period_s=0.2, engine="greedy")


@pytest.fixture
def kubelet(admin: KubeClient, namespace: str) -> Iterator[KubeletStandIn]:
    stand_in = KubeletStandIn(admin, namespace=namespace)
    stop = threading.Event()
    thread = threading.Thread(target=stand_in.run, args=(stop,), kwargs={"interval_s": 0.2}, daemon=True)
    thread.start()
    yield stand_in
    stop.set()
    thread.join(5)


def _bound_pod(admin: KubeClient, namespace: str, name: str, *, on: str, gpus: int, indices: str | None = None,
               group: str | None = None) -> None:
    admin.create(PODS, namespace, for_api(pod(name, namespace=namespace, gpus=gpus, group=group)))
    admin.bind(namespace, name, on, annotations={"batchplace.io/gpus": indices} if indices else {})


def _settle(core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, namespace: str, started: float, *, timeout_s: float = 30) -> float:
    """Seconds from the controller's start until the invariants hold, twice 1 s apart."""
    def sound() -> bool:
        if settled_problems(core, custom, namespace):
            return False
        time.sleep(1.0)
        return not settled_problems(core, custom, namespace)
    try:
        wait_until(sound, timeout_s=timeout_s, interval_s=0.3, what="the cluster settled")
    except AssertionError:
        raise AssertionError(f"not settled: {settled_problems(core, custom, namespace)}") from None
    return time.monotonic() - started - 1.0


def test_an_overcommitted_node_is_reported_and_repaired_by_evicting_the_pods_bound_last(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi,
    start_controller: StartController, kubelet: KubeletStandIn,
) -> None:
    """node-a: GPU 2 held by two pods. node-b: 6 GPUs bound on 4 — the last a pod of gang g
    (minMember 2), whose other pod is on node-a: the gang is cut, so evicted whole. A new
    gang waits for the room."""
    for name in ("node-a", "node-b"):
        admin.create(NODES, None, for_api(node(name, cpu=16, gpus=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("g", namespace=namespace, min_member=2)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("new", namespace=namespace, min_member=2)))
    _bound_pod(admin, namespace, "p1-first", on="node-a", gpus=1, indices="2")
    # "Bound last" is read to the second (the binding's PodScheduled time), then by name: bound
    # in the same second or later, p2 comes after p1 and p4 after p3.
    _bound_pod(admin, namespace, "p2-twice", on="node-a", gpus=1, indices="2")
    _bound_pod(admin, namespace, "p3-big", on="node-b", gpus=4)
    _bound_pod(admin, namespace, "p4-g-0", on="node-b", gpus=2, group="g")
    _bound_pod(admin, namespace, "p5-g-1", on="node-a", gpus=1, indices="0", group="g")
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"new-{i}", namespace=namespace, gpus=1, group="new")))
    assert settled_problems(core, custom, namespace), "the cluster starts overcommitted"

    started = time.monotonic()
    controller = start_controller(CONFIG)
    seconds = _settle(core, custom, namespace, started)

    left = bound(core, namespace)
    assert {"p1-first", "p3-big"} <= set(left), left
    assert not {"p2-twice", "p4-g-0", "p5-g-1"} & set(left), left
    assert {"new-0", "new-1"} <= set(left), "the new gang bound on the room the repair freed"
    overcommitted = wait_until(lambda: [e for e in events(core, "default", reason=OVERCOMMITTED) if e.involved_object.name in ("node-a", "node-b")],
                               what="the Overcommitted Events on the nodes")
    assert {e.involved_object.name for e in overcommitted} == {"node-a", "node-b"}
    assert all(e.type == "Warning" and "is overcommitted" in e.message for e in overcommitted)
    on_pods = wait_until(lambda: len(found := events(core, namespace, reason=OVERCOMMITTED)) == 3 and found, what="an Event on each victim")
    assert {e.involved_object.name for e in on_pods} == {"p2-twice", "p4-g-0", "p5-g-1"}
    assert "cut to 1 bound pod(s), below its minMember 2" in next(e.message for e in on_pods if e.involved_object.name == "p5-g-1")
    assert controller.metrics.registry.get_sample_value("batchplace_repairs_total") == 3
    print(f"settled in {seconds:.1f} s")


def test_inherited_half_gangs_are_completed_before_new_gangs_or_released(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi,
    start_controller: StartController, kubelet: KubeletStandIn,
) -> None:
    """Five 4-GPU nodes. One pod of each of six gangs (minMember 3, one GPU a pod) is bound
    before the controller starts, as a crash mid-gang leaves them; gang old-5 has only two
    pods, so it can never be completed. Four new gangs of the same shape, their PodGroups
    older, compete for the 14 free GPUs: first come would give them 12 and leave every old
    gang half. The old gangs complete first; old-5 is released after its time."""
    for i in range(5):
        admin.create(NODES, None, for_api(node(f"node-{i}", cpu=32, gpus=4)))
    for j in range(4):
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(f"new-{j}", namespace=namespace, min_member=3)))
        for k in range(3):
            admin.create(PODS, namespace, for_api(pod(f"new-{j}-{k}", namespace=namespace, gpus=1, group=f"new-{j}")))
    for i in range(6):
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(f"old-{i}", namespace=namespace, min_member=3)))
        _bound_pod(admin, namespace, f"old-{i}-0", on=f"node-{i % 5}", gpus=1, indices=str(i // 5), group=f"old-{i}")
        for k in range(1, 2 if i == 5 else 3):
            admin.create(PODS, namespace, for_api(pod(f"old-{i}-{k}", namespace=namespace, gpus=1, group=f"old-{i}")))

    started = time.monotonic()
    start_controller(ControllerConfig(period_s=0.2, time_limit_s=1.0, partial_gang_release_s=3.0))
    seconds = _settle(core, custom, namespace, started)

    left = bound(core, namespace)
    for i in range(5):
        assert {f"old-{i}-{k}" for k in range(3)} <= set(left), f"old-{i} not completed: {sorted(left)}"
    assert not {"old-5-0", "old-5-1"} & set(left), "old-5 released"
    new_bound = {name.rsplit("-", 1)[0] for name in left if name.startswith("new-")}
    assert len(new_bound) == 1 and sum(1 for name in left if name.startswith("new-")) == 3, sorted(left)
    # The release's sentence stays in old-5's status while it waits to be placed again.
    message = condition(pg_status(custom, namespace, "old-5")).get("message", "")
    assert "gang: 1 of min 3 bound for" in message and "released to be placed whole" in message, message
    (event,) = wait_until(lambda: events(core, namespace, name="old-5", reason="GangReleased"), what="the GangReleased Event")
    assert event.type == "Warning" and event.involved_object.kind == "PodGroup"
    print(f"settled in {seconds:.1f} s")
