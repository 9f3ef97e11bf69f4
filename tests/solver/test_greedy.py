"""The greedy engine, rule by rule: scenario snapshots with the binds, evictions and
reasons they must produce. Every placement also passes the independent checker."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from models.placement import Decision, PodGroupOutcome
from models.snapshot import NetworkTopology, Snapshot
from solver import reasons
from solver.checker import check_placement
from solver.greedy import GreedyConfig, solve_greedy
from solver.problem import build_problem
from solver.rules import capacity, numa
from solver.rules.eligibility import eligible
from solver.shares import deserved_shares, queue_allocated
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
from tests.strategies import snapshots


def assert_valid(snapshot: Snapshot, decision: Decision) -> None:
    """The checker finds nothing, and every pending PodGroup says why."""
    assert check_placement(snapshot, decision.placement) == ()
    for outcome in decision.podgroups:
        assert outcome.state == "scheduled" or outcome.reasons, outcome


def solve(snapshot: Snapshot, **config: bool) -> Decision:
    decision = solve_greedy(snapshot, config=GreedyConfig(**config))
    assert decision.engine == "greedy" and decision.status == "GREEDY"
    assert_valid(snapshot, decision)
    return decision


def nodes_of(decision: Decision) -> dict[str, str]:
    """Bound pod → node."""
    return {bind.pod: bind.node for bind in decision.placement.binds}


def outcome(decision: Decision, gang: Gang | str) -> PodGroupOutcome:
    key = gang if isinstance(gang, str) else gang.key
    return next(o for o in decision.podgroups if o.name == key)


def evicted(decision: Decision) -> list[str]:
    return sorted(eviction.pod for eviction in decision.placement.evictions)


def with_topology(gang: Gang, topology: NetworkTopology) -> Gang:
    return Gang(group=gang.group.model_copy(update={"network_topology": topology}), pods=gang.pods)


# ---- rule 1: capacity ----


def test_capacity_fills_nodes_without_overflow() -> None:
    job = make_gang("job", replicas=6, cpu=1, min_member=1)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=4)], groups=[job]))
    placed = nodes_of(decision)
    assert len(placed) == 6
    assert sorted(placed.values()).count("n1") == 4  # binpacked: the first node fills up first


def test_capacity_reason_counts_nodes_per_missing_resource() -> None:
    job = make_gang("big", cpu=8)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=4)], groups=[job]))
    assert nodes_of(decision) == {}
    assert outcome(decision, job).reasons == (
        reasons.capacity_fit_error("worker", nodes=2, fitting=0, counts={"insufficient cpu": 2}),
    )
    assert outcome(decision, job).reasons[0] == "capacity: task worker: 0/2 nodes fit another pod: 2 insufficient cpu"


def test_whole_gpu_pods_take_only_wholly_free_devices() -> None:
    node = make_node("n1", gpus=8, gpu_used_milli={0: 100})
    holder = make_running("holder", node="n1", cpu=1, gpus=3, gpu_indices=(1, 2, 3))
    four = make_gang("four", gpus=4)
    decision = solve(make_snapshot(nodes=[node], groups=[four], running=[holder]))
    (bind,) = decision.placement.binds
    assert bind.gpus == (4, 5, 6, 7)


def test_whole_gpu_pod_does_not_fit_when_free_devices_are_fragmented() -> None:
    node = make_node("n1", gpus=4)
    shared = [make_running(f"shared-{i}", node="n1", cpu=1, gpu_milli=100, gpu_indices=(i,)) for i in range(3)]
    two = make_gang("two", gpus=2)  # 3.7 GPUs free on the node, but only device 3 wholly
    decision = solve(make_snapshot(nodes=[node], groups=[two], running=shared))
    assert nodes_of(decision) == {}
    assert "fewer than 2 wholly free gpu devices" in outcome(decision, two).reasons[0]


def test_fractional_pods_fill_the_fullest_shared_device_and_keep_whole_devices_whole() -> None:
    n1, n2 = make_node("n1", gpus=2), make_node("n2", gpus=2)
    shared = make_running("shared", node="n2", cpu=1, gpu_milli=600, gpu_indices=(1,))
    small = make_gang("small", replicas=3, gpu_milli=300, min_member=1)
    whole = make_gang("whole", gpus=1)
    decision = solve(make_snapshot(nodes=[n1, n2], groups=[small, whole], running=[shared]))
    by_pod = {bind.pod: (bind.node, bind.gpus) for bind in decision.placement.binds}
    assert by_pod["default/small-worker-0"] == ("n2", (1,))  # 400 free: the best fit
    assert by_pod["default/small-worker-1"] == ("n2", (0,))  # n2 is already shared
    assert by_pod["default/small-worker-2"] == ("n2", (0,))  # device 0 now shared, 700 free
    assert by_pod["default/whole-worker-0"] == ("n1", (0,))  # whole devices stayed whole on n1


# ---- rule 2: eligibility ----


def test_eligibility_selector_taints_and_cordon_are_respected_with_reason() -> None:
    nodes = [
        make_node("a", labels={"pool": "infer"}),
        make_node("b", labels={"pool": "infer"}),
        make_node("c", labels={"pool": "train"}, taints=["dedicated=ml:NoSchedule"]),
        make_node("d", labels={"pool": "train"}, unschedulable=True),
    ]
    job = make_gang("job", node_selector={"pool": "train"})
    decision = solve(make_snapshot(nodes=nodes, groups=[job]))
    assert nodes_of(decision) == {}
    assert outcome(decision, job).reasons == (
        "eligibility: task worker: 0/4 nodes: 2 node selector mismatch, 1 node unschedulable, 1 untolerated taint",
    )


def test_problem_eligibility_mask_equals_the_predicate_node_by_node() -> None:
    nodes = [
        make_node(
            f"n{i}", labels={"pool": ("a", "b")[i % 2], "host": f"n{i}"}, taints=["x=y:NoSchedule"] * (i % 3 == 0)
        )
        for i in range(9)
    ]
    groups = [
        make_gang("sel", node_selector={"pool": "a"}),
        make_gang("any"),
        make_gang("host", node_selector={"host": "n4"}),
    ]
    snapshot = make_snapshot(nodes=nodes, groups=groups)
    problem = build_problem(snapshot)
    for group in snapshot.pod_groups:
        task = group.tasks[0]
        mask = problem.eligible_nodes(problem.task_row[(group.key, task.name)])
        assert mask.tolist() == [eligible(node, task) for node in snapshot.nodes]


# ---- rule 3: gang ----


def test_gang_below_min_member_places_nothing_and_frees_what_it_tried() -> None:
    gang = make_gang("gang", replicas=6, cpu=2)
    later = make_gang("later", replicas=4, cpu=2)  # fits only if the gang's tentative pods were rolled back
    nodes = [make_node("n1", cpu=4), make_node("n2", cpu=4)]
    decision = solve(make_snapshot(nodes=nodes, groups=[gang, later]))
    assert set(nodes_of(decision)) == {f"default/later-worker-{i}" for i in range(4)}
    assert outcome(decision, gang).state == "pending"
    assert outcome(decision, gang).reasons[0] == "gang: 4 of min 6 pods fit (needs 12 cpu, 8 cpu free)"


def test_gang_places_pods_beyond_min_member_best_effort() -> None:
    gang = make_gang("gang", tasks=[make_task(replicas=6, cpu=2, min_available=2)], min_member=2)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=4)], groups=[gang]))
    assert len(nodes_of(decision)) == 4
    assert outcome(decision, gang).state == "scheduled"
    assert outcome(decision, gang).placed == 4


def test_gang_min_available_per_task_must_hold_for_every_task() -> None:
    tasks = [make_task("ps", replicas=1, gpus=1), make_task("worker", replicas=3, cpu=1, min_available=1)]
    gang = make_gang("job", tasks=tasks, min_member=2)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[gang]))  # no GPU: ps cannot go
    assert nodes_of(decision) == {}
    assert any(r.rule == capacity.NAME and r.numbers.get("task") == "ps" for r in outcome(decision, gang).reasons)


def test_gang_counts_its_running_pods_toward_min_member() -> None:
    gang = make_gang("job", replicas=4, cpu=2, running_on=["n1", "n1"])
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=4)], groups=[gang]))
    assert sorted(nodes_of(decision).values()) == ["n2", "n2"]
    assert outcome(decision, gang).placed == 4


def test_group_whose_pods_all_run_is_scheduled_without_reason() -> None:
    gang = make_gang("job", replicas=2, cpu=1, running_on=["n1", "n1"])
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[gang]))
    assert outcome(decision, gang) == PodGroupOutcome(
        name="default/job", queue="default", placed=2, min_member=2, state="scheduled", reasons=()
    )


def test_gang_with_fewer_pods_than_min_member_says_so() -> None:
    gang = make_gang("job", replicas=2, cpu=1, min_member=3)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[gang]))
    assert outcome(decision, gang).reasons == (reasons.gang_too_few_pods(minimum=3, pods=2),)


# ---- rule 4: quota and queues ----


def test_quota_on_an_ancestor_caps_its_child() -> None:
    queues = [make_queue("org", capability=resources(cpu=4)), make_queue("team", parent="org")]
    running = make_gang("running", replicas=2, cpu=1, queue="team", running_on=["n1", "n1"])
    job = make_gang("job", replicas=4, cpu=1, queue="team")
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=16)], groups=[running, job], queues=queues))
    assert nodes_of(decision) == {}
    assert reasons.quota_exceeded("org", resource="cpu", capability=4000, in_use=2000, needs=4000) in outcome(
        decision, job
    ).reasons
    assert "quota: queue org capability 4 cpu, 2 in use, job needs 4" in outcome(decision, job).reasons


def test_quota_lets_extras_fill_up_to_capability() -> None:
    queues = [make_queue("team", capability=resources(cpu=3))]
    job = make_gang("job", tasks=[make_task(replicas=5, cpu=1, min_available=1)], min_member=1, queue="team")
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=16)], groups=[job], queues=queues))
    assert len(nodes_of(decision)) == 3


@pytest.mark.parametrize(
    ("queues", "expected"),
    [([], "queue: queue q-x does not exist"), ([make_queue("q-x", state="closed")], "queue: queue q-x is closed")],
    ids=["unknown queue", "closed queue"],
)
def test_group_of_unknown_or_closed_queue_stays_pending(queues: list, expected: str) -> None:  # type: ignore[type-arg]
    job = make_gang("job", queue="q-x")
    decision = solve(make_snapshot(nodes=[make_node("n1")], groups=[job], queues=queues))
    assert nodes_of(decision) == {}
    assert outcome(decision, job).reasons == (expected,)


# ---- soft rule 1: fairness ----


def test_fairness_weight_two_gets_twice_the_jobs() -> None:
    groups = [make_gang(f"{q}-{i}", cpu=0.5, queue=q) for q in ("queue-a", "queue-b") for i in range(6)]
    queues = [make_queue("queue-a", weight=1), make_queue("queue-b", weight=2)]
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=3)], groups=groups, queues=queues))
    placed = [pod.split("/")[1].rsplit("-", 3)[0] for pod in nodes_of(decision)]
    assert (placed.count("queue-a"), placed.count("queue-b")) == (2, 4)
    shares = {share.name: share for share in decision.queues}
    assert shares["queue-a"].allocated["cpu"] == 1000 and shares["queue-b"].allocated["cpu"] == 2000
    assert shares["queue-b"].deserved["cpu"] == 2000


def test_queue_over_its_share_takes_idle_capacity_after_the_others() -> None:
    # queue-b wants only 1 CPU; queue-a may overuse what b leaves idle.
    groups = [make_gang(f"a-{i}", cpu=1, queue="queue-a") for i in range(4)]
    groups.append(make_gang("b-0", cpu=1, queue="queue-b"))
    queues = [make_queue("queue-a"), make_queue("queue-b")]
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=groups, queues=queues))
    assert "default/b-0-worker-0" in nodes_of(decision)
    assert len(nodes_of(decision)) == 4


def test_within_a_queue_higher_priority_then_older_goes_first() -> None:
    old = make_gang("old", cpu=2)
    young_high = make_gang("young-high", cpu=2, priority=5)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=2)], groups=[old, young_high])
    decision = solve(snapshot, preemption=False, reclaim=False)
    assert list(nodes_of(decision)) == ["default/young-high-worker-0"]


# ---- rule 5: topology ----


def _four_gpu_nodes_in_two_leaves() -> list:  # type: ignore[type-arg]
    return [
        make_node("n1", gpus=8, leaf="leaf-a", spine="sp"),
        make_node("n2", gpus=8, leaf="leaf-a", spine="sp"),
        make_node("n3", gpus=8, leaf="leaf-b", spine="sp"),
        make_node("n4", gpus=8, leaf="leaf-b", spine="sp"),
    ]


def test_hard_topology_gang_lands_inside_one_leaf() -> None:
    busy = make_running("busy", node="n2", cpu=1, gpus=4)
    llm = make_gang("llm", replicas=2, gpus=8, topology_tier=1)
    decision = solve(make_snapshot(nodes=_four_gpu_nodes_in_two_leaves(), groups=[llm], running=[busy]))
    assert sorted(nodes_of(decision).values()) == ["n3", "n4"]


def test_hard_topology_gang_that_fits_no_leaf_stays_pending_with_reason() -> None:
    busy = make_running("busy", node="n2", cpu=1, gpus=4)
    llm = make_gang("llm", replicas=3, gpus=8, cpu=0, topology_tier=1)
    decision = solve(make_snapshot(nodes=_four_gpu_nodes_in_two_leaves(), groups=[llm], running=[busy]))
    assert nodes_of(decision) == {}
    assert outcome(decision, llm).reasons == (
        "topology: no domain of tier ≤ 1 holds the whole gang (needs 24 gpu; best: leaf-b with 16 gpu)",
    )


def test_soft_topology_prefers_the_smallest_domain_that_holds_the_gang() -> None:
    halves = [make_running(f"half-{n}", node=n, cpu=1, gpus=4) for n in ("n1", "n3")]
    plain = make_gang("plain", replicas=2, gpus=4)
    soft = with_topology(make_gang("soft", replicas=2, gpus=4), NetworkTopology(mode="soft"))
    nodes = _four_gpu_nodes_in_two_leaves()
    spread = nodes_of(solve(make_snapshot(nodes=nodes, groups=[plain], running=halves)))
    assert sorted(spread.values()) == ["n1", "n3"]  # best fit alone splits it over the half-used nodes
    together = nodes_of(solve(make_snapshot(nodes=nodes, groups=[soft], running=halves)))
    assert len(set(together.values())) == 1  # soft topology keeps it on one node


# ---- rule 6: NUMA ----


def test_single_numa_pod_takes_gpus_of_one_cell_and_names_it() -> None:
    node = make_node("n1", cpu=32, gpus=8, numa_cells=2, cell_cpu=16)
    busy = make_running("busy", node="n1", cpu=1, gpus=2, gpu_indices=(0, 1))
    job = make_gang("job", gpus=4, cpu=8, numa_policy="single-numa-node")
    decision = solve(make_snapshot(nodes=[node], groups=[job], running=[busy]))
    (bind,) = decision.placement.binds
    assert (bind.gpus, bind.numa_cell) == ((4, 5, 6, 7), 1)


def test_single_numa_pod_larger_than_any_cell_cpu_stays_pending() -> None:
    node = make_node("n1", cpu=32, gpus=8, numa_cells=2, cell_cpu=16)
    job = make_gang("job", gpus=2, cpu=20, numa_policy="single-numa-node")
    decision = solve(make_snapshot(nodes=[node], groups=[job]))
    assert nodes_of(decision) == {}
    assert any(r.rule == numa.NAME for r in outcome(decision, job).reasons)


def test_single_numa_pods_count_cell_cpu_already_in_use() -> None:
    node = make_node("n1", cpu=32, gpus=8, numa_cells=2, cell_cpu=16)
    pinned = make_running("pinned", node="n1", cpu=12, gpus=1, gpu_indices=(4,), numa_cell=1)
    job = make_gang("job", replicas=2, gpus=1, cpu=8, numa_policy="single-numa-node")
    decision = solve(make_snapshot(nodes=[node], groups=[job], running=[pinned]))
    assert sorted(bind.numa_cell for bind in decision.placement.binds) == [0, 0]


# ---- rule 7: dependencies ----


def test_dependent_task_waits_while_its_dependency_is_placed() -> None:
    tasks = [make_task("prep", replicas=2), make_task("train", replicas=2, depends_on=["prep"])]
    job = make_gang("job", tasks=tasks)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[job]))
    assert sorted(nodes_of(decision)) == ["default/job-prep-0", "default/job-prep-1"]
    assert outcome(decision, job).state == "scheduled"


def test_group_with_only_waiting_pods_says_what_it_waits_for() -> None:
    tasks = [make_task("prep", replicas=2), make_task("train", replicas=2, depends_on=["prep"])]
    job = make_gang("job", tasks=tasks, running_on={"prep": ["n1"]}, min_member=2)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=1)], groups=[job]))  # no room for prep-1
    assert nodes_of(decision) == {}
    assert reasons.dependency_waits("train", dependency="prep", running=1, total=2) in outcome(decision, job).reasons
    assert "dependency: train waits for prep (1 of 2 running)" in outcome(decision, job).reasons


# ---- rule 8: preemption and reclaim ----


def _low_gang_on(node: str, *, pods: int, min_member: int, preemptable: bool = True) -> Gang:
    return make_gang(
        "low",
        tasks=[make_task(replicas=pods, cpu=1, min_available=min_member)],
        min_member=min_member,
        priority=1,
        running_on=[node] * pods,
        preemptable=preemptable,
    )


def test_preemption_evicts_exactly_one_low_priority_pod() -> None:
    low = _low_gang_on("n1", pods=11, min_member=1)
    high = make_gang("high", cpu=1, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=11)], groups=[low, high]))
    assert nodes_of(decision) == {"default/high-worker-0": "n1"}
    (eviction,) = decision.placement.evictions
    assert (eviction.reason, eviction.for_, eviction.node) == ("preempt", "default/high", "n1")


@pytest.mark.parametrize(
    ("room", "victims"), [(1, 1), (2, 4)], ids=["needs one: loses one", "needs two: loses all four"]
)
def test_victim_gang_keeps_min_member_or_loses_everything(room: int, victims: int) -> None:
    low = _low_gang_on("n1", pods=4, min_member=3)
    high = make_gang("high", cpu=room, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[low, high]))
    assert len(decision.placement.evictions) == victims
    assert outcome(decision, low).placed in (0, 3)


def test_non_preemptable_pods_are_never_evicted() -> None:
    low = _low_gang_on("n1", pods=4, min_member=1, preemptable=False)
    high = make_gang("high", cpu=1, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[low, high]))
    assert decision.placement.evictions == ()
    assert outcome(decision, high).state == "pending"


def test_nobody_is_evicted_when_the_preemptor_still_would_not_fit() -> None:
    low = _low_gang_on("n1", pods=4, min_member=1)
    high = make_gang("high", cpu=5, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[low, high]))
    assert decision.placement == decision.placement.model_copy(update={"binds": (), "evictions": ()})
    assert outcome(decision, high).reasons[-1] == reasons.preemption_not_enough(action="preempt", victims=4)


def test_preemption_is_off_when_configured_off() -> None:
    low = _low_gang_on("n1", pods=4, min_member=1)
    high = make_gang("high", cpu=1, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[low, high]), preemption=False)
    assert decision.placement.evictions == ()


def test_reclaim_takes_back_from_a_queue_above_its_share_only_down_to_it() -> None:
    hog = make_gang(
        "hog", tasks=[make_task(replicas=8, cpu=1, min_available=1)], min_member=1, queue="qa",
        running_on=["n1"] * 4 + ["n2"] * 4,
    )
    newcomer = make_gang("newcomer", replicas=3, cpu=1, queue="qb")
    queues = [make_queue("qa"), make_queue("qb")]
    nodes = [make_node("n1", cpu=4), make_node("n2", cpu=4)]
    decision = solve(make_snapshot(nodes=nodes, groups=[hog, newcomer], queues=queues))
    # Deserved: qb asks 3 → 3; qa gets the other 5 of 8. qa runs 8: 3 may be reclaimed.
    assert len(decision.placement.evictions) == 3
    assert {eviction.reason for eviction in decision.placement.evictions} == {"reclaim"}
    assert len(nodes_of(decision)) == 3
    shares = {share.name: share for share in decision.queues}
    assert shares["qa"].allocated["cpu"] == shares["qa"].deserved["cpu"] == 5000


def test_reclaim_spares_a_queue_that_is_not_reclaimable() -> None:
    hog = make_gang(
        "hog", tasks=[make_task(replicas=4, cpu=1, min_available=1)], min_member=1, queue="qa", running_on=["n1"] * 4
    )
    newcomer = make_gang("newcomer", cpu=1, queue="qb")
    queues = [make_queue("qa", reclaimable=False), make_queue("qb")]
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[hog, newcomer], queues=queues))
    assert decision.placement.evictions == ()


# ---- whole engine ----


def test_same_snapshot_same_placement() -> None:
    groups = [make_gang(f"job-{i}", replicas=1 + i % 3, cpu=1 + i % 2, gpus=i % 2) for i in range(12)]
    nodes = [make_node(f"n{i}", cpu=8, gpus=4) for i in range(5)]
    snapshot = make_snapshot(nodes=nodes, groups=groups)
    assert solve(snapshot).placement == solve(snapshot).placement


def test_a_prebuilt_problem_gives_the_same_decision() -> None:
    groups = [make_gang(f"job-{i}", replicas=2, cpu=1) for i in range(4)]
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=2)], groups=groups)
    assert solve_greedy(snapshot, problem=build_problem(snapshot)).podgroups == solve(snapshot).podgroups


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(snapshots())
def test_every_greedy_placement_passes_the_checker(snapshot: Snapshot) -> None:
    solve(snapshot)


def test_problem_queue_allocation_equals_the_shares_module() -> None:
    queues = [make_queue("org"), make_queue("team", parent="org"), make_queue("solo")]
    groups = [
        make_gang("a", replicas=3, cpu=2, gpus=1, queue="team", running_on=["n1", "n2"]),
        make_gang("b", replicas=2, cpu=1, queue="org", running_on=["n1"]),
        make_gang("c", replicas=1, cpu=1, queue="solo", running_on=["n2"]),
        make_gang("lost", replicas=1, cpu=1, queue="no-such-queue"),
    ]
    other = make_running("other", node="n1", cpu=3)
    nodes = [make_node("n1", gpus=2), make_node("n2", gpus=2)]
    snapshot = make_snapshot(nodes=nodes, groups=groups, running=[other], queues=queues)
    problem = build_problem(snapshot)
    expected = queue_allocated(snapshot)
    deserved = deserved_shares(snapshot)
    for q, name in enumerate(problem.queue_names):
        assert problem.resources_dict(problem.queue_allocated[q]) == {k: v for k, v in expected[name].items() if v}
        assert problem.resources_dict(problem.queue_deserved[q]) == {k: v for k, v in deserved[name].items() if v}
    # The pod count a queue holds is in its row but never dealt out (`solver.problem`).
    pods = problem.pods_column
    assert problem.queue_allocated[:3, pods].tolist() == [3, 2, 1]
    assert (problem.queue_deserved[:, pods] > problem.queue_allocated[:, pods]).all()


def test_pods_beyond_the_minimum_are_shared_between_queues_turn_by_turn() -> None:
    elastic = [
        make_gang(f"elastic-{q}", tasks=[make_task(replicas=6, cpu=1, min_available=1)], min_member=1, queue=q)
        for q in ("qa", "qb")
    ]
    queues = [make_queue("qa"), make_queue("qb")]
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=4)], groups=elastic, queues=queues))
    assert (outcome(decision, elastic[0]).placed, outcome(decision, elastic[1]).placed) == (2, 2)


def test_hard_topology_gang_with_a_running_pod_grows_inside_its_leaf() -> None:
    llm = make_gang("llm", replicas=3, gpus=4, cpu=0, topology_tier=1, running_on=["n3"])
    decision = solve(make_snapshot(nodes=_four_gpu_nodes_in_two_leaves(), groups=[llm]))
    assert set(nodes_of(decision).values()) <= {"n3", "n4"}
    assert len(nodes_of(decision)) == 2


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("cpu", 2500, "2.5 cpu"),
        ("gpu", 8000, "8 gpu"),
        ("gpu", 500, "0.5 gpu"),
        ("memory", 3 * 2**29, "1.5Gi memory"),
        ("rdma", 2, "2 rdma"),
    ],
    ids=["cores", "whole gpus", "a fraction of a gpu", "binary memory", "other resources as counts"],
)
def test_reasons_format_quantities_for_people(resource: str, amount: int, text: str) -> None:
    assert reasons.format_quantity(resource, amount) == text


def test_victim_group_left_pending_says_it_was_evicted() -> None:
    low = make_gang("low", replicas=2, cpu=1, priority=1, running_on=["n1", "n1"])
    high = make_gang("high", cpu=2, priority=10)
    decision = solve(make_snapshot(nodes=[make_node("n1", cpu=2)], groups=[low, high]))
    assert outcome(decision, low).reasons == ("preemption: 2 pods evicted (preempt) for default/high",)


def test_problem_tables_for_a_numa_node_with_a_running_pod() -> None:
    node = make_node("n1", cpu=32, gpus=4, numa_cells=2, cell_cpu=16, gpu_used_milli={3: 250})
    pinned = make_running("pinned", node="n1", cpu=4, gpus=1, gpu_indices=(2,), numa_cell=1)
    problem = build_problem(make_snapshot(nodes=[node], running=[pinned]))
    gpu = problem.resource_index["gpu"]
    assert problem.gpu_free_milli.tolist() == [[1000, 1000, 0, 750]]
    assert problem.gpu_numa.tolist() == [[0, 0, 1, 1]]
    assert problem.cell_cpu_free.tolist() == [[16_000, 12_000]]
    assert problem.free[gpu].tolist() == [4000 - 1000 - 250]


def test_why_a_plan_failed_is_a_greedy_failure() -> None:
    """Too few pods: static; no room on the nodes: capacity; placed: no failure."""
    from solver.greedy.engine import GreedyEngine
    from solver.greedy.plan import GreedyFailure

    short = make_gang("short", tasks=[make_task("worker", replicas=2, min_available=3)], min_member=3)
    big = make_gang("big", replicas=3, cpu=8)
    fits = make_gang("fits", replicas=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[short, big, fits])
    engine = GreedyEngine(snapshot, build_problem(snapshot), GreedyConfig())
    engine.run()
    failures = {plan.group.name: plan.failure for plan in engine.plans}
    assert failures == {"short": GreedyFailure.STATIC, "big": GreedyFailure.CAPACITY, "fits": None}
