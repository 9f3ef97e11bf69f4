"""A node's `pods` allocatable, end to end: every pod takes one (running ones too), every
engine keeps to it, the checker enforces it, reasons and what-if say so.

Each case is one node unless it says otherwise; one-pod jobs of 1 CPU, so CPU never binds
and the pod count is the only limit.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from models.placement import Decision
from models.snapshot import KUBELET_DEFAULT_MAX_PODS, Node, Task
from solver.cpsat.data import DataLimits, build_model_data
from solver.objective import ObjectiveContext
from solver.place import ENGINES
from solver.problem import build_problem
from solver import reasons
from solver.rules import capacity
from tests.builders import (
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_running,
    make_snapshot,
    resources,
    rule_violations,
    solve_checked,
)


def _bound_on(decision: Decision, node: str) -> int:
    return sum(1 for bind in decision.placement.binds if bind.node == node)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_node_allowing_3_pods_takes_3_of_5_and_says_why_the_others_wait(engine: str) -> None:
    jobs = [make_gang(f"job-{i}", cpu=1) for i in range(5)]
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=32, pods=3)], groups=jobs)
    decision = solve_checked(snapshot, engine)
    assert _bound_on(decision, "n1") == 3
    pending = [outcome for outcome in decision.podgroups if outcome.state == "pending"]
    assert len(pending) == 2
    for outcome in pending:
        assert any(r.code == reasons.pods_full.code and "pods: node n1 allows 3, 3 in use" in r for r in outcome.reasons)


@pytest.mark.parametrize("engine", ENGINES)
def test_running_pods_of_any_scheduler_take_their_pod_slot(engine: str) -> None:
    others = [make_running(f"daemon-{i}", node="n1", cpu=0) for i in range(2)]
    jobs = [make_gang(f"job-{i}", cpu=1) for i in range(3)]
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=32, pods=3)], groups=jobs, running=others)
    assert _bound_on(solve_checked(snapshot, engine), "n1") == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_best_effort_pods_fill_a_node_up_to_the_kubelet_default(engine: str) -> None:
    """Pods asking nothing fit anywhere but in the pod count: a node without `pods` takes 110."""
    job = make_gang("many", replicas=150, cpu=0, min_member=1)
    snapshot = make_snapshot(nodes=[make_node("n1"), make_node("n2", pods=20)], groups=[job])
    decision = solve_checked(snapshot, engine)
    assert (_bound_on(decision, "n1"), _bound_on(decision, "n2")) == (KUBELET_DEFAULT_MAX_PODS, 20)


@pytest.mark.parametrize("engine", ENGINES)
def test_evicting_a_pod_frees_its_pod_slot_for_a_preemptor(engine: str) -> None:
    low = make_gang("low", cpu=1, priority=1, running_on=["n1"])
    high = make_gang("high", cpu=1, priority=100)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=32, pods=1)], groups=[low, high])
    decision = solve_checked(snapshot, engine)
    assert [e.pod for e in decision.placement.evictions] == [low.pods[0].key]
    assert [(b.pod, b.node) for b in decision.placement.binds] == [(high.pods[0].key, "n1")]


def test_the_checker_reports_more_pods_than_the_node_allows() -> None:
    jobs = [make_gang(f"job-{i}", cpu=1) for i in range(4)]
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=32, pods=3)], groups=jobs)
    placement = make_placement(binds=[make_bind(job.pods[0], "n1") for job in jobs])
    (violation,) = rule_violations(capacity, snapshot, placement)
    assert violation.message == "node n1: pods 4 > allocatable 3 after placement (binds add 4)"


def test_a_node_without_pods_allows_the_kubelet_default_and_a_request_may_not_name_pods() -> None:
    node = Node.model_validate({"name": "n1", "allocatable": {"cpu": 1000}})
    assert node.allocatable["pods"] == KUBELET_DEFAULT_MAX_PODS == 110
    with pytest.raises(ValidationError, match="requests may not name 'pods'"):
        Task.model_validate({"name": "t", "requests": {"cpu": 1000, "pods": 1}})


def test_a_pod_count_that_cannot_bind_does_not_split_cpsat_node_profiles() -> None:
    """Twenty 4-core nodes running 0..19 BestEffort pods differ only in their free pod count;
    every pending pod asks a core, so at most 4 more fit anywhere — below every node's free
    count — and the nodes share one profile. On n-full the count binds: its own profile."""
    daemons = [make_running(f"d{n}-{i}", node=f"n{n}", cpu=0) for n in range(20) for i in range(n)]
    nodes = [make_node(f"n{n}", cpu=4, memory=16) for n in range(20)] + [make_node("n-full", cpu=4, memory=16, pods=2)]
    jobs = [make_gang(f"job-{i}", cpu=1) for i in range(90)]
    snapshot = make_snapshot(nodes=nodes, groups=jobs, running=daemons)
    problem = build_problem(snapshot)
    data = build_model_data(snapshot, problem, ObjectiveContext.of(snapshot), limits=DataLimits())
    assert len(data.profiles) == 2
    decision = solve_checked(snapshot, "cpsat")
    assert _bound_on(decision, "n-full") == 2 and len(decision.placement.binds) == 20 * 4 + 2


def test_cpsat_places_nothing_on_a_node_already_past_its_pod_count() -> None:
    """Three pods run where the node now allows two (its allocatable lowered under them):
    none left, not "never binding", so CP-SAT answers itself rather than its fallback."""
    others = [make_running(f"daemon-{i}", node="n1", cpu=0) for i in range(3)]
    snapshot = make_snapshot(nodes=[make_node("n1", pods=2)], groups=[make_gang("job", cpu=1)], running=others)
    decision = solve_checked(snapshot, "cpsat")
    assert decision.placement.binds == () and decision.fallback is None


@pytest.mark.parametrize("engine", ENGINES)
def test_queues_do_not_count_pods_a_queue_at_its_share_reclaims_nothing(engine: str) -> None:
    """a deserves 2 CPUs and runs 2, b deserves 1 and runs 2: b is above its share, but a
    already holds its own, so a's pending pod reclaims nothing (Volcano's `Overused`). The
    pod count must not make a look short of a share it is never dealt."""
    queues = [make_queue("a", deserved=resources(cpu=2)), make_queue("b", deserved=resources(cpu=1))]
    held = [make_gang(f"{q}-run-{i}", cpu=1, queue=q, running_on=["n1"]) for q in "ab" for i in range(2)]
    waiting = make_gang("a-wait", cpu=1, queue="a")
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[*held, waiting], queues=queues)
    decision = solve_checked(snapshot, engine)
    assert decision.placement.evictions == () and decision.placement.binds == ()
    assert decision.fallback is None
