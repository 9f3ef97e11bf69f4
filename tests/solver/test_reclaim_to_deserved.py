"""Reclaim, end to end through `solver.place.place` for every engine: it frees exactly what
brings an over-served queue down to its deserved share (`solver.shares`), never below its
guarantee, and the checker accepts each answer.

Every case is one node of 1-CPU single-pod jobs unless it says otherwise, so the number of
evictions is the number of CPUs a queue gives back. Each pending job is its own PodGroup:
reclaim serves a PodGroup until its minimum runs (as Volcano's reclaim serves a starving
job), so twelve one-pod jobs ask reclaim for up to twelve pods.
"""

from __future__ import annotations

from collections import Counter

import pytest

from models.placement import Decision
from models.snapshot import Queue, Snapshot
from solver.place import ENGINES
from tests.builders import (
    Gang,
    make_gang,
    make_node,
    make_queue,
    make_snapshot,
    resources,
    solve_checked,
)


def _jobs(prefix: str, count: int, *, queue: str, cpu: float = 1, running: bool = False) -> list[Gang]:
    return [
        make_gang(f"{prefix}-{i}", cpu=cpu, queue=queue, running_on=["n1"] if running else [])
        for i in range(count)
    ]


def _solve(snapshot: Snapshot, engine: str) -> Decision:
    decision = solve_checked(snapshot, engine)
    assert {eviction.reason for eviction in decision.placement.evictions} <= {"reclaim"}
    return decision


def _evicted_from(decision: Decision, snapshot: Snapshot) -> Counter[str]:
    pods = {pod.key: pod for pod in snapshot.pods}
    return Counter(
        snapshot.pod_group_by_key[pods[eviction.pod].pod_group].queue  # type: ignore[index]
        for eviction in decision.placement.evictions
    )


def _cpu(decision: Decision) -> dict[str, tuple[int, int]]:
    """Per queue (allocated after the placement, deserved), CPU in millicores."""
    return {share.name: (share.allocated.get("cpu", 0), share.deserved.get("cpu", 0)) for share in decision.queues}


def _snapshot(cpu: float, groups: list[Gang], queues: list[Queue]) -> Snapshot:
    return make_snapshot(nodes=[make_node("n1", cpu=cpu)], groups=groups, queues=queues)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_guaranteed_queue_running_everything_gives_back_exactly_down_to_its_guarantee(engine: str) -> None:
    """12 CPU; a (guarantee 8) runs 12, b asks 12 → a deserves 8, b 4: 4 evictions."""
    snapshot = _snapshot(
        12,
        [*_jobs("a", 12, queue="a", running=True), *_jobs("b", 12, queue="b")],
        [make_queue("a", guarantee=resources(cpu=8)), make_queue("b")],
    )
    decision = _solve(snapshot, engine)
    assert _evicted_from(decision, snapshot) == {"a": 4}
    assert len(decision.placement.binds) == 4
    assert _cpu(decision)["a"] == (8_000, 8_000) and _cpu(decision)["b"] == (4_000, 4_000)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_guarantee_stops_reclaim_where_a_pod_would_cross_the_share(engine: str) -> None:
    """12 CPU; a (guarantee 8) runs 4 pods of 3 CPU. The first eviction leaves 9 > 8; the
    second would leave 6 < guarantee 8 (Volcano's proportion alone would take it): 1."""
    snapshot = _snapshot(
        12,
        [*_jobs("a", 4, queue="a", cpu=3, running=True), *_jobs("b", 12, queue="b")],
        [make_queue("a", guarantee=resources(cpu=8)), make_queue("b")],
    )
    decision = _solve(snapshot, engine)
    assert _evicted_from(decision, snapshot) == {"a": 1}
    assert len(decision.placement.binds) == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_guarantees_above_the_cluster_still_let_each_queue_reclaim_down_to_its_own(engine: str) -> None:
    """12 CPU; a and b guaranteed 8 each (16 > 12): each deserves 8. a runs 12, so 4 go."""
    snapshot = _snapshot(
        12,
        [*_jobs("a", 12, queue="a", running=True), *_jobs("b", 12, queue="b")],
        [make_queue("a", guarantee=resources(cpu=8)), make_queue("b", guarantee=resources(cpu=8))],
    )
    decision = _solve(snapshot, engine)
    assert _evicted_from(decision, snapshot) == {"a": 4}
    assert _cpu(decision)["a"] == (8_000, 8_000)


