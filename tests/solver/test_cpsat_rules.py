"""The CP-SAT engine, rule by rule: scenario snapshots with the binds and evictions they
must produce. Every placement also passes the independent checker, and the engine's own
objective equals `score` of what it returns."""

from __future__ import annotations

from collections import Counter

import pytest

from models.placement import Decision
from models.snapshot import NetworkTopology, Snapshot
from solver.checker import check_placement
from solver.objective import score
from solver.place import SolveConfig, place
from tests.builders import (
    Gang,
    make_gang,
    make_node,
    make_queue,
    make_running,
    make_snapshot,
    make_task,
    resources,
)

CPSAT = SolveConfig(engine="cpsat", time_limit_s=20.0)


def solve(snapshot: Snapshot, config: SolveConfig = CPSAT) -> Decision:
    decision = place(snapshot, config)
    assert decision.engine == "cpsat", decision.status
    assert decision.status in ("OPTIMAL", "FEASIBLE")
    assert check_placement(snapshot, decision.placement) == ()
    assert decision.objective == score(snapshot, decision.placement).throughput
    return decision


def nodes_of(decision: Decision) -> dict[str, str]:
    return {bind.pod: bind.node for bind in decision.placement.binds}


def bound(decision: Decision, gang: Gang) -> int:
    return sum(1 for bind in decision.placement.binds if bind.pod.startswith(gang.key + "-"))


def soft(gang: Gang) -> Gang:
    group = gang.group.model_copy(update={"network_topology": NetworkTopology(mode="soft")})
    return Gang(group=group, pods=gang.pods)


# ---- the decisions Volcano is documented to get wrong ----


def test_gang_of_30_and_50_cpu_fits_nodes_of_53_and_31() -> None:
    job = make_gang("job", tasks=[make_task("small", cpu=30), make_task("big", cpu=50)])
    snapshot = make_snapshot(nodes=[make_node("n53", cpu=53), make_node("n31", cpu=31)], groups=[job])
    decision = solve(snapshot)
    assert nodes_of(decision) == {"default/job-small-0": "n31", "default/job-big-0": "n53"}
    assert decision.status == "OPTIMAL"


def test_two_whole_cluster_gangs_one_runs_whole_the_other_waits() -> None:
    nodes = [make_node(f"n{i:03d}", cpu=1) for i in range(100)]
    first, second = make_gang("first", replicas=100, cpu=1), make_gang("second", replicas=100, cpu=1)
    decision = solve(make_snapshot(nodes=nodes, groups=[first, second]))
    placed = sorted([bound(decision, first), bound(decision, second)])
    assert placed == [0, 100]
    assert len(set(nodes_of(decision).values())) == 100


def test_full_node_and_a_high_priority_pod_evicts_exactly_one() -> None:
    low = make_gang("low", replicas=11, cpu=1, min_member=1, priority=0, running_on=["n1"] * 11)
    high = make_gang("high", cpu=1, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=11)], groups=[low, high]))
    assert nodes_of(decision) == {"default/high-worker-0": "n1"}
    assert [(e.reason, e.for_) for e in decision.placement.evictions] == [("preempt", "default/high")]


# ---- fairness ----


def test_fairness_splits_a_full_cluster_by_queue_weight() -> None:
    queues = [make_queue("a", weight=1), make_queue("b", weight=2)]
    jobs = [make_gang(f"{q}{i}", cpu=0.5, memory=0.1, queue=q) for q in "ab" for i in range(6)]
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=3, memory=2)], groups=jobs, queues=queues))
    per_queue = Counter(bind.pod.split("/")[1][0] for bind in decision.placement.binds)
    assert per_queue == {"a": 2, "b": 4}


def test_fairness_serves_the_queue_below_its_share_before_a_bigger_job() -> None:
    queues = [make_queue("a"), make_queue("b")]
    a_running = make_gang("a-run", gpus=4, queue="a", running_on=["n1"])
    a_more = make_gang("a-more", gpus=4, queue="a")
    b_job = make_gang("b-job", gpus=2, queue="b")
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[a_running, a_more, b_job], queues=queues)
    decision = solve(snapshot)
    assert bound(decision, b_job) == 1 and bound(decision, a_more) == 0


# ---- throughput ----


