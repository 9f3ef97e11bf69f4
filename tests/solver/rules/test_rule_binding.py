"""Binding: binds and evictions name real pods, nodes and devices, each pod once."""

from __future__ import annotations

from solver.rules import binding
from tests.builders import (
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    rule_violations,
)

NODES = [make_node("n1", gpus=8), make_node("n2", gpus=8)]
JOB = make_gang("job", replicas=2, gpus=1)
OLD = make_gang("old", gpus=1, running_on=["n2"])
SNAPSHOT = make_snapshot(nodes=NODES, groups=[JOB, OLD])


def test_an_empty_placement_is_well_formed() -> None:
    assert rule_violations(binding, SNAPSHOT, make_placement()) == []


def test_binds_and_evictions_of_real_pods_are_well_formed() -> None:
    placement = make_placement(
        binds=[make_bind(JOB.pods[0], "n1", gpus=[0]), make_bind(JOB.pods[1], "n2", gpus=[0])],
        evictions=[make_eviction(OLD.pods[0], for_=JOB)],
    )
    assert rule_violations(binding, SNAPSHOT, placement) == []


def test_a_pod_bound_twice_is_reported_once() -> None:
    placement = make_placement(binds=[make_bind(JOB.pods[0], "n1", gpus=[0]), make_bind(JOB.pods[0], "n2", gpus=[1])])
    (violation,) = rule_violations(binding, SNAPSHOT, placement)
    assert violation.subject == JOB.pods[0].key
    assert "bound 2 times" in violation.message


def test_binding_a_running_pod_is_reported() -> None:
    (violation,) = rule_violations(binding, SNAPSHOT, make_placement(binds=[make_bind(OLD.pods[0], "n1", gpus=[0])]))
    assert "already running on node n2" in violation.message


def test_binding_an_unknown_pod_or_node_is_reported() -> None:
    placement = make_placement(binds=[make_bind("default/ghost", "n1"), make_bind(JOB.pods[0], "n9", gpus=[0])])
    messages = [v.message for v in rule_violations(binding, SNAPSHOT, placement)]
    assert len(messages) == 2
    assert "does not list" in messages[0] and "ghost" in messages[0]
    assert "node n9" in messages[1]


def test_repeated_and_unknown_gpu_indices_are_reported() -> None:
    placement = make_placement(binds=[make_bind(JOB.pods[0], "n1", gpus=[3, 3, 8])])
    messages = [v.message for v in rule_violations(binding, SNAPSHOT, placement)]
    assert len(messages) == 2
    assert "GPU [3] more than once" in messages[0]
    assert "GPU [8] of node n1, which has 8 devices" in messages[1]


def test_evicting_a_pending_or_unknown_pod_is_reported() -> None:
    placement = make_placement(
        evictions=[make_eviction(JOB.pods[0], "n1", for_=JOB), make_eviction("default/ghost", "n1", for_=JOB)]
    )
    messages = [v.message for v in rule_violations(binding, SNAPSHOT, placement)]
    assert len(messages) == 2
    assert "which is pending, not running" in messages[0]
    assert "does not list" in messages[1]


def test_evicting_from_the_wrong_node_or_twice_is_reported() -> None:
    eviction = make_eviction(OLD.pods[0], for_=JOB)
    wrong_node = make_eviction(OLD.pods[0], "n1", for_=JOB)
    assert [v.message for v in rule_violations(binding, SNAPSHOT, make_placement(evictions=[wrong_node]))] == [
        f"eviction of pod {OLD.pods[0].key} names node n1; it runs on n2"
    ]
    (twice,) = rule_violations(binding, SNAPSHOT, make_placement(evictions=[eviction, eviction]))
    assert "evicted 2 times" in twice.message


def test_a_pod_both_bound_and_evicted_is_reported() -> None:
    placement = make_placement(
        binds=[make_bind(OLD.pods[0], "n1", gpus=[0])], evictions=[make_eviction(OLD.pods[0], for_=JOB)]
    )
    messages = [v.message for v in rule_violations(binding, SNAPSHOT, placement)]
    assert any("both bound and evicted" in m for m in messages)
