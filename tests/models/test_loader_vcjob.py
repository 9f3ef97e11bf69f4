"""Loading Volcano Jobs (vcjob): expanded into a PodGroup and pending pods, as Volcano would."""

from __future__ import annotations

import pytest

from tests.models._kube_builders import load, load_error, node, pod, priority_class, snapshot, task, vcjob


def test_a_vcjob_becomes_a_pod_group_named_as_the_job_with_one_pod_per_replica() -> None:
    loaded = snapshot(vcjob("job", task("ps", replicas=1), task("worker", replicas=2, cpu="2")))
    group = loaded.pod_groups[0]
    assert (group.key, group.queue) == ("default/job", "default")
    assert [(p.name, p.phase, p.pod_group, p.task) for p in loaded.pods] == [
        ("job-ps-0", "pending", "default/job", "ps"),
        ("job-worker-0", "pending", "default/job", "worker"),
        ("job-worker-1", "pending", "default/job", "worker"),
    ]
    assert loaded.pods[1].requests == {"cpu": 2000}


def test_vcjob_min_available_defaults_to_the_sum_of_task_min_available_which_defaults_to_replicas() -> None:
    group = snapshot(vcjob("job", task("a", replicas=2), task("b", replicas=3, min_available=1))).pod_groups[0]
    assert group.min_member == 2 + 1
    assert [t.min_available for t in group.tasks] == [2, 1]


def test_vcjob_min_available_zero_means_unset_as_in_volcano() -> None:
    assert snapshot(vcjob("job", task("a", replicas=2), minAvailable=0)).pod_groups[0].min_member == 2


def test_vcjob_reads_queue_priority_topology_preemptable_and_creation_time() -> None:
    raw = vcjob(
        "job",
        task("w", replicas=1),
        namespace="team",
        annotations={"volcano.sh/preemptable": "false"},
        queue="q",
        minAvailable=1,
        priorityClassName="high",
        networkTopology={"mode": "soft", "highestTierAllowed": 2},
    )
    raw["metadata"]["creationTimestamp"] = "2024-05-01T12:00:00Z"  # type: ignore[index]
    loaded = snapshot(priority_class("high", 100), raw)
    group = loaded.pod_groups[0]
    assert (group.key, group.queue, group.min_member, group.priority) == ("team/job", "q", 1, 100)
    assert (group.preemptable, group.creation_time) == (False, 1714564800.0)
    assert (group.network_topology.mode, group.network_topology.highest_tier_allowed) == ("soft", 2)  # type: ignore[union-attr]
    assert (loaded.pods[0].priority, loaded.pods[0].preemptable) == (100, False)


def test_network_topology_mode_defaults_to_hard() -> None:
    group = snapshot(vcjob("job", networkTopology={"highestTierAllowed": 1})).pod_groups[0]
    assert group.network_topology.mode == "hard"  # type: ignore[union-attr]


def test_task_template_node_selector_tolerations_and_topology_policy_go_to_the_task() -> None:
    raw = vcjob(
        "job",
        {
            **task("w", nodeSelector={"gpu": "h100"}, tolerations=[{"key": "gpu", "operator": "Exists"}]),
            "topologyPolicy": "single-numa-node",
        },
    )
    loaded_task = snapshot(raw).pod_groups[0].tasks[0]
    assert loaded_task.node_selector == {"gpu": "h100"}
    assert loaded_task.tolerations[0].key == "gpu"
    assert loaded_task.numa_policy == "single-numa-node"


def test_depends_on_names_go_to_the_task() -> None:
    group = snapshot(vcjob("job", task("a"), task("b", depends_on=["a"]))).pod_groups[0]
    assert group.task_by_name["b"].depends_on == ("a",)


def test_an_unnamed_task_is_named_default_and_its_index() -> None:
    assert snapshot(vcjob("job", task(None), task(None))).pod_groups[0].tasks[1].name == "default1"


