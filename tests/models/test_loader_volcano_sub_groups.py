"""Loading Volcano's `PodGroup.spec.subGroupPolicy` (Volcano 1.14+) into sub-groups: which
pods in which sub-group, each one's minimum and tier, and the job's minimum per policy."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.snapshot import NetworkTopology, Snapshot
from tests.models._kube_builders import Obj, load, load_error, node, pod, pod_group, task, vcjob


def _shard_pods(shards: int, size: int, *, group: str = "train", running_on: str | None = None) -> list[Obj]:
    return [
        pod(f"w{shard}-{index}", group=group, labels={"role": "worker", "shard": str(shard)}, node=running_on)
        for shard in range(shards)
        for index in range(size)
    ]


def _sub_group_of(snapshot: Snapshot) -> dict[str, str | None]:
    return {p.name: p.sub_group for p in snapshot.pods}


SHARD_POLICY: Obj = {
    "name": "shard",
    "subGroupSize": 2,
    "minSubGroups": 2,
    "labelSelector": {"matchLabels": {"role": "worker"}},
    "matchLabelKeys": ["shard"],
    "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
}


def test_pods_split_by_their_match_label_values_into_named_sub_groups_of_the_policy() -> None:
    loaded = load(node("n1"), pod_group("train", minMember=4, subGroupPolicy=[SHARD_POLICY]), *_shard_pods(3, 2))
    (group,) = loaded.snapshot.pod_groups
    assert [(s.name, s.policy, s.min_member, s.network_topology) for s in group.sub_groups] == [
        ("shard-0", "shard", 2, NetworkTopology(mode="hard", highest_tier_allowed=1)),
        ("shard-1", "shard", 2, NetworkTopology(mode="hard", highest_tier_allowed=1)),
        ("shard-2", "shard", 2, NetworkTopology(mode="hard", highest_tier_allowed=1)),
    ]
    assert group.min_sub_groups == {"shard": 2}
    assert group.min_member == 4  # the job's own minimum still holds
    assert _sub_group_of(loaded.snapshot) == {
        "w0-0": "shard-0", "w0-1": "shard-0", "w1-0": "shard-1", "w1-1": "shard-1", "w2-0": "shard-2", "w2-1": "shard-2",
    }  # fmt: skip
    assert loaded.warnings == ()


def test_a_pod_the_selector_does_not_match_is_in_no_sub_group() -> None:
    leader = pod("leader", group="train", labels={"role": "leader", "shard": "0"})
    loaded = load(node("n1"), pod_group("train", minMember=3, subGroupPolicy=[SHARD_POLICY]), leader, *_shard_pods(1, 2))
    assert _sub_group_of(loaded.snapshot) == {"leader": None, "w0-0": "shard-0", "w0-1": "shard-0"}


def test_several_keys_name_the_sub_group_by_every_value_and_no_key_names_it_by_the_policy() -> None:
    policies = [
        {"name": "decode", "labelSelector": {"matchLabels": {"role": "decode"}}, "matchLabelKeys": ["rack", "replica"]},
        {"name": "prefill", "labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["prefill"]}]}},
    ]
    pods = [
        pod("d0", group="llm", labels={"role": "decode", "rack": "a", "replica": "0"}),
        pod("d1", group="llm", labels={"role": "decode", "rack": "a", "replica": "0"}),
        pod("d2", group="llm", labels={"role": "decode", "rack": "b", "replica": "1"}),
        pod("p0", group="llm", labels={"role": "prefill"}),
        pod("p1", group="llm", labels={"role": "prefill"}),
        pod("p2", group="llm", labels={"role": "prefill"}),
    ]
    loaded = load(node("n1"), pod_group("llm", subGroupPolicy=policies), *pods)
    (group,) = loaded.snapshot.pod_groups
    # No subGroupSize: the whole sub-group is its minimum (2 decode pods of a-0, 1 of b-1, 3 prefill).
    assert [(s.name, s.policy, s.min_member) for s in group.sub_groups] == [
        ("decode-a-0", "decode", 2), ("decode-b-1", "decode", 1), ("prefill", "prefill", 3),
    ]  # fmt: skip
    assert group.min_sub_groups == {}  # minSubGroups 0: no count of started sub-groups is asked
    assert _sub_group_of(loaded.snapshot)["d2"] == "decode-b-1"


def test_a_pod_joins_the_first_policy_that_takes_it_and_one_missing_a_key_falls_through() -> None:
    policies = [
        {"name": "by-rack", "matchLabelKeys": ["rack"], "subGroupSize": 1},
        {"name": "rest", "subGroupSize": 1},
    ]
    pods = [pod("a", group="g", labels={"rack": "r1"}), pod("b", group="g", labels={"rack": ""}), pod("c", group="g")]
    loaded = load(node("n1"), pod_group("g", subGroupPolicy=policies), *pods)
    assert _sub_group_of(loaded.snapshot) == {"a": "by-rack-r1", "b": "rest", "c": "rest"}


def test_running_pods_belong_to_their_sub_group_too() -> None:
    running = _shard_pods(1, 2, running_on="n1")
    loaded = load(node("n1"), pod_group("train", subGroupPolicy=[SHARD_POLICY]), *running, *_shard_pods(2, 2)[2:])
    assert _sub_group_of(loaded.snapshot) == {"w0-0": "shard-0", "w0-1": "shard-0", "w1-0": "shard-1", "w1-1": "shard-1"}
    assert [p.phase for p in loaded.snapshot.pods][:2] == ["running", "running"]


def test_min_sub_groups_beyond_the_sub_groups_there_are_is_a_warning_and_the_job_keeps_the_minimum() -> None:
    policy = {**SHARD_POLICY, "minSubGroups": 3}
    loaded = load(node("n1"), pod_group("train", subGroupPolicy=[policy]), *_shard_pods(2, 2))
    assert loaded.snapshot.pod_groups[0].min_sub_groups == {"shard": 3}
    assert loaded.warnings == (
        "test.yaml: document 2 (PodGroup default/train): spec.subGroupPolicy[0].minSubGroups 3 is more than the 2 "
        "sub-group(s) its pods form; the PodGroup stays pending until pods for more arrive",
    )


def test_a_sub_group_short_of_its_size_is_kept_with_a_warning() -> None:
    pods = _shard_pods(1, 2) + _shard_pods(2, 1)[1:]  # shard 0: 2 pods, shard 1: 1 pod
    loaded = load(node("n1"), pod_group("train", subGroupPolicy=[{**SHARD_POLICY, "minSubGroups": 1}]), *pods)
    assert [(s.name, s.min_member) for s in loaded.snapshot.pod_groups[0].sub_groups] == [("shard-0", 2), ("shard-1", 2)]
    assert loaded.warnings == (
        "test.yaml: document 2 (PodGroup default/train): sub-group shard-1 has 1 pod(s), fewer than its subGroupSize 2; "
        "it cannot start until more arrive",
    )


def test_a_selector_that_matches_no_pod_is_a_warning_naming_the_policy() -> None:
    policy = {**SHARD_POLICY, "labelSelector": {"matchLabels": {"role": "trainer"}}}
    loaded = load(node("n1"), pod_group("train", subGroupPolicy=[policy]), *_shard_pods(1, 2))
    (group,) = loaded.snapshot.pod_groups
    assert (group.sub_groups, group.min_sub_groups) == ((), {})
    assert loaded.warnings == (
        "test.yaml: document 2 (PodGroup default/train): spec.subGroupPolicy[0] (shard) takes no pod: its "
        "labelSelector matches none, or none has a value for each of its matchLabelKeys; it forms no sub-group "
        "and its minSubGroups 2 does not apply",
    )


def test_a_tier_given_by_name_is_a_warning_as_it_is_not_read_yet() -> None:
    policy = {**SHARD_POLICY, "networkTopology": {"mode": "hard", "highestTierName": "rack"}}
    loaded = load(node("n1"), pod_group("train", subGroupPolicy=[policy]), *_shard_pods(2, 2))
    assert loaded.snapshot.pod_groups[0].sub_groups[0].network_topology == NetworkTopology(mode="hard")
    assert loaded.warnings == (
        "test.yaml: document 2 (PodGroup default/train): spec.subGroupPolicy[0].networkTopology.highestTierName is "
        "not used yet (tiers are read by number): set highestTierAllowed, else the constraint is not enforced",
    )


@pytest.mark.parametrize(
    ("policies", "expected"),
    [
        ([{"subGroupSize": 2}], "spec.subGroupPolicy[0].name: a sub-group policy needs a name"),
        ([{"name": "s", "subGroupSize": -1}], "spec.subGroupPolicy[0].subGroupSize: must be >= 1, got -1"),
        ([{"name": "s", "subGroupSize": 0}], "spec.subGroupPolicy[0].subGroupSize: must be >= 1, got 0"),
        ([{"name": "s", "minSubGroups": -2}], "spec.subGroupPolicy[0].minSubGroups: must be >= 0, got -2"),
        ([{"name": "s"}, {"name": "s"}], "spec.subGroupPolicy[1].name: 's' repeats spec.subGroupPolicy[0]"),
        (
            [{"name": "s", "networkTopology": {"mode": "strict"}}],
            "spec.subGroupPolicy[0].networkTopology.mode: must be hard or soft, got 'strict'",
        ),
        (
            [{"name": "s", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}],
            "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].operator: must be one of In, NotIn",
        ),
        (
            [{"name": "a-b", "matchLabelKeys": ["x"]}, {"name": "a", "matchLabelKeys": ["y"]}],
            "spec.subGroupPolicy[1].name: policy 'a' forms sub-group 'a-b-c', which policy 'a-b' forms too",
        ),
    ],
)
def test_a_malformed_policy_is_an_error_naming_the_document_object_and_field(policies: list[Obj], expected: str) -> None:
    pods = [pod("p", group="g", labels={"x": "c"}), pod("q", group="g", labels={"y": "b-c"})]
    message = load_error(node("n1"), pod_group("g", subGroupPolicy=policies), *pods)
    assert message.startswith("test.yaml: document 2 (PodGroup default/g): ")
    assert expected in message


# ---- a vcjob task's partitionPolicy ----


def _partitioned(replicas: int = 8, **partition: object) -> Obj:
    worker = task("worker", replicas=replicas)
    worker["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 4, **partition}
    return vcjob("llm", task("leader"), worker)


def test_a_vcjob_task_partition_policy_makes_one_sub_group_per_partition_of_its_pods() -> None:
    topology = {"mode": "hard", "highestTierAllowed": 1}
    loaded = load(node("n1"), _partitioned(minPartitions=1, networkTopology=topology))
    (group,) = loaded.snapshot.pod_groups
    assert [(s.name, s.policy, s.min_member, s.network_topology) for s in group.sub_groups] == [
        ("worker-0", "worker", 4, NetworkTopology(mode="hard", highest_tier_allowed=1)),
        ("worker-1", "worker", 4, NetworkTopology(mode="hard", highest_tier_allowed=1)),
    ]
    assert group.min_sub_groups == {"worker": 1}
    # No minAvailable on the task: minPartitions × partitionSize = 4 workers, and the leader's 1.
    assert (group.task_by_name["worker"].min_available, group.min_member) == (4, 5)
    assert _sub_group_of(loaded.snapshot) == {
        "llm-leader-0": None,
        **{f"llm-worker-{index}": f"worker-{index // 4}" for index in range(8)},
    }


def test_a_partition_policy_must_cover_the_task_replicas_exactly() -> None:
    message = load_error(node("n1"), _partitioned(replicas=6))
    assert "spec.tasks[1].partitionPolicy.totalPartitions: totalPartitions 2 × partitionSize 4 = 8, not the task's replicas (6)" in message


@pytest.mark.parametrize(
    ("partition", "expected"),
    [
        ({"partitionSize": None}, "spec.tasks[1].partitionPolicy.partitionSize: required"),
        ({"minPartitions": 3}, "spec.tasks[1].partitionPolicy.minPartitions: must be <= totalPartitions (2), got 3"),
        ({"minPartitions": -1}, "spec.tasks[1].partitionPolicy.minPartitions: must be >= 0, got -1"),
    ],
)
def test_a_malformed_partition_policy_names_the_field(partition: Obj, expected: str) -> None:
    message = load_error(node("n1"), _partitioned(**partition))
    assert message.startswith("test.yaml: document 2 (Job default/llm): ")
    assert expected in message


def test_a_live_vcjob_is_read_through_its_pod_group_and_pods_as_the_job_controller_makes_them() -> None:
    """What Volcano's job controller writes for a task `worker` of 4 replicas with partitionSize 2:
    the PodGroup's policy (selector on the task label, key the partition label) and pods labelled
    with both."""
    policy = {
        "name": "worker",
        "subGroupSize": 2,
        "minSubGroups": 1,
        "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
        "matchLabelKeys": ["volcano.sh/partition-id"],
    }
    pods = [
        pod(
            f"llm-worker-{index}",
            group="llm",
            labels={"volcano.sh/job-name": "llm", "volcano.sh/task-spec": "worker", "volcano.sh/partition-id": str(index // 2)},
            annotations={"volcano.sh/task-spec": "worker"},
            node="n1" if index < 2 else None,
        )
        for index in range(4)
    ]
    loaded = load(node("n1", cpu="8"), pod_group("llm", minMember=2, subGroupPolicy=[policy]), *pods)
    (group,) = loaded.snapshot.pod_groups
    assert [(s.name, s.min_member) for s in group.sub_groups] == [("worker-0", 2), ("worker-1", 2)]
    assert _sub_group_of(loaded.snapshot) == {
        "llm-worker-0": "worker-0", "llm-worker-1": "worker-0", "llm-worker-2": "worker-1", "llm-worker-3": "worker-1",
    }  # fmt: skip


# ---- properties ----

LABEL_VALUES = st.sampled_from(["", "a", "b", "c"])


@given(
    pod_labels=st.lists(st.fixed_dictionaries({}, optional={"rack": LABEL_VALUES, "role": LABEL_VALUES}), min_size=1, max_size=12),
    size=st.none() | st.integers(min_value=1, max_value=4),
)
@settings(max_examples=60, deadline=None)
def test_every_pod_with_a_value_for_each_key_is_in_the_one_sub_group_named_by_its_values(
    pod_labels: list[dict[str, str]], size: int | None
) -> None:
    policy: Obj = {"name": "p", "matchLabelKeys": ["rack", "role"]}
    if size is not None:
        policy["subGroupSize"] = size
    pods = [pod(f"p{index}", group="g", labels=labels) for index, labels in enumerate(pod_labels)]
    loaded = load(node("n1"), pod_group("g", subGroupPolicy=[policy]), *pods)
    (group,) = loaded.snapshot.pod_groups
    members: dict[str, int] = {}
    for labels, placed in zip(pod_labels, loaded.snapshot.pods, strict=True):
        if labels.get("rack") and labels.get("role"):
            assert placed.sub_group == f"p-{labels['rack']}-{labels['role']}"
            members[placed.sub_group] = members.get(placed.sub_group, 0) + 1
        else:
            assert placed.sub_group is None
    assert {sub.name: sub.min_member for sub in group.sub_groups} == {
        name: size if size is not None else count for name, count in members.items()
    }
