"""Gang semantics as Volcano's, through the controller: a PodGroup whose `minMember` is
below the sum of its `minTaskMember` starts on `minMember` pods and takes every further pod
that fits.

The PodGroup and pods are written here as Volcano's job controller writes them for the
quick-start vcjob (20 replicas × 4 CPU, `minAvailable: 4`, the task's own minAvailable
unset): `minMember: 4`, `minTaskMember: {worker: 20}`, each pod annotated with
`scheduling.k8s.io/group-name`, `volcano.sh/job-name` and `volcano.sh/task-spec` — not
expanded by our own loader, so a misreading of `minTaskMember` shows here. The cluster:
four 8-CPU nodes, room for 8 of the 20 pods.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

from kubernetes import client as k8s

from controller.act import Actuator
from controller.assumed import AssumedPods
from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.metrics import ControllerMetrics
from controller.observe import ClusterView, observe
from controller.plan import plan
from solver.rules.gang import gang_requirement
from tests.builders import solve_checked
from tests.controller._cluster_queries import bound, condition, events, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, pod, pod_group, volcano_job_objects
from tests.controller._dra_cycle import cached_view
from tests.controller.conftest import StartController

NODE_NAMES = [f"cpu-{i}" for i in range(4)]
ENGINES = ("greedy", "cpsat")


def _quick_start_job(namespace: str) -> list[dict]:  # type: ignore[type-arg]
    return volcano_job_objects("gang-job", namespace=namespace, min_available=4, tasks={"worker": (20, None)}, cpu="4")


def test_observe_reads_min_task_member_and_the_gang_keeps_min_member_only() -> None:
    group, *pods = _quick_start_job("ns")
    nodes = tuple(node(name, cpu=8, memory="16Gi") for name in NODE_NAMES)
    view = ClusterView(nodes=nodes, volcano_pod_groups=(group,), pods=tuple(pods))
    observation = observe(view, scheduler_names=("batchplace",))
    snapshot = observation.snapshot
    (pod_group,) = snapshot.pod_groups
    assert (pod_group.min_member, [(t.name, t.min_available) for t in pod_group.tasks]) == (4, [("worker", 20)])
    assert len(snapshot.pods) == 20
    requirement = gang_requirement(snapshot, pod_group)
    assert not requirement.task_minimums_apply and requirement.min_member == 4
    for engine in ENGINES:
        decision = solve_checked(snapshot, engine, time_limit_s=10)
        (gang,) = plan(observation, decision).gangs
        assert len(gang.binds) == 8, engine
        assert gang.status is not None and gang.status.status.phase == "Running"
        assert gang.status.status.message == "8/20 tasks bound or running, minMember 4"


def test_the_quick_start_job_with_min_available_4_binds_8_pods_live(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    for name in NODE_NAMES:
        admin.create(NODES, None, for_api(node(name, cpu=8, memory="16Gi")))
    group, *pods = _quick_start_job(namespace)
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(group))
    for member in pods:
        admin.create(PODS, namespace, for_api(member))
    controller = start_controller(ControllerConfig(period_s=0.3, time_limit_s=1.0))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 8 and bound(core, namespace), what="eight pods bound")
    assert sorted(nodes.values()) == sorted(NODE_NAMES * 2)
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    assert len(bound(core, namespace)) == 8, "more pods bound than fit"
    status = wait_until(lambda: pg_status(custom, namespace, "gang-job").get("phase") == "Running"
                        and pg_status(custom, namespace, "gang-job"), what="PodGroup Running")
    assert (condition(status)["type"], condition(status)["status"]) == ("Scheduled", "True")
    assert condition(status)["message"] == "8/20 tasks bound or running, minMember 4"
    # Each of the 12 pods left pending says why, as Volcano's FailedScheduling on a started job's pods.
    unbound = {member["metadata"]["name"] for member in pods} - set(nodes)
    failed = wait_until(
        lambda: (found := [e for e in events(core, namespace, reason="FailedScheduling") if e.involved_object.kind == "Pod"])
        and {e.involved_object.name for e in found} == unbound and found,
        what="a FailedScheduling Event on each pending pod",
    )
    assert len(failed) == 12
    assert {(e.type, e.message) for e in failed} == {("Warning", "capacity: task worker: 0/4 nodes fit another pod: 4 insufficient cpu")}
    # The packing keeps room for what it has seen: the job's 20 pods, each counted once.
    (learnt,) = controller.solve_config().typical_shapes
    assert (learnt.cpu_milli, learnt.gpu_milli) == (4000, 0) and 19.9 < learnt.weight <= 20.0


def _podgroup_changes(custom: k8s.CustomObjectsApi, namespace: str, name: str, since: str) -> list[str]:
    """The type of every change of PodGroup `name` after resourceVersion `since`, as the API
    server replays them to a watch started from there."""
    response = custom.list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups", watch=True, resource_version=since,
        field_selector=f"metadata.name={name}", timeout_seconds=1, _preload_content=False,
    )
    return [json.loads(line)["type"] for line in response.data.decode().splitlines() if line.strip()]


def test_a_bound_gang_gets_one_status_write_and_one_scheduled_event_on_its_podgroup_and_none_per_pod(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """Six one-GPU pods on two 4-GPU nodes: each pod's node and devices are on the pod (its
    Binding wrote both), and the gang's PodGroup says once where all of them went."""
    for name in ("gpu-0", "gpu-1"):
        admin.create(NODES, None, for_api(node(name, cpu=16, gpus=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("six", namespace=namespace, min_member=6)))
    for i in range(6):
        admin.create(PODS, namespace, for_api(pod(f"six-{i}", namespace=namespace, group="six", gpus=1)))
    listed = custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")
    controller = start_controller(ControllerConfig(period_s=0.2, time_limit_s=1.0))
    nodes = wait_until(lambda: len(bound(core, namespace)) == 6 and bound(core, namespace), what="the gang bound")
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    (scheduled,) = wait_until(lambda: events(core, namespace, name="six", reason="Scheduled"), what="the gang's Event")

    assert (scheduled.type, scheduled.involved_object.kind, scheduled.source.component) == ("Normal", "PodGroup", "batchplace")
    by_node = {n: sorted(p for p, on in nodes.items() if on == n) for n in sorted(set(nodes.values()))}
    where = ", ".join(f"{n} ({', '.join(pods)})" for n, pods in by_node.items())
    assert scheduled.message == f"Successfully assigned 6 pods to {len(by_node)} nodes: {where}"
    assert [e for e in events(core, namespace) if e.involved_object.kind == "Pod"] == []
    status = pg_status(custom, namespace, "six")
    assert (status["phase"], condition(status)["type"], condition(status)["status"]) == ("Running", "Scheduled", "True")
    since = listed["metadata"]["resourceVersion"]
    assert _podgroup_changes(custom, namespace, "six", since) == ["MODIFIED"], "the PodGroup's status is written once"
    devices: dict[str, list[str]] = {}
    for name, on in nodes.items():
        served = core.read_namespaced_pod(name, namespace)
        scheduled_condition = next(c for c in served.status.conditions if c.type == "PodScheduled")
        assert scheduled_condition.status == "True"  # the API server sets it when it binds
        devices.setdefault(on, []).append(served.metadata.annotations["batchplace.io/gpus"])
    for on, held in devices.items():
        assert sorted(held) == sorted({*held}) and all(d in "0123" for d in held), f"{on}: one distinct GPU per pod: {held}"


def test_a_status_is_not_written_again_over_the_copy_it_was_written_over(
    namespace: str, admin: KubeClient, controller_client: KubeClient
) -> None:
    """The cycle after a bind may start before the watch shows the PodGroup's new status: it
    reads the copy that status was written over and must not write it again (each write is a
    MODIFIED to every watcher). A copy anyone else changed is another copy: written again."""
    admin.create(NODES, None, for_api(node("gpu-0", cpu=16, gpus=4)))
    admin.create(VOLCANO_PODGROUPS, namespace, for_api(pod_group("two", namespace=namespace, min_member=2)))
    for i in range(2):
        admin.create(PODS, namespace, for_api(pod(f"two-{i}", namespace=namespace, group="two", gpus=1)))
    actuator = Actuator(controller_client, assumed=AssumedPods(), metrics=ControllerMetrics())

    def written_on(view: ClusterView) -> bool:
        """Whether acting on `view`, kept to this test's namespace, wrote the PodGroup's status."""
        ours = dataclasses.replace(
            view,
            pods=tuple(p for p in view.pods if p["metadata"]["namespace"] == namespace),
            volcano_pod_groups=tuple(g for g in view.volcano_pod_groups if g["metadata"]["namespace"] == namespace),
        )
        observation = observe(ours, scheduler_names=("batchplace",))
        the_plan = plan(observation, solve_checked(observation.snapshot, "greedy"))
        return actuator.act(the_plan, now=datetime.now(timezone.utc), transition_id="t").statuses_written == 1

    try:
        before = cached_view(controller_client)
        assert written_on(before), "the bind's cycle writes the status"
        assert admin.get(VOLCANO_PODGROUPS, namespace, "two")["status"]["phase"] == "Running"
        after = cached_view(controller_client)
        lagging = dataclasses.replace(after, volcano_pod_groups=before.volcano_pod_groups)
        assert not written_on(lagging), "the pods bound, the PodGroup as it was read before the write"
        assert not written_on(after), "the write shown"
        admin.patch(VOLCANO_PODGROUPS, namespace, "two", {"status": {"phase": "Pending", "conditions": None}})
        assert written_on(cached_view(controller_client)), "another writer's change is written over"
    finally:
        actuator.close()
