"""A pending pod's `PodScheduled` condition reason read onto `Pod.scheduled_reason` (the
dashboard shows it); a pod without one, and a bound pod, have none."""

from __future__ import annotations

from tests.models._kube_builders import load_error, node, pod, pod_group, snapshot


def _with_condition(obj: dict, condition: object) -> dict:
    return {**obj, "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}, condition]}}


def test_a_pending_pod_s_reason_is_read_and_others_have_none() -> None:
    quota = {"type": "PodScheduled", "status": "False", "reason": "QueueQuotaExceeded", "message": "quota: …"}
    loaded = snapshot(
        node("n1"),
        pod_group("g"),
        _with_condition(pod("capped", group="g"), quota),
        pod("plain", group="g"),
        {**pod("bound", group="g", node="n1"), "status": {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True"}]}},
    )
    assert {p.name: p.scheduled_reason for p in loaded.pods} == {"capped": "QueueQuotaExceeded", "plain": None, "bound": None}


def test_a_malformed_condition_reason_names_its_field() -> None:
    bad = _with_condition(pod("p", group="g"), {"type": "PodScheduled", "status": "False", "reason": ["Unschedulable"]})
    message = load_error(node("n1"), pod_group("g"), bad)
    assert "status.conditions[1].reason" in message, message
