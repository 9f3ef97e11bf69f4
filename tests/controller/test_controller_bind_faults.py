"""Faults mid-binding against the real API server and etcd: kube-apiserver killed and
restarted, a node deleted or cordoned, whole jobs (pods and PodGroups) deleted — while the
controller binds a cycle that asks ~120 % of the cluster's GPUs.

After the fault and settling, each test asserts what the issue asks: no node over its
allocatable GPUs, no GPU index held by two pods, no gang bound below its minMember, and
no pending gang that would fit in the GPUs left free.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.act import _assigned_node
from controller.errors import Conflict
from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.testing.control_plane import REPO_ROOT, ControlPlane
from models.loaders.keys import GPUS_ANNOTATION
from tests.controller._cluster_queries import wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group
from tests.controller.conftest import StartController
from tests.controller.fault_proxy import FaultProxy, Faults

GPUS_PER_NODE = 8
POD_GPUS = 2
GANG_PODS = 3  # minMember = every pod: a gang is all bound or all pending


def _cluster(admin: KubeClient, namespace: str, *, nodes: int, gangs: int) -> None:
    for i in range(nodes):
        admin.create(NODES, None, for_api(node(f"node-{i:02}", cpu=64, memory="256Gi", gpus=GPUS_PER_NODE)))
    for g in range(gangs):
        admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group(f"g{g:02}", namespace=namespace, min_member=GANG_PODS)))
        for i in range(GANG_PODS):
            gang_pod = pod(f"g{g:02}-{i}", namespace=namespace, group=f"g{g:02}", cpu="100m", gpus=POD_GPUS)
            admin.create(PODS, namespace, for_api(gang_pod))


def _violations(admin: KubeClient, namespace: str) -> list[str]:
    """What breaks the promises now: overcommit, a GPU held twice, a half gang, a pending gang
    that fits, a pod on a node that is gone or cordoned. [] when none."""
    nodes = {n["metadata"]["name"]: n for n in admin.list(NODES).items}
    pods = admin.list(PODS, namespace=namespace).items
    found: list[str] = []
    used: Counter[str] = Counter()
    held: dict[tuple[str, int], list[str]] = defaultdict(list)
    per_gang: Counter[str] = Counter()
    gangs = {p["metadata"]["name"].split("-")[0] for p in pods}
    for p in pods:
        name, where = p["metadata"]["name"], p["spec"].get("nodeName")
        if not where:
            continue
        per_gang[name.split("-")[0]] += 1
        used[where] += POD_GPUS
        if where not in nodes or nodes[where]["spec"].get("unschedulable"):
            found.append(f"{name} bound to {where}, which is gone or cordoned")
        for index in (p["metadata"].get("annotations") or {}).get(GPUS_ANNOTATION, "").split(","):
            held[(where, int(index))].append(name) if index else found.append(f"{name} on {where} has no GPUs on record")
    found += [f"{n} holds {gpus}/{GPUS_PER_NODE} GPUs" for n, gpus in used.items() if gpus > GPUS_PER_NODE]
    found += [f"GPU {i} of {n} held by {', '.join(names)}" for (n, i), names in held.items() if len(names) > 1]
    found += [f"gang {g} is {count}/{GANG_PODS} bound" for g, count in per_gang.items() if count < GANG_PODS]
    free_slots = sum((GPUS_PER_NODE - used[n]) // POD_GPUS for n, obj in nodes.items() if not obj["spec"].get("unschedulable"))
    pending = sorted(gangs - set(per_gang))
    if pending and free_slots >= GANG_PODS:
        found.append(f"gangs {pending} pending while {free_slots} free {POD_GPUS}-GPU slots would fit one")
    return found


def _settle(admin: KubeClient, namespace: str, controller: Controller, *, timeout_s: float) -> float:
    """Seconds until no promise is broken, then three more cycles in which it stays so."""
    started = time.monotonic()
    while (found := _violations(admin, namespace)) and time.monotonic() - started < timeout_s:
        time.sleep(0.3)
    assert not found, f"not settled after {timeout_s:.0f} s: {found}"
    settled = time.monotonic() - started
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, timeout_s=30, what="three more cycles")
    assert _violations(admin, namespace) == []
    return settled


def _counted(controller: Controller, metric: str, **labels: str) -> float:
    family = getattr(controller.metrics, metric)
    return sum(s.value for m in family.collect() for s in m.samples
               if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in labels.items()))


def test_a_409_on_a_second_bind_names_the_node_the_pod_is_bound_to(namespace: str, admin: KubeClient) -> None:
    """What act learns a bind from when the pod cannot be read: the API server's own words."""
    admin.create(NODES, None, for_api(node("n1")))
    admin.create(PODS, namespace, for_api(pod("p-0", namespace=namespace)))
    admin.bind(namespace, "p-0", "n1")
    with pytest.raises(Conflict) as refused:
        admin.bind(namespace, "p-0", "n2")
    assert _assigned_node(refused.value.message) == "n1"


# ---- kube-apiserver killed mid-binding ----


@pytest.fixture
def own_plane() -> Iterator[ControlPlane]:
    """A control plane of this test's own, so killing its API server disturbs no other test."""
    with ControlPlane() as plane:
        plane.apply_yaml(REPO_ROOT / "deploy" / "rbac.yaml")
        yield plane


