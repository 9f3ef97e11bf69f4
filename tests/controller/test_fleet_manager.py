"""The manager controller against real clusters: a manager and two workers, each its own
etcd + kube-apiserver on the loopback. A job submitted to the manager is dispatched to the
worker where it fits, bound there by that worker's batchplace controller, run and completed,
its status and Events mirrored back; a worker killed mid-dispatch and a partitioned one lose
their jobs to the other worker, and nothing runs twice; a second manager takes over."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from controller.fleet_manager import ATTEMPT_ANNOTATION, CLUSTER_ANNOTATION, MANAGER_UID_LABEL
from controller.kinds import VCJOBS
from controller.kube import KubeClient
from controller.leader import LeaseConfig
from controller.testing.control_plane import REPO_ROOT
from controller.testing.fleet import Member, finish_pods, gpu_vcjob, start_manager
from tests.controller._cluster_queries import wait_until
from tests.controller.fault_proxy import FaultProxy

WAIT_S = 40.0


@pytest.fixture(scope="module")
def fleet() -> Iterator[dict[str, Member]]:
    members = {name: Member.start(name) for name in ("manager", "gpu-west", "gpu-east")}
    try:
        for name in ("gpu-west", "gpu-east"):
            members[name].run_worker()
        yield members
    finally:
        for member in members.values():
            member.stop()


@pytest.fixture
def namespace(fleet: dict[str, Member]) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    for member in fleet.values():
        member.namespace(name)
    yield name
    for member in fleet.values():
        member.clean()


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _annotations(member: Member, namespace: str, name: str) -> dict[str, str]:
    return member.vcjob(namespace, name)["metadata"].get("annotations") or {}


def _phase(member: Member, namespace: str, name: str) -> str:
    return ((member.vcjob(namespace, name).get("status") or {}).get("state") or {}).get("phase", "")


def _running(member: Member, namespace: str, job: str, count: int) -> bool:
    pods = member.pods_of(namespace, job)
    return len(pods) == count and all(p.spec.node_name and p.status.phase == "Running" for p in pods)


def _events(member: Member, namespace: str, job: str) -> list[tuple[str, str]]:
    items = member.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={job}").items
    return [(e.reason, e.message) for e in items]


def _dispatched_bound_completed_and_mirrored(
    fleet: dict[str, Member], namespace: str, stop: threading.Event, *, client: KubeClient, workers: dict[str, KubeClient]
) -> None:
    """A 2×8-GPU job submitted to the manager, which reaches its cluster with `client` and the
    workers with `workers`: dispatched to gpu-east (gpu-west is 8 GPUs short), bound and run
    there, completed, its status and a worker Event mirrored back."""
    manager, west, east = fleet["manager"], fleet["gpu-west"], fleet["gpu-east"]
    west.gpu_node("west-0")
    east.gpu_node("east-0")
    east.gpu_node("east-1")
    manager.admin.create(VCJOBS, namespace, gpu_vcjob("llm", namespace=namespace, replicas=2, gpus=8))
    lease = LeaseConfig(identity="rbac", namespace="batchplace-system", name="batchplace-manager",
                        lease_duration_s=3.0, renew_deadline_s=2.0, retry_period_s=0.5)
    fleet_manager = start_manager(manager, workers, stop=stop, client=client, lease=lease)
    wait_until(fleet_manager.is_leader, timeout_s=WAIT_S, what="the manager leads")

    wait_until(lambda: _annotations(manager, namespace, "llm").get(CLUSTER_ANNOTATION) == "gpu-east", timeout_s=WAIT_S, what="dispatch")
    assert _annotations(manager, namespace, "llm")[ATTEMPT_ANNOTATION] == "1"
    wait_until(lambda: _running(east, namespace, "llm", 2), timeout_s=WAIT_S, what="bound and running in gpu-east")
    assert {p.spec.node_name for p in east.pods_of(namespace, "llm")} == {"east-0", "east-1"}
    (copy,) = east.vcjobs(namespace)
    assert copy["metadata"]["labels"][MANAGER_UID_LABEL] == manager.vcjob(namespace, "llm")["metadata"]["uid"]
    assert west.vcjobs(namespace) == [] and west.pods_of(namespace, "llm") == []
    wait_until(lambda: _phase(manager, namespace, "llm") == "Running", timeout_s=WAIT_S, what="status Running mirrored")
    status = manager.vcjob(namespace, "llm")["status"]
    assert (status["running"], status["minAvailable"]) == (2, 2)
    assert status["state"]["message"].startswith("gpu-east: 2 of 2 pods bound")

    finish_pods(east, namespace, "llm")
    wait_until(lambda: _phase(manager, namespace, "llm") == "Completed", timeout_s=WAIT_S, what="status Completed mirrored")
    events = _events(manager, namespace, "llm")
    dispatched = [message for reason, message in events if reason == "Dispatched"]
    assert len(dispatched) == 1 and "gpu-west: 8 gpu short" in dispatched[0]
    wait_until(lambda: any(message.startswith("gpu-east: ") for _, message in _events(manager, namespace, "llm")),
               timeout_s=WAIT_S, what="a worker Event mirrored")


def test_a_job_is_dispatched_where_it_fits_bound_there_completed_and_mirrored(
    fleet: dict[str, Member], namespace: str, stop: threading.Event
) -> None:
    fleet["manager"].namespace("batchplace-system")
    workers = {"gpu-west": fleet["gpu-west"].admin, "gpu-east": fleet["gpu-east"].admin}
    _dispatched_bound_completed_and_mirrored(fleet, namespace, stop, client=fleet["manager"].admin, workers=workers)


def test_the_manager_needs_no_more_than_its_manifests_grant(
    fleet: dict[str, Member], namespace: str, stop: threading.Event, tmp_path: Path
) -> None:
    """The same outcome with the manager running as its ServiceAccount everywhere, with only
    deploy/multicluster/manager-rbac.yaml in the manager and worker-rbac.yaml in each worker."""
    fleet["manager"].plane.apply_yaml(REPO_ROOT / "deploy" / "multicluster" / "manager-rbac.yaml")
    for name in ("gpu-west", "gpu-east"):
        fleet[name].plane.apply_yaml(REPO_ROOT / "deploy" / "multicluster" / "worker-rbac.yaml")
    kubeconfigs = {name: member.kubeconfig(tmp_path / f"{name}.kubeconfig", token=member.plane.manager_token)
                   for name, member in fleet.items()}
    workers = {name: KubeClient.from_kubeconfig(kubeconfigs[name]) for name in ("gpu-west", "gpu-east")}
    _dispatched_bound_completed_and_mirrored(fleet, namespace, stop, client=KubeClient.from_kubeconfig(kubeconfigs["manager"]),
                                             workers=workers)

    # And no more: in a worker it may not make pods nor bind them (its batchplace controller
    # does), in the manager it may not delete what users submit.
    east = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(kubeconfigs["gpu-east"])))
    manager = k8s.CustomObjectsApi(k8s_config.new_client_from_config(config_file=str(kubeconfigs["manager"])))
    pod = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="intruder"), spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="x")]))
    binding = k8s.V1Binding(metadata=k8s.V1ObjectMeta(name="intruder"), target=k8s.V1ObjectReference(kind="Node", name="east-0"))
    for forbidden in (
        lambda: east.create_namespaced_pod(namespace, pod),
        lambda: east.create_namespaced_pod_binding("intruder", namespace, binding),
        lambda: manager.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs", "llm"),
    ):
        with pytest.raises(ApiException) as raised:
            forbidden()
        assert raised.value.status == 403
    assert fleet["manager"].vcjob(namespace, "llm")["metadata"]["name"] == "llm"


def test_a_job_that_fits_nowhere_waits_with_a_reason_per_cluster(
    fleet: dict[str, Member], namespace: str, stop: threading.Event
) -> None:
    manager, west, east = fleet["manager"], fleet["gpu-west"], fleet["gpu-east"]
    west.gpu_node("west-0")
    east.gpu_node("east-0")
    manager.admin.create(VCJOBS, namespace, gpu_vcjob("big", namespace=namespace, replicas=2, gpus=8))
    fleet_manager = start_manager(manager, {"gpu-west": west.admin, "gpu-east": east.admin}, stop=stop)
    wait_until(lambda: any(r == "Unschedulable" for r, _ in _events(manager, namespace, "big")), timeout_s=WAIT_S, what="a reason")
    (message,) = [m for r, m in _events(manager, namespace, "big") if r == "Unschedulable"]
    assert message == "cluster: gpu-west: 8 gpu short (8 free, 16 to start); gpu-east: 8 gpu short (8 free, 16 to start)"
    assert CLUSTER_ANNOTATION not in _annotations(manager, namespace, "big")
    assert fleet_manager.last_cycle is not None and fleet_manager.last_cycle.dispatched == ()
    assert west.vcjobs(namespace) == [] and east.vcjobs(namespace) == []


def test_a_worker_killed_mid_dispatch_loses_its_job_to_another_worker(
    fleet: dict[str, Member], namespace: str, stop: threading.Event
) -> None:
    manager, east = fleet["manager"], fleet["gpu-east"]
    north = Member.start("gpu-north")
    try:
        north.namespace(namespace)
        north.gpu_node("north-0")
        north.run_worker(job_controller=False)  # the copy is made but never expanded: mid-dispatch
        manager.admin.create(VCJOBS, namespace, gpu_vcjob("llm", namespace=namespace, replicas=1, gpus=8))
        start_manager(manager, {"gpu-north": north.admin, "gpu-east": east.admin}, stop=stop, worker_lost_s=1.0)
        wait_until(lambda: _annotations(manager, namespace, "llm").get(CLUSTER_ANNOTATION) == "gpu-north", timeout_s=WAIT_S, what="dispatch")
        wait_until(lambda: north.vcjobs(namespace), timeout_s=WAIT_S, what="the copy in gpu-north")
        north.stop()  # etcd and kube-apiserver gone: the worker is dead
        east.gpu_node("east-0")
        wait_until(lambda: _annotations(manager, namespace, "llm").get(CLUSTER_ANNOTATION) == "gpu-east", timeout_s=WAIT_S, what="re-dispatch")
        assert _annotations(manager, namespace, "llm")[ATTEMPT_ANNOTATION] == "2"
        wait_until(lambda: _running(east, namespace, "llm", 1), timeout_s=WAIT_S, what="running in gpu-east")
        assert any(reason == "WorkerLost" for reason, _ in _events(manager, namespace, "llm"))
        wait_until(lambda: _phase(manager, namespace, "llm") == "Running", timeout_s=WAIT_S, what="status mirrored")
    finally:
        north.stop()


def test_a_partitioned_worker_loses_its_job_and_its_copy_is_deleted_when_it_answers_again(
    fleet: dict[str, Member], namespace: str, stop: threading.Event, tmp_path: Path
) -> None:
    manager, west, east = fleet["manager"], fleet["gpu-west"], fleet["gpu-east"]
    proxy = FaultProxy(west.plane.url, ca_file=str(west.plane.ca_file)).start()
    try:
        west_via_proxy = KubeClient.from_kubeconfig(west.kubeconfig(tmp_path / "west.kubeconfig", server=proxy.url))
        west.gpu_node("west-0")
        manager.admin.create(VCJOBS, namespace, gpu_vcjob("llm", namespace=namespace, replicas=1, gpus=8))
        start_manager(manager, {"gpu-west": west_via_proxy, "gpu-east": east.admin}, stop=stop, worker_lost_s=1.0)
        wait_until(lambda: _running(west, namespace, "llm", 1), timeout_s=WAIT_S, what="running in gpu-west")
        proxy.faults.fail_rate = 1.0  # every request to gpu-west answered 500: cut off, but alive
        east.gpu_node("east-0")
        wait_until(lambda: _running(east, namespace, "llm", 1), timeout_s=WAIT_S, what="running again in gpu-east")
        assert _annotations(manager, namespace, "llm") == {**_annotations(manager, namespace, "llm"),
                                                            CLUSTER_ANNOTATION: "gpu-east", ATTEMPT_ANNOTATION: "2"}
        proxy.heal()
        wait_until(lambda: west.vcjobs(namespace) == [] and west.pods_of(namespace, "llm") == [], timeout_s=WAIT_S,
                   what="the stale copy deleted from gpu-west")
        assert _running(east, namespace, "llm", 1)
    finally:
        proxy.stop()


def test_a_second_manager_takes_over_and_dispatches_nothing_twice(
    fleet: dict[str, Member], namespace: str, stop: threading.Event
) -> None:
    manager, west, east = fleet["manager"], fleet["gpu-west"], fleet["gpu-east"]
    manager.namespace("batchplace-system")
    west.gpu_node("west-0")
    east.gpu_node("east-0")
    east.gpu_node("east-1")
    workers = {"gpu-west": west.admin, "gpu-east": east.admin}
    lease = {"lease_duration_s": 3.0, "renew_deadline_s": 2.0, "retry_period_s": 0.5}
    first_stop = threading.Event()
    first = start_manager(manager, workers, stop=first_stop, lease=LeaseConfig(identity="first", namespace="batchplace-system", **lease))
    wait_until(first.is_leader, timeout_s=WAIT_S, what="the first manager leads")
    second = start_manager(manager, workers, stop=stop, lease=LeaseConfig(identity="second", namespace="batchplace-system", **lease))
    manager.admin.create(VCJOBS, namespace, gpu_vcjob("one", namespace=namespace, replicas=1, gpus=8))
    wait_until(lambda: _annotations(manager, namespace, "one").get(CLUSTER_ANNOTATION), timeout_s=WAIT_S, what="first dispatch")
    assert not second.is_leader()
    first_stop.set()
    first.join(10)
    # A leader that recorded a dispatch and died before making the copy: the next one makes it.
    manager.admin.create(VCJOBS, namespace, {**gpu_vcjob("two", namespace=namespace, replicas=1, gpus=8),
                                              "metadata": {"name": "two", "namespace": namespace,
                                                           "annotations": {CLUSTER_ANNOTATION: "gpu-east", ATTEMPT_ANNOTATION: "1"}}})
    wait_until(second.is_leader, timeout_s=WAIT_S, what="the second manager takes over")
    manager.admin.create(VCJOBS, namespace, gpu_vcjob("three", namespace=namespace, replicas=1, gpus=8))
    for job in ("one", "two", "three"):
        wait_until(lambda job=job: _phase(manager, namespace, job) == "Running", timeout_s=WAIT_S, what=f"{job} running")
        assert _annotations(manager, namespace, job)[ATTEMPT_ANNOTATION] == "1", job
        where = _annotations(manager, namespace, job)[CLUSTER_ANNOTATION]
        other = west if where == "gpu-east" else east
        assert [c["metadata"]["name"] for c in fleet[where].vcjobs(namespace)].count(job) == 1
        assert other.pods_of(namespace, job) == []
    assert _annotations(manager, namespace, "two")[CLUSTER_ANNOTATION] == "gpu-east"
    assert sum(1 for reason, _ in _events(manager, namespace, "one") if reason == "Dispatched") == 1
