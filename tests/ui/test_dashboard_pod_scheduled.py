"""The dashboard shows a pending pod's PodScheduled reason as its object says it (the
controller writes it: `Unschedulable` only when a node would help), read from an uploaded
cluster's pods."""

from __future__ import annotations

import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import ServiceSettings

CLUSTER = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "train", "namespace": "ml"},
     "spec": {"minMember": 2, "queue": "default"}},
    *(
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": f"train-{i}", "namespace": "ml", "annotations": {"scheduling.k8s.io/group-name": "train"}},
         "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "3"}}}]},
         "status": {"phase": "Pending", "conditions": conditions}}
        for i, conditions in enumerate([
            [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "capacity: …"}],
            [],
        ])
    ),
]


def test_the_podgroup_page_shows_each_pending_pod_s_pod_scheduled_reason() -> None:
    with TestClient(create_app(ServiceSettings())) as client:
        uploaded = client.post("/ui/upload", files={"file": ("cluster.yaml", yaml.safe_dump_all(CLUSTER).encode(), "application/yaml")})
        assert uploaded.status_code == 200, uploaded.text
        key = str(uploaded.url).rsplit("s=", 1)[1]
        page = client.get(f"/ui/podgroups/ml/train?s={key}")
        assert page.status_code == 200, page.text
    rows = {row.split("</td>", 1)[0]: row.split("</tr>", 1)[0] for row in page.text.split("<tr><td>")[1:]}
    assert "<td>Unschedulable</td>" in rows["ml/train-0"]
    assert "<td>Unschedulable</td>" not in rows["ml/train-1"] and "<td>—</td><td>waits" in rows["ml/train-1"]
