"""`models.clusters`: several clusters merged into one snapshot, and a placement split back."""

from __future__ import annotations

import pytest

from models.clusters import (
    CLUSTER_LABEL,
    local_pod_key,
    merge_clusters,
    split_placement,
)
from models.errors import FieldError
from models.pod_affinity import HOSTNAME_KEY
from models.snapshot import PriorityClass
from tests.builders import (
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_snapshot,
    resources,
)


def _two_clusters():
    west = make_snapshot(
        nodes=[make_node("n1", gpus=8, leaf="sw-a", spine="sp", labels={HOSTNAME_KEY: "n1"}), make_node("n2", gpus=8)],
        groups=[make_gang("old", gpus=8, running_on=["n1"])],
    )
    east = make_snapshot(nodes=[make_node("n1", gpus=8, leaf="sw-a")], groups=[make_gang("wait", gpus=8)])
    return west, east


def test_each_cluster_is_a_hypernode_one_tier_above_the_highest_any_cluster_declares() -> None:
    west, east = _two_clusters()
    fleet = merge_clusters({"gpu-west": west, "gpu-east": east})
    assert fleet.cluster_tier == 3  # west's spine is tier 2
    chain = fleet.snapshot.hypernode_chain
    assert chain["gpu-west/n1"] == ("gpu-west/sw-a", "gpu-west/sp", "gpu-west")
    assert chain["gpu-west/n2"] == ("gpu-west",)  # a node in no HyperNode sits directly in its cluster
    assert chain["gpu-east/n1"] == ("gpu-east/sw-a", "gpu-east")
    assert fleet.snapshot.hypernode_by_name["gpu-east"].tier == 3


def test_names_are_qualified_by_cluster_so_equal_names_do_not_collide() -> None:
    west, east = _two_clusters()
    snapshot = merge_clusters({"gpu-west": west, "gpu-east": east}).snapshot
    assert {n.name for n in snapshot.nodes} == {"gpu-west/n1", "gpu-west/n2", "gpu-east/n1"}
    node = snapshot.node_by_name["gpu-west/n1"]
    assert node.labels[CLUSTER_LABEL] == "gpu-west"
    assert node.labels[HOSTNAME_KEY] == "gpu-west/n1"
    running = next(p for p in snapshot.pods if p.phase == "running")
    assert (running.key, running.node, running.pod_group) == ("default/gpu-west/old-worker-0", "gpu-west/n1", "default/gpu-west/old")
    assert local_pod_key(running.key) == "default/old-worker-0"


def test_what_is_already_in_a_cluster_is_pinned_there_and_submitted_jobs_are_confined_to_one() -> None:
    west, east = _two_clusters()
    jobs = make_snapshot(groups=[make_gang("llm", replicas=2, gpus=8, topology_tier=1), make_gang("free", gpus=1)])
    fleet = merge_clusters({"gpu-west": west, "gpu-east": east}, jobs=jobs)
    waiting = fleet.snapshot.pod_group_by_key["default/gpu-east/wait"]
    assert waiting.tasks[0].node_selector == {CLUSTER_LABEL: "gpu-east"}
    llm = fleet.snapshot.pod_group_by_key["default/llm"]
    free = fleet.snapshot.pod_group_by_key["default/free"]
    assert (llm.network_topology.mode, llm.network_topology.highest_tier_allowed) == ("hard", 1)  # tighter kept
    assert (free.network_topology.mode, free.network_topology.highest_tier_allowed) == ("hard", 3)
    assert fleet.jobs == ("default/llm", "default/free")


