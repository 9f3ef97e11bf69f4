"""Loading Kubeflow PyTorchJobs: expanded into a scheduler-plugins PodGroup and pending pods
as the training operator creates them, or, once the operator has, read from those."""

from __future__ import annotations

import pytest

from models.snapshot import NetworkTopology, Snapshot
from tests.models._kube_builders import (
    Obj,
    load,
    load_error,
    node,
    pod,
    priority_class,
    pytorch_job,
    replica,
    snapshot,
    xk8s_pod_group,
)

MODE, TIER = "volcano.sh/network-topology-mode", "volcano.sh/network-topology-highest-tier"
OPERATOR = "are for Kubeflow's training operator; placement does not read them"


def _operator_pod(job: str, task: str, index: int, *, gpus: int = 1, node_name: str | None = None) -> Obj:
    """A pod as the training operator creates it for a PyTorchJob gang-scheduled through
    scheduler-plugins (its labels; the group is a label, not Volcano's annotation)."""
    labels = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": task,
        "training.kubeflow.org/replica-index": str(index),
        "scheduling.x-k8s.io/pod-group": job,
    }
    if task == "master":
        labels["training.kubeflow.org/job-role"] = "master"
    return pod(f"{job}-{task}-{index}", cpu="1", gpus=gpus, scheduler="batchplace", labels=labels, node=node_name)


def _gpu_job(name: str, **kwargs: object) -> Obj:
    return pytorch_job(name, {"Master": replica(1, gpus=1), "Worker": replica(3, gpus=1)}, **kwargs)  # type: ignore[arg-type]


# ---- expansion ----


def test_a_pytorch_job_becomes_a_pod_group_named_as_the_job_with_its_master_and_workers() -> None:
    loaded = snapshot(pytorch_job("bert", namespace="research"))
    (group,) = loaded.pod_groups
    assert (group.key, group.queue, group.min_member) == ("research/bert", "default", 4)
    assert [(t.name, t.min_available) for t in group.tasks] == [("master", 0), ("worker", 0)]
    assert [(p.name, p.phase, p.pod_group, p.task) for p in loaded.pods] == [
        ("bert-master-0", "pending", "research/bert", "master"),
        ("bert-worker-0", "pending", "research/bert", "worker"),
        ("bert-worker-1", "pending", "research/bert", "worker"),
        ("bert-worker-2", "pending", "research/bert", "worker"),
    ]


def test_min_member_is_the_scheduling_policys_min_available() -> None:
    loaded = snapshot(pytorch_job("bert", run_policy={"schedulingPolicy": {"minAvailable": 2}}))
    assert loaded.pod_groups[0].min_member == 2


def test_queue_priority_class_and_min_resources_come_from_the_scheduling_policy() -> None:
    policy = {"queue": "training", "priorityClass": "high", "minResources": {"cpu": "4", "nvidia.com/gpu": "4"}}
    loaded = snapshot(priority_class("high", 100), pytorch_job("bert", run_policy={"schedulingPolicy": policy}))
    (group,) = loaded.pod_groups
    assert (group.queue, group.priority, group.min_resources) == ("training", 100, {"cpu": 4000, "gpu": 4000})
    assert {p.priority for p in loaded.pods} == {0}  # the pods keep their own priorityClassName (none)


def test_without_a_queue_in_the_policy_the_job_annotation_the_operator_copies_to_its_pod_group_names_it() -> None:
    loaded = snapshot(pytorch_job("bert", annotations={"scheduling.x-k8s.io/queue": "research"}))
    assert loaded.pod_groups[0].queue == "research"


def test_the_tasks_carry_the_labels_the_operator_gives_every_pod_of_them() -> None:
    specs = {"Master": replica(1, labels={"app": "bert"}), "Worker": replica(2, labels={"app": "bert"})}
    master, worker = snapshot(pytorch_job("bert", specs)).pod_groups[0].tasks
    common = {
        "app": "bert",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "bert",
        "scheduling.x-k8s.io/pod-group": "bert",
    }
    assert master.labels == {
        **common,
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/job-role": "master",
    }
    assert worker.labels == {**common, "training.kubeflow.org/replica-type": "worker"}