@pytest.mark.parametrize(
    ("template_scheduler", "job_scheduler", "kept"),
    [
        (None, None, True),
        ("batchplace", None, True),
        (None, "batchplace", True),
        ("default-scheduler", None, False),
        (None, "kube-batch", False),
    ],
    ids=[
        "a job without schedulerName is volcano's, hence ours",
        "a template schedulerName of ours counts",
        "the job's schedulerName applies to templates without one",
        "a template of another scheduler skips the job",
        "a job of another scheduler is skipped",
    ],
)
def test_a_vcjob_is_ours_only_when_its_pods_scheduler_is(
    template_scheduler: str | None, job_scheduler: str | None, kept: bool
) -> None:
    template_spec = {"schedulerName": template_scheduler} if template_scheduler else {}
    job_spec = {"schedulerName": job_scheduler} if job_scheduler else {}
    result = load(vcjob("job", task("w", **template_spec), **job_spec))
    assert (len(result.snapshot.pod_groups) == 1) is kept
    assert result.warnings == ()


def test_a_vcjob_whose_tasks_name_different_schedulers_is_skipped_with_a_warning() -> None:
    result = load(vcjob("job", task("a"), task("b", schedulerName="default-scheduler")))
    assert result.snapshot.pod_groups == ()
    assert "a gang cannot be split between schedulers" in result.warnings[0]


CONTROLLER = "are for Volcano's job controller; placement does not read them"


