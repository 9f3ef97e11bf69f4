"""`POST /v1/fleet/placements` and `/v1/fleet/what-if`: several clusters in one request, each
job in one cluster; bad input is a 422 whose `loc` points at the cluster and field."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from models.clusters import merge_clusters
from models.loaders import load_snapshot_json
from solver.checker import check_placement
from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources
from tests.service.service_helpers import placement_of, snapshot_json
from tests.service.test_what_if_api import vcjob


def _cluster(nodes: int, *, busy: int = 0) -> dict[str, Any]:
    running = [make_gang("old", replicas=busy, gpus=8, running_on=[f"n{i}" for i in range(busy)])] if busy else []
    return snapshot_json(make_snapshot(nodes=[make_node(f"n{i}", gpus=8) for i in range(nodes)], groups=running))


def _jobs(*gangs: Any, queues: Any = ()) -> dict[str, Any]:
    return snapshot_json(make_snapshot(groups=gangs, queues=queues))


def test_a_job_is_dispatched_to_the_cluster_where_it_fits_and_the_answer_is_checked(client: TestClient) -> None:
    body = {
        "clusters": {"gpu-west": _cluster(2, busy=1), "gpu-east": _cluster(3)},
        "jobs": _jobs(make_gang("llm", replicas=2, gpus=8)),
        "options": {"engine": "cpsat"},
    }
    answer = client.post("/v1/fleet/placements", json=body)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["valid"] and result["violations"] == []
    (dispatch,) = result["dispatch"]
    assert dispatch["cluster"] == "gpu-east"
    assert dispatch["reasons"][0] == "gpu-west: 8 gpu short (8 free, 16 to start)"
    assert len(result["clusters"]["gpu-east"]["binds"]) == 2
    assert {b["node"] for b in result["clusters"]["gpu-east"]["binds"]} <= {"n0", "n1", "n2"}
    fleet = merge_clusters(
        {name: load_snapshot_json(raw) for name, raw in body["clusters"].items()}, jobs=load_snapshot_json(body["jobs"])
    )
    assert check_placement(fleet.snapshot, placement_of(result)) == ()


def test_a_global_queue_holds_over_both_clusters(client: TestClient) -> None:
    team = make_queue("team-a", capability=resources(gpus=8))
    west = snapshot_json(
        make_snapshot(nodes=[make_node("n0", gpus=8)], groups=[make_gang("old", gpus=8, queue="team-a", running_on=["n0"])], queues=[team])
    )
    body = {
        "clusters": {"gpu-west": west, "gpu-east": _cluster(2)},
        "jobs": _jobs(make_gang("llm", gpus=8, queue="team-a"), queues=[team]),
        "options": {"engine": "greedy"},
    }
    result = client.post("/v1/fleet/placements", json=body).json()
    assert result["binds"] == [] and result["dispatch"][0]["cluster"] is None
    (llm,) = [o for o in result["podgroups"] if o["name"] == "default/llm"]
    assert any(r.startswith("quota: ") for r in llm["reasons"])


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"clusters": {}}, ["body", "clusters"]),
        ({"clusters": {"Gpu_West": {}}}, ["body", "clusters", "Gpu_West"]),
        ({"clusters": {"gpu-west": {"nodes": [{"name": "n0", "allocatable": {"gpu": -1}}]}}},
         ["body", "clusters", "gpu-west", "nodes", 0, "allocatable", "gpu"]),
        ({"clusters": {"gpu-west": {}}, "jobs": {"nodes": [{"name": "n0", "allocatable": {}}]}}, ["body", "jobs", "nodes", 0]),
        ({"clusters": {"gpu-west": {"queues": [{"name": "q", "weight": 1}]}, "gpu-east": {"queues": [{"name": "q", "weight": 2}]}}},
         ["body", "clusters", "gpu-east", "queues", "q", "weight"]),
        ({"clusters": {"gpu-west": 7}}, ["body", "clusters", "gpu-west"]),
        ({"clusters": {"gpu-west": {}}, "unknown": 1}, ["body", "unknown"]),
    ],
    ids=["no cluster", "a name that is no DNS label", "a bad field in one cluster", "nodes among the jobs",
         "a queue declared differently", "a cluster that is no object", "an unknown field"],
)
def test_bad_fleet_input_is_a_422_naming_the_cluster_and_field(client: TestClient, body: dict[str, Any], loc: list[Any]) -> None:
    answer = client.post("/v1/fleet/placements", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == loc


def test_fleet_what_if_names_the_cluster_the_nodes_inside_it_and_why_not_the_others(client: TestClient) -> None:
    body = {
        "clusters": {"gpu-west": _cluster(2, busy=1), "gpu-east": _cluster(2)},
        "changes": {"add_jobs": [vcjob("llm", replicas=2, gpus=8)]},
        "options": {"engine": "greedy"},
    }
    answer = client.post("/v1/fleet/what-if", json=body)
    assert answer.status_code == 200, answer.text
    (job,) = answer.json()["jobs"]
    assert job["cluster"] == "gpu-east"
    by_cluster = {c["cluster"]: c for c in job["clusters"]}
    assert by_cluster["gpu-east"]["starts"] and sorted(by_cluster["gpu-east"]["nodes"]) == ["n0", "n1"]
    assert not by_cluster["gpu-west"]["starts"] and by_cluster["gpu-west"]["gpus_short"] == 8.0
    assert answer.json()["placement"]["valid"]


def test_fleet_what_if_drains_a_node_by_its_qualified_name(client: TestClient) -> None:
    body = {
        "clusters": {"gpu-west": _cluster(1), "gpu-east": _cluster(1)},
        "changes": {"add_jobs": [vcjob("llm", replicas=1, gpus=8)], "drain_nodes": ["gpu-west/n0"]},
        "options": {"engine": "greedy"},
    }
    (job,) = client.post("/v1/fleet/what-if", json=body).json()["jobs"]
    assert job["cluster"] == "gpu-east"


def test_fleet_what_if_with_an_unknown_node_to_drain_is_a_422(client: TestClient) -> None:
    body = {"clusters": {"gpu-west": _cluster(1)}, "changes": {"drain_nodes": ["n0"]}}
    answer = client.post("/v1/fleet/what-if", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"][:3] == ["body", "changes", "drain_nodes"]
