"""The timeline's peers as people run them (`experiments.timeline_peers`), each on a
hand-made job list that shows its defining behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.timeline import TimelineConfig, TimelineResult, run_llm_timeline
from experiments.timeline_llm import Job, llm_workload


def _pod(ident: int, arrival_s: float, duration_s: float, gpus: int, *, queue: str = "training", pods: int = 1,
         topology: str = "none", tier: int = 0) -> Job:  # fmt: skip
    """`pods` pods of `gpus` whole GPUs each (8 fill a node)."""
    return Job(ident, queue, arrival_s, duration_s, pods, 8_000, 10_000, gpus, 1000, topology=topology, tier=tier)


def _gang(ident: int, arrival_s: float, duration_s: float, gpus: int, **kwargs) -> Job:  # noqa: ANN003
    return _pod(ident, arrival_s, duration_s, 8, pods=gpus // 8, **kwargs)


def _run(policy: str, jobs: list[Job], *, nodes: int, hours: float = 2.0, sla_waiting_s: float | None = None) -> TimelineResult:
    return run_llm_timeline(TimelineConfig(scenario="llm", policy=policy, hours=hours, cycle_s=60.0, nodes=nodes,
                                           sla_waiting_s=sla_waiting_s), jobs=jobs)  # fmt: skip


# ---- Volcano-like: no sla as shipped, sla at 2 h as volcano-sla ----


def _late_gang() -> list[Job]:
    """Two nodes: one busy 3 h; a 16-GPU gang waits from 1 min; 20-min jobs of one node
    arrive at 1 h (the gang is not yet overdue at 2 h) and at 2 h 5 min (it is)."""
    return [_gang(0, 0.0, 10_800.0, 8), _gang(1, 60.0, 600.0, 16), _gang(2, 3600.0, 1200.0, 8), _gang(3, 7500.0, 1200.0, 8)]


def test_volcano_runs_with_no_sla_whatever_the_option_says():
    plain, asked = _late_gang(), _late_gang()
    run = _run("volcano", plain, nodes=2, hours=4.0)
    guarded = _run("volcano", asked, nodes=2, hours=4.0, sla_waiting_s=120.0)
    assert [j.start_s for j in asked] == [j.start_s for j in plain]
    assert asked[3].start_s == 7500.0  # nothing held it for the overdue gang
    assert guarded.reserved_pct.max() == run.reserved_pct.max() == 0.0


def test_volcano_sla_holds_for_a_gang_past_two_hours_and_does_not_backfill():
    jobs = _late_gang()
    result = _run("volcano-sla", jobs, nodes=2, hours=4.0, sla_waiting_s=60.0)  # the option does not reach it
    running, gang, early, late = jobs
    assert early.start_s == 3600.0  # 59 min of waiting: under its 2 h, nothing held
    assert gang.start_s == 10_800.0
    assert late.start_s == gang.end_s == 11_400.0  # the held node was not lent to a 20-min job
    assert result.reserved_pct.max() > 0.0


# ---- Kueue-like ----


def _blocked_head() -> list[Job]:
    """Two nodes (training's nominal quota 8 of 16 GPUs): an 8-GPU job runs 1 h; a 16-GPU
    gang arrives at 1 min and fits neither quota nor nodes; an 8-GPU job arrives at 2 min."""
    return [_gang(0, 0.0, 3600.0, 8), _gang(1, 60.0, 600.0, 16), _gang(2, 120.0, 600.0, 8)]


def test_kueue_best_effort_fifo_lets_a_smaller_workload_pass_the_head():
    jobs = _blocked_head()
    _run("kueue", jobs, nodes=2)
    running, head, small = jobs
    assert small.start_s == 120.0
    assert head.start_s == 3600.0  # both earlier jobs gone at 1 h


def test_kueue_binpack_keeps_a_node_whole_for_an_8_gpu_pod_where_the_default_spreads():
    # Two nodes: two 4-GPU fine-tuning jobs, then an 8-GPU one. LeastAllocated puts the
    # second small job on the empty node; MostAllocated stacks it on the first.
    jobs = [_pod(0, 0.0, 3600.0, 4, queue="finetune"), _pod(1, 0.0, 3600.0, 4, queue="finetune"), _pod(2, 60.0, 600.0, 8, queue="finetune")]
    spread = [_pod(0, 0.0, 3600.0, 4, queue="finetune"), _pod(1, 0.0, 3600.0, 4, queue="finetune"), _pod(2, 60.0, 600.0, 8, queue="finetune")]
    _run("kueue-binpack", jobs, nodes=2)
    _run("kueue", spread, nodes=2)
    assert jobs[2].start_s == 60.0
    assert spread[2].start_s == 3600.0


def test_kueue_strict_fifo_blocks_its_queue_behind_the_head():
    jobs = _blocked_head()
    _run("kueue-strict", jobs, nodes=2)
    running, head, small = jobs
    assert head.start_s == 3600.0
    assert small.start_s == head.end_s == 4200.0


def test_kueue_reclaims_nominal_quota_from_a_borrowing_queue():
    """Training borrows finetune's and inference's quota with two 8-GPU jobs; a 4-GPU
    finetune job (within its nominal 4) reclaims: the training job admitted last goes."""
    jobs = [_gang(0, 0.0, 3600.0, 8), _gang(1, 0.0, 3600.0, 8), _pod(2, 60.0, 600.0, 4, queue="finetune")]
    result = _run("kueue", jobs, nodes=2)
    first, last, finetune = jobs
    assert finetune.start_s == 60.0
    assert (first.evictions, last.evictions) == (0, 1)
    assert last.start_s == 660.0  # back from pending once the finetune job is done
    assert result.evictions_per_admitted_gpu == pytest.approx(8 / (8 + 8 + 4 + 8))


def test_easy_does_not_preempt_where_kueue_reclaims():
    jobs = [_gang(0, 0.0, 3600.0, 8), _gang(1, 0.0, 3600.0, 8), _pod(2, 60.0, 600.0, 4, queue="finetune")]
    result = _run("easy", jobs, nodes=2)
    assert jobs[2].start_s == 3600.0
    assert result.evictions_per_admitted_gpu == 0.0


def test_kueue_fair_sharing_preempts_while_the_preemptor_stays_at_or_below_the_target_s_share():
    """Four nodes (nominal: training 16, finetune 8 GPUs); finetune borrows 16 with three
    8-GPU jobs; a 24-GPU training gang arrives. Its queue's share with it (8 borrowed /
    32 / weight 4 = 62.5 ‰) is ≤ finetune's after one eviction (8 / 32 / 2 = 125 ‰):
    LessThanOrEqualToFinalShare takes one; a second would leave finetune at 0 ‰, which only
    LessThanInitialShare allows (62.5 < 125): two evicted, the newest first."""
    jobs = [_pod(i, 0.0, 7200.0, 8, queue="finetune") for i in range(3)] + [_gang(3, 60.0, 600.0, 24)]
    _run("kueue", jobs, nodes=4)
    assert jobs[3].start_s == 60.0
    assert [j.evictions for j in jobs[:3]] == [0, 1, 1]


def test_kueue_does_not_preempt_a_queue_whose_share_would_fall_below_the_preemptor_s():
    """Two nodes: training at its nominal 8, finetune borrowing 4 with one 8-GPU job. A
    second training job would put training at 125 ‰, finetune is at 125 ‰ and would fall
    to 0: neither strategy allows it, the job waits."""
    jobs = [_gang(0, 0.0, 3600.0, 8), _pod(1, 0.0, 1800.0, 8, queue="finetune"), _gang(2, 60.0, 600.0, 8)]
    result = _run("kueue", jobs, nodes=2)
    assert jobs[2].start_s == 1800.0
    assert result.evictions_per_admitted_gpu == 0.0


# ---- EASY backfill ----


def _reserved_head() -> list[Job]:
    """Five nodes. Two 8-GPU jobs run exactly to their 1-h limits; a 32-GPU gang waits
    from 1 min (3 nodes free): its reservation is at 1 h on 4 of the 5 nodes. Then a long
    job (limit 4 h) at 2 min, a second long one at 3 min, a 20-min one (limit 30 min) at
    4 min."""
    return [_gang(0, 0.0, 3600.0, 8), _gang(1, 0.0, 3600.0, 8), _gang(2, 60.0, 600.0, 32),
            _gang(3, 120.0, 10_000.0, 8), _gang(4, 180.0, 10_000.0, 8), _gang(5, 240.0, 1200.0, 8)]  # fmt: skip


def test_easy_backfills_what_ends_before_the_reservation_or_avoids_its_nodes():
    jobs = _reserved_head()
    _run("easy", jobs, nodes=5, hours=4.0)
    _, _, head, long_spare, long_blocked, short = jobs
    assert short.start_s == 240.0  # ends (by its limit) before the head's reservation
    assert long_spare.start_s == 120.0  # on the one node the reservation does not need
    assert head.start_s == 3600.0  # its reservation: the running jobs' limits
    assert long_blocked.start_s is not None and long_blocked.start_s >= head.end_s  # it would have delayed the head


def test_easy_head_starts_no_later_than_its_reservation_when_jobs_end_before_their_limits():
    """The running jobs end at 50 min, before their 1-h limits: the head starts then."""
    jobs = [_gang(0, 0.0, 3000.0, 8), _gang(1, 60.0, 600.0, 16), _gang(2, 120.0, 900.0, 8), _gang(3, 180.0, 2400.0, 8)]
    _run("easy", jobs, nodes=2)
    _, head, short, long = jobs
    assert short.start_s == 120.0  # limit 15 min: gone by the 1-h reservation
    assert head.start_s == 3000.0 <= 3600.0
    assert long.start_s == head.end_s  # limit 1 h from 3 min: past the reservation


def test_easy_reserves_a_whole_leaf_for_a_hard_gang_and_backfills_a_soft_one_across_leaves():
    """Two leaves of 8 nodes, each with 5 nodes busy for 1 h (a hard 40-GPU gang each): 48
    GPUs free, 24 per leaf. A hard 48-GPU gang waits for one leaf; a soft 48-GPU gang of
    10 min (limit 15 min, gone before the reservation) starts across both."""
    jobs = [_gang(0, 0.0, 3600.0, 40, topology="hard", tier=1), _gang(1, 0.0, 3600.0, 40, topology="hard", tier=1),
            _gang(2, 60.0, 600.0, 48, topology="hard", tier=1), _gang(3, 120.0, 600.0, 48, topology="soft", tier=1)]  # fmt: skip
    result = _run("easy", jobs, nodes=16)
    leaves = [{a.node // 8 for a in job.assignments.values()} for job in jobs]
    assert leaves[0] != leaves[1] and len(leaves[0]) == len(leaves[1]) == 1
    hard, soft = jobs[2], jobs[3]
    assert soft.start_s == 120.0 and leaves[3] == {0, 1}
    assert hard.start_s == 3600.0 and len(leaves[2]) == 1


# ---- every peer ----


def _assert_whole_and_within_nodes(jobs: list[Job], result: TimelineResult, *, nodes: int) -> None:
    """Every started job holds all its pods, none waits holding some, and at each start the
    jobs then running fit every node's 8 GPUs and 192 cores (their last runs: an evicted
    job's earlier run is gone from it)."""
    started = [j for j in jobs if j.start_s is not None]
    assert all(len(j.assignments) == j.pods for j in started)
    assert result.idle_held_pct.max(initial=0.0) == 0.0
    for moment in np.unique([j.start_s for j in started]):
        gpus, cpus = np.zeros(nodes), np.zeros(nodes)
        for job in started:
            if job.start_s <= moment < job.end_s:
                for a in job.assignments.values():
                    gpus[a.node] += job.num_gpu * job.gpu_milli
                    cpus[a.node] += job.cpu_milli
        assert gpus.max() <= 8000 and cpus.max() <= 192_000


