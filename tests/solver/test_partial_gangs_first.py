"""A gang already partly bound (a crash or a failed bind left it short of its minimum) is
completed before a new gang of its priority takes the room, in both engines, as Volcano's
gang plugin orders not-ready jobs first; a higher priority still goes first. The checker
judges every placement (`solve_checked`)."""

from __future__ import annotations

import pytest

from models.placement import Decision
from models.snapshot import Snapshot
from solver.rules.gang import is_partly_bound
from tests.builders import created_at, gated, make_gang, make_node, make_snapshot, solve_checked

ENGINES = ("greedy", "cpsat")


def _cluster(*, new_priority: int = 0) -> Snapshot:
    """n1: 5 GPUs, one held by the half gang's running pod; 4 free. The half gang needs 3
    more, the new gang (created earlier, so first come would pick it) 4."""
    half = created_at(make_gang("half", replicas=4, gpus=1, running_on=["n1"]), 200.0)
    new = created_at(make_gang("new", replicas=4, gpus=1, priority=new_priority), 100.0)
    return make_snapshot(nodes=[make_node("n1", cpu=64, gpus=5)], groups=[half, new])


def test_a_started_gang_short_of_its_minimum_is_partly_bound() -> None:
    snapshot = _cluster()
    by_key = snapshot.pod_group_by_key
    assert is_partly_bound(snapshot, by_key["default/half"])
    assert not is_partly_bound(snapshot, by_key["default/new"])
    whole = make_snapshot(nodes=[make_node("n1", cpu=64, gpus=5)], groups=[make_gang("g", replicas=2, gpus=1, min_member=1, running_on=["n1"])])
    assert not is_partly_bound(whole, whole.pod_groups[0]), "at its minimum: started, not partly bound"
    waiting = make_snapshot(nodes=[make_node("n1", cpu=64, gpus=5)],
                            groups=[gated(make_gang("g", replicas=3, gpus=1, running_on=["n1"]), "example.com/quota", pods=2)])
    assert not is_partly_bound(waiting, waiting.pod_groups[0]), "its pending pods wait for their gates, not for room"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_partly_bound_gang_is_completed_before_a_new_gang_of_its_priority(engine: str) -> None:
    snapshot = _cluster()
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert _bound_groups(snapshot, decision) == ["default/half"], engine
    assert len(decision.placement.binds) == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_gang_of_higher_priority_still_goes_first(engine: str) -> None:
    snapshot = _cluster(new_priority=5)
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert _bound_groups(snapshot, decision) == ["default/new"], engine


def _bound_groups(snapshot: Snapshot, decision: Decision) -> list[str]:
    return sorted({str(snapshot.pod_by_key[bind.pod].pod_group) for bind in decision.placement.binds})