def test_replica_types_are_matched_ignoring_case_and_replicas_default_to_one() -> None:
    loaded = snapshot(pytorch_job("bert", {"worker": replica(None), "MASTER": replica(None)}))
    assert [p.name for p in loaded.pods] == ["bert-master-0", "bert-worker-0"]
    assert loaded.pod_groups[0].min_member == 2


def test_a_job_of_workers_only_is_one_task() -> None:
    loaded = snapshot(pytorch_job("elastic", {"Worker": replica(4)}))
    assert [t.name for t in loaded.pod_groups[0].tasks] == ["worker"]
    assert len(loaded.pods) == 4


def test_the_replicas_requests_go_to_the_task_and_its_pods() -> None:
    loaded = snapshot(_gpu_job("bert"))
    assert {t.name: t.requests for t in loaded.pod_groups[0].tasks} == {
        "master": {"cpu": 1000, "gpu": 1000},
        "worker": {"cpu": 1000, "gpu": 1000},
    }
    assert all(p.requests == {"cpu": 1000, "gpu": 1000} for p in loaded.pods)


# ---- topology ----


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({MODE: "hard", TIER: "1"}, NetworkTopology(mode="hard", highest_tier_allowed=1)),
        ({TIER: "2"}, NetworkTopology(mode="hard", highest_tier_allowed=2)),
        ({MODE: "Soft"}, NetworkTopology(mode="soft", highest_tier_allowed=None)),
        ({}, None),
    ],
    ids=[
        "hard within tier 1",
        "a tier alone is hard mode",
        "the mode is read ignoring case",
        "without the annotations no topology",
    ],
)
def test_the_job_asks_for_one_topology_domain_with_volcanos_annotations(
    annotations: dict[str, str], expected: NetworkTopology | None
) -> None:
    assert snapshot(pytorch_job("bert", annotations=annotations)).pod_groups[0].network_topology == expected


def test_a_scheduler_plugins_pod_group_reads_the_same_annotations() -> None:
    loaded = snapshot(xk8s_pod_group("bert", annotations={MODE: "hard", TIER: "1"}, minMember=1))
    assert loaded.pod_groups[0].network_topology == NetworkTopology(mode="hard", highest_tier_allowed=1)


# ---- whose job ----


@pytest.mark.parametrize(
    ("master_scheduler", "worker_scheduler", "kept"),
    [("batchplace", "batchplace", True), ("volcano", "volcano", True), (None, None, False), ("default-scheduler", None, False)],
    ids=[
        "templates naming batchplace",
        "templates naming volcano, also ours by default",
        "templates naming none go to default-scheduler",
        "templates of another scheduler",
    ],
)
def test_a_pytorch_job_is_ours_only_when_its_templates_name_our_scheduler(
    master_scheduler: str | None, worker_scheduler: str | None, kept: bool
) -> None:
    specs = {"Master": replica(1, scheduler=master_scheduler), "Worker": replica(1, scheduler=worker_scheduler)}
    result = load(pytorch_job("bert", specs))
    assert (len(result.snapshot.pod_groups) == 1) is kept
    assert result.warnings == ()


def test_a_pytorch_job_whose_replicas_name_different_schedulers_is_skipped_with_a_warning() -> None:
    specs = {"Master": replica(1), "Worker": replica(1, scheduler=None)}
    result = load(pytorch_job("bert", specs))
    assert result.snapshot.pod_groups == ()
    assert result.warnings == (
        "test.yaml: document 1 (PyTorchJob default/bert): replicas name different schedulers "
        "(batchplace, default-scheduler); a gang cannot be split between schedulers, so the job is skipped",
    )


def test_a_suspended_pytorch_job_has_no_pods_to_place_and_is_skipped_with_a_warning() -> None:
    result = load(pytorch_job("bert", run_policy={"suspend": True}))
    assert result.snapshot.pod_groups == () and result.snapshot.pods == ()
    assert result.warnings == (
        "test.yaml: document 1 (PyTorchJob default/bert): spec.runPolicy.suspend is true: the operator creates no "
        "pods until it is resumed; skipped",
    )


