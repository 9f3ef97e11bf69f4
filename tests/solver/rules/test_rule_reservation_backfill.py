"""Backfill on held nodes (rule `reservation`): a node held for an overdue PodGroup takes
another PodGroup's pod when that pod's `activeDeadlineSeconds` ends it before the holder's
nodes to drain are empty, and no other.

The worked example of the rule's docstring: leaf a has n0, n1, n2 of 8 GPUs; a 3 × 8-GPU
gang (hard tier 1) waited 60 min > 30; n1 and n2 are free and held, n0 must drain: it runs
a 4-GPU pod started 22 min ago with a 60-min deadline and one started 10 min ago with 30 →
n0 is empty in at most 38 min (2,280 s). Leaf b's three nodes run unbounded 8-GPU pods, so
nothing else is free: a pending job can only start on a held node, by backfilling it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.snapshot import Pod, ReservationPolicy, Snapshot
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
MINUTE = 60.0


def _limited(gang: Gang, deadline_s: float | None) -> Gang:
    """`gang` with every task's (and so every pod's) activeDeadlineSeconds `deadline_s`."""
    tasks = tuple(task.model_copy(update={"active_deadline_s": deadline_s}) for task in gang.group.tasks)
    pods = tuple(pod.model_copy(update={"active_deadline_s": deadline_s}) for pod in gang.pods)
    return replace(gang, group=gang.group.model_copy(update={"tasks": tasks}), pods=pods)


def _started(pod: Pod, *, ago_s: float, deadline_s: float | None, now_s: float = HOUR) -> Pod:
    return pod.model_copy(update={"start_time": now_s - ago_s, "active_deadline_s": deadline_s})


def _held_leaf(*, second_deadline_s: float | None = 30 * MINUTE, smalls: dict[str, float | None]) -> Snapshot:
    """The module docstring's cluster; `smalls`: name → deadline of an 8-GPU job created at 50 min."""
    nodes = [make_node(f"n{i}", gpus=8, leaf="a" if i < 3 else "b") for i in range(6)]
    big = created_at(make_gang("big", replicas=3, gpus=8, topology_tier=1), 0.0)
    big = replace(big, group=big.group.model_copy(update={"sla_waiting_s": 1800.0}))
    running = [
        _started(make_running("old", node="n0", gpus=4, gpu_indices=[0, 1, 2, 3]), ago_s=22 * MINUTE, deadline_s=HOUR),
        _started(make_running("new", node="n0", gpus=4, gpu_indices=[4, 5, 6, 7]), ago_s=10 * MINUTE,
                 deadline_s=second_deadline_s),
        *(make_running(f"serve-{n}", node=f"n{n}", gpus=8) for n in (3, 4, 5)),
    ]  # fmt: skip
    jobs = [_limited(created_at(make_gang(name, gpus=8), 3000.0), deadline) for name, deadline in smalls.items()]
    return make_snapshot(nodes=nodes, groups=[big, *jobs], running=running,
                         reservation_policy=ReservationPolicy(judged_at_s=HOUR))  # fmt: skip


def test_the_holder_s_start_is_when_its_nodes_to_drain_empty_by_their_pods_deadlines() -> None:
    (held,) = reservation.reservations(_held_leaf(smalls={}))
    assert (held.group, held.domain, held.nodes) == ("default/big", "a", ("n1", "n2"))
    assert held.drained_in_s == 38 * MINUTE  # old ends in 60 − 22, new in 30 − 10: the later, 2,280 s
    assert reservation.reserved_reason(held).endswith("; backfill allowed for jobs ending within 38 min")


def test_a_pod_without_a_deadline_on_a_node_to_drain_leaves_the_start_unknown_and_nothing_backfills() -> None:
    (held,) = reservation.reservations(_held_leaf(second_deadline_s=None, smalls={}))
    assert held.drained_in_s is None
    assert "no backfill: a pod on the nodes to drain has no activeDeadlineSeconds" in reservation.reserved_reason(held)


def test_nothing_to_drain_means_the_holder_starts_now_and_nothing_backfills() -> None:
    nodes = [make_node(f"n{i}", gpus=8) for i in range(2)]
    big = created_at(make_gang("big", replicas=2, gpus=8), 0.0)
    big = replace(big, group=big.group.model_copy(update={"sla_waiting_s": 60.0}))
    snapshot = make_snapshot(nodes=nodes, groups=[big], reservation_policy=ReservationPolicy(judged_at_s=HOUR))
    (held,) = reservation.reservations(snapshot)
    assert held.drained_in_s == 0.0
    short = make_gang("short", gpus=8).group.tasks[0].model_copy(update={"active_deadline_s": 1.0})
    assert not held.backfills(short)


@pytest.mark.parametrize("engine", ENGINES)
def test_only_the_job_gone_before_the_drain_backfills_a_held_node(engine: str) -> None:
    snapshot = _held_leaf(smalls={"short": 30 * MINUTE, "exact": 38 * MINUTE, "long": HOUR, "unbounded": None})
    decision = solve_checked(snapshot, engine)
    states = {g.name: g.state for g in decision.podgroups}
    assert states == {"default/big": "pending", "default/short": "scheduled", "default/exact": "scheduled",
                      "default/long": "pending", "default/unbounded": "pending"}  # fmt: skip
    assert {bind.node for bind in decision.placement.binds} == {"n1", "n2"}
    big = next(g for g in decision.podgroups if g.name == "default/big")
    assert "backfill allowed for jobs ending within 38 min" in big.reasons[0]
    long = next(g for g in decision.podgroups if g.name == "default/long")
    assert "2 held for a PodGroup waiting past its sla-waiting-time (default/big; backfill for jobs ending within " \
        "38 min)" in long.reasons[0]  # n1, n2: not eligible for it, whatever runs there


