"""The Kubernetes Workload API (`scheduling.k8s.io` Workload and PodGroup) in the controller:
watched at the newest version the server serves, read as nothing where it serves none, fed to
the loader with the version it was read at, and a PodGroup's condition written as
kube-scheduler writes it (`controller.status`).

A discovery source stands in for the server here, serving each version as asked; the live
test (test_workload_api_live) has a real API server serve them as CRDs."""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone

from controller import status as status_text
from controller.caches import ClusterCaches
from controller.kinds import (
    KUBE_PODGROUPS,
    KUBE_PODGROUPS_V1ALPHA2,
    KUBE_WORKLOADS,
    KUBE_WORKLOADS_V1ALPHA1,
    KUBE_WORKLOADS_V1ALPHA2,
    WORKLOAD_API_KINDS,
)
from controller.kube import ListResult
from controller.loop import wait_for
from controller.observe import ClusterView, observe
from models.snapshot import PodGroupKey
from tests.controller._controller_builders import node, pod


def _kube_pod_group(name: str, min_count: int) -> dict:
    """A PodGroup as the server lists it: no apiVersion or kind on list items."""
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def _workload(name: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    }


class _Server:
    """A discovery source serving `served` (and every built-in kind), with `objects` per kind."""

    def __init__(self, served: set, objects: dict) -> None:
        self._served = served
        self._objects = objects
        self.listed: list = []

    def served(self, kinds):
        return {kind for kind in kinds if kind in self._served}

    def list(self, kind):
        self.listed.append(kind)
        return ListResult(items=list(self._objects.get(kind, [])), resource_version="1")

    def watch(self, kind, *, resource_version, timeout_s=300):
        time.sleep(0.05)
        return iter(())


def _view(server: _Server) -> tuple[ClusterCaches, ClusterView]:
    caches = ClusterCaches(server, scheduler_names=("batchplace",), rediscover_s=0.01)
    stop = threading.Event()
    caches.start(stop)
    try:
        assert caches.wait_synced(5)
        assert wait_for(lambda: caches.synced() and len(server.listed) >= 1, 5)
        return caches, caches.view()
    finally:
        stop.set()
        caches.join()


def test_a_server_serving_both_versions_is_read_at_v1beta1_only() -> None:
    """Both versions hold the same objects: reading both would count each gang twice."""
    server = _Server(
        set(WORKLOAD_API_KINDS),
        {KUBE_PODGROUPS: [_kube_pod_group("g", 2)], KUBE_PODGROUPS_V1ALPHA2: [_kube_pod_group("g", 2)],
         KUBE_WORKLOADS: [_workload("w")], KUBE_WORKLOADS_V1ALPHA2: [_workload("w")]},
    )
    caches, view = _view(server)
    assert caches.informer(KUBE_PODGROUPS) is not None and caches.informer(KUBE_WORKLOADS) is not None
    assert caches.informer(KUBE_PODGROUPS_V1ALPHA2) is None and caches.informer(KUBE_WORKLOADS_V1ALPHA2) is None
    assert [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in view.kube_pod_groups] == [
        ("scheduling.k8s.io/v1beta1", "PodGroup", "g")
    ]
    assert [(o["apiVersion"], o["kind"]) for o in view.kube_workloads] == [("scheduling.k8s.io/v1beta1", "Workload")]


def test_a_server_serving_v1alpha2_alone_is_read_at_v1alpha2() -> None:
    server = _Server(
        {KUBE_PODGROUPS_V1ALPHA2, KUBE_WORKLOADS_V1ALPHA2},
        {KUBE_PODGROUPS_V1ALPHA2: [_kube_pod_group("g", 2)], KUBE_WORKLOADS_V1ALPHA2: [_workload("w")]},
    )
    _, view = _view(server)
    assert [o["apiVersion"] for o in view.kube_pod_groups] == ["scheduling.k8s.io/v1alpha2"]
    assert [o["apiVersion"] for o in view.kube_workloads] == ["scheduling.k8s.io/v1alpha2"]


