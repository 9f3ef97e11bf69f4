"""The timeline's delay ledger: each job's wait split into classes that add up to it, and
the eviction record, on hand-made jobs whose story is known."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.timeline import TimelineConfig, run_llm_timeline
from experiments.timeline_delay import WAIT_CLASSES, breakdown_markdown, fits_free_capacity
from experiments.timeline_llm import Job, World, llm_cluster
from experiments.cluster_state import ClusterState


def _gang(ident: int, arrival_s: float, duration_s: float, gpus: int, *, priority: int = 0, topology: str = "none",
          tier: int = 0) -> Job:  # fmt: skip
    return Job(ident, "training", arrival_s, duration_s, gpus // 8, 8_000, 10_000, 8, 1000, priority=priority,
               topology=topology, tier=tier)  # fmt: skip


def _rows(result) -> dict[int, dict]:  # noqa: ANN001
    return {row["job"]: row for row in result.delay_rows}


def test_a_gang_behind_a_full_cluster_waits_for_room_and_the_classes_add_up_to_its_wait():
    jobs = [_gang(0, 0.0, 1800.0, 64), _gang(1, 90.0, 600.0, 32)]  # 8 nodes: the second waits for the first
    result = run_llm_timeline(TimelineConfig(scenario="llm", policy="volcano", hours=1.0, nodes=8), jobs=jobs)
    row = _rows(result)[1]
    assert row["start_s"] == 1800.0
    assert row["wait_s"] == pytest.approx(1800.0 - 90.0)
    assert row["cycle_s"] == pytest.approx(30.0)  # from arrival at 90 s to the decision at 120 s
    assert row["no_room_s"] == pytest.approx(1800.0 - 120.0)
    assert row["first_fit_s"] == 1800.0
    for entry in result.delay_rows:
        assert sum(entry[f"{name}_s"] for name in WAIT_CLASSES) == pytest.approx(entry["wait_s"])


def test_an_eviction_charges_the_victim_its_lost_run_and_names_who_evicted_it():
    # greedy without a waiting time preempts: a priority-1 gang arrives on a full cluster.
    jobs = [_gang(0, 0.0, 7200.0, 64), _gang(1, 600.0, 1200.0, 64, priority=1)]
    config = TimelineConfig(scenario="llm", policy="greedy", hours=2.0, nodes=8, sla_waiting_s=None)
    result = run_llm_timeline(config, jobs=jobs)
    rows = _rows(result)
    victim = rows[0]
    assert victim["evictions"] == 1 and victim["evicted_by"] == "1"
    assert victim["ran_then_evicted_s"] == pytest.approx(600.0)
    assert victim["lost_gpu_h"] == pytest.approx(600.0 * 64 / 3600.0)
    assert victim["requeued_s"] == pytest.approx(1200.0)  # until the preemptor ends at 1800 s
    assert rows[1]["evicted_others"] == 1
    table = breakdown_markdown([("greedy", 42, result.delay_rows)])
    assert "| greedy | 1 | 1 | 0 | 1 |" in table  # one eviction, a preempt, by a training job


def test_fits_free_capacity_keeps_a_hard_gang_inside_one_leaf():
    nodes, leaf, spine = llm_cluster(16)  # two leaves of 8 nodes
    state = ClusterState(nodes)
    for n in (0, 1, 2, 3, 8, 9, 10, 11):  # four nodes busy in each leaf: 64 GPUs free, 32 per leaf
        state.bind(_gang(9, 0.0, 1.0, 8).request(n), n, tuple(range(8)))
    world = World(state, leaf, spine, 0.0, [], [])
    assert fits_free_capacity(world, _gang(1, 0.0, 1.0, 64, topology="soft", tier=1))
    assert not fits_free_capacity(world, _gang(1, 0.0, 1.0, 64, topology="hard", tier=1))
    assert fits_free_capacity(world, _gang(1, 0.0, 1.0, 32, topology="hard", tier=1))
    assert fits_free_capacity(world, _gang(1, 0.0, 1.0, 64, topology="hard", tier=2))
    assert np.all(state.full_free[[0, 1, 2, 3]] == 0)


def test_by_default_batchplace_evicts_nobody_and_the_preemptor_waits_for_room():
    jobs = [_gang(0, 0.0, 7200.0, 64), _gang(1, 600.0, 1200.0, 64, priority=1)]
    result = run_llm_timeline(TimelineConfig(scenario="llm", policy="greedy", hours=2.0, nodes=8), jobs=jobs)
    rows = _rows(result)
    assert rows[0]["evictions"] == 0 and jobs[0].start_s == 0.0
    assert jobs[1].start_s == 7200.0 and rows[1]["no_room_s"] > 0.0
