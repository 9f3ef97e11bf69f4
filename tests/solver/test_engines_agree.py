"""Scenarios where greedy, CP-SAT and `auto` must give Volcano's answer, and the same one:
a task no node matches beside a gang met without it, preemption inside a queue held at its
capability, an in-queue preemption that lowers the queue's allocation, and none that only
hands a queue's room to another. Every answer comes through `place()` and is judged by the
checker.
"""

from __future__ import annotations

from functools import partial

import pytest

from models.placement import Decision
from solver.place import ENGINES
from tests.builders import (
    make_gang,
    make_node,
    make_queue,
    make_snapshot,
    make_task,
    resources,
    solve_checked,
)

_solve = partial(solve_checked, time_limit_s=5.0)


def _state(decision: Decision, key: str):  # noqa: ANN202
    return next(group for group in decision.podgroups if group.name == key)


# ---- a task that can never be placed ----


def _master_nowhere(min_member: int):  # noqa: ANN202
    job = make_gang(
        "job",
        min_member=min_member,
        tasks=[make_task("master", node_selector={"role": "none"}), make_task("worker", replicas=1)],
    )
    return make_snapshot(nodes=[make_node("n1")], groups=[job]), job


@pytest.mark.parametrize("engine", ENGINES)
def test_a_task_no_node_matches_does_not_sink_a_gang_met_without_it(engine: str) -> None:
    snapshot, job = _master_nowhere(min_member=1)
    decision = _solve(snapshot, engine)
    assert [b.pod for b in decision.placement.binds] == [job.pods_of("worker")[0].key]
    group = _state(decision, job.key)
    assert group.state == "scheduled"
    assert group.reasons == ("eligibility: task master: 0/1 nodes: 1 node selector mismatch",)  # why it stays pending


@pytest.mark.parametrize("engine", ENGINES)
def test_a_task_no_node_matches_keeps_a_gang_that_needs_it_pending(engine: str) -> None:
    snapshot, job = _master_nowhere(min_member=2)
    decision = _solve(snapshot, engine)
    assert decision.placement.binds == ()
    group = _state(decision, job.key)
    assert group.state == "pending"
    assert any(reason.startswith("eligibility: task master") for reason in group.reasons)


# ---- preemption inside a queue held at its capability ----


def _queue_at_capability(*, high_priority: int, nodes: int = 1):  # noqa: ANN202
    """q1 may hold 3 CPU and runs three 1-CPU pods of priority 1 (min_member 1);
    a 1-CPU pod of `high_priority` waits in it. Nodes have room to spare."""
    low = make_gang("low", replicas=3, queue="q1", priority=1, min_member=1, running_on=["n0", "n0", "n0"])
    high = make_gang("high", queue="q1", priority=high_priority)
    snapshot = make_snapshot(
        nodes=[make_node(f"n{i}", cpu=8) for i in range(nodes)],
        groups=[low, high],
        queues=[make_queue("q1", capability=resources(cpu=3))],
    )
    return snapshot, low, high


@pytest.mark.parametrize("nodes", [1, 2], ids=["victims on the pod's node", "room on another node"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_queue_at_capability_preempts_its_own_lower_priority_pod(engine: str, nodes: int) -> None:
    snapshot, low, high = _queue_at_capability(high_priority=10, nodes=nodes)
    decision = _solve(snapshot, engine)
    assert [b.pod for b in decision.placement.binds] == [high.pods[0].key]
    assert len(decision.placement.evictions) == 1
    eviction = decision.placement.evictions[0]
    assert eviction.reason == "preempt" and eviction.for_ == high.key
    assert eviction.pod in {pod.key for pod in low.running}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_queue_at_capability_does_not_preempt_equal_priority(engine: str) -> None:
    snapshot, _, high = _queue_at_capability(high_priority=1)
    decision = _solve(snapshot, engine)
    assert decision.placement.binds == () and decision.placement.evictions == ()
    assert any(reason.startswith("quota: queue q1") for reason in _state(decision, high.key).reasons)


# ---- in-queue preemption and the queue's share ----


@pytest.mark.parametrize("engine", ENGINES)
def test_a_higher_priority_job_takes_a_bigger_lower_priority_ones_place_in_its_queue(engine: str) -> None:
    """team (under org, capability 6 CPU) runs small (1 CPU, n1) and big (4 CPU, n2), both
    priority 1; urgent (3 CPU, priority 100) fits only where big runs. Volcano preempts big,
    although team then holds 4 CPU instead of 5."""
    small = make_gang("small", cpu=1, queue="team", priority=1, running_on=["n1"])
    big = make_gang("big", cpu=4, queue="team", priority=1, running_on=["n2"])
    urgent = make_gang("urgent", cpu=3, queue="team", priority=100)
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=3), make_node("n2", cpu=4)],
        groups=[small, big, urgent],
        queues=[make_queue("org"), make_queue("team", parent="org", capability=resources(cpu=6))],
    )
    decision = _solve(snapshot, engine)
    assert [(b.pod, b.node) for b in decision.placement.binds] == [(urgent.pods[0].key, "n2")]
    assert [(e.pod, e.reason) for e in decision.placement.evictions] == [(big.running[0].key, "preempt")]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_needless_in_queue_preemption_hands_a_below_share_queue_room_to_another(engine: str) -> None:
    """q (deserving 5 CPU) runs low (4 CPU) and waits with urgent (1 CPU), which fits the free
    room; q2 (deserving 5) runs 3 and waits with a 4-CPU job that fits only where low runs.
    Preempting low for urgent would give q2 its share by taking q's below its own — a reclaim
    rule 8 forbids (q is not above its share): urgent binds on free room, nobody is evicted."""
    low = make_gang("low", cpu=4, queue="q", priority=1, running_on=["n1"])
    held = make_gang("held", cpu=3, queue="q2", priority=1, running_on=["n1"])
    urgent = make_gang("urgent", cpu=1, queue="q", priority=100)
    waiting = make_gang("waiting", cpu=4, queue="q2", priority=1)
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=8), make_node("n2", cpu=2)],
        groups=[low, held, urgent, waiting],
        queues=[make_queue("q"), make_queue("q2")],
    )
    decision = _solve(snapshot, engine)
    assert [b.pod for b in decision.placement.binds] == [urgent.pods[0].key]
    assert decision.placement.evictions == ()