def test_apiserver_killed_mid_binding_and_restarted_leaves_nothing_overcommitted(own_plane: ControlPlane, tmp_path: Path) -> None:
    admin = KubeClient.from_kubeconfig(own_plane.admin_kubeconfig)
    own_plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jobs"}})
    _cluster(admin, "jobs", nodes=16, gangs=26)  # 128 GPUs; 26 gangs × 6 GPUs = 156 asked (122 %)
    config = ControllerConfig(period_s=0.3, engine="greedy")
    kubeconfig = own_plane.write_kubeconfig(tmp_path / "controller", token=own_plane.controller_token)
    controller = Controller(KubeClient.from_kubeconfig(kubeconfig, pool_size=config.api_connections()), config)
    stop = threading.Event()
    controller.start(stop)
    try:
        wait_until(lambda: _counted(controller, "pods_bound") >= 12, timeout_s=60, interval_s=0.001, what="binding under way")
        own_plane.kill_apiserver()
        killed = time.monotonic()
        landed = _counted(controller, "pods_bound")
        # While the API server is down the caches are behind: /readyz says so, and no cycle plans.
        wait_until(lambda: "caches behind" in controller.not_ready_reason(), timeout_s=8, what="/readyz naming the caches behind")
        assert not controller.ready()
        time.sleep(max(0.0, 8.0 - (time.monotonic() - killed)))
        own_plane.restart_apiserver()
        settled = _settle(admin, "jobs", controller, timeout_s=60)
        print(f"killed after {landed:.0f} binds; settled {settled:.1f} s after the restart; "
              f"binds of unknown outcome {_counted(controller, 'bind_failures', reason='unknown'):.0f}")
        assert _counted(controller, "bind_failures") > 0, "the outage failed no bind: it came after the cycle"
        assert _counted(controller, "cycles", result="caches_behind") >= 1
        assert controller.ready(), controller.not_ready_reason()
    finally:
        stop.set()
        controller.join(5)


# ---- a node, pods and PodGroups deleted mid-bind (the session's API server, through the proxy) ----


def _start_proxied(
    control_plane: ControlPlane, proxy: FaultProxy, start_controller: StartController, tmp_path: Path, faults: Faults
) -> Controller:
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "proxied", token=control_plane.controller_token, server=proxy.url)
    proxy.faults = faults
    return start_controller(ControllerConfig(period_s=0.3, engine="greedy"), kubeconfig=kubeconfig)


def _binding(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/binding")


def _node_read_or_binding(method: str, path: str) -> bool:
    return _binding(method, path) or (method == "GET" and path.startswith("/api/v1/nodes/"))


def test_a_node_deleted_and_one_cordoned_mid_bind_get_no_pods_and_their_gangs_go_elsewhere(
    namespace: str,
    control_plane: ControlPlane,
    admin: KubeClient,
    fault_proxy: FaultProxy,
    start_controller: StartController,
    tmp_path: Path,
) -> None:
    _cluster(admin, namespace, nodes=8, gangs=13)  # 64 GPUs; 13 gangs × 6 GPUs = 78 asked (122 %)
    # The first cycle's node reads and binds are held 1 s on their way: the node is deleted
    # (and another cordoned) after the snapshot and before the API server sees them.
    faults = Faults(delay_s=1.0, match=_node_read_or_binding)
    controller = _start_proxied(control_plane, fault_proxy, start_controller, tmp_path, faults)
    wait_until(lambda: fault_proxy.counts.delayed >= 1, interval_s=0.005, what="the first gang's node read or bind in flight")
    admin.delete(NODES, None, "node-03")
    admin.patch(NODES, None, "node-05", {"spec": {"unschedulable": True}})
    fault_proxy.heal()
    settled = _settle(admin, namespace, controller, timeout_s=60)
    print(f"settled {settled:.1f} s after the node was deleted")
    refused = _counted(controller, "bind_failures", reason="node_gone") + _counted(controller, "bind_failures", reason="node_cordoned")
    assert refused >= 1, "no gang was refused for its node: the fault came too late to test anything"


def test_jobs_deleted_mid_bind_pods_and_podgroups_leave_no_half_gang_and_their_room_is_used(
    namespace: str,
    control_plane: ControlPlane,
    admin: KubeClient,
    fault_proxy: FaultProxy,
    start_controller: StartController,
    tmp_path: Path,
) -> None:
    _cluster(admin, namespace, nodes=8, gangs=13)
    faults = Faults(delay_s=0.7, match=_binding)  # binds held 0.7 s on their way
    controller = _start_proxied(control_plane, fault_proxy, start_controller, tmp_path, faults)
    wait_until(lambda: fault_proxy.counts.delayed >= 8, interval_s=0.005, what="binds in flight")
    # Two jobs the cycle is binding (the oldest gangs go first) deleted as a user deletes
    # them, in either order: PodGroup then pods, pods then PodGroup.
    first, second = "g00", "g01"
    admin.delete(VOLCANO_PODGROUPS, namespace, first)
    for name in (f"{first}-{i}" for i in range(GANG_PODS)):
        admin.delete(PODS, namespace, name, grace_period_s=0)
    for name in (f"{second}-{i}" for i in range(GANG_PODS)):
        admin.delete(PODS, namespace, name, grace_period_s=0)
    admin.delete(VOLCANO_PODGROUPS, namespace, second)
    fault_proxy.heal()
    settled = _settle(admin, namespace, controller, timeout_s=60)
    print(f"settled {settled:.1f} s after the jobs were deleted")
    left = {p["metadata"]["name"].split("-")[0] for p in admin.list(PODS, namespace=namespace).items}
    assert not left & {first, second}