@pytest.mark.parametrize("engine", ENGINES)
def test_three_queues_one_guaranteed_the_others_split_what_is_left(engine: str) -> None:
    """12 CPU; a (guarantee 8) runs 12, b and c ask 12 each → 8 / 2 / 2: 4 evictions, 2 each."""
    snapshot = _snapshot(
        12,
        [*_jobs("a", 12, queue="a", running=True), *_jobs("b", 12, queue="b"), *_jobs("c", 12, queue="c")],
        [make_queue("a", guarantee=resources(cpu=8)), make_queue("b"), make_queue("c")],
    )
    decision = _solve(snapshot, engine)
    assert _evicted_from(decision, snapshot) == {"a": 4}
    assert Counter(bind.pod.split("/")[1][0] for bind in decision.placement.binds) == {"b": 2, "c": 2}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_guarantee_one_level_down_holds_against_a_heavier_sibling(engine: str) -> None:
    """8 CPU, all to org. team-a (guarantee 4) runs 8; team-b (weight 3) asks 8. Offers 2 / 6:
    team-a max(2, 4) = 4, team-b min(6, 8 − 4) = 4 → 4 evictions (2 / 6 without the guarantee)."""
    snapshot = _snapshot(
        8,
        [*_jobs("a", 8, queue="team-a", running=True), *_jobs("b", 8, queue="team-b")],
        [
            make_queue("org"),
            make_queue("team-a", parent="org", guarantee=resources(cpu=4)),
            make_queue("team-b", parent="org", weight=3),
        ],
    )
    decision = _solve(snapshot, engine)
    assert _evicted_from(decision, snapshot) == {"team-a": 4}
    assert _cpu(decision)["team-a"] == (4_000, 4_000)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_queue_reclaims_only_up_to_its_own_share_across_subtrees(engine: str) -> None:
    """8 CPU. org (team-a runs 6; team-b asks 2 but fits no node) and other (runs 2, asks 4
    more) deserve 4 each; inside org team-a and team-b 2 each. other may reclaim from team-a
    only up to its own 4: 2 evictions, which also leave org at its 4."""
    stuck = make_gang("b-0", cpu=2, queue="team-b", node_selector={"zone": "nowhere"})
    snapshot = _snapshot(
        8,
        [*_jobs("a", 6, queue="team-a", running=True), stuck, *_jobs("o", 2, queue="other", running=True),
         *_jobs("p", 4, queue="other")],
        [
            make_queue("org"),
            make_queue("team-a", parent="org"),
            make_queue("team-b", parent="org"),
            make_queue("other"),
        ],
    )
    decision = _solve(snapshot, engine)
    assert _evicted_from(decision, snapshot) == {"team-a": 2}
    assert _cpu(decision)["org"] == (4_000, 4_000) and _cpu(decision)["other"] == (4_000, 4_000)


def test_greedy_says_reclaim_stopped_at_the_queues_share() -> None:
    snapshot = _snapshot(
        12,
        [*_jobs("a", 12, queue="a", running=True), *_jobs("b", 3, queue="b"), *_jobs("c", 2, queue="c")],
        [make_queue("a", guarantee=resources(cpu=8)), make_queue("b"), make_queue("c")],
    )
    decision = _solve(snapshot, "greedy")
    pending = [outcome for outcome in decision.podgroups if outcome.queue == "b" and outcome.state == "pending"]
    assert len(pending) == 1
    assert pending[0].reasons[-1] == "preemption: reclaim stops at queue b's deserved 2 cpu, 2 in use, job needs 1"
