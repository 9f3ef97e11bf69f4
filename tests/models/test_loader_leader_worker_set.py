"""Loading a LeaderWorkerSet's pods, as its controller and pod webhook create them: the set
is one PodGroup, each group (leader + workers of one group index) a sub-group of `size`
members, and one whole group starts the set."""

from __future__ import annotations

from models.pod_affinity import PodAffinityTerm
from models.snapshot import NetworkTopology, SubGroup
from tests.models._kube_builders import hypernode, load, load_error, member, node, pod
from tests.models._owner_gang_pods import LWS, lws_object, lws_pod


def test_the_set_is_one_pod_group_and_each_group_a_sub_group_of_size_members() -> None:
    pods = [lws_pod("llm", group, worker, size=3) for group in range(2) for worker in range(3)]
    loaded = load(node("n1", gpus=8), *pods)
    (group,) = loaded.snapshot.pod_groups
    assert (group.key, group.min_member, group.queue, group.min_sub_groups) == ("default/llm", 3, "default", {})
    assert group.sub_groups == (
        SubGroup(name="llm-0", policy="llm", min_member=3),
        SubGroup(name="llm-1", policy="llm", min_member=3),
    )
    assert [t.name for t in group.tasks] == ["leader", "worker"]
    assert [(p.name, p.pod_group, p.task, p.sub_group) for p in loaded.snapshot.pods[:4]] == [
        ("llm-0", "default/llm", "leader", "llm-0"),
        ("llm-0-1", "default/llm", "worker", "llm-0"),
        ("llm-0-2", "default/llm", "worker", "llm-0"),
        ("llm-1", "default/llm", "leader", "llm-1"),
    ]
    assert not any("not enforced yet" in w for w in loaded.warnings)


def test_two_sets_in_two_namespaces_are_two_pod_groups() -> None:
    pods = [lws_pod("llm", 0, worker, size=2, namespace=ns) for ns in ("a", "b") for worker in range(2)]
    groups = load(node("n1", gpus=8), *pods).snapshot.pod_groups
    assert [(g.key, [s.name for s in g.sub_groups]) for g in groups] == [("a/llm", ["llm-0"]), ("b/llm", ["llm-0"])]


def test_the_group_size_counts_even_when_workers_are_not_all_created_yet() -> None:
    loaded = load(node("n1", gpus=8), lws_pod("llm", 0, 0, size=4), lws_pod("llm", 0, 1, size=4))
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 4
    assert group.sub_groups[0].min_member == 4


def test_a_leader_alone_is_a_gang_of_one_until_its_workers_exist() -> None:
    # With exclusive placement LWS creates the workers only once the leader is scheduled.
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), lws_pod("llm", 0, 0, size=4, exclusive="rack"))
    (group,) = loaded.snapshot.pod_groups
    assert group.min_member == 1
    assert group.sub_groups[0].min_member == 1
    assert any("only the leader of gang llm-0 (size 4)" in w for w in loaded.warnings)


def test_the_set_starts_with_its_smallest_whole_group() -> None:
    # Group 0 is a leader admitted alone (min 1), group 1 is whole (min 3): one group starts the set.
    pods = [lws_pod("llm", 0, 0, size=3, exclusive="rack")]
    pods += [lws_pod("llm", 1, worker, size=3, exclusive="rack", node_selector={"rack": "r1"}) for worker in range(3)]
    (group,) = load(node("n1", gpus=8, labels={"rack": "r1"}), *pods).snapshot.pod_groups
    assert [(s.name, s.min_member) for s in group.sub_groups] == [("llm-0", 1), ("llm-1", 3)]
    assert group.min_member == 1


RACKED = (
    node("n1", gpus=8, labels={"rack": "r1"}),
    node("n2", gpus=8, labels={"rack": "r1"}),
    node("n3", gpus=8, labels={"rack": "r2"}),
    hypernode("rack-1", 1, member(exact="n1"), member(exact="n2")),
    hypernode("rack-2", 1, member(exact="n3")),
    hypernode("spine", 2, member("HyperNode", exact="rack-1"), member("HyperNode", exact="rack-2")),
)


def test_an_exclusive_topology_is_the_tier_whose_hypernodes_group_nodes_by_the_key() -> None:
    # Racks are the tier-1 HyperNodes: each group of the set sits inside one of them.
    pods = [lws_pod("llm", group, 0, size=2, exclusive="rack") for group in range(2)]
    loaded = load(*RACKED, *pods)
    (group,) = loaded.snapshot.pod_groups
    hard_rack = NetworkTopology(mode="hard", highest_tier_allowed=1)
    assert [(s.name, s.network_topology) for s in group.sub_groups] == [("llm-0", hard_rack), ("llm-1", hard_rack)]
    assert group.network_topology is None
    assert not any("matches no HyperNode tier" in w for w in loaded.warnings)


