"""Rule 5, hard topology: all pods of a PodGroup inside one HyperNode of tier ≤ the limit."""

from __future__ import annotations

import pytest

from models.snapshot import NetworkTopology
from solver.place import ENGINES
from solver.rules import topology
from tests.builders import (
    Gang,
    bind_gang,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    rule_violations,
    solve_checked,
)

# Two leaves under one spine, and a node outside every HyperNode.
NODES = [
    make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
    make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
    make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
    make_node("loose", gpus=8),
]


def _check(job: Gang, nodes: list[str]) -> list:
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    return rule_violations(topology, snapshot, make_placement(binds=bind_gang(job, nodes)))


def test_a_gang_on_one_node_is_always_inside() -> None:
    assert _check(make_gang("job", replicas=2, gpus=4, topology_tier=1), ["loose", "loose"]) == []


def test_a_gang_within_one_leaf_meets_tier_1() -> None:
    assert _check(make_gang("job", replicas=2, gpus=8, topology_tier=1), ["a1", "a2"]) == []


def test_a_tier_1_gang_across_two_leaves_is_reported() -> None:
    (violation,) = _check(make_gang("job", replicas=2, gpus=8, topology_tier=1), ["a1", "b1"])
    assert violation.subject == "default/job"
    assert "tier <= 1" in violation.message and "a1 in sw-a, b1 in sw-b" in violation.message


def test_a_tier_2_gang_across_two_leaves_of_one_spine_is_inside() -> None:
    assert _check(make_gang("job", replicas=2, gpus=8, topology_tier=2), ["a1", "b1"]) == []


def test_a_node_outside_every_hypernode_breaks_a_multi_node_gang() -> None:
    (violation,) = _check(make_gang("job", replicas=2, gpus=8, topology_tier=2), ["a1", "loose"])
    assert "loose in no HyperNode" in violation.message


def test_running_pods_of_the_gang_count() -> None:
    job = make_gang("job", replicas=2, gpus=8, topology_tier=1, min_member=1, running_on=["b1"])
    (violation,) = _check(job, ["a1"])
    assert "2 nodes" in violation.message


def test_soft_mode_and_no_limit_are_not_enforced() -> None:
    soft = make_gang("soft", replicas=2, gpus=8)
    soft = Gang(
        group=soft.group.model_copy(update={"network_topology": NetworkTopology(mode="soft", highest_tier_allowed=1)}),
        pods=soft.pods,
    )
    assert _check(soft, ["a1", "b1"]) == []
    assert _check(make_gang("free", replicas=2, gpus=8), ["a1", "loose"]) == []


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_keeps_a_tier_1_gang_in_one_leaf(engine: str) -> None:
    # 2 × 8 GPUs with highest tier 1: only leaf sw-a (a1, a2) holds both.
    job = make_gang("job", replicas=2, gpus=8, topology_tier=1)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert sorted(b.node for b in solve_checked(snapshot, engine).placement.binds) == ["a1", "a2"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_leaves_a_tier_1_gang_pending_when_no_leaf_holds_it(engine: str) -> None:
    job = make_gang("job", replicas=3, gpus=8, topology_tier=1)  # 24 GPUs; a leaf has at most 16
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert solve_checked(snapshot, engine).placement.binds == ()
