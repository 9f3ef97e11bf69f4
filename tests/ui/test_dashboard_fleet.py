"""The dashboard over several clusters: a fleet's JSON uploaded, each cluster the top of the
HyperNode tree, its own topology under it."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi.testclient import TestClient

from models.errors import SnapshotError
from service.app import create_app
from service.settings import ServiceSettings
from service.ui.analysis import analyze
from service.ui.cluster_view import build_cluster_view
from service.ui.uploads import read_upload
from tests.builders import make_gang, make_node, make_snapshot


def _fleet() -> dict[str, Any]:
    west = make_snapshot(nodes=[make_node("n0", gpus=8, leaf="leaf"), make_node("n1", gpus=8)])
    east = make_snapshot(nodes=[make_node("n0", gpus=8, leaf="leaf", spine="spine")])
    jobs = make_snapshot(groups=[make_gang("llm", gpus=8)])
    return {
        "clusters": {"gpu-west": west.model_dump(mode="json"), "gpu-east": east.model_dump(mode="json")},
        "jobs": jobs.model_dump(mode="json"),
    }


def test_a_fleet_upload_shows_each_cluster_as_the_top_of_the_tree() -> None:
    snapshot, _ = read_upload(json.dumps(_fleet()).encode(), name="fleet.json")
    view = build_cluster_view(analyze(snapshot, now_s=0.0))
    roots = {domain.name: domain for domain in view.domains}
    assert set(roots) == {"gpu-west", "gpu-east"}
    assert all(domain.cluster for domain in roots.values())
    assert [child.name for child in roots["gpu-east"].children] == ["gpu-east/spine"]
    assert [child.name for child in roots["gpu-east"].children[0].children] == ["gpu-east/leaf"]
    assert [row.name for row in roots["gpu-west"].nodes] == ["gpu-west/n1"]
    assert not any(child.cluster for child in roots["gpu-east"].children)
    assert roots["gpu-west"].gpus_total + roots["gpu-east"].gpus_total == 24


def test_a_fleet_upload_with_a_bad_cluster_names_it() -> None:
    fleet = _fleet()
    fleet["clusters"]["gpu-east"]["nodes"][0]["allocatable"]["gpu"] = 1500
    try:
        read_upload(json.dumps(fleet).encode(), name="fleet.json")
    except SnapshotError as error:
        assert "clusters.gpu-east" in str(error) and "nodes[0]" in str(error)
    else:
        raise AssertionError("a node with 1.5 GPUs was accepted")


def test_the_cluster_page_labels_the_clusters() -> None:
    with TestClient(create_app(ServiceSettings())) as client:
        answer = client.post("/ui/upload", files={"file": ("fleet.json", json.dumps(_fleet()).encode(), "application/json")})
        assert answer.status_code == 200, answer.text
        # A cluster domain with every GPU idle is also marked whole (`domain.whole`).
        assert len(re.findall(r' cluster(?: whole)?" data-domain="gpu-', answer.text)) == 2
        assert answer.text.count("cluster · ") == 2
