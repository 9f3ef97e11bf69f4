"""Loading a LeaderWorkerSet's pods, as its controller and pod webhook create them: each
group (leader + workers of one group index) is one PodGroup of `size` members."""

from __future__ import annotations

from models.pod_affinity import PodAffinityTerm
from tests.models._kube_builders import load, load_error, node, pod
from tests.models._owner_gang_pods import LWS, lws_pod

SET_WARNING = "LeaderWorkerSet default/llm: each group is a gang of its own"


def test_each_group_is_a_pod_group_of_size_members_with_a_leader_and_worker_task() -> None:
    pods = [lws_pod("llm", group, worker, size=3) for group in range(2) for worker in range(3)]
    loaded = load(node("n1", gpus=8), *pods)
    groups = loaded.snapshot.pod_groups
    assert [(g.key, g.min_member, g.queue) for g in groups] == [("default/llm-0", 3, "default"), ("default/llm-1", 3, "default")]
    assert [t.name for t in groups[0].tasks] == ["leader", "worker"]
    assert [(p.name, p.pod_group, p.task) for p in loaded.snapshot.pods[:3]] == [
        ("llm-0", "default/llm-0", "leader"),
        ("llm-0-1", "default/llm-0", "worker"),
        ("llm-0-2", "default/llm-0", "worker"),
    ]
    (set_warning,) = [w for w in loaded.warnings if SET_WARNING in w]
    assert "(llm-0, llm-1)" in set_warning and "not enforced yet" in set_warning


def test_the_group_size_counts_even_when_workers_are_not_all_created_yet() -> None:
    loaded = load(node("n1", gpus=8), lws_pod("llm", 0, 0, size=4), lws_pod("llm", 0, 1, size=4))
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 4


def test_a_leader_alone_is_a_gang_of_one_until_its_workers_exist() -> None:
    # With exclusive placement LWS creates the workers only once the leader is scheduled.
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), lws_pod("llm", 0, 0, size=4, exclusive="rack"))
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 1
    assert any("only the leader of gang llm-0 (size 4)" in w for w in loaded.warnings)


def test_exclusive_placement_is_the_pod_affinity_the_webhook_injected() -> None:
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), lws_pod("llm", 0, 0, size=2, exclusive="rack"))
    (task,) = loaded.snapshot.pod_groups[0].tasks
    (affinity,) = task.inter_pod.required_affinity
    (anti,) = task.inter_pod.required_anti_affinity
    assert isinstance(affinity, PodAffinityTerm)
    assert (affinity.topology_key, anti.topology_key) == ("rack", "rack")
    assert not any("is not enforced" in w for w in loaded.warnings)


def test_an_exclusive_topology_no_pod_enforces_is_a_warning() -> None:
    pods = [lws_pod("llm", 0, worker, size=2, exclusive="rack", inject_affinity=False) for worker in range(2)]
    loaded = load(node("n1", gpus=8), *pods)
    (warning,) = [w for w in loaded.warnings if "exclusive topology" in w]
    assert "LeaderWorkerSet gang llm-0: exclusive topology 'rack'" in warning
    assert "one domain per gang is not enforced" in warning


def test_workers_following_their_leader_by_node_selector_enforce_it() -> None:
    pods = [
        lws_pod("llm", 0, 0, size=2, exclusive="rack", node="n1"),
        lws_pod("llm", 0, 1, size=2, exclusive="rack", node_selector={"rack": "r1"}),
    ]
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), *pods)
    assert loaded.snapshot.pod_groups[0].min_member == 2
    assert [p.phase for p in loaded.snapshot.pods] == ["running", "pending"]
    assert not any("is not enforced" in w for w in loaded.warnings)


def test_a_pod_naming_a_volcano_pod_group_keeps_it() -> None:
    # LWS's Volcano provider annotates its pods with the PodGroup it creates.
    leader = lws_pod("llm", 0, 0, size=2)
    leader["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "llm-0-5c7f8d9b6"  # type: ignore[index]
    loaded = load(node("n1", gpus=8), leader)
    assert [p.pod_group for p in loaded.snapshot.pods] == []  # its PodGroup is not in the input: skipped
    assert any("names PodGroup 'llm-0-5c7f8d9b6'" in w for w in loaded.warnings)


def test_a_pod_without_the_labels_is_a_plain_pod() -> None:
    loaded = load(node("n1", gpus=8), pod("p", scheduler="batchplace"))
    assert [g.name for g in loaded.snapshot.pod_groups] == ["podgroup-p"]


def test_a_missing_or_unreadable_size_names_the_annotation() -> None:
    broken = lws_pod("llm", 0, 0, size="four")
    message = load_error(node("n1"), broken)
    assert f"(Pod default/llm-0): metadata.annotations.{LWS}/size:" in message
    assert "got 'four'" in message
    zero = load_error(node("n1"), lws_pod("llm", 0, 0, size=0))
    assert "size is at least 1" in zero


def test_a_missing_group_index_names_the_label() -> None:
    broken = lws_pod("llm", 0, 0, size=2)
    del broken["metadata"]["labels"][f"{LWS}/group-index"]  # type: ignore[index]
    message = load_error(node("n1"), broken)
    assert f"metadata.labels.{LWS}/group-index:" in message and "it is missing" in message


def test_pods_of_one_group_disagreeing_on_size_is_an_error_naming_the_later_pod() -> None:
    message = load_error(node("n1", gpus=8), lws_pod("llm", 0, 0, size=2), lws_pod("llm", 0, 1, size=3))
    assert "Pod default/llm-0-1" in message and "gang llm-0: size 3, but pod llm-0 of it says 2" in message


def test_the_leader_worker_set_object_is_skipped_with_a_note_of_what_is_not_enforced() -> None:
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "llm"}, "spec": {}}
    (note,) = load(node("n1"), lws).warnings
    assert "(LeaderWorkerSet default/llm): a LeaderWorkerSet is read through the pods its controller creates" in note
    assert "the set as a whole is not one gang" in note and "not enforced yet" in note