_shapes = st.sampled_from([("gang", 16), ("gang", 32), ("pod", 1), ("pod", 4), ("pod", 8), ("share", 250), ("share", 500)])


@st.composite
def _job_lists(draw: st.DrawFn) -> list[Job]:
    jobs = []
    for ident in range(draw(st.integers(1, 10))):
        kind, size = draw(_shapes)
        arrival, duration = 60.0 * draw(st.integers(0, 30)), 60.0 * draw(st.integers(1, 90))
        queue = draw(st.sampled_from(["training", "finetune"]))
        if kind == "gang":
            jobs.append(_gang(ident, arrival, duration, size, queue=queue, topology=draw(st.sampled_from(["none", "hard", "soft"])), tier=1))
        elif kind == "pod":
            jobs.append(_pod(ident, arrival, duration, size, queue=queue))
        else:
            jobs.append(Job(ident, "inference", arrival, duration, 1, 4_000, 32_000, 1, size, priority=1))
    return sorted(jobs, key=lambda j: (j.arrival_s, j.ident))


@pytest.mark.parametrize("policy", ["volcano-sla", "kueue", "kueue-strict", "easy"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_job_lists())
def test_peers_keep_gangs_whole_and_nodes_within_capacity_on_any_small_stream(policy, jobs):
    result = _run(policy, jobs, nodes=4, hours=2.0)
    _assert_whole_and_within_nodes(jobs, result, nodes=4)
    assert result.utilization_pct.max() <= 100.0


@pytest.mark.parametrize("policy", ["volcano", "volcano-sla", "kueue", "kueue-strict", "kueue-binpack", "easy"])
def test_peers_start_gangs_whole_within_capacity_on_a_synthetic_stream(policy):
    """Binds go through `ClusterState.bind`, which raises on an over-commit; here every
    started job holds all its pods, none waits holding some, GPUs stay ≤ capacity, and
    what ran at once never exceeded a node."""
    jobs = llm_workload(7, hours=3.0, capacity_gpus=128, load=1.3)
    result = _run(policy, jobs, nodes=16, hours=3.0)
    started = [j for j in jobs if j.start_s is not None]
    assert len(started) > len(jobs) // 2
    _assert_whole_and_within_nodes(jobs, result, nodes=16)
    # every peer keeps a hard tier-1 gang in one leaf (Kueue through Topology Aware Scheduling)
    assert all(len({a.node // 8 for a in j.assignments.values()}) == 1
                   for j in started if j.topology == "hard" and j.tier == 1)  # fmt: skip
