"""`solver.objective`: each tier on its worked example, and how vectors compare."""

from __future__ import annotations

from models.snapshot import NetworkTopology
from models.typical_shapes import TypicalShape
from solver.after import build_after
from solver.objective import (
    JOB_VALUE,
    ObjectiveContext,
    ObjectiveVector,
    age_class,
    fairness_allocated,
    fairness_unit,
    pod_value,
    queue_fairness,
    score,
)
from tests.builders import (
    bind_gang,
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_running,
    make_snapshot,
    make_task,
    resources,
)


def vector(**tiers: int) -> ObjectiveVector:
    return ObjectiveVector(**{"fairness": 0, "throughput": 0, "disruption": 0, "locality": 0, "usage": 0, "packing": 0, **tiers})


def test_vectors_compare_tier_by_tier_greater_is_better() -> None:
    assert vector(fairness=0, throughput=1) > vector(fairness=1, throughput=10**9)
    assert vector(throughput=5, disruption=100) > vector(throughput=4)
    assert vector(throughput=5, disruption=1) > vector(throughput=5, disruption=2, packing=0)
    assert vector(locality=1, packing=10**6) > vector(locality=2)
    assert vector(packing=3) >= vector(packing=3) and not vector(packing=3) > vector(packing=3)


def test_queue_fairness_is_the_dominant_resource_shortfall_in_per_mille() -> None:
    assert queue_fairness({"gpu": 16000}, {"gpu": 12000}) == 250
    assert queue_fairness({"cpu": 2000, "memory": 600}, {"cpu": 2000, "memory": 400}) == 0
    assert queue_fairness({"gpu": 3}, {"gpu": 1}) == 667  # rounded up
    assert queue_fairness({}, {}) == 0


def test_fairness_prefers_the_weighted_split_over_one_queue_taking_all() -> None:
    queues = [make_queue("a", weight=1), make_queue("b", weight=2)]
    jobs = [make_gang(f"{q}{i}", cpu=0.5, memory=0.1, queue=q) for q in "ab" for i in range(6)]
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=3, memory=2)], groups=jobs, queues=queues)
    by_name = {job.group.name: job for job in jobs}
    fair = make_placement(binds=[b for n in ("a0", "a1", "b0", "b1", "b2", "b3") for b in bind_gang(by_name[n], ["n1"])])
    greedy_a = make_placement(binds=[b for n in ("a0", "a1", "a2", "a3", "a4", "a5") for b in bind_gang(by_name[n], ["n1"])])
    assert score(snapshot, fair).fairness == 0
    assert score(snapshot, greedy_a).fairness == 1000
    assert score(snapshot, fair) > score(snapshot, greedy_a)


def test_throughput_weighs_priority_rank_and_gpus_dominate() -> None:
    assert pod_value(resources(cpu=96, gpus=8)) == 1 + 96 + 8000
    low = make_gang("low", cpu=96, gpus=8, priority=0)
    high = make_gang("high", cpu=96, gpus=8, priority=5)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=192, gpus=8)], groups=[low, high])
    got = score(snapshot, make_placement(binds=bind_gang(high, ["n1"])))
    assert got.throughput == 2 * (8097 + JOB_VALUE)  # priority 5 is rank 1 of {0, 5} → weight 2; it starts


def test_throughput_counts_a_running_job_as_one_more_pod() -> None:
    """Room for 4 one-GPU pods: a 4-pod job, or two 2-pod jobs of the same shape — the same
    work, and the placement that starts two jobs scores one pod's worth more. A job counts
    once, however many of its pods run."""
    big = make_gang("big", replicas=4, gpus=1, min_member=4)
    small_a, small_b = (make_gang(name, replicas=2, gpus=1, min_member=2) for name in ("small-a", "small-b"))
    running = make_gang("running", replicas=2, gpus=1, min_member=1, running_on=["n2"])
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=8, gpus=4), make_node("n2", cpu=8, gpus=4)], groups=[big, small_a, small_b, running]
    )
    one = score(snapshot, make_placement(binds=bind_gang(big, ["n1"] * 4)))
    two = score(snapshot, make_placement(binds=[*bind_gang(small_a, ["n1"] * 2), *bind_gang(small_b, ["n1"] * 2)]))
    assert two.throughput - one.throughput == JOB_VALUE
    assert two > one
    grown = make_gang("grown", replicas=3, gpus=1, min_member=1, running_on=["n2", "n2"])
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8, gpus=4), make_node("n2", cpu=8, gpus=4)], groups=[grown])
    extra = score(snapshot, make_placement(binds=bind_gang(grown, ["n1"])))
    assert extra.throughput == 3 * pod_value(resources(cpu=1, gpus=1)) + JOB_VALUE  # two kept, one bound: one job