def test_a_placement_splits_back_into_each_clusters_own_names() -> None:
    west, east = _two_clusters()
    jobs = make_snapshot(groups=[make_gang("llm", gpus=8)])
    fleet = merge_clusters({"gpu-west": west, "gpu-east": east}, jobs=jobs)
    placement = make_placement(
        binds=[make_bind("default/llm-worker-0", "gpu-west/n2", gpus=range(8))],
        evictions=[make_eviction("default/gpu-west/old-worker-0", "gpu-west/n1", for_="default/gpu-east/wait")],
    )
    split = split_placement(fleet, placement)
    assert set(split) == {"gpu-west", "gpu-east"}
    assert [(b.pod, b.node) for b in split["gpu-west"].binds] == [("default/llm-worker-0", "n2")]
    assert [(e.pod, e.node, e.for_) for e in split["gpu-west"].evictions] == [("default/old-worker-0", "n1", "default/wait")]
    assert split["gpu-east"].binds == ()


def test_a_queue_declared_alike_everywhere_is_one_global_queue() -> None:
    queue = make_queue("team-a", capability=resources(gpus=16))
    west = make_snapshot(nodes=[make_node("n1", gpus=8)], queues=[queue])
    east = make_snapshot(nodes=[make_node("n1", gpus=8)], queues=[queue])
    snapshot = merge_clusters({"gpu-west": west, "gpu-east": east}, jobs=make_snapshot(queues=[queue])).snapshot
    assert [q.name for q in snapshot.queues].count("team-a") == 1


def test_a_queue_declared_differently_in_two_clusters_is_an_error_naming_cluster_and_field() -> None:
    west = make_snapshot(queues=[make_queue("team-a", weight=1)])
    east = make_snapshot(queues=[make_queue("team-a", weight=3)])
    with pytest.raises(FieldError) as caught:
        merge_clusters({"gpu-west": west, "gpu-east": east})
    assert caught.value.location.source == "clusters.gpu-east"
    assert caught.value.path == ("queues", "team-a", "weight")
    assert "clusters.gpu-west" in caught.value.message


def test_a_priority_class_declared_differently_is_an_error() -> None:
    west = make_snapshot().model_copy(update={"priority_classes": (PriorityClass(name="high", value=100),)})
    east = make_snapshot().model_copy(update={"priority_classes": (PriorityClass(name="high", value=10),)})
    with pytest.raises(FieldError) as caught:
        merge_clusters({"gpu-west": west, "gpu-east": east})
    assert caught.value.path == ("priority_classes", "high", "value")


@pytest.mark.parametrize("name", ["Gpu-West", "gpu/west", "", "-west", "x" * 64], ids=repr)
def test_a_cluster_name_that_is_no_dns_label_is_an_error_naming_it(name: str) -> None:
    with pytest.raises(FieldError) as caught:
        merge_clusters({name: make_snapshot()})
    assert caught.value.path == (name,)
    assert caught.value.location.source == "clusters"


def test_no_clusters_is_an_error() -> None:
    with pytest.raises(FieldError, match="at least one cluster"):
        merge_clusters({})


def test_nodes_among_the_submitted_jobs_are_an_error() -> None:
    with pytest.raises(FieldError) as caught:
        merge_clusters({"gpu-west": make_snapshot()}, jobs=make_snapshot(nodes=[make_node("n1")]))
    assert (caught.value.location.source, caught.value.path) == ("jobs", ("nodes", 0))


def test_running_pods_among_the_submitted_jobs_are_an_error() -> None:
    jobs = make_snapshot(nodes=[make_node("n1")], groups=[make_gang("old", running_on=["n1"])])
    jobs = jobs.model_copy(update={"nodes": ()})
    with pytest.raises(FieldError) as caught:
        merge_clusters({"gpu-west": make_snapshot()}, jobs=jobs)
    assert caught.value.path == ("pods", 0)


def test_a_submitted_job_named_like_a_clusters_own_is_a_different_pod_group() -> None:
    west = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[make_gang("llm", gpus=8)])
    fleet = merge_clusters({"gpu-west": west}, jobs=make_snapshot(groups=[make_gang("llm", gpus=8)]))
    assert {g.key for g in fleet.snapshot.pod_groups} == {"default/llm", "default/gpu-west/llm"}
