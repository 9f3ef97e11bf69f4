"""Object names checked as the cluster checks them, per kind (`models.loaders.object_names`):
an RFC 1123 subdomain for every object, a label for a namespace, Volcano's webhook rules
for a vcjob, the training operator's for a PyTorchJob — in the API server's words."""

from __future__ import annotations

import pytest

from tests.models._kube_builders import (
    load_error,
    node,
    pod,
    pod_group,
    priority_class,
    pytorch_job,
    queue,
    snapshot,
    task,
    vcjob,
)

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)


def test_the_issues_job_named_hello_job_is_refused_in_the_api_servers_words() -> None:
    message = load_error(vcjob("Hello_Job"))
    assert message.startswith(f'test.yaml: document 1 (Job default/Hello_Job): metadata.name: Invalid value: "Hello_Job": {SUBDOMAIN}')


@pytest.mark.parametrize(
    "obj",
    [
        node("Node_1"),
        pod("Pod_1"),
        pod_group("PG"),
        queue("Queue-"),
        priority_class("-high", 10),
        pytorch_job("a..b"),
    ],
    ids=["Node", "Pod", "PodGroup", "Queue", "PriorityClass", "PyTorchJob"],
)
def test_every_kind_wants_an_rfc_1123_subdomain(obj: dict[str, object]) -> None:
    assert f"metadata.name: Invalid value: \"{obj['metadata']['name']}\": {SUBDOMAIN}" in load_error(obj)  # type: ignore[index]


def test_a_subdomain_may_hold_dots_and_reach_253_characters() -> None:
    long_name = ".".join(["a" * 63] * 4)[:253]
    assert len(long_name) == 253
    assert snapshot(node(long_name)).nodes[0].name == long_name
    assert "must be no more than 253 characters" in load_error(node(long_name + "b"))


def test_a_namespace_must_be_an_rfc_1123_label() -> None:
    message = load_error(pod("p", namespace="team.a"))
    assert f'metadata.namespace: Invalid value: "team.a": {LABEL}' in message
    assert "must be no more than 63 characters" in load_error(pod("p", namespace="n" * 64))


def test_cluster_scoped_kinds_have_no_namespace_to_check() -> None:
    raw = node("n1")
    raw["metadata"]["namespace"] = "Not A Label"  # type: ignore[index]
    assert snapshot(raw).nodes[0].name == "n1"


def test_a_vcjob_name_is_a_qualified_name_so_at_most_63_characters() -> None:
    """Volcano's webhook (`validateJobName`): `IsQualifiedName`; a subdomain alone allows 253."""
    assert snapshot(vcjob("j" * 40, task("w"))).pod_groups[0].name == "j" * 40
    assert "must be no more than 63 characters" in load_error(vcjob("j" * 64, task("w")))


def test_a_vcjob_task_name_must_be_an_rfc_1123_label() -> None:
    message = load_error(vcjob("j", task("Worker")))
    assert f'spec.tasks[0].name: Invalid value: "Worker": {LABEL}' in message


def test_a_vcjob_whose_pod_names_would_pass_63_characters_is_refused() -> None:
    """`<job>-<task>-<index>` (Volcano's webhook puts the task's position as the index)."""
    job = "j" * 50
    assert snapshot(vcjob(job, task("w" * 10))).pods[0].name == f"{job}-{'w' * 10}-0"  # 63: fits
    message = load_error(vcjob(job, task("w" * 11)))
    assert f"spec.tasks[0].name: create pod with name {job}-{'w' * 11}-0 validate failed" in message
    assert "must be no more than 63 characters" in message


def test_a_pytorch_job_name_must_be_an_rfc_1035_label() -> None:
    """The training operator names services after the job: a DNS-1035 label, starting with a letter."""
    message = load_error(pytorch_job("1-job"))
    assert 'metadata.name: Invalid value: "1-job": should match: a DNS-1035 label' in message
    assert snapshot(pytorch_job("job-1")).pod_groups[0].name == "job-1"


def test_the_seed_names_still_load() -> None:
    assert snapshot(vcjob("hello-volcano-job"), node("gpu-a-0"), queue("default")).pod_groups
