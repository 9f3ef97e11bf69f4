"""Loading the Kubernetes Workload API as nested gangs: a Workload (`spec.podGroups`, the
v1alpha1/v1alpha2 shape) with pods that name it in `spec.workloadRef`, and a PodGroup object
whose pods give `spec.schedulingGroup.podGroupReplicaKey` — one sub-group per pod group
replica, each a gang of its pod group's minCount."""

from __future__ import annotations

import pytest

from models.snapshot import Snapshot
from tests.models._kube_builders import Obj, load, load_error, node, pod
from tests.models._owner_gang_pods import kube_pod_group, member_pod


def workload(name: str, *pod_groups: Obj, version: str = "v1alpha2") -> Obj:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"controllerRef": {"apiGroup": "apps", "kind": "Deployment", "name": name}, "podGroups": list(pod_groups)},
    }


def gang(name: str, min_count: object) -> Obj:
    return {"name": name, "policy": {"gang": {"minCount": min_count}}}


def ref_pod(name: str, workload_name: str, pod_group: str, replica_key: str | None = None, **extra: object) -> Obj:
    ref: Obj = {"name": workload_name, "podGroup": pod_group}
    if replica_key is not None:
        ref["podGroupReplicaKey"] = replica_key
    return pod(name, scheduler="batchplace", workloadRef=ref, **extra)  # type: ignore[arg-type]


def _sub_group_of(snapshot: Snapshot) -> dict[str, str | None]:
    return {p.name: p.sub_group for p in snapshot.pods}


LLM = workload("llm", gang("prefill", 2), gang("decode", 3))
LLM_PODS = [
    ref_pod("p0", "llm", "prefill"),
    ref_pod("p1", "llm", "prefill"),
    *(ref_pod(f"d{replica}-{index}", "llm", "decode", str(replica)) for replica in (0, 1) for index in range(3)),
]


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2"])
def test_a_workload_is_one_pod_group_with_a_sub_group_per_pod_group_replica(version: str) -> None:
    loaded = load(node("n1"), workload("llm", gang("prefill", 2), gang("decode", 3), version=version), *LLM_PODS)
    (group,) = loaded.snapshot.pod_groups
    assert (group.key, group.min_member, group.min_sub_groups) == ("default/llm", 2, {})
    assert [(s.name, s.policy, s.min_member, s.network_topology) for s in group.sub_groups] == [
        ("prefill", "prefill", 2, None), ("decode-0", "decode", 3, None), ("decode-1", "decode", 3, None),
    ]  # fmt: skip
    assert _sub_group_of(loaded.snapshot) == {
        "p0": "prefill", "p1": "prefill",
        "d0-0": "decode-0", "d0-1": "decode-0", "d0-2": "decode-0",
        "d1-0": "decode-1", "d1-1": "decode-1", "d1-2": "decode-1",
    }  # fmt: skip
    assert {p.pod_group for p in loaded.snapshot.pods} == {"default/llm"}
    assert loaded.warnings == ()


def test_a_basic_pod_group_is_a_sub_group_of_one() -> None:
    web = workload("web", {"name": "front", "policy": {"basic": {}}})
    loaded = load(node("n1"), web, ref_pod("f0", "web", "front"), ref_pod("f1", "web", "front"))
    (group,) = loaded.snapshot.pod_groups
    assert [(s.name, s.min_member) for s in group.sub_groups] == [("front", 1)]
    assert group.min_member == 1


def test_a_pending_pod_naming_an_unknown_pod_group_is_skipped_with_a_warning_naming_the_field() -> None:
    loaded = load(node("n1"), LLM, *LLM_PODS, ref_pod("x", "llm", "router"))
    assert "x" not in _sub_group_of(loaded.snapshot)
    assert loaded.warnings == (
        "test.yaml: document 11 (Pod default/x): spec.workloadRef.podGroup 'router' is not a pod group of "
        "Workload 'llm' (decode, prefill); skipped",
    )


def test_a_pod_naming_a_workload_not_in_the_input_is_skipped_with_a_warning_naming_the_field() -> None:
    loaded = load(node("n1"), ref_pod("lost", "train", "workers"), pod("plain", node="n1"))
    assert [p.name for p in loaded.snapshot.pods] == ["plain"]
    assert loaded.warnings == (
        "test.yaml: document 2 (Pod default/lost): spec.workloadRef.name names Workload 'train', which is not "
        "in the input; skipped",
    )


def test_a_running_pod_naming_a_workload_not_in_the_input_only_takes_capacity() -> None:
    loaded = load(node("n1"), ref_pod("old", "train", "workers", node="n1"))
    (running,) = loaded.snapshot.pods
    assert (running.pod_group, running.sub_group, running.phase) == (None, None, "running")
    assert "spec.workloadRef.name names Workload 'train', which is not in the input; it only takes capacity" in loaded.warnings[0]


@pytest.mark.parametrize(
    ("pod_groups", "expected"),
    [
        ([], "spec.podGroups: a Workload needs at least one pod group"),
        ([{"policy": {"basic": {}}}], "spec.podGroups[0].name: required"),
        ([gang("a", 1), gang("a", 2)], "spec.podGroups[1].name: 'a' repeats spec.podGroups[0]"),
        ([{"name": "a", "policy": {}}], "spec.podGroups[0].policy: exactly one of basic or gang is required"),
        ([gang("a", 0)], "spec.podGroups[0].policy.gang.minCount: must be >= 1, got 0"),
        ([{"name": "a", "policy": {"gang": {}}}], "spec.podGroups[0].policy.gang.minCount: a gang policy needs minCount"),
    ],
)
def test_a_malformed_workload_names_the_field(pod_groups: list[Obj], expected: str) -> None:
    message = load_error(node("n1"), workload("w", *pod_groups))
    assert message.startswith("test.yaml: document 2 (Workload default/w): ")
    assert expected in message


