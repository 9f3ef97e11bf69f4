"""The `tight` family keeps its promises: seeded, exactly the pending pods asked, ~95 % of
the free GPUs asked, leaf-bound gangs of 8-GPU pods, single-NUMA small pods, nothing to
evict — and on a small cluster greedy strands GPUs that CP-SAT places, up to the bound."""

from __future__ import annotations

from collections import Counter

import pytest

from experiments.synthetic import GPUS_PER_NODE, shape_of
from experiments.synthetic_tight import DEFAULT_LOAD, tight_snapshot
from models.placement import Decision, Placement
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, Snapshot
from solver.bound import lp_bound
from solver.checker import check_placement
from tests.builders import solve_checked


def placed_gpus(snapshot: Snapshot, decision: Decision) -> float:
    pods = snapshot.pod_by_key
    return sum(pods[b.pod].requests.get(GPU, 0) for b in decision.placement.binds) / GPU_MILLI_PER_DEVICE


def test_the_same_seed_gives_the_same_snapshot_and_another_seed_another() -> None:
    assert tight_snapshot(nodes=60, pending_pods=60, seed=4) == tight_snapshot(nodes=60, pending_pods=60, seed=4)
    assert tight_snapshot(nodes=60, pending_pods=60, seed=4) != tight_snapshot(nodes=60, pending_pods=60, seed=5)


@pytest.mark.parametrize(
    ("nodes", "pending_pods"), [(1, 1), (100, 100), (300, 120), (40, 0)],
    ids=["one node one pod", "100 nodes 100 pods", "300 nodes 120 pods", "no pending pods"],
)
def test_exactly_the_pending_pods_asked_on_8_gpu_nodes(nodes: int, pending_pods: int) -> None:
    shape = shape_of(tight_snapshot(nodes=nodes, pending_pods=pending_pods, seed=1))
    assert (shape.nodes, shape.gpus, shape.pending_pods) == (nodes, nodes * GPUS_PER_NODE, pending_pods)


@pytest.mark.parametrize(("nodes", "pending_pods"), [(100, 100), (300, 200)], ids=["100x100", "300x200"])
def test_pending_pods_ask_about_95_percent_of_the_free_gpus(nodes: int, pending_pods: int) -> None:
    shape = shape_of(tight_snapshot(nodes=nodes, pending_pods=pending_pods, seed=2))
    free_gpus = shape.gpus * (1 - shape.gpus_used_fraction)
    assert DEFAULT_LOAD - 0.02 <= shape.pending_gpus / free_gpus <= DEFAULT_LOAD


def test_gangs_are_leaf_bound_8_gpu_pods_and_small_pods_ask_one_numa_cell() -> None:
    built = tight_snapshot(nodes=200, pending_pods=200, seed=0)
    pending = Counter(p.pod_group for p in built.pods if p.phase == "pending")
    gangs = [g for g in built.pod_groups if pending[g.key] > 1]
    assert gangs
    for group in gangs:
        assert group.min_member == pending[group.key] <= 4
        assert group.tasks[0].requests[GPU] == GPUS_PER_NODE * GPU_MILLI_PER_DEVICE
        assert group.network_topology is not None
        assert (group.network_topology.mode, group.network_topology.highest_tier_allowed) == ("hard", 1)
    asked = {g.tasks[0].requests[GPU]: g.tasks[0].numa_policy for g in built.pod_groups if pending[g.key]}
    assert set(asked) == {250, 500, 1000, 2000, 4000, 8000}
    assert asked[2000] == asked[4000] == "single-numa-node"


def test_running_pods_are_a_valid_state_nobody_may_evict() -> None:
    built = tight_snapshot(nodes=80, pending_pods=80, seed=4)
    running = [p for p in built.pods if p.phase == "running"]
    assert running and not any(p.preemptable for p in running)
    assert check_placement(built, Placement()) == ()


def test_the_gpu_bound_is_every_pending_gpu_since_a_packing_of_them_all_was_planted() -> None:
    built = tight_snapshot(nodes=100, pending_pods=100, seed=5)
    assert lp_bound(built, objective="gpus", backend="scipy") == pytest.approx(shape_of(built).pending_gpus)


def test_greedy_strands_gpus_that_cpsat_places_and_the_bound_caps_both() -> None:
    built = tight_snapshot(nodes=32, pending_pods=32, seed=0)
    bound = lp_bound(built, objective="gpus", backend="scipy")
    greedy = placed_gpus(built, solve_checked(built, "greedy"))
    auto = placed_gpus(built, solve_checked(built, "auto"))
    assert greedy < bound  # leaf-bound gangs left waiting while whole empty nodes stay idle
    assert greedy < auto <= bound + 1e-6


def test_more_pending_pods_than_the_nodes_can_hold_are_refused() -> None:
    with pytest.raises(ValueError, match="fewer than the 100 asked"):
        tight_snapshot(nodes=10, pending_pods=100, seed=0)
    with pytest.raises(ValueError, match="load"):
        tight_snapshot(nodes=10, pending_pods=10, seed=0, load=0.0)
