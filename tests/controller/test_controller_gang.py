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

from kubernetes import client as k8s

from controller.kinds import NODES, PODS, VOLCANO_PODGROUPS
from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.observe import ClusterView, observe
from controller.plan import plan
from solver.rules.gang import gang_requirement
from tests.builders import solve_checked
from tests.controller._cluster_queries import bound, condition, pg_status, wait_until
from tests.controller._controller_builders import for_api, node, volcano_job_objects
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
    # The packing keeps room for what it has seen: the job's 20 pods, each counted once.
    (learnt,) = controller.solve_config().typical_shapes
    assert (learnt.cpu_milli, learnt.gpu_milli) == (4000, 0) and 19.9 < learnt.weight <= 20.0
