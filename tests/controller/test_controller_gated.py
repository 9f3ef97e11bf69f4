"""The controller on pods held by scheduling gates, at its pure seam (observe → place → plan)
with the Pod as a 1.30 API server returns it: nothing is bound while a gate remains, the
PodGroup's condition says `SchedulingGated` with the gate's name, and the cycle after the
gate is removed binds the pod.

Why not against the test API server: it is v1.20.2, which drops `spec.schedulingGates`
(alpha in 1.26, GA in 1.30) on create, so a gated pod cannot exist there."""

from __future__ import annotations

import copy

from controller import status as status_text
from controller.observe import ClusterView, Observation, observe
from controller.plan import GangPlan, plan
from solver.place import SolveConfig, place
from tests.controller._controller_builders import node, pod, pod_group

QUOTA_CHECK = "example.com/quota-check"
GATED = f"gated: waiting for {QUOTA_CHECK}"


def _gated_pod() -> dict:
    """A pending pod as kube-apiserver 1.30 returns it while Kueue holds it."""
    raw = pod("train-0", group="train", cpu="100m")
    raw["spec"]["schedulingGates"] = [{"name": QUOTA_CHECK}]
    raw["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                        "message": "Scheduling is blocked due to non-empty scheduling gates"}],
    }
    return raw


def _cycle(pod_object: dict) -> tuple[Observation, GangPlan]:
    view = ClusterView(nodes=(node("n1"),), volcano_pod_groups=(pod_group("train"),), pods=(pod_object,))
    observation = observe(view, scheduler_names=("batchplace",))
    decision = place(observation.snapshot, SolveConfig(engine="auto", time_limit_s=2.0))
    (gang,) = plan(observation, decision).gangs
    return observation, gang


def test_a_gated_pod_is_not_bound_and_its_podgroup_is_scheduling_gated() -> None:
    observation, gang = _cycle(_gated_pod())
    assert observation.snapshot.pods[0].scheduling_gates == (QUOTA_CHECK,)
    assert gang.binds == ()
    assert gang.status is not None
    status = gang.status.status
    assert (status.phase, status.condition_type, status.reason) == ("Pending", "Unschedulable", "SchedulingGated")
    assert status.message == f"1/1 tasks in gang unschedulable: {GATED}"
    assert sorted((e.kind, e.reason) for e in gang.events) == [("Pod", "FailedScheduling"), ("PodGroup", "Unschedulable")]


def test_the_cycle_after_the_gate_is_removed_binds_the_pod() -> None:
    lifted = copy.deepcopy(_gated_pod())
    lifted["spec"]["schedulingGates"] = []  # what the API server keeps once the last gate is removed
    _, gang = _cycle(lifted)
    assert [(bind.pod, bind.node) for bind in gang.binds] == [("ns/train-0", "n1")]


def test_the_gated_reason_is_the_condition_s_scheduling_gated() -> None:
    assert status_text.condition_reason([GATED, "capacity: task worker: 0/1 nodes fit another pod"]) == "SchedulingGated"
