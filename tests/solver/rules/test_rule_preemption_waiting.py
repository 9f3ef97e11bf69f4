"""Rule `preemption` with a waiting time: a PodGroup that has one (`sla-waiting-time`, its
queue's or the default) evicts nobody — it waits, then holds room (rule `reservation`)
— while one without keeps Volcano's preempt and reclaim."""

from __future__ import annotations

from dataclasses import replace

import pytest

from models.snapshot import ReservationPolicy, Snapshot
from solver.place import ENGINES
from solver.rules import preemption
from solver.shares import deserved_shares, queue_allocated
from tests.builders import (
    created_at,
    make_bind,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    rule_violations,
    solve_checked,
)

HOUR = 3600.0


def _contended(*, waiting_s: float | None, default_s: float | None = None) -> Snapshot:
    """One 8-GPU node run by a priority-0 job; a priority-1 job of 8 GPUs arrives at 50 min."""
    low = created_at(make_gang("low", gpus=8, priority=0), 0.0)
    high = created_at(make_gang("high", gpus=8, priority=1), 3000.0)
    high = replace(high, group=high.group.model_copy(update={"sla_waiting_s": waiting_s}))
    return make_snapshot(
        nodes=[make_node("n1", gpus=8)],
        groups=[replace(low, pods=()), high],
        running=[make_running("low-0", node="n1", group=low.group)],
        reservation_policy=ReservationPolicy(sla_waiting_s=default_s, judged_at_s=HOUR),
    )


@pytest.mark.parametrize(
    ("waiting_s", "default_s", "refused"),
    [(None, None, False), (1800.0, None, True), (None, 7200.0, True)],
    ids=["without a waiting time it preempts", "its own waiting time: it waits", "the default waiting time: it waits"],
)
def test_a_preemptor_with_a_waiting_time_evicts_nobody(waiting_s: float | None, default_s: float | None, refused: bool) -> None:
    snapshot = _contended(waiting_s=waiting_s, default_s=default_s)
    high, victim = snapshot.pod_group_by_key["default/high"], snapshot.pod_by_key["default/low-0"]
    refusal = preemption.victim_refusal(snapshot, preemptor=high, victim=victim, reason="preempt",
                                        allocated=queue_allocated(snapshot), deserved=deserved_shares(snapshot))  # fmt: skip
    assert (refusal is not None) == refused
    assert preemption.waits_instead(snapshot, high) == refused


@pytest.mark.parametrize("engine", ENGINES)
def test_without_a_waiting_time_the_higher_priority_job_preempts(engine: str) -> None:
    decision = solve_checked(_contended(waiting_s=None), engine)
    assert [e.pod for e in decision.placement.evictions] == ["default/low-0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_with_a_waiting_time_the_higher_priority_job_waits_and_nothing_is_evicted(engine: str) -> None:
    decision = solve_checked(_contended(waiting_s=1800.0), engine)
    assert decision.placement.evictions == () and decision.placement.binds == ()
    outcome = next(g for g in decision.podgroups if g.name == "default/high")
    assert outcome.state == "pending"


def test_an_eviction_for_a_preemptor_with_a_waiting_time_is_a_violation() -> None:
    snapshot = _contended(waiting_s=1800.0)
    high_pod = next(p for p in snapshot.pods if p.pod_group == "default/high")
    placement = make_placement(
        binds=[make_bind(high_pod, "n1", gpus=range(8))],
        evictions=[make_eviction("default/low-0", "n1", for_="default/high")],
    )
    violations = rule_violations(preemption, snapshot, placement)
    assert [v.rule for v in violations] == [preemption.NAME]
    assert "waiting time" in violations[0].message