def test_disruption_counts_each_victim_with_its_gpu_time_on_a_log_scale() -> None:
    assert [age_class(0.0, h * 3600.0) for h in (0.5, 1, 5, 7)] == [1, 2, 3, 4]
    victim_gang = make_gang("victim", gpus=1, running_on=["n1"])
    other = make_gang("other", gpus=1, running_on=["n2"])
    pods = [p.model_copy(update={"start_time": 0.0}) for p in victim_gang.pods]
    clock = [p.model_copy(update={"start_time": 5 * 3600.0}) for p in other.pods]
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=1), make_node("n2", gpus=1)],
        groups=[victim_gang.__class__(group=victim_gang.group, pods=tuple(pods)), other.__class__(group=other.group, pods=tuple(clock))],
    )
    placement = make_placement(evictions=[make_eviction(pods[0], for_="default/other")])
    assert score(snapshot, placement).disruption == 1000 + 1000 * 3  # weight 1, 1 GPU, 5 h → class 3


def test_locality_counts_soft_spans_and_numa_splits() -> None:
    soft = make_gang("soft", replicas=2, gpus=1)
    soft = soft.__class__(
        group=soft.group.model_copy(update={"network_topology": NetworkTopology(mode="soft")}), pods=soft.pods
    )
    wide = make_gang("wide", gpus=4)
    nodes = [make_node("a1", gpus=1, leaf="leaf-a"), make_node("b1", gpus=1, leaf="leaf-b"), make_node("n4", gpus=8, numa_cells=2)]
    snapshot = make_snapshot(nodes=nodes, groups=[soft, wide])
    placement = make_placement(
        binds=[*bind_gang(soft, ["a1", "b1"]), make_bind(wide.pods[0], "n4", gpus=(2, 3, 4, 5))]
    )
    assert score(snapshot, placement).locality == 2 + 1


def test_packing_is_fgd_fragmentation_over_the_pending_shapes() -> None:
    node = make_node("n1", gpus=4, gpu_used_milli={1: 700})
    shapes = [make_gang("two", gpus=2), make_gang("half", gpu_milli=500)]
    snapshot = make_snapshot(nodes=[node], groups=shapes)
    # Typical shapes: the pending pods', 2 GPUs and 500 milli, weight 1/2 each.
    # Nothing bound, free (1000, 300, 1000, 1000): both fit; each leaves the 300 → 300.
    assert score(snapshot, make_placement()).packing == 300
    # "two" on devices 2–3, free (1000, 300, 0, 0): 2 GPUs fit nowhere, all 1,300 count;
    # 500 milli fits device 0, the 300 counts → 650 + 150.
    assert score(snapshot, make_placement(binds=bind_gang(shapes[0], ["n1"], first_gpu={"n1": 2}))).packing == 800


def test_packing_counts_a_node_whose_cpu_no_typical_shape_fits_and_reads_configured_shapes() -> None:
    gang = make_gang("g", gpus=1, cpu=3)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=2, cpu=4)], groups=[gang])
    bound = make_placement(binds=bind_gang(gang, ["n1"]))
    assert score(snapshot, make_placement()).packing == 0  # the 1-GPU, 3-core shape fits: nothing is fragment
    # Bound: one device free but 1 core left; the shape no longer fits → the whole free device.
    assert score(snapshot, bound).packing == 1000
    gpu_only = ObjectiveContext.of(snapshot, (TypicalShape(cpu_milli=0, gpu_milli=1000, weight=1.0),))
    assert score(snapshot, bound, context=gpu_only).packing == 0


def test_context_is_reusable_and_changes_nothing() -> None:
    gang = make_gang("g", replicas=2, cpu=1, memory=1)
    running = make_running("other", node="n1", cpu=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=4, memory=4)], groups=[gang], running=[running])
    placement = make_placement(binds=bind_gang(gang, ["n1", "n1"]))
    assert score(snapshot, placement, context=ObjectiveContext.of(snapshot)) == score(snapshot, placement)


def test_two_task_gang_throughput_adds_both_tasks() -> None:
    gang = make_gang("g", tasks=[make_task("a", cpu=2), make_task("b", cpu=3)])
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[gang])
    assert score(snapshot, make_placement(binds=bind_gang(gang, ["n1", "n1"]))).throughput == 3 + 4 + JOB_VALUE


def test_fairness_counts_huge_resources_in_coarser_units() -> None:
    assert fairness_unit(16_000) == 1
    assert fairness_unit(20 * 2**40) == 1024**2  # 20 TiB of memory counts in MiB
    assert queue_fairness({"memory": 1000}, {"memory": 500 * 1024**2}, {"memory": 1024**2}) == 500


def _in_queue_swap():  # noqa: ANN202
    """q1 (under org, capability 6 CPU) runs low-1 (1 CPU) on n1 and low-2 (4 CPU) on n2;
    the high-priority 3-CPU job waits. Evicting low-2 for it is the only room."""
    low_1 = make_gang("low-1", cpu=1, queue="q1", priority=1, running_on=["n1"])
    low_2 = make_gang("low-2", cpu=4, queue="q1", priority=1, running_on=["n2"])
    high = make_gang("high", cpu=3, queue="q1", priority=100)
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=3), make_node("n2", cpu=4)],
        groups=[low_1, low_2, high],
        queues=[make_queue("org"), make_queue("q1", parent="org", capability=resources(cpu=6))],
    )
    swap = make_placement(
        binds=bind_gang(high, ["n2"]), evictions=[make_eviction(low_2.running[0], for_=high)]
    )
    return snapshot, swap


