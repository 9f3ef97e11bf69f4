"""`activeDeadlineSeconds` (the kubelet ends a pod that long after it started): read from a
pod's spec, a vcjob task's template spec and a PyTorchJob's runPolicy onto `Pod`/`Task.active_deadline_s`, the
bound rule `reservation` backfills held nodes by; a bad value names its field."""

from __future__ import annotations

import pytest

from tests.models._kube_builders import (
    load,
    load_error,
    node,
    pod,
    pod_group,
    pytorch_job,
    replica,
    snapshot,
    task,
    vcjob,
)


def test_a_running_pod_s_deadline_and_start_bound_its_run() -> None:
    raw = pod("p", node="n1", activeDeadlineSeconds=3600)
    raw["status"] = {"phase": "Running", "startTime": "2024-05-01T12:00:00Z"}
    loaded = snapshot(node("n1"), raw).pods[0]
    assert (loaded.start_time, loaded.active_deadline_s) == (1714564800.0, 3600.0)


def test_a_pending_pod_s_deadline_is_its_task_s_and_a_pod_without_one_has_none() -> None:
    loaded = snapshot(
        node("n1"),
        pod_group("g"),
        pod("short", group="g", activeDeadlineSeconds=1800),
        pod_group("h"),
        pod("open", group="h"),
    )
    tasks = {group.name: group.tasks[0] for group in loaded.pod_groups}
    assert (tasks["g"].active_deadline_s, tasks["h"].active_deadline_s) == (1800.0, None)
    assert {p.name: p.active_deadline_s for p in loaded.pods} == {"short": 1800.0, "open": None}


def test_pods_of_one_task_with_different_deadlines_are_split_into_tasks() -> None:
    result = load(
        node("n1"),
        pod_group("g"),
        pod("a", group="g", activeDeadlineSeconds=1800),
        pod("b", group="g", activeDeadlineSeconds=7200),
    )
    (group,) = result.snapshot.pod_groups
    assert sorted(t.active_deadline_s for t in group.tasks) == [1800.0, 7200.0]
    assert any("activeDeadlineSeconds; split into tasks" in line for line in result.warnings)


def test_a_vcjob_task_s_template_deadline_is_its_task_s() -> None:
    loaded = snapshot(node("n1"), vcjob("train", task("worker", replicas=2, activeDeadlineSeconds=14400)))
    (group,) = loaded.pod_groups
    assert group.tasks[0].active_deadline_s == 14400.0
    assert {p.active_deadline_s for p in loaded.pods} == {14400.0}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "spec.activeDeadlineSeconds: must be >= 1, got 0"),
        ("1h", "spec.activeDeadlineSeconds: expected an integer, got a string"),
        (1.5, "spec.activeDeadlineSeconds: expected an integer, got 1.5"),
    ],
)
def test_a_bad_deadline_names_its_field(value: object, expected: str) -> None:
    assert expected in load_error(node("n1"), pod("p", activeDeadlineSeconds=value))


def test_a_bad_vcjob_template_deadline_names_the_task_s_path() -> None:
    message = load_error(node("n1"), vcjob("train", task("worker", activeDeadlineSeconds=-5)))
    assert "spec.tasks[0].template.spec.activeDeadlineSeconds: must be >= 1, got -5" in message


def test_a_pytorch_job_s_run_policy_deadline_bounds_each_replica_the_smaller_one_wins() -> None:
    raw = pytorch_job("train", {"Master": replica(1), "Worker": replica(2)}, run_policy={"activeDeadlineSeconds": 7200})
    raw["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["activeDeadlineSeconds"] = 3600
    result = load(node("n1"), raw)
    (group,) = result.snapshot.pod_groups
    assert {t.name: t.active_deadline_s for t in group.tasks} == {"master": 7200.0, "worker": 3600.0}
    assert not any("activeDeadlineSeconds" in line for line in result.warnings)  # read, so not named as unread
    message = load_error(node("n1"), pytorch_job("bad", run_policy={"activeDeadlineSeconds": 0}))
    assert "spec.runPolicy.activeDeadlineSeconds: must be >= 1, got 0" in message