@pytest.mark.parametrize("engine", ENGINES)
def test_with_the_start_unknown_no_job_backfills(engine: str) -> None:
    snapshot = _held_leaf(second_deadline_s=None, smalls={"short": 30 * MINUTE})
    decision = solve_checked(snapshot, engine)
    assert decision.placement.binds == ()


def test_the_checker_accepts_exactly_the_pods_that_end_before_the_drain_and_names_the_numbers() -> None:
    snapshot = _held_leaf(smalls={"short": 38 * MINUTE, "long": 38 * MINUTE + 1, "unbounded": None})
    pods = {p.pod_group: p for p in snapshot.pods if p.phase == "pending"}

    def on_n1(group: str) -> list[str]:
        placement = make_placement(binds=[make_bind(pods[group], "n1", gpus=list(range(8)))])
        return [v.message for v in rule_violations(reservation, snapshot, placement)]

    assert on_n1("default/short") == []
    assert on_n1("default/big") == []
    (long,) = on_n1("default/long")
    assert long.endswith("held for default/big (held for a PodGroup waiting past its sla-waiting-time); "
                         "its activeDeadlineSeconds 2281 > 2280 s until a drains")  # fmt: skip
    (unbounded,) = on_n1("default/unbounded")
    assert unbounded.endswith("it has no activeDeadlineSeconds to backfill by")
    unknown = _held_leaf(second_deadline_s=None, smalls={"short": 60.0})
    pod = next(p for p in unknown.pods if p.pod_group == "default/short")
    placement = make_placement(binds=[make_bind(pod, "n1", gpus=list(range(8)))])
    (message,) = [v.message for v in rule_violations(reservation, unknown, placement)]
    assert message.endswith("no backfill: a pod on the nodes of a to drain has no activeDeadlineSeconds")


_DEADLINES = st.sampled_from([None, 600.0, 1800.0, 3600.0, 4 * HOUR])


@st.composite
def _backfilled(draw: st.DrawFn) -> Snapshot:
    """Two leaves of up to 3 nodes; running pods with a start and maybe a deadline; overdue
    and fresh gangs with maybe a deadline."""
    node_count = draw(st.integers(2, 6))
    nodes = [make_node(f"n{i}", gpus=8, leaf=f"l{i // 3}") for i in range(node_count)]
    groups, running = [], []
    for j in range(draw(st.integers(0, node_count))):
        runner = created_at(make_gang(f"r{j}", gpus=draw(st.sampled_from([2, 4, 8]))), 0.0)
        deadline = draw(_DEADLINES)
        ago = draw(st.sampled_from([0.0, 300.0, 1500.0]))
        groups.append(replace(_limited(runner, deadline), pods=()))
        pod = make_running(f"r{j}-0", node=f"n{j}", group=runner.group).model_copy(
            update={"start_time": HOUR - ago, "active_deadline_s": deadline}
        )
        running.append(pod)
    for j in range(draw(st.integers(1, 5))):
        gang = make_gang(f"p{j}", replicas=draw(st.integers(1, 3)), gpus=draw(st.sampled_from([2, 4, 8])),
                         topology_tier=draw(st.sampled_from([None, 1])),
                         queue=draw(st.sampled_from(["default", "q"])))  # fmt: skip
        gang = _limited(created_at(gang, draw(st.sampled_from([0.0, 3000.0]))), draw(_DEADLINES))
        limit = draw(st.sampled_from([None, 600.0]))
        groups.append(replace(gang, group=gang.group.model_copy(update={"sla_waiting_s": limit})))
    return make_snapshot(nodes=nodes, groups=groups, running=running, queues=[make_queue("default"), make_queue("q")],
                         reservation_policy=ReservationPolicy(judged_at_s=HOUR))  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=_backfilled())
def test_every_engine_binds_on_held_nodes_only_its_holder_or_pods_gone_before_the_drain(
    engine: str, snapshot: Snapshot
) -> None:
    decision = solve_checked(snapshot, engine, time_limit_s=2.0)
    assert check_placement(snapshot, decision.placement) == ()
    by_group = {r.group: r for r in reservation.reservations(snapshot)}
    held = reservation.reserved_for(snapshot)
    pods, groups = snapshot.pod_by_key, snapshot.pod_group_by_key
    for bind in decision.placement.binds:
        holder = held.get(bind.node)
        pod = pods[bind.pod]
        if holder is None or pod.pod_group == holder:
            continue
        deadline = groups[pod.pod_group].task_by_name[pod.task].active_deadline_s
        drained_in = by_group[holder].drained_in_s
        assert deadline is not None and drained_in is not None and deadline <= drained_in


@pytest.mark.parametrize("time_limit_s", [0.01, 1.0], ids=["fallback", "cpsat"])
def test_the_holders_reason_is_said_once_whoever_answers(time_limit_s: float) -> None:
    """At 0.01 s `auto` has no time for CP-SAT and answers with greedy's placement
    (FALLBACK): its reasons are greedy's, the reservation's sentence once, as CP-SAT's."""
    snapshot = _held_leaf(smalls={"s1": None})
    decision = solve_checked(snapshot, "auto", time_limit_s=time_limit_s)
    assert decision.status == ("FALLBACK" if time_limit_s < 0.1 else "OPTIMAL")
    (big,) = [outcome for outcome in decision.podgroups if outcome.name == "default/big"]
    assert big.state == "pending"
    assert [reason.startswith("reservation: waiting 60 min > 30 min") for reason in big.reasons].count(True) == 1
    assert len(big.reasons) == len(set(big.reasons))