def test_in_queue_preemption_never_lowers_its_queues_fairness() -> None:
    """q1 holds 5 of its 6-CPU target (167); after the swap it holds 4 but counts
    4 + min(4 − 3, 3) = 5, as before, and throughput (the high priority's weight) prefers
    the swap."""
    snapshot, swap = _in_queue_swap()
    nothing = score(snapshot, make_placement())
    swapped = score(snapshot, swap)
    assert nothing.fairness == swapped.fairness == 167 + 286  # q1: 1 of 6 CPU short; org: 2 of 7
    job = JOB_VALUE  # each job running after the placement: low-1 and high, or low-1 and low-2
    assert swapped.throughput == 1 * (1 + 1 + job) + 2 * (1 + 3 + job)
    assert nothing.throughput == 1 * (1 + 1 + job) + 1 * (1 + 4 + job)
    assert swapped.throughput > nothing.throughput
    assert swapped > nothing


def test_fairness_counts_a_queues_preempted_pods_beyond_its_binds_up_to_its_binds() -> None:
    snapshot, swap = _in_queue_swap()
    after = build_after(snapshot, swap)
    counted = fairness_allocated(snapshot, after)
    assert after.queue_allocated_after["q1"]["cpu"] == 4000
    assert counted["q1"]["cpu"] == counted["org"]["cpu"] == 5000
    # A reclaim is no in-queue preemption: what it takes counts as gone.
    relabelled = [e.model_copy(update={"reason": "reclaim"}) for e in swap.evictions]
    reclaim = make_placement(binds=swap.binds, evictions=relabelled)
    assert fairness_allocated(snapshot, build_after(snapshot, reclaim))["q1"]["cpu"] == 4000
    # Binds that outgrow the room preempted count as they are: nothing is added.
    small = make_gang("small", cpu=1, queue="q1", priority=1, running_on=["n1"])
    high = make_gang("high", cpu=3, queue="q1", priority=100)
    grown = make_snapshot(
        nodes=[make_node("n1", cpu=3)], groups=[small, high], queues=[make_queue("q1", capability=resources(cpu=6))]
    )
    placement = make_placement(binds=bind_gang(high, ["n1"]), evictions=[make_eviction(small.running[0], for_=high)])
    assert fairness_allocated(grown, build_after(grown, placement))["q1"]["cpu"] == 3000
    # What preemption frees beyond the binds counts only up to as much as they bind: q1
    # evicts low-2 (4 CPU) for a 1-CPU pod and q2 takes the room; q1 holds 1, counts
    # 1 + min(4 − 1, 1) = 2.
    tiny = make_gang("tiny", cpu=1, queue="q1", priority=100)
    low_2 = make_gang("low-2", cpu=4, queue="q1", priority=1, running_on=["n2"])
    other = make_gang("other", cpu=3, queue="q2")
    capped = make_snapshot(
        nodes=[make_node("n1", cpu=1), make_node("n2", cpu=4)],
        groups=[low_2, tiny, other],
        queues=[make_queue("q1"), make_queue("q2")],
    )
    handed = make_placement(
        binds=[*bind_gang(tiny, ["n1"]), *bind_gang(other, ["n2"])],
        evictions=[make_eviction(low_2.running[0], for_=tiny)],
    )
    assert fairness_allocated(capped, build_after(capped, handed))["q1"]["cpu"] == 1000 + 1000


def test_in_queue_preemption_freeing_more_than_twice_its_binds_costs_its_queue() -> None:
    """q (target 8 CPU, holds 8) preempts big (8 CPU, priority 1) for urgent (3 CPU,
    priority 100): counted 3 + min(8 − 3, 3) = 6 of 8 → 250, so it stays (Volcano would
    preempt); a 5-CPU victim, counted 3 + min(2, 3) = 5 of 5, would go."""
    for victim_cpu, fairness in ((8, 250), (5, 0)):
        big = make_gang("big", cpu=victim_cpu, queue="q", priority=1, running_on=["n1"])
        urgent = make_gang("urgent", cpu=3, queue="q", priority=100)
        nodes = [make_node("n1", cpu=victim_cpu)]
        snapshot = make_snapshot(nodes=nodes, groups=[big, urgent], queues=[make_queue("q")])
        swap = make_placement(binds=bind_gang(urgent, ["n1"]), evictions=[make_eviction(big.running[0], for_=urgent)])
        assert score(snapshot, make_placement()).fairness == 0
        assert score(snapshot, swap).fairness == fairness
        assert (score(snapshot, swap) > score(snapshot, make_placement())) == (fairness == 0)
