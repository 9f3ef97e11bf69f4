"""Rule `gated`: a pod with scheduling gates is never bound, by any engine, and its
PodGroup says which gates it waits for."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from models.snapshot import Pod
from solver.checker import check_placement
from solver.place import ENGINES
from solver.problem import build_problem
from solver.rules import gated as gated_rule
from tests.builders import (
    bind_gang,
    gated,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    rule_violations,
    solve_checked,
)

QUOTA_CHECK = "example.com/quota-check"
NODES = [make_node("n1", cpu=8), make_node("n2", cpu=8)]


def _outcome(decision, key: str):  # noqa: ANN001, ANN202 - a Decision and its PodGroupOutcome
    return next(o for o in decision.podgroups if o.name == key)


def test_the_checker_rejects_a_bind_of_a_gated_pod() -> None:
    job = gated(make_gang("job", cpu=0.1), QUOTA_CHECK)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    violations = check_placement(snapshot, make_placement(binds=bind_gang(job, ["n1"])))
    assert [(v.rule, v.subject) for v in violations] == [("gated", "default/job-worker-0")]
    assert QUOTA_CHECK in violations[0].message


def test_the_rule_accepts_binds_of_the_ungated_pods_of_a_partly_gated_gang() -> None:
    job = gated(make_gang("job", replicas=3, min_member=2), QUOTA_CHECK)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    ungated = [pod for pod in job.pending if not pod.scheduling_gates]
    placement = make_placement(binds=[b for b in bind_gang(job, ["n1", "n1", "n2"]) if b.pod in {p.key for p in ungated}])
    assert len(placement.binds) == 2
    assert rule_violations(gated_rule, snapshot, placement) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_no_engine_places_a_gated_pod_and_the_reason_names_the_gate(engine: str) -> None:
    job = gated(make_gang("job", cpu=0.1), QUOTA_CHECK)
    free = make_gang("free", cpu=0.1)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[job, free]), engine)
    assert [b.pod for b in decision.placement.binds] == ["default/free-worker-0"]
    outcome = _outcome(decision, "default/job")
    assert outcome.state == "pending"
    assert outcome.reasons == (f"gated: waiting for {QUOTA_CHECK}",)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_short_only_by_its_gated_pods_waits_and_names_the_gates_not_a_shortfall(engine: str) -> None:
    job = gated(make_gang("job", replicas=3), "b.example/two", "a.example/one", pods=2)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[job]), engine)
    assert decision.placement.binds == ()
    outcome = _outcome(decision, "default/job")
    assert outcome.state == "pending"
    assert outcome.reasons == ("gated: waiting for a.example/one, b.example/two",)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_ungated_pods_of_a_gang_meet_its_minimum_and_the_gated_one_waits(engine: str) -> None:
    job = gated(make_gang("job", replicas=3, min_member=2), QUOTA_CHECK)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[job]), engine)
    assert sorted(b.pod for b in decision.placement.binds) == ["default/job-worker-1", "default/job-worker-2"]
    outcome = _outcome(decision, "default/job")
    assert (outcome.state, outcome.placed) == ("scheduled", 2)
    assert f"gated: waiting for {QUOTA_CHECK}" in outcome.reasons


def test_a_gang_too_small_even_ungated_names_the_gate_and_the_pods_that_exist() -> None:
    job = gated(make_gang("job", replicas=3, min_member=4), QUOTA_CHECK)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[job]), "greedy")
    assert _outcome(decision, "default/job").reasons == (
        f"gated: waiting for {QUOTA_CHECK}",
        "gang: min 4 pods but only 3 exist",
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gated_pod_beside_a_capacity_shortfall_keeps_the_capacity_reason_first(engine: str) -> None:
    job = gated(make_gang("job", replicas=2, cpu=16, min_member=1), QUOTA_CHECK)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[job]), engine)
    reasons = _outcome(decision, "default/job").reasons
    assert reasons[0].startswith("capacity: ")
    assert reasons[-1] == f"gated: waiting for {QUOTA_CHECK}"


def test_gated_pods_enter_no_engine_they_are_counted_apart() -> None:
    job = gated(make_gang("job", replicas=3), QUOTA_CHECK)
    problem = build_problem(make_snapshot(nodes=NODES, groups=[job]))
    facts = problem.group_facts[0]
    assert [problem.pod_keys[p] for p in facts.pending["worker"]] == ["default/job-worker-1", "default/job-worker-2"]
    assert [problem.pod_keys[p] for p in facts.gated["worker"]] == ["default/job-worker-0"]
    assert (facts.can_be_met, facts.met_once_ungated) == (False, True)


def test_a_running_pod_has_no_gates_and_gate_names_do_not_repeat() -> None:
    with pytest.raises(ValidationError, match="running pod has no scheduling gates"):
        Pod(namespace="d", name="p", phase="running", node="n1", scheduling_gates=(QUOTA_CHECK,))
    with pytest.raises(ValidationError, match="gate names repeat"):
        Pod(namespace="d", name="p", phase="pending", pod_group="d/g", task="t", scheduling_gates=("a", "a"))
