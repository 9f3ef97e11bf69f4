"""The dashboard shows sub-groups inside their job — name, policy, placed/min, state, the domain
each landed in — and which racks are whole after the cycle, with hand-computed answers.

The decision is written by hand (not solved), so the test says exactly which sub-group lands
where: three racks under one spine, rack-a (node a1, 4 GPUs), rack-b (b1, 2 GPUs), rack-c
(c1, 1 GPU). `serve` has sub-groups decode (2 pods × 2 GPUs, both bound on a1) and prefill
(1 pod × 2 GPUs, bound on b1), and prefill-1 (1 pod) that waits: rack-c alone stays whole."""

from __future__ import annotations

from typing import Any

import yaml
from fastapi.testclient import TestClient

from models.placement import Bind, Decision, Placement, PodGroupOutcome
from models.reason import Reason
from models.snapshot import PodGroupKey, PodKey, Snapshot
from service.app import create_app
from service.settings import ServiceSettings
from service.ui.analysis import Analysis
from service.ui.cluster_view import build_cluster_view
from service.ui.pages import Source, environment
from service.ui.podgroup_view import build_podgroup_detail, build_podgroup_rows
from solver.after import build_after
from solver.sub_group_report import SubGroupStatus

WAITS = Reason("gang: subgroup prefill-1 of ml/serve: 0 of min 1 pods fit in any tier-1 domain", rule="gang", code="subgroup")


def _node(name: str, gpus: int) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": 64_000, "memory": 2**38, "gpu": gpus * 1000}}


def _pod(name: str, sub_group: str) -> dict[str, Any]:
    return {"namespace": "ml", "name": name, "phase": "pending", "pod_group": "ml/serve", "task": "main",
            "sub_group": sub_group, "requests": {"cpu": 1000, "gpu": 2000}}


def _analysis() -> Analysis:
    snapshot = Snapshot.model_validate({
        "nodes": [_node("a1", 4), _node("b1", 2), _node("c1", 1)],
        "hypernodes": [
            {"name": "rack-a", "tier": 1, "node_members": ["a1"]},
            {"name": "rack-b", "tier": 1, "node_members": ["b1"]},
            {"name": "rack-c", "tier": 1, "node_members": ["c1"]},
            {"name": "spine", "tier": 2, "hypernode_members": ["rack-a", "rack-b", "rack-c"]},
        ],
        "queues": [{"name": "ml"}],
        "pod_groups": [{
            "namespace": "ml", "name": "serve", "queue": "ml", "min_member": 3,
            "tasks": [{"name": "main", "requests": {"cpu": 1000, "gpu": 2000}}],
            "sub_groups": [
                {"name": "decode-0", "policy": "decode", "min_member": 2},
                {"name": "prefill-0", "policy": "prefill", "min_member": 1},
                {"name": "prefill-1", "policy": "prefill", "min_member": 1},
            ],
        }],
        "pods": [_pod("d-0", "decode-0"), _pod("d-1", "decode-0"), _pod("p-0", "prefill-0"), _pod("p-1", "prefill-1")],
    })
    placement = Placement(binds=(
        Bind(pod=PodKey("ml/d-0"), node="a1", gpus=(0, 1)),
        Bind(pod=PodKey("ml/d-1"), node="a1", gpus=(2, 3)),
        Bind(pod=PodKey("ml/p-0"), node="b1", gpus=(0, 1)),
    ))
    outcome = PodGroupOutcome(name=PodGroupKey("ml/serve"), queue="ml", placed=3, min_member=3, state="scheduled", reasons=(WAITS,))
    decision = Decision(engine="greedy", status="GREEDY", solve_seconds=0.0, placement=placement, podgroups=(outcome,))
    return Analysis(
        snapshot=snapshot, decision=decision, after=build_after(snapshot, placement), cluster_allocatable={},
        queue_allocated={}, queue_requests={}, queue_deserved={}, now_s=0.0, solve_s=0.0,
    )


def test_the_podgroup_detail_holds_each_sub_group_with_its_domain() -> None:
    detail = build_podgroup_detail(_analysis(), PodGroupKey("ml/serve"))
    assert detail is not None
    assert detail.sub_groups == (
        SubGroupStatus("decode-0", "decode", True, 2, 2, "rack-a"),
        SubGroupStatus("prefill-0", "prefill", True, 1, 1, "rack-b"),
        SubGroupStatus("prefill-1", "prefill", False, 0, 1, None, str(WAITS)),
    )
    assert {line.key: line.sub_group for line in detail.pods} == {
        "ml/d-0": "decode-0", "ml/d-1": "decode-0", "ml/p-0": "prefill-0", "ml/p-1": "prefill-1"
    }


def test_the_podgroups_table_counts_the_sub_groups_started() -> None:
    (row,) = build_podgroup_rows(_analysis())
    assert row.sub_groups == "2 of 3 sub-groups started"


def test_the_podgroup_page_shows_the_sub_groups_table() -> None:
    analysis = _analysis()
    detail = build_podgroup_detail(analysis, PodGroupKey("ml/serve"))
    html = environment.get_template("podgroup.html").render(
        detail=detail, analysis=analysis, source=Source(kind="upload", label="test", key="k"), page="podgroups",
        login_needed=False, logged_in=False, live=False,
    )
    rows = {row.split('"', 1)[0]: row.split("</tr>", 1)[0] for row in html.split('<tr data-sub-group="')[1:]}
    assert set(rows) == {"decode-0", "prefill-0", "prefill-1"}
    assert "<td>decode</td><td class=\"num\">2 / 2</td>" in rows["decode-0"] and "started" in rows["decode-0"]
    assert "<td>rack-a</td>" in rows["decode-0"] and "<td>rack-b</td>" in rows["prefill-0"]
    assert "waits" in rows["prefill-1"] and "0 of min 1 pods fit in any tier-1 domain" in rows["prefill-1"]


def test_the_cluster_view_marks_the_racks_left_whole() -> None:
    view = build_cluster_view(_analysis())
    (spine,) = view.domains
    whole = {domain.name: domain.whole for domain in spine.children}
    assert whole == {"rack-a": False, "rack-b": False, "rack-c": True}
    assert (view.whole_racks, view.racks) == (1, 3)
    assert not spine.whole


CLUSTER = [
    *({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
       "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}}} for name in ("a1", "b1")),
    *({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": rack},
       "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": name}}}]}}
      for rack, name in (("rack-a", "a1"), ("rack-b", "b1"))),
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy", "namespace": "ml"},
     "spec": {"schedulerName": "volcano", "nodeName": "a1", "containers": [{"name": "c", "image": "x", "resources": {
         "requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]},
     "status": {"phase": "Running"}},
]


def test_the_cluster_page_marks_the_whole_racks_and_counts_them() -> None:
    """rack-a holds a running GPU pod, rack-b nothing: one of two tier-1 domains whole."""
    with TestClient(create_app(ServiceSettings())) as client:
        uploaded = client.post("/ui/upload", files={"file": ("cluster.yaml", yaml.safe_dump_all(CLUSTER).encode(), "application/yaml")})
        assert uploaded.status_code == 200, uploaded.text
        key = str(uploaded.url).rsplit("s=", 1)[1]
        page = client.get(f"/ui/cluster?s={key}")
    assert page.status_code == 200, page.text
    assert "<b>1</b> of 2 tier-1 domains whole" in page.text
    sections = {part.split('"', 1)[0]: part.split("</h3>", 1)[0] for part in page.text.split('data-domain="')[1:]}
    assert 'class="whole"' in sections["rack-b"] and 'class="whole"' not in sections["rack-a"]