@pytest.mark.parametrize(
    ("spec", "tasks", "named"),
    [
        ({"plugins": {"ssh": [], "svc": [], "env": []}}, [task("w")], "spec.plugins (ssh, svc, env)"),
        ({"policies": [{"event": "PodEvicted", "action": "RestartJob"}]}, [task("w")], "spec.policies"),
        ({"maxRetry": 5}, [task("w")], "spec.maxRetry"),
        ({"minSuccess": 1}, [task("w")], "spec.minSuccess"),
        ({"ttlSecondsAfterFinished": 60}, [task("w")], "spec.ttlSecondsAfterFinished"),
        ({"volumes": [{"mountPath": "/data", "volumeClaimName": "data"}]}, [task("w")], "spec.volumes"),
        ({"runningEstimate": "1h"}, [task("w")], "spec.runningEstimate"),
        ({}, [{**task("w"), "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}]}], "spec.tasks[w].policies"),
        ({}, [{**task("w"), "maxRetry": 2}], "spec.tasks[w].maxRetry"),
        ({}, [task("a"), {**task(None), "maxRetry": 2}], "spec.tasks[1].maxRetry"),
    ],
    ids=[
        "plugins, each named",
        "the job's policies",
        "the job's maxRetry",
        "minSuccess",
        "ttlSecondsAfterFinished",
        "volumes",
        "runningEstimate",
        "a task's policies, by the task's name",
        "a task's maxRetry",
        "an unnamed task's, by its index",
    ],
)
def test_a_field_for_volcanos_job_controller_is_accepted_and_named(
    spec: dict[str, object], tasks: list[dict[str, object]], named: str
) -> None:
    result = load(vcjob("job", *tasks, **spec))
    assert result.warnings == (
        f"test.yaml: document 1 (Job default/job): {named} is for Volcano's job controller; placement does not read it",
    )
    assert len(result.snapshot.pods) == len(tasks)


def test_the_mpi_jobs_plugins_and_policies_are_named_in_one_warning_job_fields_first() -> None:
    mpi_master = {**task("mpimaster"), "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}]}
    raw = vcjob("lm-mpi-job", mpi_master, task("mpiworker", replicas=2), minAvailable=3, plugins={"ssh": [], "svc": []})
    result = load(raw)
    assert result.warnings == (
        f"test.yaml: document 1 (Job default/lm-mpi-job): spec.plugins (ssh, svc), spec.tasks[mpimaster].policies {CONTROLLER}",
    )


def test_a_vcjob_of_another_scheduler_is_skipped_without_naming_its_fields() -> None:
    result = load(vcjob("job", schedulerName="kube-batch", plugins={"ssh": []}, maxRetry=3))
    assert (result.snapshot.pod_groups, result.warnings) == ((), ())


def test_the_warning_repeated_over_many_vcjobs_is_listed_three_times_then_counted() -> None:
    result = load(*(vcjob(f"job-{index}", maxRetry=3) for index in range(5)))
    assert len(result.warnings) == 4
    assert result.warnings[-1] == "fields for Volcano's job controller not read (and 2 more)"


def test_a_live_vcjob_whose_pods_are_in_the_input_is_not_expanded() -> None:
    result = load(
        node("n1"),
        vcjob("job", task("w", replicas=2)),
        pod("job-w-0", node="n1", labels={"volcano.sh/job-name": "job"}),
    )
    assert [p.name for p in result.snapshot.pods] == ["job-w-0"]
    assert result.snapshot.pod_groups == ()
    assert "they and their PodGroup are read instead of expanding the job" in result.warnings[0]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            vcjob("job-a-1", task("w", replicas=-2)),
            "test.yaml: document 1 (Job default/job-a-1): spec.tasks[0].replicas: must be >= 0, got -2",
        ),
        (
            vcjob("job", task("w", replicas="3")),
            "test.yaml: document 1 (Job default/job): spec.tasks[0].replicas: expected an integer, got a string '3'",
        ),
        (
            vcjob("job", task("w", replicas=2, min_available=3)),
            "test.yaml: document 1 (Job default/job): spec.tasks[0].minAvailable: must be <= replicas (2), got 3",
        ),
        (
            vcjob("job", task("w", replicas=2, min_available=-1)),
            "test.yaml: document 1 (Job default/job): spec.tasks[0].minAvailable: must be >= 0, got -1",
        ),
        (
            vcjob("job", task("w", replicas=2), minAvailable=5),
            "test.yaml: document 1 (Job default/job): "
            "spec.minAvailable: must be <= the total replicas of its tasks (2), got 5",
        ),
        (
            vcjob("job", task("w"), task("w")),
            "test.yaml: document 1 (Job default/job): spec.tasks[1].name: task name 'w' repeats spec.tasks[0]",
        ),
        (
            vcjob("job", task("a", depends_on=["c"])),
            "test.yaml: document 1 (Job default/job): "
            "spec.tasks[0].dependsOn.name: item 0: 'c' is not a task of this job",
        ),
        (
            vcjob("job", {**task("w"), "topologyPolicy": "packed"}),
            "test.yaml: document 1 (Job default/job): spec.tasks[0].topologyPolicy: must be one of none, best-effort, "
            "restricted, single-numa-node, got 'packed'",
        ),
        (
            vcjob("job", networkTopology={"mode": "strict"}),
            "test.yaml: document 1 (Job default/job): spec.networkTopology.mode: must be hard or soft, got 'strict'",
        ),
        (
            {**vcjob("job"), "spec": {"tasks": []}},
            "test.yaml: document 1 (Job default/job): spec.tasks: a vcjob needs at least one task",
        ),
        (
            vcjob("job", task("w", cpu="-1")),
            "test.yaml: document 1 (Job default/job): "
            "spec.tasks[0].template.spec.containers[0].resources.requests.cpu: "
            "must be >= 0, got -1",
        ),
    ],
    ids=[
        "negative replicas",
        "replicas given as a string",
        "task minAvailable above replicas",
        "negative task minAvailable",
        "job minAvailable above the total replicas",
        "a repeated task name",
        "dependsOn naming a task the job lacks",
        "an unknown topologyPolicy",
        "an unknown networkTopology mode",
        "a job without tasks",
        "a negative request in a task template",
    ],
)
def test_bad_vcjobs_are_errors_naming_the_field(raw: dict[str, object], expected: str) -> None:
    assert load_error(raw) == expected


def test_a_dependency_cycle_is_an_error_at_the_job() -> None:
    message = load_error(vcjob("job", task("a", depends_on=["b"]), task("b", depends_on=["a"])))
    assert message.startswith("test.yaml: document 1 (Job default/job): ")
    assert "task dependencies form a cycle" in message