def test_throughput_packs_two_fours_where_first_fit_takes_the_five() -> None:
    five = make_gang("a-five", gpus=5)
    fours = [make_gang("b-four", gpus=4), make_gang("c-four", gpus=4)]
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[five, *fours])
    decision = solve(snapshot)
    assert bound(decision, five) == 0 and [bound(decision, f) for f in fours] == [1, 1]
    greedy = place(snapshot, SolveConfig(engine="greedy"))
    assert score(snapshot, decision.placement) > score(snapshot, greedy.placement)


def test_priority_decides_between_equal_sizes() -> None:
    low = make_gang("a-low", gpus=8, priority=0)
    urgent = make_gang("b-urgent", gpus=8, priority=3)
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[low, urgent]))
    assert bound(decision, urgent) == 1 and bound(decision, low) == 0


# ---- quota ----


def test_quota_capability_caps_a_queue() -> None:
    queue = make_queue("capped", capability=resources(gpus=4))
    jobs = [make_gang("one", gpus=4, queue="capped"), make_gang("two", gpus=4, queue="capped")]
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=jobs, queues=[queue]))
    assert len(decision.placement.binds) == 1


def test_quota_of_an_ancestor_caps_its_children() -> None:
    queues = [
        make_queue("org", capability=resources(gpus=8)),
        make_queue("team-a", parent="org"),
        make_queue("team-b", parent="org"),
    ]
    running = make_gang("a-run", gpus=4, queue="team-a", running_on=["n1"])
    wants = [make_gang(f"b{i}", gpus=4, queue="team-b") for i in range(2)]
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8), make_node("n2", gpus=8)], groups=[running, *wants], queues=queues)
    decision = solve(snapshot)
    assert len(decision.placement.binds) == 1  # org holds 4 + 4 = 8, its cap


# ---- topology ----


def test_hard_topology_keeps_the_gang_in_one_leaf() -> None:
    nodes = [
        make_node("a1", gpus=8, leaf="leaf-a", spine="sp"),
        make_node("a2", gpus=8, leaf="leaf-a", spine="sp"),
        make_node("b1", gpus=8, leaf="leaf-b", spine="sp"),
        make_node("b2", gpus=8, leaf="leaf-b", spine="sp"),
    ]
    blocker = make_gang("blocker", gpus=8, running_on=["a2"])
    gang = make_gang("llm", replicas=2, gpus=8, topology_tier=1)
    decision = solve(make_snapshot(nodes=nodes, groups=[blocker, gang]))
    assert sorted(nodes_of(decision).values()) == ["b1", "b2"]


def test_hard_topology_leaves_the_gang_pending_when_no_leaf_holds_it() -> None:
    nodes = [make_node("a1", gpus=8, leaf="leaf-a", spine="sp"), make_node("b1", gpus=8, leaf="leaf-b", spine="sp")]
    tier1 = make_gang("tier1", replicas=2, gpus=8, topology_tier=1)
    decision = solve(make_snapshot(nodes=nodes, groups=[tier1]))
    assert decision.placement.binds == ()
    tier2 = make_gang("tier2", replicas=2, gpus=8, topology_tier=2)
    assert len(solve(make_snapshot(nodes=nodes, groups=[tier2])).placement.binds) == 2


def test_soft_topology_prefers_one_leaf_but_may_span() -> None:
    nodes = [make_node(n, gpus=8, leaf=leaf) for n, leaf in (("a1", "la"), ("a2", "la"), ("b1", "lb"), ("b2", "lb"))]
    other = make_gang("other", gpus=8, running_on=["a1"])
    gang = soft(make_gang("llm", replicas=2, gpus=8))
    decision = solve(make_snapshot(nodes=nodes, groups=[other, gang]))
    assert sorted(nodes_of(decision).values()) == ["b1", "b2"]
    assert score(make_snapshot(nodes=nodes, groups=[other, gang]), decision.placement).locality == 1
    wide = soft(make_gang("wide", replicas=3, gpus=8))
    spread = solve(make_snapshot(nodes=nodes, groups=[other, wide]))
    assert len(spread.placement.binds) == 3  # soft: placed anyway, over two leaves


# ---- NUMA ----


