"""Every pending PodGroup and every waiting task gets a reason naming its rule and numbers,
whichever engine answered: CP-SAT's reasons are judged in the state its own placement
leaves (`solver.pending_reasons`), not borrowed from greedy's; a waiting dependent task
is named even when its PodGroup is scheduled (`solver.outcome.dependency_reasons`).
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision
from models.snapshot import Snapshot
from models.reason import Reason
from solver import reasons
from solver.place import ENGINES
from solver.rules import capacity, dependency, eligibility, gang, numa, preemption, quota, topology
from solver.rules.gang import gang_requirement
from tests.builders import (
    make_gang,
    make_node,
    make_snapshot,
    make_task,
    solve_checked,
    two_queues_of_tied_jobs,
)
from tests.strategies import snapshots

RULES = frozenset({
    capacity.NAME, dependency.NAME, eligibility.NAME, gang.NAME, numa.NAME, preemption.NAME, quota.NAME, topology.NAME,
    *reasons.queue_missing.rules,
})  # fmt: skip


_solve = partial(solve_checked, time_limit_s=5.0)


def _outcome(decision: Decision, key: str):  # noqa: ANN202
    return next(outcome for outcome in decision.podgroups if outcome.name == key)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_greedy_starts_and_cpsat_leaves_out_gets_a_capacity_reason_with_numbers(engine: str) -> None:
    # Greedy gives queue b three 2-CPU jobs, CP-SAT two (as fair, one pod more):
    # job-b-3 then waited with "unplaced: 1 pending pods not placed this cycle".
    snapshot = two_queues_of_tied_jobs()
    decision = _solve(snapshot, engine)
    for outcome in decision.podgroups:
        if outcome.state == "pending":
            assert outcome.reasons and all(r.rule in RULES for r in outcome.reasons), outcome
    pending_b = [o for o in decision.podgroups if o.name.startswith("default/job-b-") and o.state == "pending"]
    assert pending_b
    assert all("2 insufficient cpu" in " ".join(o.reasons) for o in pending_b)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_waiting_task_of_a_scheduled_workflow_is_named_with_its_dependency(engine: str) -> None:
    # examples/workflow-job.yaml: task-b depends on task-a; task-a binds, task-b waits.
    flow = make_gang(
        "workflow-job",
        tasks=[make_task("task-a"), make_task("task-b", depends_on=("task-a",))],
        min_member=1,
    )
    decision = _solve(make_snapshot(nodes=[make_node("n1")], groups=[flow]), engine)
    outcome = _outcome(decision, flow.key)
    assert outcome.state == "scheduled"
    assert outcome.reasons == (reasons.dependency_waits("task-b", dependency="task-a", running=0, total=1),)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(snapshots(max_nodes=8, max_groups=8), st.sampled_from(ENGINES))
def test_every_pending_podgroup_and_waiting_task_has_a_reason_with_its_rule(snapshot: Snapshot, engine: str) -> None:
    decision = _solve(snapshot, engine)
    proven = decision.status in ("OPTIMAL", "GREEDY", "FALLBACK")
    for group in snapshot.pod_groups:
        outcome = _outcome(decision, group.key)
        if outcome.state == "pending":
            assert outcome.reasons, outcome
        for reason in outcome.reasons:
            assert isinstance(reason, Reason) and reason.code, outcome  # made by solver.reasons, not read from text
            assert reason.rule in RULES or (not proven and reason.rule in reasons.unplaced.rules), outcome
        assert len(set(outcome.reasons)) == len(outcome.reasons), outcome
        waiting = gang_requirement(snapshot, group).waiting
        for task in waiting:
            if any(p.task == task and p.phase == "pending" for p in snapshot.pods_by_group.get(group.key, ())):
                assert any(
                    (r.rule, r.code) == (dependency.NAME, reasons.dependency_waits.code) and r.numbers["task"] == task
                    for r in outcome.reasons
                ), outcome
