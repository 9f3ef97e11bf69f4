"""`pending_groups` names exactly the PodGroups `build_decision` reports pending — the
list `place()` explains before it builds the Decision, without building one for it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Placement
from models.snapshot import Snapshot
from solver.greedy import solve_greedy
from solver.outcome import build_decision, pending_groups
from tests.builders import make_gang, make_node, make_snapshot
from tests.strategies import snapshots


def _reported_pending(snapshot: Snapshot, placement: Placement) -> list[str]:
    decision = build_decision(snapshot, placement, engine="greedy", status="GREEDY", solve_seconds=0.0, reasons={})
    return [outcome.name for outcome in decision.podgroups if outcome.state == "pending"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(max_nodes=8, max_groups=8), st.data())
def test_pending_groups_are_those_the_decision_reports_pending(snapshot: Snapshot, data: st.DataObject) -> None:
    """Greedy's placement, and the same with some of its binds dropped (gangs cut below
    their minimum, running pods still counting toward it)."""
    placement = solve_greedy(snapshot).placement
    kept = data.draw(st.lists(st.booleans(), min_size=len(placement.binds), max_size=len(placement.binds)))
    cut = Placement(binds=tuple(b for b, keep in zip(placement.binds, kept) if keep), evictions=placement.evictions)
    for candidate in (placement, cut, Placement()):
        assert pending_groups(snapshot, candidate) == _reported_pending(snapshot, candidate)


def test_a_gang_cut_below_its_minimum_is_pending_and_a_whole_one_is_not() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n0", cpu=64, memory=256, gpus=8)], groups=[make_gang("train", replicas=4, cpu=4, gpus=2)]
    )
    placement = solve_greedy(snapshot).placement
    assert len(placement.binds) == 4
    assert pending_groups(snapshot, placement) == []
    assert pending_groups(snapshot, Placement(binds=placement.binds[:3])) == ["default/train"]