# ---- fields for the operator ----


def test_the_operators_own_fields_are_accepted_and_named_in_one_warning() -> None:
    run_policy = {
        "cleanPodPolicy": "None",
        "ttlSecondsAfterFinished": 600,
        "activeDeadlineSeconds": 3600,  # read: it bounds each pod's run (test_loader_active_deadline)
        "backoffLimit": 3,
        "schedulingPolicy": {"minAvailable": 4},
    }
    specs = {"Master": replica(1, restartPolicy="OnFailure"), "Worker": replica(3, restartPolicy="ExitCode")}
    raw = pytorch_job(
        "bert", specs, run_policy=run_policy, elasticPolicy={"rdzvBackend": "c10d", "maxRestarts": 3}, nprocPerNode="auto"
    )
    result = load(raw)
    assert result.warnings == (
        "test.yaml: document 1 (PyTorchJob default/bert): spec.runPolicy.cleanPodPolicy, "
        "spec.runPolicy.ttlSecondsAfterFinished, spec.runPolicy.backoffLimit, "
        "spec.elasticPolicy, spec.nprocPerNode, spec.pytorchReplicaSpecs.Master.restartPolicy, "
        f"spec.pytorchReplicaSpecs.Worker.restartPolicy {OPERATOR}",
    )
    assert len(result.snapshot.pods) == 4


def test_one_field_for_the_operator_is_named_in_the_singular() -> None:
    result = load(pytorch_job("bert", run_policy={"backoffLimit": 3}))
    assert result.warnings == (
        "test.yaml: document 1 (PyTorchJob default/bert): spec.runPolicy.backoffLimit is for Kubeflow's training "
        "operator; placement does not read it",
    )


def test_a_misspelled_field_in_a_replica_template_is_a_warning_with_the_nearest_known_name() -> None:
    typo = {"name": "pytorch", "image": "x", "resource": {"requests": {"cpu": "1"}}}
    specs = {"Master": replica(1), "Worker": replica(1)}
    specs["Worker"]["template"]["spec"]["containers"] = [typo]  # type: ignore[index]
    result = load(pytorch_job("bert", specs))
    assert result.warnings == (
        "test.yaml: document 1 (PyTorchJob default/bert): spec.pytorchReplicaSpecs.Worker.template.spec."
        "containers[0].resource: not a field of a Kubeflow PyTorchJob; did you mean resources?",
    )


# ---- a live job: the operator's pods and PodGroup ----


def _operator_objects(job: str, *, annotations: dict[str, str] | None = None) -> list[Obj]:
    """What the operator creates for `_gpu_job(job)`: its PodGroup (annotations copied from
    the job) and one pod per replica."""
    group = xk8s_pod_group(job, annotations=annotations, minMember=4)
    pods = [_operator_pod(job, "master", 0)] + [_operator_pod(job, "worker", index) for index in range(3)]
    return [group, *pods]


def test_a_pytorch_job_whose_pods_are_in_the_input_is_read_from_them_not_expanded() -> None:
    result = load(node("n1", gpus=8), _gpu_job("bert"), *_operator_objects("bert"))
    assert result.warnings == (
        "test.yaml: document 2 (PyTorchJob default/bert): the input holds pods this job created; they and their "
        "PodGroup are read instead of expanding the job",
    )
    (group,) = result.snapshot.pod_groups
    assert (group.key, group.min_member, [t.name for t in group.tasks]) == ("default/bert", 4, ["master", "worker"])
    assert [(p.name, p.task) for p in result.snapshot.pods] == [
        ("bert-master-0", "master"),
        ("bert-worker-0", "worker"),
        ("bert-worker-1", "worker"),
        ("bert-worker-2", "worker"),
    ]


