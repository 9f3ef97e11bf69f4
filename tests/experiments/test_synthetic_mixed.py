"""The `mixed` family keeps its promises: seeded, exactly the pending pods asked, half the
GPUs running, three node kinds in racks of 12 under rows of 4, groups of 1–16 min members
of every shape (shares, 1/2/4/8 GPUs, CPU-only) in four weighted queues, hard and soft
topology — and the engines' placements on it pass the checker."""

from __future__ import annotations

from collections import Counter

import pytest

from experiments.synthetic import shape_of
from experiments.synthetic_mixed import LEAF_NODES, MAX_MIN_MEMBER, SPINE_LEAVES, mixed_snapshot
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE
from tests.builders import solve_checked


def test_the_same_seed_gives_the_same_snapshot_and_another_seed_another() -> None:
    assert mixed_snapshot(nodes=60, pending_pods=60, seed=4) == mixed_snapshot(nodes=60, pending_pods=60, seed=4)
    assert mixed_snapshot(nodes=60, pending_pods=60, seed=4) != mixed_snapshot(nodes=60, pending_pods=60, seed=5)


@pytest.mark.parametrize(("nodes", "pending_pods"), [(1, 1), (100, 100), (240, 500), (40, 0)])
def test_exactly_the_pending_pods_asked_with_half_the_gpus_running(nodes: int, pending_pods: int) -> None:
    shape = shape_of(mixed_snapshot(nodes=nodes, pending_pods=pending_pods, seed=1))
    assert (shape.nodes, shape.pending_pods) == (nodes, pending_pods)
    if nodes >= 100:
        assert 0.45 <= shape.gpus_used_fraction <= 0.5


def test_three_node_kinds_in_racks_of_12_under_rows_of_4_and_no_tier_above() -> None:
    built = mixed_snapshot(nodes=200, pending_pods=10, seed=0)
    gpus = Counter(len(node.gpus) for node in built.nodes)
    assert set(gpus) == {0, 4, 8} and gpus[8] > gpus[4] > 0 and gpus[0] > 0
    tiers = Counter(h.tier for h in built.hypernodes)
    assert set(tiers) == {1, 2}
    assert max(len(h.node_members) for h in built.hypernodes if h.tier == 1) == LEAF_NODES
    assert max(len(h.hypernode_members) for h in built.hypernodes if h.tier == 2) == SPINE_LEAVES


def test_pending_groups_mix_shapes_min_members_queues_and_topology() -> None:
    built = mixed_snapshot(nodes=500, pending_pods=1000, seed=0)
    pending = Counter(p.pod_group for p in built.pods if p.phase == "pending")
    groups = [g for g in built.pod_groups if pending[g.key]]
    asked = {g.tasks[0].requests.get(GPU, 0) for g in groups}
    assert asked == {0, 250, 500, 1000, 2000, 4000, 8000}
    assert {g.min_member for g in groups} >= {1, 2, MAX_MIN_MEMBER}
    assert max(g.min_member for g in groups) == MAX_MIN_MEMBER
    assert any(pending[g.key] > g.min_member for g in groups)  # elastic groups
    assert {g.queue for g in groups} == {"research", "inference", "training", "production"}
    modes = Counter(g.network_topology.mode for g in groups if g.network_topology is not None)
    assert modes["hard"] > 0 and modes["soft"] > 0
    assert any(g.tasks[0].numa_policy == "single-numa-node" for g in groups)
    running = [p for p in built.pods if p.phase == "running"]
    assert any(GPU not in p.requests for p in running)
    assert any(0 < p.requests.get(GPU, 0) < GPU_MILLI_PER_DEVICE for p in running)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_engines_place_a_small_mixed_cluster_within_the_rules(engine: str) -> None:
    built = mixed_snapshot(nodes=48, pending_pods=60, seed=3)
    decision = solve_checked(built, engine=engine)
    assert decision.placement.binds


def test_the_mixed_target_is_missed_when_greedy_answers_and_met_when_cpsat_does() -> None:
    from experiments.bench import BenchSummary, check_targets

    def summary(answered_by: str) -> BenchSummary:
        return BenchSummary(
            size="1000x1000", nodes=1000, pending_pods=1000, engine="auto", answered_by=answered_by, runs=5, errors=0,
            p50_wall_s=0.8, p99_wall_s=0.95, p50_solve_s=0.8, p99_solve_s=0.9, p50_cpu_s=0.8, pods_per_s=None,
            pods_per_cpu_s=None, objective_p50=None, gap_p50=0.01, gap_max=0.02, gpus_placed_mean=None,
            gpus_vs_greedy_pct=None, gpus_vs_greedy_min=None, evictions_mean=None, family="mixed",
        )  # fmt: skip

    (missed,) = check_targets([summary("cpsat:FEASIBLE×4 greedy:FALLBACK×1")], family="mixed")
    (met,) = check_targets([summary("cpsat:FEASIBLE×5")], family="mixed")
    assert (missed.met, met.met) == (False, True)
