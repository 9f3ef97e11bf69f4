"""The dashboard on a PodGroup whose pods wait for scheduling gates: its row says which
gate, and the pod lines tell the gated pod from the one that simply waits."""

from __future__ import annotations

from models.snapshot import PodGroupKey
from service.ui.analysis import analyze
from service.ui.podgroup_view import build_podgroup_detail, build_podgroup_rows
from tests.builders import gated, make_gang, make_node, make_snapshot

GATED = "gated: waiting for example.com/quota-check"


def test_a_gated_gang_s_row_and_pod_lines_name_the_gate() -> None:
    job = gated(make_gang("job", replicas=2, cpu=16), "example.com/quota-check")
    analysis = analyze(make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[job]), now_s=0.0)
    (row,) = build_podgroup_rows(analysis)
    assert row.state == "pending" and row.reasons == (GATED,)
    detail = build_podgroup_detail(analysis, PodGroupKey("default/job"))
    assert detail is not None
    assert [(pod.key, pod.this_cycle) for pod in detail.pods] == [
        ("default/job-worker-0", GATED),
        ("default/job-worker-1", "waits"),
    ]
    assert all(GATED in event.message for event in detail.events if event.reason in ("Unschedulable", "FailedScheduling"))
