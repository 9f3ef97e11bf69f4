"""The autoscale timeline (`experiments.timeline_autoscale`) on hand-made streams whose
purchases, joins, removals and node-hours can be counted by hand, and the CLI that runs it."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.timeline_autoscale import (
    NODE_GROUPS,
    AutoscaleConfig,
    AutoscaledCluster,
    AutoscaleResult,
    ClusterAutoscalerModel,
    ScanView,
    run_autoscale,
)
from experiments.timeline_llm import Job

COMMAND = Path(sys.executable).with_name("batchplace")


def _job(ident: int, queue: str, arrival_s: float, duration_s: float, *, pods: int = 1, gpus: int = 8) -> Job:
    return Job(ident, queue, arrival_s, duration_s, pods, 8_000, 10_000, gpus, 1000)


def _stream() -> list[Job]:
    """One base node of 8 GPUs, the training queue capped at 16: a training pod fills the
    base node for 3 h from 0; at 60 s an 8-GPU fine-tuning pod (10 min) finds no room — a
    node would start it — and a 16-GPU training gang finds its queue at 8 + 16 > 16 GPUs —
    no node would."""
    return [_job(0, "training", 0.0, 10_800.0), _job(1, "finetune", 60.0, 600.0), _job(2, "training", 60.0, 3600.0, pods=2)]


def _run(policy: str, jobs: list[Job], *, hours: float = 1.0) -> AutoscaleResult:
    return run_autoscale(AutoscaleConfig(policy=policy, hours=hours, base_nodes=1, training_capability_gpus=16), jobs=jobs)


def test_batchplace_gets_a_node_for_the_pod_capacity_blocks_and_none_for_the_quota_held_gang():
    jobs = _stream()
    result = _run("batchplace", jobs)
    (node,) = result.bought
    assert node.group.name == "gpu-8x"  # the 4-GPU group, first in order, cannot hold an 8-GPU pod
    assert node.bought_s == 60.0 and not node.for_quota_held
    assert jobs[1].start_s == 360.0  # bought at the cycle that marked it, joined after the 5-min boot
    assert jobs[2].start_s is None  # its quota holds it all day
    assert result.node_hours_quota_held == 0.0


def test_a_bought_node_leaves_after_its_idle_time_and_its_hours_count_from_the_purchase():
    result = _run("batchplace", _stream())
    (node,) = result.bought
    # the fine-tuning pod runs 360 → 960 s; the node is empty from 960 s and leaves 10 min later
    assert node.removed_s == 960.0 + 600.0
    assert result.node_hours == pytest.approx((1560.0 - 60.0) / 3600.0)
    # idle: 8 GPUs while booting (60 → 360 s) and while empty (960 → 1560 s)
    assert result.idle_bought_gpu_hours == pytest.approx(8 * (300.0 + 600.0) / 3600.0)
    assert result.cost == pytest.approx(result.node_hours * NODE_GROUPS[1].price_per_hour)


def test_volcano_like_marks_the_quota_held_gang_unschedulable_and_the_autoscaler_buys_for_it():
    jobs = _stream()
    result = _run("volcano", jobs)
    first = [node for node in result.bought if node.bought_s == 60.0]
    assert len(first) == 3  # one for the fine-tuning pod, two for the gang's pods
    assert sorted(node.for_quota_held for node in first) == [False, True, True]
    assert jobs[1].start_s == 360.0 and jobs[2].start_s is None  # the gang's nodes never run it
    assert result.node_hours_quota_held > 0.0
    assert result.idle_bought_gpu_hours > _run("batchplace", _stream()).idle_bought_gpu_hours


def test_the_scale_up_plan_buys_for_the_pod_capacity_blocks_and_nothing_for_the_quota_held_gang():
    jobs = _stream()
    result = _run("batchplace-plan", jobs)
    (node,) = result.bought
    assert node.group.name == "gpu-8x" and node.bought_s == 60.0 and not node.for_quota_held
    assert jobs[1].start_s == 360.0 and jobs[2].start_s is None
    assert result.node_hours == pytest.approx((1560.0 - 60.0) / 3600.0)


def test_the_scale_up_plan_buys_a_hard_leaf_gang_its_nodes_in_one_leaf_and_the_gang_starts_on_them():
    # leaf 1 of gpu-8x has 1 node busy for 3 h: 7 free slots there, so a 4-node gang bought
    # slot by slot would fit it — the plan must name one leaf for all four, whichever
    jobs = [_job(0, "training", 0.0, 10_800.0), _job(1, "finetune", 0.0, 10_800.0),
            _job(2, "training", 600.0, 3600.0, pods=4)]  # fmt: skip
    jobs[2].topology, jobs[2].tier = "hard", 1
    result = run_autoscale(AutoscaleConfig(policy="batchplace-plan", hours=2.0, base_nodes=1, training_capability_gpus=64),
                           jobs=jobs)  # fmt: skip
    cluster = AutoscaledCluster(1, NODE_GROUPS)
    gang_nodes = [node for node in result.bought if node.bought_s == 600.0]
    assert len(gang_nodes) == 4 and {node.group.name for node in gang_nodes} == {"gpu-8x"}
    assert len({int(cluster.slot_leaf[node.slot]) for node in gang_nodes}) == 1
    assert jobs[2].start_s == 900.0  # bought at the 600-s cycle, joined 5 min later
    assert result.node_hours_quota_held == 0.0


def test_the_autoscaler_buys_nothing_for_a_pod_that_fits_a_node_still_booting():
    cluster = AutoscaledCluster(0, NODE_GROUPS)  # no base node: nothing present holds the pod
    waiting = _job(1, "finetune", 0.0, 600.0, gpus=4)
    booting = int(np.flatnonzero(cluster.slot_group == 0)[0])  # a gpu-4x node bought earlier

    def view(boot: frozenset[int]) -> ScanView:
        return ScanView(0.0, cluster, [], [waiting], [waiting], frozenset(), boot)

    assert ClusterAutoscalerModel().buy(view(frozenset({booting}))) == []
    assert ClusterAutoscalerModel().buy(view(frozenset())) == [(booting, frozenset({1}))]  # the smallest group's first slot


def test_the_autoscaler_packs_pods_onto_one_new_node_and_stops_at_a_group_s_max():
    cluster = AutoscaledCluster(0, NODE_GROUPS)
    small = [_job(n, "finetune", 0.0, 600.0, gpus=2) for n in range(2)]  # two 2-GPU pods share one 4-GPU node
    bought = ClusterAutoscalerModel().buy(ScanView(0.0, cluster, [], small, small, frozenset(), frozenset()))
    assert bought == [(int(np.flatnonzero(cluster.slot_group == 0)[0]), frozenset({0, 1}))]
    most = NODE_GROUPS[1].max_count
    gang = [_job(9, "training", 0.0, 600.0, pods=most + 3)]
    bought = ClusterAutoscalerModel().buy(ScanView(0.0, cluster, [], gang, gang, frozenset(), frozenset()))
    assert len(bought) == most  # 8-GPU pods fit only gpu-8x nodes, and no more than its max


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["training", "finetune"]), st.integers(0, 5400), st.integers(60, 7200),
                          st.sampled_from([1, 2, 4, 8]), st.integers(1, 3)), min_size=1, max_size=12))  # fmt: skip
def test_bought_nodes_are_billed_for_at_least_their_idle_gpus_and_never_exceed_a_group_s_max(specs):
    jobs = sorted((_job(0, queue, float(arrival), float(duration), pods=pods if gpus == 8 else 1, gpus=gpus)
                   for queue, arrival, duration, gpus, pods in specs), key=lambda j: j.arrival_s)  # fmt: skip
    for ident, job in enumerate(jobs):
        job.ident = ident
    result = _run("volcano", jobs, hours=2.0)
    assert (result.idle_bought_gpus >= 0).all() and (result.idle_bought_gpus <= result.bought_gpus).all()
    billed_gpu_hours = sum(node.group.gpus * node.billed_s(2 * 3600.0) for node in result.bought) / 3600.0
    assert result.idle_bought_gpu_hours <= billed_gpu_hours + 1e-9
    for node in result.bought:
        assert node.removed_s is None or node.removed_s >= node.ready_s + node.group.idle_s
    for t in np.arange(0.0, 2 * 3600.0, 600.0):
        alive = [n for n in result.bought if n.bought_s <= t and (n.removed_s is None or n.removed_s > t)]
        assert len({n.slot for n in alive}) == len(alive)  # a slot holds one node at a time
        for group in NODE_GROUPS:
            assert sum(n.group == group for n in alive) <= group.max_count


def test_the_cli_runs_the_autoscale_scenario_and_writes_its_table_csv_and_plots(tmp_path: Path):
    env = {**os.environ, "COLUMNS": "250"}
    helped = subprocess.run([str(COMMAND), "experiment", "timeline", "--help"], capture_output=True, text=True, env=env,
                            timeout=120)  # fmt: skip
    assert helped.returncode == 0 and "autoscale" in helped.stdout and "--capability-gpus" in helped.stdout
    out = tmp_path / "out"
    args = ["--scenario", "autoscale", "--policies", "volcano,batchplace", "--seeds", "1", "--hours", "1", "--jobs", "1",
            "--out", str(out)]  # fmt: skip
    completed = subprocess.run([str(COMMAND), "experiment", "timeline", *args], capture_output=True, text=True, env=env,
                               timeout=300)  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "of them for quota-held pods" in completed.stdout
    rows = list(csv.DictReader((out / "timeline_autoscale.csv").open()))
    assert [row["policy"] for row in rows] == ["volcano", "batchplace"]
    assert float(next(r for r in rows if r["policy"] == "batchplace")["node_hours_quota_held"]) == 0.0
    for name in ("bought", "idle"):
        assert (out / f"timeline_autoscale_{name}.png").stat().st_size > 0
    bad = subprocess.run([str(COMMAND), "experiment", "timeline", "--scenario", "autoscale", "--policies", "kube",
                          "--out", str(out)], capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--policies" in bad.stderr
