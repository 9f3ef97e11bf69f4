"""Loading the Kubernetes Workload API (`scheduling.k8s.io` PodGroup, Workload): a PodGroup's
gang policy onto batchplace's PodGroup, its pods by `spec.schedulingGroup.podGroupName`."""

from __future__ import annotations

import pytest

from tests.models._kube_builders import Obj, load, load_error, node
from tests.models._owner_gang_pods import kube_pod_group, member_pod


@pytest.mark.parametrize("version", ["v1alpha3", "v1beta1"])
def test_a_gang_pod_group_is_a_pod_group_of_min_count_with_the_pods_that_name_it(version: str) -> None:
    pods = [member_pod(f"w{index}", "train-workers-0") for index in range(3)]
    loaded = load(node("n1"), kube_pod_group("train-workers-0", version=version, priority=7), *pods)
    (group,) = loaded.snapshot.pod_groups
    assert (group.key, group.min_member, group.queue, group.priority) == ("default/train-workers-0", 2, "default", 7)
    assert [p.pod_group for p in loaded.snapshot.pods] == ["default/train-workers-0"] * 3
    assert not any("apiVersion" in w for w in loaded.warnings)


def test_a_basic_policy_is_a_group_of_one() -> None:
    loaded = load(node("n1"), kube_pod_group("web", schedulingPolicy={"basic": {}}), member_pod("w0", "web"))
    assert loaded.snapshot.pod_groups[0].min_member == 1


def test_the_queue_comes_from_a_label_as_on_a_scheduler_plugins_pod_group() -> None:
    group = kube_pod_group("g")
    group["metadata"]["labels"] = {"scheduling.x-k8s.io/queue": "research"}  # type: ignore[index]
    assert load(node("n1"), group).snapshot.pod_groups[0].queue == "research"


def test_fields_not_used_yet_are_named_in_one_warning() -> None:
    group = kube_pod_group("g", schedulingConstraints={"topology": [{"key": "rack"}]}, disruptionMode="PodGroup")
    (warning,) = [w for w in load(node("n1"), group).warnings if "not used yet" in w]
    assert "spec.schedulingConstraints.topology (key rack), spec.disruptionMode are not used yet" in warning


def test_the_workload_itself_is_skipped_with_a_note_naming_what_is_not_enforced() -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    }
    (note,) = load(node("n1"), workload).warnings
    assert "a Workload with podGroupTemplates is read through the PodGroups made from them and their pods" in note
    assert "compositePodGroupTemplates, a gang of gangs, are not enforced yet" in note


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({}, "spec.schedulingPolicy: exactly one of basic or gang is required (the API server's rule), got neither"),
        ({"basic": {}, "gang": {"minCount": 1}}, "got both"),
        ({"gang": {}}, "spec.schedulingPolicy.gang.minCount: a gang policy needs minCount"),
        ({"gang": {"minCount": 0}}, "spec.schedulingPolicy.gang.minCount"),
    ],
)
def test_a_malformed_policy_names_the_field(policy: Obj, expected: str) -> None:
    message = load_error(node("n1"), kube_pod_group("g", schedulingPolicy=policy))
    assert "(PodGroup default/g)" in message and expected in message
