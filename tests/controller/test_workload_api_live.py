"""The Kubernetes Workload API (`scheduling.k8s.io` Workload and PodGroup) through the
controller, against a real API server serving it as CRDs built from the upstream schemas
(`deploy/workload-crds/`, test clusters only).

kube-apiserver v1.20 serves `scheduling.k8s.io` itself (PriorityClass), and its handler for a
group it serves answers every path under that group: a CRD of the group is accepted and never
served. So this module starts its own control plane with that built-in group turned off
(`--runtime-config`), PriorityClass served by a CRD too and the Priority admission plugin off
(it needs the built-in kind). Then the Workload API is served at v1alpha2 and v1beta1 as a
1.37 server serves it, and the controller's discovery, list and watch are the ones such a
server gets.

What v1.20 still cannot hold: a pod's `spec.schedulingGroup` (and `spec.workloadRef`), which
its Pod type drops on create — so the pods here name their PodGroup by the annotation the
loader also reads (`scheduling.k8s.io/group-name`), and the PodGroup they join is the Workload
API's, read from the API server: its `gang.minCount` is the gang's minimum. The pods' own
link, replica keys and sub-groups, is tested on the pure side (test_workload_api_pure and the
loader's tests)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.kinds import (
    KUBE_PODGROUPS,
    KUBE_PODGROUPS_V1ALPHA2,
    KUBE_WORKLOADS,
    KUBE_WORKLOADS_V1ALPHA2,
    NODES,
    PODS,
)
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.testing.control_plane import REPO_ROOT, ControlPlane
from tests.controller._controller_builders import for_api, node, pod
from tests.controller._cluster_queries import wait_until

WORKLOAD_CRDS = REPO_ROOT / "deploy" / "workload-crds"
NAMESPACE = "wl"
BUILT_IN_SCHEDULING_OFF = (
    "--runtime-config=scheduling.k8s.io/v1=false,scheduling.k8s.io/v1beta1=false,scheduling.k8s.io/v1alpha1=false",
    "--disable-admission-plugins=Priority",
)


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with ControlPlane(extra_apiserver_args=BUILT_IN_SCHEDULING_OFF) as started:
        started.install_crds(sorted(WORKLOAD_CRDS.glob("*.yaml")))
        started.apply_yaml(REPO_ROOT / "deploy" / "rbac.yaml")
        yield started


@pytest.fixture
def admin(plane: ControlPlane) -> KubeClient:
    return KubeClient.from_kubeconfig(plane.admin_kubeconfig)


@pytest.fixture
def controller(plane: ControlPlane, tmp_path: Path) -> Iterator[Controller]:
    """Batchplace's controller as its ServiceAccount (only what deploy/rbac.yaml grants)."""
    kubeconfig = plane.write_kubeconfig(tmp_path / "controller.kubeconfig", token=plane.controller_token)
    config = ControllerConfig(period_s=0.3, time_limit_s=1.0)
    started = Controller(KubeClient.from_kubeconfig(kubeconfig, pool_size=config.api_connections()), config)
    stop = threading.Event()
    started.start(stop)
    assert started.caches.wait_synced(30), "the controller's caches did not sync"
    yield started
    stop.set()
    started.join(5)


def _bound(admin: KubeClient) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in admin.list(PODS, namespace=NAMESPACE).items
            if p["spec"].get("nodeName")}


def test_the_workload_api_is_watched_at_v1beta1_and_a_pod_group_s_min_count_is_its_gang_and_its_condition_says_so_live(
    plane: ControlPlane, admin: KubeClient, controller: Controller
) -> None:
    """A v1beta1 PodGroup of gang minCount 3 and its 3 pods of 3 cpu, on 4-cpu nodes (a node
    each): with two nodes nothing binds (3 of min 3 cannot start on 2) and its
    `PodGroupInitiallyScheduled` condition says False, Unschedulable, why; with a third all
    three bind at once and the condition turns True, Scheduled — as kube-scheduler writes it."""
    assert controller.caches.informer(KUBE_PODGROUPS) is not None and controller.caches.informer(KUBE_WORKLOADS) is not None
    assert controller.caches.informer(KUBE_PODGROUPS_V1ALPHA2) is None and controller.caches.informer(KUBE_WORKLOADS_V1ALPHA2) is None
    admin.create(NODES, None, for_api(node("n1", cpu=4)))
    admin.create(NODES, None, for_api(node("n2", cpu=4)))
    plane.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
    admin.create(KUBE_WORKLOADS, NAMESPACE, {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "train", "namespace": NAMESPACE},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}]},
    })
    admin.create(KUBE_PODGROUPS, NAMESPACE, {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "train-workers", "namespace": NAMESPACE},
        "spec": {"workloadRef": {"workloadName": "train", "podGroupTemplateName": "workers"},
                 "schedulingPolicy": {"gang": {"minCount": 3}}},
    })
    for index in range(3):
        admin.create(PODS, NAMESPACE, for_api(pod(f"train-{index}", namespace=NAMESPACE, group="train-workers", cpu="3")))
    wait_until(lambda: controller.caches.informer(KUBE_PODGROUPS) and len(controller.caches.informer(KUBE_PODGROUPS)) == 1,
               what="the PodGroup in the controller's cache")
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three cycles")
    assert _bound(admin) == {}, "a gang of min 3 bound in part"
    (group,) = controller.caches.view().kube_pod_groups
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    waiting = wait_until(lambda: _condition(admin), what="the PodGroup's condition")
    assert (waiting["status"], waiting["reason"]) == ("False", "Unschedulable")
    assert waiting["message"].startswith("3/3 tasks in gang unschedulable: ")
    admin.create(NODES, None, for_api(node("n3", cpu=4)))
    bound = wait_until(lambda: len(_bound(admin)) == 3 and _bound(admin), what="the gang bound whole")
    assert sorted(bound.values()) == ["n1", "n2", "n3"]
    started = wait_until(lambda: (c := _condition(admin)) and c["status"] == "True" and c, what="the PodGroup scheduled")
    assert started["reason"] == "Scheduled" and started["lastTransitionTime"]


def _condition(admin: KubeClient) -> dict | None:  # type: ignore[type-arg]
    """The PodGroup's `PodGroupInitiallyScheduled` condition (v1beta1), as the API server has it."""
    conditions = (admin.get(KUBE_PODGROUPS, NAMESPACE, "train-workers").get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodGroupInitiallyScheduled"), None)
