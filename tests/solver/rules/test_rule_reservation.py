"""Rule `reservation`, the starvation guard: a PodGroup pending past its `sla-waiting-time`
holds nodes in the domain where it fits soonest, and no other PodGroup's pod lands there."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.snapshot import ReservationPolicy, Snapshot
from solver import reasons
from solver.checker import check_placement
from solver.place import ENGINES
from solver.rules import reservation
from tests.builders import (
    Gang,
    created_at,
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_running,
    make_snapshot,
    rule_violations,
    solve_checked,
)

HOUR = 3600.0


def _waits(gang: Gang, limit_s: float | None, *, created_s: float = 0.0) -> Gang:
    gang = created_at(gang, created_s)
    return replace(gang, group=gang.group.model_copy(update={"sla_waiting_s": limit_s}))


def _two_leaves(*, big_limit_s: float | None = 1800.0, now_s: float = HOUR, small: int = 5) -> Snapshot:
    """Leaves a (n0, n1) and b (n2, n3) of 8 GPUs; a 4-GPU job runs on n0 and another on n2;
    a 16-GPU hard-tier-1 gang created at 0, and `small` 4-GPU jobs created at 50 min."""
    nodes = [make_node(f"n{i}", gpus=8, leaf="a" if i < 2 else "b") for i in range(4)]
    big = _waits(make_gang("big", replicas=2, gpus=8, topology_tier=1), big_limit_s)
    runner = created_at(make_gang("runner", replicas=2, gpus=4, running_on=["n0", "n2"]), 0.0)
    smalls = [created_at(make_gang(f"small-{i}", gpus=4), 3000.0) for i in range(small)]
    return make_snapshot(
        nodes=nodes, groups=[big, runner, *smalls], reservation_policy=ReservationPolicy(judged_at_s=now_s)
    )


def test_a_group_past_its_waiting_time_holds_the_free_nodes_of_the_domain_with_least_to_drain() -> None:
    snapshot = _two_leaves()
    held = reservation.reservations(snapshot)
    assert [r.group for r in held] == ["default/big"]
    (only,) = held
    assert only.domain in ("a", "b")
    assert only.drain_gpu_milli == 8000  # one pod of 8 GPUs cannot fit before a 4-GPU job leaves
    free_node = "n1" if only.domain == "a" else "n3"
    assert only.nodes == (free_node,)  # the node still to drain keeps taking pods
    assert (only.waited_s, only.limit_s) == (HOUR, 1800.0)


def test_a_group_within_its_waiting_time_or_without_one_holds_nothing() -> None:
    assert reservation.reservations(_two_leaves(now_s=1500.0)) == ()
    assert reservation.reservations(_two_leaves(big_limit_s=None)) == ()


def test_the_group_s_own_waiting_time_beats_its_queue_s_which_beats_the_default() -> None:
    gang = make_gang("g", gpus=1, queue="q")
    queue = make_queue("q").model_copy(update={"sla_waiting_s": 600.0})
    policy = ReservationPolicy(sla_waiting_s=60.0)
    plain = make_snapshot(groups=[gang], queues=[make_queue("q")], reservation_policy=policy)
    assert reservation.waiting_limit_s(plain, plain.pod_groups[0]) == 60.0
    queued = make_snapshot(groups=[gang], queues=[queue], reservation_policy=policy)
    assert reservation.waiting_limit_s(queued, queued.pod_groups[0]) == 600.0
    own = make_snapshot(groups=[_waits(gang, 30.0)], queues=[queue], reservation_policy=policy)
    assert reservation.waiting_limit_s(own, own.pod_groups[0]) == 30.0


def test_without_a_clock_waiting_counts_to_the_newest_creation_time() -> None:
    snapshot = _two_leaves().model_copy(update={"reservation_policy": ReservationPolicy()})
    assert reservation.now_s(snapshot) == 3000.0  # the small jobs' creation: the big gang waited 50 min > 30
    assert [r.group for r in reservation.reservations(snapshot)] == ["default/big"]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_other_pod_lands_on_held_nodes_and_the_holder_says_why(engine: str) -> None:
    snapshot = _two_leaves()
    held = set(reservation.reservations(snapshot)[0].nodes)
    decision = solve_checked(snapshot, engine)
    assert all(bind.node not in held for bind in decision.placement.binds if not bind.pod.startswith("default/big"))
    outcome = next(g for g in decision.podgroups if g.name == "default/big")
    assert outcome.state == "pending"
    assert (outcome.reasons[0].rule, outcome.reasons[0].code) == (reservation.NAME, reasons.reservation_holding.code)
    assert "waiting 60 min > 30 min" in outcome.reasons[0]
    placed_small = sum(1 for g in decision.podgroups if g.name.startswith("default/small") and g.state == "scheduled")
    assert placed_small == 4  # 16 GPUs free outside the held node take four, the fifth waits


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_guard_the_small_jobs_take_the_freed_room(engine: str) -> None:
    decision = solve_checked(_two_leaves(big_limit_s=None), engine)
    assert sum(1 for g in decision.podgroups if g.name.startswith("default/small") and g.state == "scheduled") == 5


@pytest.mark.parametrize("engine", ENGINES)
def test_the_holder_starts_on_its_held_nodes_once_they_are_free(engine: str) -> None:
    nodes = [make_node(f"n{i}", gpus=8, leaf="a" if i < 2 else "b") for i in range(4)]
    big = _waits(make_gang("big", replicas=2, gpus=8, topology_tier=1), 1800.0)
    other = created_at(make_gang("other", replicas=4, gpus=8), 3000.0)
    snapshot = make_snapshot(nodes=nodes, groups=[big, other], reservation_policy=ReservationPolicy(judged_at_s=HOUR))
    decision = solve_checked(snapshot, engine)
    states = {g.name: g.state for g in decision.podgroups}
    assert states == {"default/big": "scheduled", "default/other": "pending"}


def test_a_bind_of_another_group_on_a_held_node_is_a_violation() -> None:
    snapshot = _two_leaves()
    node = reservation.reservations(snapshot)[0].nodes[0]
    pod = next(p for p in snapshot.pods if p.pod_group == "default/small-0")
    violations = rule_violations(reservation, snapshot, make_placement(binds=[make_bind(pod, node, gpus=[4, 5, 6, 7])]))
    assert [v.rule for v in violations] == [reservation.NAME]
    assert "held for default/big" in violations[0].message
    own = next(p for p in snapshot.pods if p.pod_group == "default/big")
    assert rule_violations(reservation, snapshot, make_placement(binds=[make_bind(own, node, gpus=[4, 5, 6, 7])])) == []


def test_overdue_groups_are_served_earliest_deadline_first_on_disjoint_nodes() -> None:
    nodes = [make_node(f"n{i}", gpus=8) for i in range(4)]
    late = _waits(make_gang("late", replicas=2, gpus=8, queue="a"), 1800.0, created_s=600.0)
    early = _waits(make_gang("early", replicas=2, gpus=8, queue="b"), 600.0, created_s=900.0)
    blocker = make_running("blocker", node="n0", gpus=8)
    snapshot = make_snapshot(nodes=nodes, groups=[late, early], running=[blocker], queues=[make_queue("a"), make_queue("b")],
                             reservation_policy=ReservationPolicy(judged_at_s=HOUR))  # fmt: skip
    held = reservation.reservations(snapshot)
    assert [r.group for r in held] == ["default/early", "default/late"]  # deadlines 1500 < 2400
    assert not set(held[0].nodes) & set(held[1].nodes)
    assert held[0].drain_gpu_milli == 0 and held[1].drain_gpu_milli == 8000
    assert len(held[0].nodes) == 2 and len(held[1].nodes) == 1  # n0 is still to drain: not held


def test_one_group_per_queue_holds_nodes_its_earliest_deadline() -> None:
    nodes = [make_node(f"n{i}", gpus=8) for i in range(4)]
    late = _waits(make_gang("late", replicas=2, gpus=8), 1800.0, created_s=600.0)
    early = _waits(make_gang("early", replicas=2, gpus=8), 600.0, created_s=900.0)
    snapshot = make_snapshot(nodes=nodes, groups=[late, early], reservation_policy=ReservationPolicy(judged_at_s=HOUR))
    assert [r.group for r in reservation.reservations(snapshot)] == ["default/early"]


def test_a_group_over_its_queue_capability_holds_nothing() -> None:
    from tests.builders import resources

    gang = _waits(make_gang("g", replicas=2, gpus=8, queue="q"), 60.0)
    snapshot = make_snapshot(nodes=[make_node("n0", gpus=8), make_node("n1", gpus=8)], groups=[gang],
                             queues=[make_queue("q", capability=resources(gpus=8))],
                             reservation_policy=ReservationPolicy(judged_at_s=HOUR))  # fmt: skip
    assert reservation.reservations(snapshot) == ()


@st.composite
def _guarded(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(2, 6))
    nodes = [make_node(f"n{i}", gpus=8, leaf=f"l{i // 2}") for i in range(node_count)]
    groups, running = [], []
    for j in range(draw(st.integers(0, node_count))):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        runner = created_at(make_gang(f"r{j}", gpus=gpus, priority=draw(st.integers(0, 1))), 0.0)
        groups.append(replace(runner, pods=()))
        running.append(make_running(f"r{j}-0", node=f"n{j}", group=runner.group))
    for j in range(draw(st.integers(1, 5))):
        replicas = draw(st.integers(1, 4))
        tier = draw(st.sampled_from([None, 1]))
        limit = draw(st.sampled_from([None, 600.0, 7200.0]))
        gang = make_gang(f"p{j}", replicas=replicas, gpus=draw(st.sampled_from([2, 4, 8])), topology_tier=tier,
                         priority=draw(st.integers(0, 1)))  # fmt: skip
        groups.append(_waits(gang, limit, created_s=draw(st.sampled_from([0.0, 1800.0, 3000.0]))))
    return make_snapshot(nodes=nodes, groups=groups, running=running,
                         reservation_policy=ReservationPolicy(judged_at_s=HOUR))  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=_guarded())
def test_every_engine_keeps_held_nodes_for_their_holders(engine: str, snapshot: Snapshot) -> None:
    decision = solve_checked(snapshot, engine, time_limit_s=2.0)
    held = reservation.reserved_for(snapshot)
    pods = snapshot.pod_by_key
    for bind in decision.placement.binds:
        holder = held.get(bind.node)
        assert holder is None or pods[bind.pod].pod_group == holder
    assert check_placement(snapshot, decision.placement) == ()
    groups = snapshot.pod_group_by_key
    assert all(groups[e.for_].sla_waiting_s is None for e in decision.placement.evictions), "a waiting preemptor evicted"
    for r in reservation.reservations(snapshot):
        assert r.waited_s > r.limit_s and (r.nodes or r.drain_gpu_milli > 0)
