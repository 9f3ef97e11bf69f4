"""A hard-topology gang that no leaf can hold *and* whose queue is at its capability waits
for the quota as much as for the nodes: its reasons must say both, so `nodes_would_help`
reads False and no autoscaler buys nodes its queue would not let it use. The greedy engine
tried no domain, so no transaction met the capability, and it said "topology" alone (found
by the autoscale timeline: batchplace marked such gangs Unschedulable)."""

from __future__ import annotations

from typing import Any

import pytest

from models.snapshot import Snapshot
from solver.place import SolveConfig, place
from solver.reasons import nodes_would_help

GPU = 1000
GIB = 2**30


def _snapshot(capability_gpus: int | None) -> Snapshot:
    """Two leaves of one 8-GPU node each; queue ml runs an 8-GPU pod on node a1 and
    finetune a 4-GPU pod on b1; a 16-GPU gang of ml (2 pods × 8, hard, tier 1) waits —
    no leaf holds it, and a capability of 8 GPUs holds it too."""
    requests = {"cpu": 8000, "memory": 8 * GIB, "gpu": 8 * GPU}
    queue: dict[str, Any] = {"name": "ml", "weight": 1}
    if capability_gpus is not None:
        queue["capability"] = {"gpu": capability_gpus * GPU}
    return Snapshot.model_validate({
        "nodes": [{"name": n, "allocatable": {"cpu": 64000, "memory": 256 * GIB, "gpu": 8 * GPU}} for n in ("a1", "b1")],
        "hypernodes": [{"name": "leaf-a", "tier": 1, "node_members": ["a1"]}, {"name": "leaf-b", "tier": 1, "node_members": ["b1"]}],
        "queues": [queue, {"name": "finetune", "weight": 1}],
        "pod_groups": [
            {"namespace": "t", "name": "running", "queue": "ml", "min_member": 1, "tasks": [{"name": "main", "requests": requests}]},
            {"namespace": "t", "name": "small", "queue": "finetune", "min_member": 1,
             "tasks": [{"name": "main", "requests": {**requests, "gpu": 4 * GPU}}]},
            {"namespace": "t", "name": "gang", "queue": "ml", "min_member": 2, "tasks": [{"name": "main", "requests": requests}],
             "network_topology": {"mode": "hard", "highest_tier_allowed": 1}},
        ],
        "pods": [
            {"namespace": "t", "name": "running-0", "pod_group": "t/running", "task": "main", "requests": requests,
             "phase": "running", "node": "a1", "gpu_indices": list(range(8))},
            {"namespace": "t", "name": "small-0", "pod_group": "t/small", "task": "main", "requests": {**requests, "gpu": 4 * GPU},
             "phase": "running", "node": "b1", "gpu_indices": [0, 1, 2, 3]},
            *({"namespace": "t", "name": f"gang-{i}", "pod_group": "t/gang", "task": "main", "requests": requests,
               "phase": "pending"} for i in range(2)),
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
def test_the_same_gang_with_room_in_its_quota_waits_for_nodes(engine: str) -> None:
    found = _gang_reasons(_snapshot(capability_gpus=None), engine)
    assert [(r.rule, r.code) for r in found] == [("topology", "no_domain")]
    assert nodes_would_help(found)
