"""An eviction's `for` names the PodGroup placed on the room the victim leaves, whichever engine
answers (issue 29: under CP-SAT it named the first admitted PodGroup of the preemptor's class,
placed elsewhere)."""

from __future__ import annotations

import pytest

from models.placement import Decision
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_snapshot


def _solve(snapshot: Snapshot, engine: str) -> Decision:
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=10))  # type: ignore[arg-type]
    assert check_placement(snapshot, decision.placement) == ()
    return decision


def _groups_bound_on(snapshot: Snapshot, decision: Decision, node: str) -> set[str]:
    return {snapshot.pod_by_key[b.pod].pod_group or "" for b in decision.placement.binds if b.node == node}


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_the_eviction_is_for_the_job_placed_on_the_node_it_frees(engine: str) -> None:
    # n0 is free, n1 runs a low-priority pod: the higher of two preemptors takes n0 as it is,
    # the other takes n1 once the victim leaves; the eviction is for the second.
    snapshot = make_snapshot(
        nodes=[make_node("n0", cpu=4), make_node("n1", cpu=4)],
        groups=[
            make_gang("low", cpu=4, running_on=["n1"], priority=-10),
            make_gang("a-high", cpu=4, priority=100),
            make_gang("b-mid", cpu=4, priority=50),
        ],
    )
    decision = _solve(snapshot, engine)
    assert sorted((b.pod, b.node) for b in decision.placement.binds) == [
        ("default/a-high-worker-0", "n0"),
        ("default/b-mid-worker-0", "n1"),
    ]
    (eviction,) = decision.placement.evictions
    assert (eviction.pod, eviction.node, eviction.for_) == ("default/low-worker-0", "n1", "default/b-mid")


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_each_eviction_on_several_nodes_names_the_job_bound_there(engine: str) -> None:
    # Three busy nodes, three preemptors of one class, each fills one node whole.
    snapshot = make_snapshot(
        nodes=[make_node(f"n{i}", cpu=4) for i in range(3)],
        groups=[
            *(make_gang(f"low-{i}", cpu=4, running_on=[f"n{i}"], priority=-10) for i in range(3)),
            *(make_gang(f"job-{i}", cpu=4, priority=10 * (i + 1)) for i in range(3)),
        ],
    )
    decision = _solve(snapshot, engine)
    assert len(decision.placement.evictions) == 3
    for eviction in decision.placement.evictions:
        assert eviction.for_ in _groups_bound_on(snapshot, decision, eviction.node)