def _shape(loaded: Snapshot) -> tuple[object, ...]:
    """What placement sees of a snapshot's one PodGroup and its pods."""
    (group,) = loaded.pod_groups
    tasks = [(t.name, t.min_available, t.requests) for t in group.tasks]
    pods = [(p.name, p.phase, p.pod_group, p.task, p.requests) for p in loaded.pods]
    return group.key, group.queue, group.min_member, group.network_topology, tasks, pods


def test_the_expansion_is_what_placement_sees_once_the_operator_has_created_the_pods_and_pod_group() -> None:
    topology = {MODE: "hard", TIER: "1"}
    expanded = snapshot(node("n1", gpus=8), _gpu_job("bert", annotations=topology))
    created = snapshot(node("n1", gpus=8), *_operator_objects("bert", annotations=topology))
    assert _shape(expanded) == _shape(created)


def test_pods_of_a_vcjob_of_the_same_name_do_not_make_a_pytorch_job_live() -> None:
    result = load(node("n1"), _gpu_job("bert"), pod("bert-w-0", node="n1", labels={"volcano.sh/job-name": "bert"}))
    assert result.warnings == ()
    assert "default/bert" in result.snapshot.pod_group_by_key


# ---- bad input ----


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            pytorch_job("bert", {"Master": replica(1), "Worker": replica(-2)}),
            "spec.pytorchReplicaSpecs.Worker.replicas: must be >= 1, got -2",
        ),
        (
            pytorch_job("bert", {"Master": replica(2), "Worker": replica(1)}),
            "spec.pytorchReplicaSpecs.Master.replicas: a PyTorchJob has exactly 1 Master replica, got 2",
        ),
        (
            pytorch_job("bert", {"Master": replica("1")}),
            "spec.pytorchReplicaSpecs.Master.replicas: expected an integer, got a string '1'",
        ),
        (
            pytorch_job("bert", run_policy={"schedulingPolicy": {"minAvailable": 5}}),
            "spec.runPolicy.schedulingPolicy.minAvailable: must be <= the total replicas (4), got 5",
        ),
        (
            pytorch_job("bert", run_policy={"schedulingPolicy": {"minAvailable": -1}}),
            "spec.runPolicy.schedulingPolicy.minAvailable: must be >= 0, got -1",
        ),
        (
            pytorch_job("bert", {"Master": replica(1), "Launcher": replica(1)}),
            "spec.pytorchReplicaSpecs.Launcher: not a PyTorchJob replica type; expected Master or Worker",
        ),
        (
            pytorch_job("bert", {"Worker": replica(1), "worker": replica(1)}),
            "spec.pytorchReplicaSpecs.worker: repeats replica type Worker (the operator matches replica types "
            "ignoring case)",
        ),
        (
            pytorch_job("bert", {}),
            "spec.pytorchReplicaSpecs: a PyTorchJob needs replicas: Master and/or Worker",
        ),
        (
            pytorch_job("bert", {"Worker": {"replicas": 1, "template": {"spec": {}}}}),
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers: a pod needs at least one container "
            "(Kubernetes rejects a pod with none)",
        ),
        (
            pytorch_job("bert", annotations={MODE: "strict"}),
            f"metadata.annotations.{MODE}: must be hard or soft, got 'strict'",
        ),
        (
            pytorch_job("bert", annotations={TIER: "0"}),
            f"metadata.annotations.{TIER}: expected a HyperNode tier, an integer >= 1, got '0'",
        ),
        (
            pytorch_job("bert", annotations={TIER: "leaf"}),
            f"metadata.annotations.{TIER}: expected a HyperNode tier, an integer >= 1, got 'leaf'",
        ),
    ],
    ids=[
        "negative worker replicas",
        "two masters",
        "replicas given as a string",
        "minAvailable above the replicas",
        "negative minAvailable",
        "an unknown replica type",
        "a replica type twice, in two spellings",
        "no replicas at all",
        "a template without containers",
        "an unknown topology mode",
        "topology tier 0",
        "a topology tier that is not a number",
    ],
)
def test_bad_pytorch_jobs_are_errors_naming_the_field(raw: Obj, expected: str) -> None:
    assert load_error(raw) == f"test.yaml: document 1 (PyTorchJob default/bert): {expected}"
