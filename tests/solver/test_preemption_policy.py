"""`preemptionPolicy: Never` (a pod's own, else its PriorityClass's): the pod waits for room
and never evicts to make it, in every engine and in the checker — as Kubernetes and Volcano."""

from __future__ import annotations

import pytest

from models.errors import SnapshotError
from models.loaders import load_snapshot_yaml_text
from models.placement import Eviction, Placement
from solver.checker import check_placement
from solver.place import ENGINES, SolveConfig, place

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-polite}
value: 100
preemptionPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: default, annotations: {scheduling.volcano.sh/queue-name: default}}
spec:
  nodeName: n1
  priorityClassName: low
  containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
"""


def _snapshot(priority_class: str, policy: str | None = None):  # noqa: ANN202
    spec_policy = f"  preemptionPolicy: {policy}\n" if policy else ""
    pending = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: urgent, namespace: default}\nspec:\n"
        f"  schedulerName: batchplace\n  priorityClassName: {priority_class}\n{spec_policy}"
        '  containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]\n'
    )
    return load_snapshot_yaml_text(CLUSTER + pending).snapshot


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_that_may_preempt_evicts_the_lower_priority_one(engine: str) -> None:
    snapshot = _snapshot("high")
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=5))  # type: ignore[arg-type]
    assert not check_placement(snapshot, decision.placement)
    assert [e.pod for e in decision.placement.evictions] == ["default/running"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("priority_class", "policy"), [("high", "Never"), ("high-polite", None)], ids=["pod spec", "PriorityClass"])
def test_a_pod_whose_policy_is_never_waits(engine: str, priority_class: str, policy: str | None) -> None:
    snapshot = _snapshot(priority_class, policy)
    (group,) = [g for g in snapshot.pod_groups if not g.may_preempt]
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=5))  # type: ignore[arg-type]
    assert not check_placement(snapshot, decision.placement)
    assert decision.placement.evictions == () and decision.placement.binds == ()
    # The checker holds the rule on its own: an eviction made for it is a violation.
    forced = Placement(evictions=(Eviction.model_validate({"pod": "default/running", "node": "n1", "reason": "preempt", "for": group.key}),))
    assert any("preemptionPolicy Never" in v.message for v in check_placement(snapshot, forced))


def test_a_pod_policy_over_its_class_wins() -> None:
    assert all(g.may_preempt for g in _snapshot("high-polite", "PreemptLowerPriority").pod_groups)


def test_an_unknown_policy_is_an_error_naming_the_field() -> None:
    with pytest.raises(SnapshotError, match=r"spec\.preemptionPolicy: must be PreemptLowerPriority or Never, got 'Sometimes'"):
        _snapshot("high", "Sometimes")