@pytest.mark.parametrize(
    ("ref", "expected"),
    [({"podGroup": "a"}, "spec.workloadRef.name: required"), ({"name": "w"}, "spec.workloadRef.podGroup: required")],
)
def test_a_workload_ref_without_its_name_or_pod_group_names_the_field(ref: Obj, expected: str) -> None:
    message = load_error(node("n1"), workload("w", gang("a", 1)), pod("p", scheduler="batchplace", workloadRef=ref))  # type: ignore[arg-type]
    assert message.startswith("test.yaml: document 3 (Pod default/p): ")
    assert expected in message


def test_workload_and_pod_fields_of_the_first_api_shape_are_known_and_misspelled_ones_are_named() -> None:
    assert load(node("n1"), LLM, *LLM_PODS).warnings == ()
    misspelled = workload("w", {"name": "a", "policy": {"gang": {"minCount": 1}}, "polcy": {}})
    (warning,) = load(node("n1"), misspelled).warnings
    assert "spec.podGroups[0].polcy: not a field of a Kubernetes Workload; did you mean policy?" in warning


# ---- a PodGroup object whose pods give a replica key ----


def _replica_pod(name: str, key: str) -> Obj:
    scheduling_group = {"podGroupName": "workers", "podGroupReplicaKey": key}
    return pod(name, scheduler="batchplace", schedulingGroup=scheduling_group)  # type: ignore[arg-type]


def test_pod_group_replica_keys_make_one_sub_group_per_replica_of_the_gang_minimum() -> None:
    pods = [
        _replica_pod(f"w{key}-{index}", key)
        for key in ("a", "b")
        for index in range(2)
    ]
    loaded = load(node("n1"), kube_pod_group("workers"), *pods)
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 2  # one whole replica starts it
    assert [(s.name, s.policy, s.min_member) for s in group.sub_groups] == [
        ("workers-a", "workers", 2), ("workers-b", "workers", 2),
    ]  # fmt: skip
    assert _sub_group_of(loaded.snapshot) == {"wa-0": "workers-a", "wa-1": "workers-a", "wb-0": "workers-b", "wb-1": "workers-b"}
    assert loaded.warnings == ()


def test_pod_group_pods_without_replica_keys_make_no_sub_groups() -> None:
    loaded = load(node("n1"), kube_pod_group("workers"), member_pod("w0", "workers"), member_pod("w1", "workers"))
    assert loaded.snapshot.pod_groups[0].sub_groups == ()
    assert {p.sub_group for p in loaded.snapshot.pods} == {None}


def test_a_pod_without_a_replica_key_among_pods_with_one_is_the_keyless_replica_with_a_warning() -> None:
    keyed = _replica_pod("k", "0")
    loaded = load(node("n1"), kube_pod_group("workers"), keyed, member_pod("bare", "workers"))
    assert _sub_group_of(loaded.snapshot) == {"k": "workers-0", "bare": "workers"}
    assert loaded.warnings == (
        "test.yaml: document 4 (Pod default/bare): spec.schedulingGroup.podGroupReplicaKey is not set while other "
        "pods of PodGroup 'workers' set one; it joins the replica without a key, sub-group 'workers'",
    )


# ---- a PodGroup that takes its policy from its Workload's PodGroupTemplate ----

TEMPLATES_WORKLOAD: Obj = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]},
}


def _templated_pod_group(ref_key: str, ref: Obj, version: str = "v1beta1") -> Obj:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": "train-workers-0", "namespace": "default"},
        "spec": {ref_key: ref},
    }


@pytest.mark.parametrize(
    ("version", "ref_key", "ref"),
    [
        ("v1alpha2", "podGroupTemplateRef", {"workloadName": "train", "podGroupTemplateName": "workers"}),
        ("v1beta1", "podGroupTemplateRef", {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}}),
        ("v1beta1", "workloadRef", {"workloadName": "train", "templateName": "workers"}),
    ],
)
def test_a_pod_group_without_a_policy_takes_its_template_s(version: str, ref_key: str, ref: Obj) -> None:
    group = _templated_pod_group(ref_key, ref, version)
    loaded = load(node("n1"), TEMPLATES_WORKLOAD, group, member_pod("w0", "train-workers-0"))
    (pod_group,) = loaded.snapshot.pod_groups
    assert (pod_group.key, pod_group.min_member) == ("default/train-workers-0", 4)
    assert not [w for w in loaded.warnings if "not a field" in w or "apiVersion" in w]


def test_a_pod_group_naming_a_template_not_in_the_input_and_no_policy_names_the_field() -> None:
    group = _templated_pod_group("podGroupTemplateRef", {"workloadName": "train", "podGroupTemplateName": "driver"})
    message = load_error(node("n1"), TEMPLATES_WORKLOAD, group)
    assert message == (
        "test.yaml: document 3 (PodGroup default/train-workers-0): spec.schedulingPolicy: required: the PodGroup has "
        "none, and the PodGroupTemplate 'driver' of Workload 'train' it names, whose policy it would take, is not in "
        "the input"
    )
