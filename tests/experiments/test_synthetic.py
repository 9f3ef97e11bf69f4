"""The synthetic cluster and workload generator keeps its promised shape: nodes, GPUs,
NUMA cells, leaves and spines, preload, pending pods in whole gangs, topology mix, and a
preload that is itself a valid cluster state."""

from __future__ import annotations

from collections import Counter

import pytest

from experiments.synthetic import (
    GPU_NUMA_CELLS,
    GPUS_PER_NODE,
    LEAF_NODES,
    SPINE_LEAVES,
    shape_of,
    synthetic_snapshot,
)
from models.placement import Placement
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, Snapshot
from solver.checker import check_placement


def snapshot(
    nodes: int = 40, pending_pods: int = 60, preload: float = 0.5, seed: int = 3, **kwargs: object
) -> Snapshot:
    return synthetic_snapshot(
        nodes=nodes, pending_pods=pending_pods, preload=preload, seed=seed, **kwargs  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("nodes", "pending_pods"),
    [(1, 1), (20, 10), (40, 60), (130, 200), (17, 0)],
    ids=["one node one pod", "20 nodes 10 pods", "40 nodes 60 pods", "130 nodes 200 pods", "no pending pods"],
)
def test_snapshot_has_the_requested_nodes_and_exactly_the_requested_pending_pods(nodes: int, pending_pods: int) -> None:
    shape = shape_of(snapshot(nodes=nodes, pending_pods=pending_pods))
    assert shape.nodes == nodes
    assert shape.gpus == nodes * GPUS_PER_NODE
    assert shape.pending_pods == pending_pods


def test_every_node_is_an_8_gpu_h100_with_two_numa_cells() -> None:
    for node in snapshot().nodes:
        assert node.allocatable[GPU] == 8 * GPU_MILLI_PER_DEVICE
        assert node.allocatable["cpu"] == 192_000 and node.allocatable["memory"] == 2 * 2**40
        assert tuple(gpu.numa_cell for gpu in node.gpus) == GPU_NUMA_CELLS == (0, 0, 0, 0, 1, 1, 1, 1)
        assert [(c.id, c.cpu_milli) for c in node.numa_cells] == [(0, 96_000), (1, 96_000)]


def test_leaves_hold_16_nodes_spines_8_leaves_and_a_top_joins_the_spines() -> None:
    built = snapshot(nodes=300, pending_pods=10)  # 19 leaves (the last of 12 nodes), 3 spines, 1 top
    by_tier = Counter(h.tier for h in built.hypernodes)
    assert by_tier == {1: 19, 2: 3, 3: 1}
    leaves = [h for h in built.hypernodes if h.tier == 1]
    assert [len(h.node_members) for h in leaves] == [LEAF_NODES] * 18 + [12]
    assert all(len(h.hypernode_members) <= SPINE_LEAVES for h in built.hypernodes if h.tier == 2)
    assert all(len(chain) == 3 for chain in built.hypernode_chain.values())


def test_one_spine_gets_no_top_hypernode() -> None:
    built = snapshot(nodes=100, pending_pods=10)
    assert Counter(h.tier for h in built.hypernodes) == {1: 7, 2: 1}


@pytest.mark.parametrize("preload", [0.0, 0.25, 0.5, 0.75], ids=lambda p: f"preload {p:.0%}")
def test_preload_reaches_the_target_fraction_of_gpus_without_passing_it(preload: float) -> None:
    used = shape_of(snapshot(nodes=100, preload=preload)).gpus_used_fraction
    assert preload - 0.005 <= used <= preload


