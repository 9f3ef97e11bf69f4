"""An empty request is a 422 that says so: no body at all, or YAML that holds no object
(as `batchplace solve` refuses it, "no objects passed") — never a 200 with an empty answer."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

EMPTY_YAML = ["", "---\n", "# nothing\n", "apiVersion: v1\nkind: List\nitems: []\n"]


@pytest.mark.parametrize("route", ["/v1/what-if", "/v1/fleet/what-if"])
@pytest.mark.parametrize("content_type", [None, "application/json"])
def test_no_body_at_all_is_422_saying_the_body_is_empty(client: TestClient, route: str, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = client.post(route, content=b"", headers=headers)
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"] == ["body"] and problem["msg"].startswith("the request body is empty")


@pytest.mark.parametrize("text", EMPTY_YAML)
def test_what_if_on_a_yaml_base_with_no_object_is_422_at_snapshot_yaml(client: TestClient, text: str) -> None:
    response = client.post("/v1/what-if", json={"snapshot_yaml": text})
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["pointer"] == "/snapshot_yaml" and problem["msg"].startswith("no objects passed")


@pytest.mark.parametrize("text", EMPTY_YAML[1:])  # "" is an empty body: below
def test_placements_of_yaml_with_no_object_is_422(client: TestClient, text: str) -> None:
    response = client.post("/v1/placements", content=text.encode(), headers={"content-type": "application/yaml"})
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"] == ["body"] and problem["msg"].startswith("no objects passed")


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
@pytest.mark.parametrize("body", [b"", b"\n  \n"])
def test_placements_of_an_empty_body_is_422_saying_so(client: TestClient, content_type: str, body: bytes) -> None:
    response = client.post("/v1/placements", content=body, headers={"content-type": content_type})
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"] == ["body"] and problem["msg"].startswith("the request body is empty: post a snapshot")


def test_an_empty_cluster_on_purpose_is_the_json_form(client: TestClient) -> None:
    """`snapshot: {}` is an explicit empty base: what-if may add the nodes and the jobs."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    response = client.post("/v1/what-if", json={"snapshot": {}, "changes": {"add_nodes": [node]}})
    assert response.status_code == 200 and response.json()["added_nodes"] == ["n0"]
