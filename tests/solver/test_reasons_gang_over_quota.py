"""A gang the nodes cannot hold *and* whose whole minimum would cross its queue's capability
waits for the quota as much as for the nodes: its reasons must say both, so
`nodes_would_help` reads False and no autoscaler buys nodes its queue would not let it use.
The greedy engine checked the capability one pod at a time, so when the nodes ran out
first — no topology domain tried at all, or the transaction stopped on capacity with room
left for the next pod — it said "topology" or "capacity" alone (found by the autoscale
timeline: batchplace marked such gangs Unschedulable)."""

from __future__ import annotations

from typing import Any

import pytest

from models.snapshot import Snapshot
from solver.place import SolveConfig, place
from solver.reasons import nodes_would_help

GPU = 1000
GIB = 2**30


def _snapshot(capability_gpus: int | None, *, pods: int = 2, hard: bool = True) -> Snapshot:
    """Two leaves of one 8-GPU node each, and node c1 with 8 idle GPUs in neither; queue
    ml runs an 8-GPU pod on node a1 and finetune a 4-GPU pod on b1; a gang of ml of `pods`
    pods × 8 GPUs waits — hard (tier 1): no leaf holds it; not hard: c1 takes one pod."""
    requests = {"cpu": 8000, "memory": 8 * GIB, "gpu": 8 * GPU}
    queue: dict[str, Any] = {"name": "ml", "weight": 1}
    if capability_gpus is not None:
        queue["capability"] = {"gpu": capability_gpus * GPU}
    return Snapshot.model_validate({
        "nodes": [{"name": n, "allocatable": {"cpu": 64000, "memory": 256 * GIB, "gpu": 8 * GPU}} for n in ("a1", "b1", "c1")],
        "hypernodes": [{"name": "leaf-a", "tier": 1, "node_members": ["a1"]}, {"name": "leaf-b", "tier": 1, "node_members": ["b1"]}],
        "queues": [queue, {"name": "finetune", "weight": 1}],
        "pod_groups": [
            {"namespace": "t", "name": "running", "queue": "ml", "min_member": 1, "tasks": [{"name": "main", "requests": requests}]},
            {"namespace": "t", "name": "small", "queue": "finetune", "min_member": 1,
             "tasks": [{"name": "main", "requests": {**requests, "gpu": 4 * GPU}}]},
            {"namespace": "t", "name": "gang", "queue": "ml", "min_member": pods, "tasks": [{"name": "main", "requests": requests}],
             **({"network_topology": {"mode": "hard", "highest_tier_allowed": 1}} if hard else {})},
        ],
        "pods": [
            {"namespace": "t", "name": "running-0", "pod_group": "t/running", "task": "main", "requests": requests,
             "phase": "running", "node": "a1", "gpu_indices": list(range(8))},
            {"namespace": "t", "name": "small-0", "pod_group": "t/small", "task": "main", "requests": {**requests, "gpu": 4 * GPU},
             "phase": "running", "node": "b1", "gpu_indices": [0, 1, 2, 3]},
            *({"namespace": "t", "name": f"gang-{i}", "pod_group": "t/gang", "task": "main", "requests": requests,
               "phase": "pending"} for i in range(pods)),
        ],
    })  # fmt: skip


def _gang_reasons(snapshot: Snapshot, engine: str) -> list:
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=1.0, workers=1))  # type: ignore[arg-type]
    (gang,) = [outcome for outcome in decision.podgroups if outcome.name == "t/gang"]
    assert gang.state == "pending"
    return list(gang.reasons)


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_gang_no_leaf_holds_and_its_quota_holds_says_both_and_no_node_would_help(engine: str) -> None:
    found = _gang_reasons(_snapshot(capability_gpus=8), engine)
    assert {(r.rule, r.code) for r in found} >= {("quota", "exceeded"), ("topology", "no_domain")}
    assert not nodes_would_help(found)


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_gang_the_nodes_stop_before_its_quota_does_still_says_the_quota(engine: str) -> None:
    # capability 24, 8 in use: room for two more pods; c1 takes the first, the second finds no
    # node (capacity) — yet the minimum of three (24 GPUs) would cross the capability anyway
    found = _gang_reasons(_snapshot(capability_gpus=24, pods=3, hard=False), engine)
    assert ("quota", "exceeded") in {(r.rule, r.code) for r in found}
    assert not nodes_would_help(found)


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_the_same_gang_with_room_in_its_quota_waits_for_nodes(engine: str) -> None:
    found = _gang_reasons(_snapshot(capability_gpus=None), engine)
    assert [(r.rule, r.code) for r in found] == [("topology", "no_domain")]
    assert nodes_would_help(found)


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_gang_whose_minimum_fits_its_quota_waits_for_nodes(engine: str) -> None:
    found = _gang_reasons(_snapshot(capability_gpus=32, pods=3, hard=False), engine)  # 8 + 24 ≤ 32
    assert "quota" not in {r.rule for r in found}
    assert nodes_would_help(found)
