"""Every seed example end to end against the real kube-apiserver.

Each test creates what `kubectl apply` and the job controllers would create from the
example (Nodes, Queues, HyperNodes; per vcjob the Job, its PodGroup and its pods; per
PyTorchJob its scheduler-plugins PodGroup and its pods, as Kubeflow's training operator
does — expanded by `models.loaders` itself, `controller.testing.seed`), with
`schedulerName: batchplace` as an operator switching would write it, starts the controller
as batchplace's ServiceAccount, and reads back what `kubectl` would show: nodes of pods,
PodGroup phase and conditions, Events. The test marks pods Running where a kubelet would.
"""

from __future__ import annotations

from collections import Counter

from kubernetes import client as k8s

from controller.kube import KubeClient
from controller.loop import ControllerConfig
from controller.testing.kubelet import KubeletStandIn
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects
from tests.controller._cluster_queries import bound, condition, events, pg_status, pod_names, wait_until, xk8s_status
from tests.controller.conftest import StartController

SEEDS = ControllerConfig(period_s=0.3, time_limit_s=1.0)


def _seed(admin: KubeClient, example: str, namespace: str) -> None:
    create_all(admin, seed_objects(EXAMPLES_DIR / example, namespace=namespace))


def test_hello_volcano_job_is_bound_and_its_podgroup_runs(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    _seed(admin, "hello-volcano-job.yaml", namespace)
    start_controller(SEEDS)
    nodes = wait_until(lambda: bound(core, namespace), what="the hello job's pod to be bound")
    assert list(nodes) == ["hello-volcano-job-nginx-0"]
    status = wait_until(lambda: pg_status(custom, namespace, "hello-volcano-job").get("phase") == "Running"
                        and pg_status(custom, namespace, "hello-volcano-job"), what="PodGroup Running")
    assert (condition(status)["type"], condition(status)["status"]) == ("Scheduled", "True")
    (scheduled,) = wait_until(lambda: events(core, namespace, name="hello-volcano-job", reason="Scheduled"))
    assert scheduled.involved_object.kind == "PodGroup"
    assert scheduled.message == f"Successfully assigned 1 pod to 1 node: {nodes['hello-volcano-job-nginx-0']} (hello-volcano-job-nginx-0)"


def test_queue_weights_one_to_two_give_queue_b_twice_queue_a(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    _seed(admin, "queue-weights.yaml", namespace)
    controller = start_controller(SEEDS)
    wait_until(lambda: len(bound(core, namespace)) >= 6, what="six jobs bound")
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    jobs = Counter(name.rsplit("-", 3)[0] for name in bound(core, namespace))  # job-a-1-main-0 → job-a
    assert jobs == {"job-a": 2, "job-b": 4}
    waiting = [f"job-{q}-{i}" for q in "ab" for i in range(1, 7) if not any(n.startswith(f"job-{q}-{i}-") for n in bound(core, namespace))]
    assert len(waiting) == 6
    for job in waiting:
        status = wait_until(lambda: pg_status(custom, namespace, job).get("conditions") and pg_status(custom, namespace, job))
        assert status["phase"] == "Pending"
        assert condition(status)["type"] == "Unschedulable"


def test_gang_of_twenty_stays_unbound_with_an_unschedulable_condition(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    _seed(admin, "gang-min-available-20.yaml", namespace)
    controller = start_controller(SEEDS)
    status = wait_until(lambda: pg_status(custom, namespace, "gang-job").get("conditions") and pg_status(custom, namespace, "gang-job"),
                        what="the gang's status")
    wait_until(lambda: controller.last_report and controller.last_report.number >= 4, what="four cycles")
    assert bound(core, namespace) == {}
    assert status["phase"] == "Pending"
    cond = condition(status)
    assert (cond["type"], cond["status"], cond["reason"]) == ("Unschedulable", "True", "NotEnoughResources")
    assert cond["message"].startswith("20/20 tasks in gang unschedulable: gang: ")
    failed = wait_until(lambda: events(core, namespace, reason="FailedScheduling"))
    assert {e.involved_object.name for e in failed} <= set(pod_names(core, namespace))
    assert len(events(core, namespace, name="gang-job", reason="Unschedulable")) == 1  # reported once, not every cycle


def test_gang_of_min_four_binds_the_eight_pods_that_fit(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """The quick-start job, minAvailable 4 below its task's 20, on four 8-CPU nodes."""
    _seed(admin, "gang-min-available-4.yaml", namespace)
    controller = start_controller(SEEDS)
    nodes = wait_until(lambda: len(bound(core, namespace)) == 8 and bound(core, namespace), what="eight pods bound")
    assert Counter(nodes.values()) == {f"cpu-node-{i}": 2 for i in range(4)}
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    assert len(bound(core, namespace)) == 8 and len(pod_names(core, namespace)) == 20
    wait_until(lambda: pg_status(custom, namespace, "gang-job").get("phase") == "Running", what="PodGroup Running")


def test_task_b_is_bound_only_after_task_a_runs(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    _seed(admin, "workflow-job.yaml", namespace)
    controller = start_controller(SEEDS)
    wait_until(lambda: "workflow-job-task-a-0" in bound(core, namespace), what="task-a bound")
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 4, what="four more cycles")
    assert "workflow-job-task-b-0" not in bound(core, namespace), "task-b was bound before task-a ran"
    started = KubeletStandIn(admin, namespace=namespace).mark_running()
    assert started == [f"{namespace}/workflow-job-task-a-0"]
    wait_until(lambda: "workflow-job-task-b-0" in bound(core, namespace), what="task-b bound once task-a runs")


def test_sixteen_gpu_hard_topology_gang_lands_inside_one_leaf(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    _seed(admin, "gpu-topology.yaml", namespace)
    start_controller(SEEDS)
    # The gang's binds go out in parallel: wait for both, not the first one seen.
    workers = wait_until(
        lambda: len(pretrain := {p: n for p, n in bound(core, namespace).items() if p.startswith("llm-pretrain-")}) == 2
        and pretrain,
        what="the gang's two pods bound",
    )
    assert sorted(workers.values()) == ["gpu-b-0", "gpu-b-1"]
    for name in workers:
        pod = core.read_namespaced_pod(name, namespace)
        assert pod.metadata.annotations["batchplace.io/gpus"] == "0,1,2,3,4,5,6,7"


def test_gpu_model_affinity_binds_the_fine_tune_to_the_h100_and_inference_to_the_zone_it_prefers(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, start_controller: StartController
) -> None:
    """The pods' affinity as the API server stores and serves it is what the controller reads."""
    _seed(admin, "gpu-model-affinity.yaml", namespace)
    start_controller(SEEDS)
    nodes = wait_until(lambda: len(bound(core, namespace)) == 3 and bound(core, namespace), what="three pods bound")
    assert nodes == {
        "h100-finetune-worker-0": "h100-0",
        "batch-infer-worker-0": "a100-1",
        "batch-infer-worker-1": "a100-1",
    }


def test_the_mpi_example_binds_each_job_as_one_gang_the_gpu_one_inside_leaf_b(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """Volcano's MPI example verbatim and its GPU variant, as Volcano's job controller creates
    their PodGroups and pods: each gang's master and two workers bound together."""
    _seed(admin, "mpi-job.yaml", namespace)
    start_controller(SEEDS)
    # A gang's binds go out in parallel: wait for all six, not the first ones seen.
    nodes = wait_until(
        lambda: len(jobs := {p: n for p, n in bound(core, namespace).items() if p.startswith("lm-mpi-job-")}) == 6 and jobs,
        what="both MPI gangs' six pods bound",
    )
    plain = {p: n for p, n in nodes.items() if not p.startswith("lm-mpi-job-gpu-")}
    gpu = {p: n for p, n in nodes.items() if p.startswith("lm-mpi-job-gpu-")}
    assert sorted(plain) == ["lm-mpi-job-mpimaster-0", "lm-mpi-job-mpiworker-0", "lm-mpi-job-mpiworker-1"]
    assert set(gpu.values()) <= {"mpi-b-0", "mpi-b-1"}
    assert {gpu["lm-mpi-job-gpu-mpiworker-0"], gpu["lm-mpi-job-gpu-mpiworker-1"]} == {"mpi-b-0", "mpi-b-1"}
    for job in ("lm-mpi-job", "lm-mpi-job-gpu"):
        wait_until(lambda: pg_status(custom, namespace, job).get("phase") == "Running", what=f"{job}'s PodGroup Running")


def test_the_pytorch_example_binds_one_gang_inside_leaf_b_and_none_of_the_one_that_cannot_fit(
    namespace: str, admin: KubeClient, core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, start_controller: StartController
) -> None:
    """The PyTorchJobs as Kubeflow's training operator creates their scheduler-plugins
    PodGroups (the job's topology annotations copied on) and pods."""
    _seed(admin, "pytorch-job.yaml", namespace)
    controller = start_controller(SEEDS)
    nodes = wait_until(lambda: len(bound(core, namespace)) == 4 and bound(core, namespace), what="bert-finetune's four pods bound")
    assert sorted(nodes) == ["bert-finetune-master-0", "bert-finetune-worker-0", "bert-finetune-worker-1", "bert-finetune-worker-2"]
    assert sorted(nodes.values()) == ["gpu-1", "gpu-1", "gpu-2", "gpu-2"]
    first = controller.last_report.number if controller.last_report else 0
    wait_until(lambda: controller.last_report and controller.last_report.number >= first + 3, what="three more cycles")
    assert len(bound(core, namespace)) == 4, "a pod of resnet-ddp was bound"
    status = wait_until(lambda: xk8s_status(custom, namespace, "bert-finetune").get("phase"), what="bert-finetune's status")
    assert status == "Scheduled"