def test_a_key_no_tier_groups_nodes_by_is_one_warning_and_no_sub_group_topology() -> None:
    # Key `zone` with n1, n3 in zone a and n2 in zone b: rack-1 mixes zones, the spine holds both.
    zoned = [
        node("n1", gpus=8, labels={"zone": "a"}),
        node("n2", gpus=8, labels={"zone": "b"}),
        node("n3", gpus=8, labels={"zone": "a"}),
        *RACKED[3:],
    ]
    pods = [lws_pod("llm", group, 0, size=2, exclusive="zone") for group in range(2)]
    loaded = load(*zoned, *pods)
    assert [s.network_topology for s in loaded.snapshot.pod_groups[0].sub_groups] == [None, None]
    (warning,) = [w for w in loaded.warnings if "matches no HyperNode tier" in w]
    assert "PodGroup default/llm: exclusive topology 'zone' matches no HyperNode tier" in warning


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
    (warning,) = [w for w in loaded.warnings if "carries the pod affinity" in w]
    assert "LeaderWorkerSet gang llm-0: exclusive topology 'rack'" in warning
    assert "one gang per domain is not enforced" in warning


def test_workers_following_their_leader_by_node_selector_enforce_it() -> None:
    pods = [
        lws_pod("llm", 0, 0, size=2, exclusive="rack", node="n1"),
        lws_pod("llm", 0, 1, size=2, exclusive="rack", node_selector={"rack": "r1"}),
    ]
    loaded = load(node("n1", gpus=8, labels={"rack": "r1"}), *pods)
    assert loaded.snapshot.pod_groups[0].min_member == 2
    assert [p.sub_group for p in loaded.snapshot.pods] == ["llm-0", "llm-0"]
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


def test_the_leader_worker_set_object_is_the_same_pod_group_with_every_group_pending() -> None:
    lws = lws_object("llm", replicas=2, size=3, leader_gpus=1, worker_gpus=2, exclusive="rack")
    loaded = load(*RACKED, lws)
    (group,) = loaded.snapshot.pod_groups
    hard_rack = NetworkTopology(mode="hard", highest_tier_allowed=1)
    assert (group.key, group.min_member, group.min_sub_groups) == ("default/llm", 3, {})
    assert group.sub_groups == (
        SubGroup(name="llm-0", policy="llm", min_member=3, network_topology=hard_rack),
        SubGroup(name="llm-1", policy="llm", min_member=3, network_topology=hard_rack),
    )
    assert [(t.name, t.requests["gpu"], t.labels[f"{LWS}/name"]) for t in group.tasks] == [
        ("leader", 1000, "llm"),
        ("worker", 2000, "llm"),
    ]
    assert group.tasks[0].labels[f"{LWS}/worker-index"] == "0"
    assert [(p.name, p.phase, p.task, p.sub_group) for p in loaded.snapshot.pods] == [
        ("llm-0", "pending", "leader", "llm-0"),
        ("llm-0-1", "pending", "worker", "llm-0"),
        ("llm-0-2", "pending", "worker", "llm-0"),
        ("llm-1", "pending", "leader", "llm-1"),
        ("llm-1-1", "pending", "worker", "llm-1"),
        ("llm-1-2", "pending", "worker", "llm-1"),
    ]
    assert not loaded.warnings


def test_without_a_leader_template_the_leader_is_a_worker_and_defaults_apply() -> None:
    # replicas and size default to 1: one group of its leader alone.
    (group,) = load(node("n1", gpus=8), lws_object("llm", replicas=None, size=None, worker_gpus=2)).snapshot.pod_groups
    assert [(t.name, t.requests["gpu"]) for t in group.tasks] == [("leader", 2000)]
    assert [(s.name, s.min_member) for s in group.sub_groups] == [("llm-0", 1)]


def test_with_its_pods_in_the_input_the_object_is_not_expanded_again() -> None:
    pods = [lws_pod("llm", 0, worker, size=3) for worker in range(3)]
    loaded = load(node("n1", gpus=8), lws_object("llm", replicas=2, size=3), *pods)
    (group,) = loaded.snapshot.pod_groups
    assert [s.name for s in group.sub_groups] == ["llm-0"]  # group 1's pods are not created yet
    assert [p.name for p in loaded.snapshot.pods] == ["llm-0", "llm-0-1", "llm-0-2"]
    assert any("the input holds pods this job created" in w for w in loaded.warnings)


def test_fields_for_the_lws_controller_alone_are_named_in_one_warning() -> None:
    lws = lws_object("llm", startupPolicy="LeaderReady", rolloutStrategy={"type": "RollingUpdate"})
    lws["metadata"]["annotations"][f"{LWS}/subgroup-exclusive-topology"] = "rack"  # type: ignore[index]
    (warning,) = load(node("n1", gpus=8), lws).warnings
    assert "spec.rolloutStrategy, spec.startupPolicy" in warning
    assert f"metadata.annotations.{LWS}/subgroup-exclusive-topology" in warning
    assert "are for the LeaderWorkerSet controller; placement does not read them" in warning


def test_no_replicas_or_another_scheduler_makes_no_pods() -> None:
    zero = load(node("n1", gpus=8), lws_object("llm", replicas=0))
    assert zero.snapshot.pod_groups == () and any("spec.replicas is 0" in w for w in zero.warnings)
    other = load(node("n1", gpus=8), lws_object("llm", scheduler="default-scheduler"))
    assert other.snapshot.pod_groups == () and not other.warnings


def test_a_bad_size_names_the_field() -> None:
    message = load_error(node("n1"), lws_object("llm", size=0))
    assert "(LeaderWorkerSet default/llm): spec.leaderWorkerTemplate.size: must be >= 1, got 0" in message
    text = load_error(node("n1"), lws_object("llm", size="x"))
    assert "spec.leaderWorkerTemplate.size: expected an integer, got a string 'x'" in text
