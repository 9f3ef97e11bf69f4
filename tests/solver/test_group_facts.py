"""A PodGroup whose every pod runs — most PodGroups of a busy cluster — is read only when a
step asks about it: its facts are counted per task row for all PodGroups at once
(`solver.problem._running_group_facts`), its greedy plan is made when read
(`solver.greedy.plan.GroupPlans`), and the greedy engine places pods of the others only.
Here each shortcut is held against reading the pods one by one and making every plan."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from models.snapshot import Snapshot
from solver.greedy.engine import GreedyConfig, GreedyEngine
from solver.greedy.plan import GreedyFailure, build_plan
from solver.place import SolveConfig, place
from solver.problem import _group_facts, build_problem
from solver.rules import counted
from tests.builders import make_gang, make_node, make_queue, make_snapshot
from tests.strategies import snapshots


def _with_pending_pods_gone(snapshot: Snapshot) -> Snapshot:
    """The same cluster once its pending pods are deleted: every PodGroup has nothing to
    place, and those that had not started are below their minimum."""
    data = snapshot.model_dump()
    data["pods"] = [pod for pod in data["pods"] if pod["phase"] == "running"]
    return Snapshot.model_validate(data)


@settings(max_examples=80, deadline=None)
@given(snapshots(), st.booleans())
def test_every_podgroups_facts_are_those_its_pods_give_one_by_one(snapshot: Snapshot, pending_gone: bool) -> None:
    snapshot = counted(_with_pending_pods_gone(snapshot) if pending_gone else snapshot)
    problem = build_problem(snapshot)
    for k, group in enumerate(snapshot.pod_groups):
        pods = snapshot.pods_by_group.get(group.key, ())
        assert problem.group_has_pending[k] == any(pod.phase != "running" for pod in pods)
        pod_by_pod = _group_facts(
            snapshot, k, problem.group_pods[k], problem.pod_task_row, problem.pod_running, problem.task_keys
        )
        assert dataclasses.asdict(problem.group_facts[k]) == dataclasses.asdict(pod_by_pod)


@settings(max_examples=60, deadline=None)
@given(snapshots(), st.booleans())
def test_greedy_says_of_a_podgroup_with_nothing_to_place_what_its_plan_says(snapshot: Snapshot, pending_gone: bool) -> None:
    snapshot = counted(_with_pending_pods_gone(snapshot) if pending_gone else snapshot)
    problem = build_problem(snapshot)
    engine = GreedyEngine(snapshot, problem, GreedyConfig())
    _, said = engine.run()
    assert set(said) == {group.key for group in snapshot.pod_groups}
    for k, group in enumerate(snapshot.pod_groups):
        if problem.group_has_pending[k]:
            continue
        plan = build_plan(snapshot, problem, index=k)
        # Why the engine need not serve it: no pending pod, and no failure preemption retries.
        assert not any(task.pending for task in plan.tasks)
        assert plan.failure in (None, GreedyFailure.STATIC)
        assert said[group.key] == list(dict.fromkeys(plan.reasons or plan.static_reasons))


def test_a_running_gang_in_a_closed_queue_and_one_below_its_minimum_keep_their_reasons() -> None:
    """Neither has a pod to place, so neither gets a plan; the Decision still names the
    closed queue of the one and the missing pod of the other, as their plans would."""
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=8)],
        queues=[make_queue("default"), make_queue("paused", state="closed")],
        groups=[
            make_gang("steady", replicas=2, queue="paused", running_on=["n1", "n1"]),
            make_gang("broken", replicas=2, min_member=3, running_on=["n1", "n1"]),
            make_gang("new", replicas=2),
        ],
    )
    decision = place(snapshot, SolveConfig(engine="greedy"))
    outcomes = {outcome.name: outcome for outcome in decision.podgroups}
    assert (outcomes["default/steady"].state, outcomes["default/steady"].reasons) == (
        "scheduled",
        ("queue: queue paused is closed",),
    )
    assert (outcomes["default/broken"].state, outcomes["default/broken"].reasons) == (
        "pending",
        ("gang: min 3 pods but only 2 exist",),
    )
    assert outcomes["default/new"].state == "scheduled"
    assert len(decision.placement.binds) == 2