def test_single_numa_pods_take_one_cell_and_name_it() -> None:
    node = make_node("n1", gpus=8, numa_cells=2)
    used = make_gang("used", gpus=2, running_on=["n1"])  # devices 0–1, cell 0
    numa = make_gang(
        "numa", tasks=[make_task(replicas=2, gpus=4, numa_policy="single-numa-node", min_available=1)], min_member=1
    )
    decision = solve(make_snapshot(nodes=[node], groups=[used, numa]))
    (bind,) = decision.placement.binds
    assert bind.gpus == (4, 5, 6, 7) and bind.numa_cell == 1


def test_whole_gpu_pods_avoid_numa_splits_when_they_can() -> None:
    node = make_node("n1", gpus=8, numa_cells=2)
    jobs = [make_gang("four", gpus=4), make_gang("two-a", gpus=2), make_gang("two-b", gpus=2)]
    snapshot = make_snapshot(nodes=[node], groups=jobs)
    decision = solve(snapshot)
    assert len(decision.placement.binds) == 3
    assert score(snapshot, decision.placement).locality == 0


def test_single_numa_respects_the_cells_cpu() -> None:
    node = make_node("n1", cpu=32, gpus=4, numa_cells=2, cell_cpu=8)
    numa = make_gang(
        "numa", tasks=[make_task(replicas=2, cpu=6, gpus=1, numa_policy="single-numa-node", min_available=1)], min_member=1
    )
    decision = solve(make_snapshot(nodes=[node], groups=[numa]))
    cells = sorted(b.numa_cell for b in decision.placement.binds)
    assert cells == [0, 1]  # 6 + 6 > 8 cores: one pod per cell


# ---- fractional GPUs ----


def test_fractional_pods_share_a_device_and_whole_pods_get_empty_ones() -> None:
    node = make_node("n1", gpus=2)
    running = make_running("infer", node="n1", gpu_milli=500, gpu_indices=(0,))
    half = make_gang("half", gpu_milli=500)
    whole = make_gang("whole", gpus=1)
    decision = solve(make_snapshot(nodes=[node], groups=[half, whole], running=[running]))
    gpus = {b.pod: b.gpus for b in decision.placement.binds}
    assert gpus == {"default/half-worker-0": (0,), "default/whole-worker-0": (1,)}


def test_fractional_pods_leave_no_sliver_no_pending_shape_can_use() -> None:
    node = make_node("n1", gpus=2, gpu_used_milli={0: 400}, labels={"pool": "infer"})
    half = make_gang("half", gpu_milli=500)
    elsewhere = make_gang("elsewhere", gpu_milli=750, node_selector={"pool": "train"})  # pending: sets the shapes
    snapshot = make_snapshot(nodes=[node], groups=[half, elsewhere])
    decision = solve(snapshot)
    # Typical shapes 500 and 750 milli, 1/2 each; the 750 may not use this node (all its free
    # GPU counts: 1,100 · 1/2 = 550 either way). On device 0 the pod leaves (100, 1000): the
    # 100 is below 500, + 50. On device 1 it leaves (600, 500): nothing below 500, + 0.
    assert [b.gpus for b in decision.placement.binds] == [(1,)]
    assert score(snapshot, decision.placement).packing == 550


# ---- dependencies ----


def test_depends_on_places_the_first_task_only() -> None:
    flow = make_gang(
        "flow", tasks=[make_task("a", replicas=2, cpu=1), make_task("b", replicas=2, cpu=1, depends_on=("a",))], min_member=2
    )
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[flow]))
    assert sorted(nodes_of(decision)) == ["default/flow-a-0", "default/flow-a-1"]


def test_depends_on_places_the_second_task_once_the_first_runs() -> None:
    flow = make_gang(
        "flow",
        tasks=[make_task("a", replicas=1, cpu=1), make_task("b", replicas=2, cpu=1, depends_on=("a",))],
        running_on={"a": ["n1"]},
    )
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[flow]))
    assert sorted(nodes_of(decision)) == ["default/flow-b-0", "default/flow-b-1"]


# ---- preemption and reclaim ----


