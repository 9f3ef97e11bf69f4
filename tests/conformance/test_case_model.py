"""A case's `model` block (`case_model.py`): applied to the PodGroups it names, refused where it
names what the objects do not make, and checked against what a loader already read."""

from __future__ import annotations

import pytest

from tests.builders import make_gang, make_node, make_snapshot, with_sub_groups
from tests.conformance.case_model import with_case_model


def test_model_gives_the_pod_group_its_sub_groups_and_the_pods_theirs() -> None:
    gang = make_gang("job", replicas=4)
    snapshot = make_snapshot(nodes=[make_node("n1")], groups=[gang])
    key, pods = gang.group.key, [pod.name for pod in gang.pods]
    model = {
        key: {
            "min_sub_groups": {"shard": 1},
            "sub_groups": [
                {"name": "shard-0", "policy": "shard", "min_member": 2, "pods": pods[:2]},
                {"name": "shard-1", "policy": "shard", "min_member": 2, "pods": pods[2:]},
            ],
        }
    }
    got = with_case_model(snapshot, model, case="c")
    group = got.pod_group_by_key[key]
    assert [(s.name, s.min_member) for s in group.sub_groups] == [("shard-0", 2), ("shard-1", 2)]
    assert group.min_sub_groups == {"shard": 1}
    assert [pod.sub_group for pod in got.pods_by_group[key]] == ["shard-0", "shard-0", "shard-1", "shard-1"]


def test_a_pod_not_of_the_group_is_refused() -> None:
    gang = make_gang("job", replicas=2)
    snapshot = make_snapshot(nodes=[make_node("n1")], groups=[gang])
    model = {gang.group.key: {"sub_groups": [{"name": "a", "pods": ["nobody"]}]}}
    with pytest.raises(ValueError, match="pod 'nobody' is not a pod of"):
        with_case_model(snapshot, model, case="c")


def test_a_loader_that_read_other_sub_groups_is_caught() -> None:
    """A PodGroup that already has sub-groups (a loader read them) must match the case's."""
    gang = with_sub_groups(make_gang("job", replicas=4), 2)
    snapshot = make_snapshot(nodes=[make_node("n1")], groups=[gang])
    pods = [pod.name for pod in gang.pods]
    same = [
        {"name": "job-0", "policy": "shard", "min_member": 2, "pods": pods[:2]},
        {"name": "job-1", "policy": "shard", "min_member": 2, "pods": pods[2:]},
    ]
    assert with_case_model(snapshot, {gang.group.key: {"sub_groups": same}}, case="c").pods == snapshot.pods
    other = [{**same[0], "pods": pods[:1]}, {**same[1], "pods": pods[1:]}]
    with pytest.raises(ValueError, match="the loader read"):
        with_case_model(snapshot, {gang.group.key: {"sub_groups": other}}, case="c")
