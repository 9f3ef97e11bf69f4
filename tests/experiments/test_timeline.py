"""The timeline simulator's event order and gang semantics, on hand-made jobs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from experiments.timeline import TimelineConfig, run_llm_timeline
from experiments.timeline_llm import Job, deserved_gpus, limit_class_s, llm_workload


def _gang(ident: int, arrival_s: float, duration_s: float, gpus: int, *, queue: str = "training", topology: str = "none", tier: int = 0) -> Job:
    return Job(ident, queue, arrival_s, duration_s, gpus // 8, 8_000, 10_000, 8, 1000, topology=topology, tier=tier)


def _config(policy: str, nodes: int = 8) -> TimelineConfig:
    return TimelineConfig(scenario="llm", policy=policy, hours=1.0, cycle_s=60.0, nodes=nodes)


def test_deserved_shares_water_fill_by_weight_capped_by_demand():
    deserved = deserved_gpus({"training": 10, "finetune": 80, "inference": 80}, 100)
    assert deserved == pytest.approx({"training": 10, "finetune": 45, "inference": 45})


@pytest.mark.parametrize("policy", ["greedy", "volcano", "kube"])
def test_a_job_ending_at_t_frees_its_gpus_for_a_job_arriving_at_t(policy):
    jobs = [_gang(0, 0.0, 120.0, 64), _gang(1, 120.0, 60.0, 64)]
    result = run_llm_timeline(_config(policy), jobs=jobs)
    assert jobs[0].start_s == 0.0 and jobs[0].end_s == 120.0
    assert jobs[1].start_s == 120.0  # departures first, then arrivals, then the decision
    assert result.delays_by_queue["training"].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("policy", ["greedy", "volcano"])
def test_gang_schedulers_place_a_gang_whole_or_not_at_all(policy):
    jobs = [_gang(0, 0.0, 600.0, 32), _gang(1, 0.0, 600.0, 64)]  # 96 GPUs asked of 64
    result = run_llm_timeline(_config(policy), jobs=jobs)
    assert jobs[0].start_s == 0.0
    assert jobs[1].start_s == 600.0
    assert result.idle_held_pct.max() == 0.0


def test_kube_like_lets_partial_gangs_hold_gpus():
    jobs = [_gang(0, 0.0, 600.0, 32), _gang(1, 0.0, 600.0, 64)]
    result = run_llm_timeline(_config("kube"), jobs=jobs)
    assert result.idle_held_pct.max() > 0.0


def test_batchplace_keeps_a_hard_topology_gang_inside_one_leaf():
    jobs = [_gang(0, 0.0, 600.0, 8), _gang(1, 60.0, 600.0, 64, topology="hard", tier=1)]
    result = run_llm_timeline(_config("greedy", nodes=16), jobs=jobs)
    assert result.leaves_spanned.tolist() == [1]
    assert len({a.node // 8 for a in jobs[1].assignments.values()}) == 1
    assert np.all(result.utilization_pct <= 100.0)


def _starving() -> list[Job]:
    """A 64-GPU gang on 8 nodes, behind a stream of 8-GPU jobs that free one node at a time."""
    smalls = [_gang(i, 0.0, 600.0 * (i + 1), 8) for i in range(8)]
    smalls += [_gang(8 + i, 120.0 * (i + 1), 1800.0, 8) for i in range(60)]
    return [*smalls, _gang(100, 60.0, 600.0, 64)]


@pytest.mark.parametrize("policy", ["greedy"])  # Volcano-like's sla: tests/experiments/test_timeline_peers.py
def test_a_waiting_time_lets_a_starved_gang_start(policy):
    config = TimelineConfig(scenario="llm", policy=policy, hours=3.0, cycle_s=60.0, nodes=8, sla_waiting_s=None)
    unguarded = _starving()
    run_llm_timeline(config, jobs=unguarded)
    guarded = _starving()
    result = run_llm_timeline(replace(config, sla_waiting_s=1200.0), jobs=guarded)
    big_before, big_after = unguarded[-1], guarded[-1]
    assert big_after.start_s is not None
    assert big_before.start_s is None or big_after.start_s < big_before.start_s
    assert result.reserved_pct.max() > 0.0  # it was held for while it waited
    assert result.evictions_per_admitted_gpu == 0.0  # with a waiting time nothing is evicted for it


def test_a_job_s_time_limit_is_the_smallest_limit_class_covering_its_duration():
    assert [limit_class_s(s) for s in (60.0, 900.0, 901.0, 3000.0, 7920.0)] == [900.0, 900.0, 1800.0, 3600.0, 14400.0]
    jobs = llm_workload(42, hours=2.0, capacity_gpus=128)
    assert all(job.duration_s <= job.active_deadline_s < 2 * max(job.duration_s, 900.0) for job in jobs)


def _held_and_short() -> list[Job]:
    """Two nodes: an 8-GPU job runs 1 h (its limit 1 h) on one; a 16-GPU gang arrives at
    1 min and waits; a 20-min 8-GPU job of its queue (limit 30 min) arrives at 5 min."""
    return [_gang(0, 0.0, 3600.0, 8), _gang(1, 60.0, 600.0, 16), _gang(2, 300.0, 1200.0, 8)]


@pytest.mark.parametrize(("policy", "short_start_s"), [("greedy", 300.0), ("auto", 300.0)])
def test_batchplace_backfills_the_held_node_with_a_job_gone_before_the_gang_can_start(policy, short_start_s):
    jobs = _held_and_short()
    config = TimelineConfig(scenario="llm", policy=policy, hours=2.0, cycle_s=60.0, nodes=2, sla_waiting_s=120.0)
    run_llm_timeline(config, jobs=jobs)
    running, gang, short = jobs
    assert gang.start_s == 3600.0  # when the running job ends, backfill or not: the gang is not delayed
    assert short.start_s == short_start_s  # (Volcano's sla, which has no backfill: test_timeline_peers.py)