def test_preempt_takes_the_fewest_and_cheapest_victims() -> None:
    victims = [make_gang(f"v{i}", gpus=4, priority=0, running_on=["n1"]) for i in range(2)]
    victims = [Gang(group=v.group, pods=tuple(p.model_copy(update={"gpu_indices": (4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3)}) for p in v.pods)) for i, v in enumerate(victims)]
    urgent = make_gang("urgent", gpus=4, priority=5)
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[*victims, urgent]))
    assert bound(decision, urgent) == 1
    assert len(decision.placement.evictions) == 1


def test_preempt_stays_within_the_queue_and_needs_lower_priority() -> None:
    queues = [make_queue("a"), make_queue("b", reclaimable=False)]
    other_queue = make_gang("other", gpus=8, priority=0, queue="b", running_on=["n1"])
    urgent = make_gang("urgent", gpus=8, priority=5, queue="a")
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[other_queue, urgent], queues=queues))
    assert decision.placement.binds == () and decision.placement.evictions == ()
    same = make_gang("same", gpus=8, priority=5, running_on=["n1"])
    also = make_gang("also", gpus=8, priority=5)
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[same, also]))
    assert decision.placement.evictions == ()


def test_a_victim_gang_keeps_its_minimum_or_loses_all() -> None:
    victim = make_gang("victim", replicas=3, gpus=1, min_member=2, priority=0, running_on=["n1"] * 3)
    urgent = make_gang("urgent", gpus=2, priority=5)
    filler = make_gang("filler", gpus=1, priority=0)
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=3)], groups=[victim, urgent, filler]))
    assert bound(decision, urgent) == 1 and bound(decision, filler) == 1
    assert len(decision.placement.evictions) == 3  # 2 would make room but leave 1 < min_member 2


def test_a_victim_gang_with_slack_loses_only_what_is_needed() -> None:
    victim = make_gang("victim", replicas=3, gpus=1, min_member=2, priority=0, running_on=["n1"] * 3)
    urgent = make_gang("urgent", gpus=2, priority=5)
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=4)], groups=[victim, urgent]))
    assert bound(decision, urgent) == 1
    assert len(decision.placement.evictions) == 1  # 1 free + 1 evicted; 2 keep running ≥ min_member


def test_nobody_is_evicted_for_a_placement_that_does_not_happen() -> None:
    victim = make_gang("victim", gpus=4, priority=0, running_on=["n1"])
    too_big = make_gang("too-big", replicas=2, gpus=8, priority=5)
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[victim, too_big]))
    assert decision.placement.evictions == () and decision.placement.binds == ()


def test_reclaim_takes_from_a_queue_above_its_share() -> None:
    queues = [make_queue("a"), make_queue("b")]
    hog = [make_gang(f"hog{i}", gpus=4, queue="b", running_on=["n1"]) for i in range(2)]
    hog = [Gang(group=h.group, pods=tuple(p.model_copy(update={"gpu_indices": tuple(range(4 * i, 4 * i + 4))}) for p in h.pods)) for i, h in enumerate(hog)]
    starving = make_gang("starving", gpus=4, queue="a")
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[*hog, starving], queues=queues))
    assert bound(decision, starving) == 1
    assert [(e.reason, e.for_) for e in decision.placement.evictions] == [("reclaim", "default/starving")]


def test_reclaim_never_takes_a_queue_below_its_guarantee() -> None:
    queues = [make_queue("a"), make_queue("b", guarantee=resources(gpus=8))]
    hog = make_gang("hog", gpus=8, queue="b", running_on=["n1"])
    starving = make_gang("starving", gpus=4, queue="a")
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[hog, starving], queues=queues))
    assert decision.placement.evictions == () and decision.placement.binds == ()


@pytest.mark.parametrize("reclaimable", [True, False], ids=["reclaimable queue", "non-reclaimable queue"])
def test_reclaim_respects_reclaimable(reclaimable: bool) -> None:
    queues = [make_queue("a"), make_queue("b", reclaimable=reclaimable)]
    hog = [make_gang(f"hog{i}", gpus=4, queue="b", running_on=["n1"]) for i in range(2)]
    hog = [Gang(group=h.group, pods=tuple(p.model_copy(update={"gpu_indices": tuple(range(4 * i, 4 * i + 4))}) for p in h.pods)) for i, h in enumerate(hog)]
    starving = make_gang("starving", gpus=4, queue="a")
    decision = solve(make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[*hog, starving], queues=queues))
    assert bool(decision.placement.evictions) == reclaimable