def test_preload_fits_every_node_device_and_queue_capability() -> None:
    built = snapshot(nodes=60, preload=0.75)
    node_used: dict[str, Counter[str]] = {n.name: Counter() for n in built.nodes}
    device_milli: Counter[tuple[str, int]] = Counter()
    queue_gpu: Counter[str] = Counter()
    for pod in built.pods:
        if pod.phase != "running":
            continue
        node_used[pod.node or ""].update(pod.requests)
        per_device = pod.requests[GPU] // len(pod.gpu_indices) if pod.requests[GPU] >= 1000 else pod.requests[GPU]
        for index in pod.gpu_indices:
            device_milli[(pod.node or "", index)] += per_device
        assert len(pod.gpu_indices) == max(1, pod.requests[GPU] // GPU_MILLI_PER_DEVICE)
        queue_gpu[built.pod_group_by_key[pod.pod_group or ""].queue] += pod.requests[GPU]
    for node in built.nodes:
        assert all(node_used[node.name][r] <= amount for r, amount in node.allocatable.items()), node.name
    assert max(device_milli.values()) <= GPU_MILLI_PER_DEVICE
    for queue in built.queues:
        if queue.capability:
            assert queue_gpu[queue.name] <= queue.capability[GPU]


def test_preloaded_pods_pass_the_checker_on_the_empty_placement() -> None:
    built = snapshot(nodes=80, pending_pods=100, preload=0.75)
    assert check_placement(built, Placement()) == ()


def test_preloaded_pod_groups_are_low_priority_and_preemptable() -> None:
    built = snapshot()
    running = {p.pod_group for p in built.pods if p.phase == "running"}
    groups = [g for g in built.pod_groups if g.key in running]
    assert groups and all(g.preemptable and g.priority <= 1 for g in groups)


def test_pending_gangs_are_whole_with_min_member_equal_to_their_pods() -> None:
    built = snapshot(nodes=100, pending_pods=300)
    pending = Counter(p.pod_group for p in built.pods if p.phase == "pending")
    for group in built.pod_groups:
        if group.key in pending:
            assert group.min_member == pending[group.key] == group.tasks[0].min_available


def test_multi_node_gangs_use_8_gpu_pods_and_no_pod_asks_more_than_a_node() -> None:
    built = snapshot(nodes=100, pending_pods=300)
    pending = [p for p in built.pods if p.phase == "pending"]
    assert max(p.requests[GPU] for p in pending) == 8 * GPU_MILLI_PER_DEVICE
    by_group = Counter(p.pod_group for p in pending)
    for pod in pending:
        gpus = pod.requests[GPU]
        if by_group[pod.pod_group] > 1 and gpus >= GPU_MILLI_PER_DEVICE:
            assert gpus in (1000, 8000), f"{pod.key}: a multi-pod gang is 8-GPU pods or 1-GPU workers"


def test_workload_mixes_queues_priorities_fractional_pods_and_topology() -> None:
    built = snapshot(nodes=200, pending_pods=400)
    shape = shape_of(built)
    assert shape.pending_gangs >= 150  # gangs average about two pods
    assert round(0.2 * shape.pending_gangs) == shape.hard_topology_gangs
    assert shape.soft_topology_gangs >= 1 and shape.fractional_pods >= 1
    assert {q.name: q.weight for q in built.queues} == {
        "research": 1, "inference": 2, "training": 3, "production": 4, "default": 1
    }
    assert sum(q.capability is not None for q in built.queues) == 2
    pending_groups = {p.pod_group for p in built.pods if p.phase == "pending"}
    assert {g.priority for g in built.pod_groups if g.key in pending_groups} == {0, 1, 2, 3}


def test_a_tiny_workload_still_gets_a_hard_topology_gang() -> None:
    assert shape_of(snapshot(nodes=20, pending_pods=3)).hard_topology_gangs >= 1


def test_hard_topology_is_tier_1_up_to_a_leaf_of_gpus_and_tier_2_above() -> None:
    small = snapshot(nodes=100, pending_pods=200)
    large = snapshot(nodes=100, pending_pods=200, gang_gpu_sizes=(256,))  # 32 nodes' worth > a leaf of 16
    assert hard_tiers(small) == {1}
    assert 2 in hard_tiers(large)


def hard_tiers(built: Snapshot) -> set[int | None]:
    """Tier limits of the hard-topology gangs of whole-GPU pods."""
    return {
        g.network_topology.highest_tier_allowed
        for g in built.pod_groups
        if g.network_topology is not None and g.network_topology.mode == "hard" and g.tasks[0].requests[GPU] >= 1000
    }


def test_the_same_seed_gives_the_same_snapshot_and_another_seed_another() -> None:
    assert snapshot(seed=7) == snapshot(seed=7)
    assert snapshot(seed=7) != snapshot(seed=8)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="preload"):
        snapshot(preload=1.5)
    with pytest.raises(ValueError, match="nodes"):
        snapshot(nodes=0)
