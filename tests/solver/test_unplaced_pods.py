"""A started gang's pods that do not fit each get their own reason (`PodGroupOutcome.unplaced_pods`),
whichever engine answers, as Volcano raises FailedScheduling on every pod of a job that did
not fit, started or not (issue 29: they got none)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision
from models.reason import Reason
from models.snapshot import Snapshot
from solver import reasons
from solver.checker import check_placement
from solver.place import SolveConfig, place
from solver.rules import capacity, dependency, eligibility, numa, pod_affinity, quota, topology_spread
from tests.builders import gated, make_gang, make_node, make_queue, make_snapshot, make_task, resources
from tests.strategies import snapshots

ENGINES = ["greedy", "cpsat", "auto"]


def _solve(snapshot: Snapshot, engine: str) -> Decision:
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=10))  # type: ignore[arg-type]
    assert check_placement(snapshot, decision.placement) == ()
    return decision


def _unplaced(decision: Decision, group: str) -> dict[str, str]:
    (outcome,) = [o for o in decision.podgroups if o.name == group]
    return {pod.pod: pod.reason for pod in outcome.unplaced_pods}


@pytest.mark.parametrize("engine", ENGINES)
def test_each_pod_a_started_gang_leaves_pending_names_the_capacity_it_lacks(engine: str) -> None:
    # 4 nodes × 8 cpu, 20 pods × 4 cpu, min 4: 8 bind, 12 do not fit.
    snapshot = make_snapshot(
        nodes=[make_node(f"n{i}", cpu=8) for i in range(4)], groups=[make_gang("job", replicas=20, cpu=4, min_member=4)]
    )
    decision = _solve(snapshot, engine)
    bound = {b.pod for b in decision.placement.binds}
    assert len(bound) == 8
    unplaced = _unplaced(decision, "default/job")
    assert set(unplaced) == {p.key for p in snapshot.pods} - bound
    assert set(unplaced.values()) == {"capacity: task worker: 0/4 nodes fit another pod: 4 insufficient cpu"}
    (contract,) = decision.to_contract()["podgroups"]
    assert {pod["pod"]: pod["reason"] for pod in contract["unplaced_pods"]} == unplaced  # the JSON output contract


@pytest.mark.parametrize("engine", ENGINES)
def test_a_started_gangs_gated_pod_names_its_gate_not_the_capacity(engine: str) -> None:
    # 1 node × 8 cpu, 3 pods × 4 cpu, min 1, the first pod gated: 2 bind, the gated one waits
    # for its gate though a node could take it once the gate is gone (here none could: full).
    snapshot = make_snapshot(
        nodes=[make_node("n0", cpu=8)], groups=[gated(make_gang("job", replicas=3, cpu=4, min_member=1), "example.com/quota-check")]
    )
    decision = _solve(snapshot, engine)
    gated_pod = next(p.key for p in snapshot.pods if p.scheduling_gates)
    assert gated_pod not in {b.pod for b in decision.placement.binds}
    assert _unplaced(decision, "default/job") == {gated_pod: "gated: waiting for example.com/quota-check"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_started_gangs_pods_over_its_queue_capability_name_the_quota(engine: str) -> None:
    queue = make_queue("team", capability=resources(cpu=3))
    snapshot = make_snapshot(
        nodes=[make_node("n0", cpu=16)], queues=[queue], groups=[make_gang("job", replicas=5, cpu=1, min_member=2, queue="team")]
    )
    decision = _solve(snapshot, engine)
    unplaced = _unplaced(decision, "default/job")
    assert len(unplaced) == 2
    assert all(Reason.read(r).rule == quota.NAME and "queue team capability 3 cpu" in r for r in unplaced.values()), unplaced


@pytest.mark.parametrize("engine", ENGINES)
def test_the_pods_of_a_task_waiting_on_its_dependency_say_what_they_wait_for(engine: str) -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n0", cpu=8)],
        groups=[make_gang("flow", min_member=3, tasks=[make_task("task-a"), make_task("task-b", replicas=2, depends_on=["task-a"])])],
    )
    decision = _solve(snapshot, engine)
    assert _unplaced(decision, "default/flow") == {
        f"default/flow-task-b-{i}": "dependency: task-b waits for task-a (0 of 1 running)" for i in range(2)
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(snapshot=snapshots(max_nodes=8, max_groups=8), engine=st.sampled_from(["greedy", "cpsat"]))
def test_every_scheduled_gangs_pending_pods_left_unplaced_and_only_those_have_a_reason(snapshot: Snapshot, engine: str) -> None:
    decision = _solve(snapshot, engine)
    bound = {b.pod for b in decision.placement.binds}
    rules = {capacity.NAME, quota.NAME, dependency.NAME, eligibility.NAME, numa.NAME, *reasons.unplaced.rules,
             pod_affinity.NAME, topology_spread.NAME}  # fmt: skip
    for outcome in decision.podgroups:
        left = {p.key for p in snapshot.pods_by_group[outcome.name] if p.phase == "pending" and p.key not in bound}
        if outcome.state == "pending":
            assert outcome.unplaced_pods == ()
            continue
        assert {pod.pod for pod in outcome.unplaced_pods} == left
        for pod in outcome.unplaced_pods:
            assert Reason.read(pod.reason).rule in rules, pod.reason  # an Event's text: its rule first