def test_a_1_35_server_s_v1alpha1_workloads_are_read_where_nothing_newer_is_served() -> None:
    """1.35's Workload (v1alpha1): pod groups inline, no PodGroup objects."""
    inline = {"metadata": {"name": "w", "namespace": "ns"},
              "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}}
    server = _Server({KUBE_WORKLOADS_V1ALPHA1}, {KUBE_WORKLOADS_V1ALPHA1: [inline]})
    caches, view = _view(server)
    assert [o["apiVersion"] for o in view.kube_workloads] == ["scheduling.k8s.io/v1alpha1"]
    assert view.kube_pod_groups == ()
    both = _Server({KUBE_WORKLOADS_V1ALPHA1, KUBE_WORKLOADS_V1ALPHA2}, {KUBE_WORKLOADS_V1ALPHA2: [_workload("w")]})
    caches, view = _view(both)
    assert caches.informer(KUBE_WORKLOADS_V1ALPHA1) is None
    assert [o["apiVersion"] for o in view.kube_workloads] == ["scheduling.k8s.io/v1alpha2"]


def test_a_server_without_the_workload_api_reads_none_and_says_so_once(caplog) -> None:
    caplog.set_level(logging.INFO, logger="controller.caches")
    server = _Server(set(), {})
    caches, view = _view(server)
    assert not any(caches.informer(kind) for kind in WORKLOAD_API_KINDS)
    assert (view.kube_workloads, view.kube_pod_groups) == ((), ())
    said = [r.getMessage() for r in caplog.records if "Workload API" in r.getMessage()]
    assert len(said) == 1


def test_a_kube_pod_group_read_from_the_cluster_is_the_gang_of_the_pods_that_name_it() -> None:
    """The view's objects carry their apiVersion, so `observe` hands them to the loader as read:
    the PodGroup's gang minCount is the gang's minMember."""
    group = {**_kube_pod_group("g", 3), "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup"}
    pods = []
    for index in range(3):
        member = pod(f"g-{index}")
        member["spec"]["schedulingGroup"] = {"podGroupName": "g"}
        pods.append(member)
    observation = observe(
        ClusterView(pods=tuple(pods), nodes=(node("n1", cpu=8),), kube_pod_groups=(group,)), scheduler_names=("batchplace",)
    )
    gang = observation.snapshot.pod_group_by_key[PodGroupKey("ns/g")]
    assert gang.min_member == 3
    assert {p.key for p in observation.snapshot.pods_by_group[gang.key]} == {"ns/g-0", "ns/g-1", "ns/g-2"}


NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
WAITING = status_text.unschedulable(min_member=3, placed=0, total_pods=3, running=0, reasons=["gang: 2 of min 3 pods fit"])
STARTED = status_text.scheduled(min_member=3, placed=3, total_pods=3, running=0)
DISRUPTION = {"type": "DisruptionTarget", "status": "False", "reason": "Fine", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_a_v1alpha2_pod_group_gets_pod_group_scheduled_in_its_status_and_keeps_its_other_conditions() -> None:
    body = status_text.status_patch(WAITING, flavor="kube", min_member=3, observed={"conditions": [DISRUPTION]}, now=NOW,
                                    transition_id="t", api_version="scheduling.k8s.io/v1alpha2")
    assert body == {"status": {"conditions": [DISRUPTION, {
        "type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable", "message": WAITING.message,
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }]}}
    seen = {"conditions": body["status"]["conditions"]}
    assert status_text.is_current(WAITING, flavor="kube", min_member=3, observed=seen, api_version="scheduling.k8s.io/v1alpha2")
    assert not status_text.is_current(STARTED, flavor="kube", min_member=3, observed=seen, api_version="scheduling.k8s.io/v1alpha2")
    later = status_text.status_patch(STARTED, flavor="kube", min_member=3, observed=seen, now=NOW.replace(hour=4),
                                     transition_id="t", api_version="scheduling.k8s.io/v1alpha2")
    (disruption, scheduled) = later["status"]["conditions"]
    assert disruption == DISRUPTION
    assert (scheduled["status"], scheduled["reason"], scheduled["lastTransitionTime"]) == ("True", "Scheduled", "2026-01-02T04:04:05Z")


def test_a_v1beta1_pod_group_s_initially_scheduled_once_true_is_never_written_again() -> None:
    """v1beta1's condition records the first start: a gang evicted later still reads True."""
    started = status_text.status_patch(STARTED, flavor="kube", min_member=3, observed={}, now=NOW, transition_id="t",
                                       api_version="scheduling.k8s.io/v1beta1")
    (condition,) = started["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("PodGroupInitiallyScheduled", "True")
    seen = {"conditions": [condition]}
    assert status_text.is_current(WAITING, flavor="kube", min_member=3, observed=seen, api_version="scheduling.k8s.io/v1beta1")


def test_a_kube_pod_group_read_from_the_cluster_is_written_at_its_own_version() -> None:
    group = {**_kube_pod_group("g", 3), "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup"}
    ref = observe(ClusterView(kube_pod_groups=(group,)), scheduler_names=("batchplace",)).pod_groups[PodGroupKey("ns/g")]
    assert (ref.flavor, ref.kind) == ("kube", KUBE_PODGROUPS_V1ALPHA2)
