"""Bad input gets a 4xx naming the field (JSON pointer) and the problem — never a 500 —
and the one error table maps each error class to its status."""

from __future__ import annotations

import typing

import pytest
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient

from models.errors import FieldError, InputFormatError, Location, SnapshotError
from service.errors import (
    ERROR_TABLE,
    BodyTooLarge,
    InvalidRequest,
    LiveSnapshotUnavailable,
    NoSolverSlot,
    Unauthorized,
    UnsupportedMedia,
    error_response,
    json_pointer,
    problem_from_snapshot_error,
)
from solver.checker import PlacementRejected
from tests.builders import make_gang, make_node, make_queue, make_snapshot
from tests.service.service_helpers import example_snapshot, example_text, snapshot_json, split_example

YAML = {"content-type": "application/yaml"}


def test_error_table_maps_each_error_to_its_status() -> None:
    table = {cls: status for cls, status, _ in ERROR_TABLE}
    assert table == {
        Unauthorized: 401,
        BodyTooLarge: 413,
        UnsupportedMedia: 415,
        InvalidRequest: 422,
        SnapshotError: 422,
        RequestValidationError: 422,
        NoSolverSlot: 429,
        LiveSnapshotUnavailable: 503,
        PlacementRejected: 500,
        Exception: 500,
    }
    assert ERROR_TABLE[-1][0] is Exception  # the catch-all comes last


def test_retry_after_rides_on_429_and_503() -> None:
    response, reason = error_response(NoSolverSlot(retry_after_s=3, slots=2, queued=8))
    assert (response.status_code, response.headers["retry-after"], reason) == (429, "3", "no_slot")
    response, _ = error_response(LiveSnapshotUnavailable(retry_after_s=2))
    assert (response.status_code, response.headers["retry-after"]) == (503, "2")


@pytest.mark.parametrize(
    ("loc", "pointer"),
    [
        (("body", "pod_groups", 3, "tasks", 0, "replicas"), "/pod_groups/3/tasks/0/replicas"),
        (("body", "nodes", 0, "labels", "nvidia.com/gpu"), "/nodes/0/labels/nvidia.com~1gpu"),
        (("body", "a~b"), "/a~0b"),
        (("body",), ""),
        (("query", "engine"), None),
    ],
    ids=["nested path", "slash escaped", "tilde escaped", "the whole body", "a query parameter has none"],
)
def test_json_pointer_follows_rfc_6901(loc: tuple[str | int, ...], pointer: str | None) -> None:
    assert json_pointer(loc) == pointer


def test_a_yaml_error_names_document_object_and_path_beside_the_pointer() -> None:
    error = FieldError("must be ≥ 0", location=Location("body", 4, "Job default/x"), path=("spec", "tasks", 0, "replicas"))
    problem = problem_from_snapshot_error(error, at=("body", "snapshot_yaml"), form="yaml").to_json()
    assert problem == {
        "loc": ["body", "snapshot_yaml"],
        "pointer": "/snapshot_yaml",
        "msg": "must be ≥ 0",
        "type": "snapshot_field",
        "document": 4,
        "object": "Job default/x",
        "path": "spec.tasks[0].replicas",
    }


def test_a_list_item_error_points_into_the_item() -> None:
    error = InputFormatError("bad", location=Location("changes.add_jobs", 2), path=("spec",))
    problem = problem_from_snapshot_error(error, at=("body", "changes", "add_jobs"), form="items")
    assert json_pointer(problem.loc) == "/changes/add_jobs/1/spec"


def _detail(response) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == 422, response.text
    (item,) = response.json()["detail"]
    return item


def test_a_wrong_snapshot_field_is_422_with_its_pointer(client: TestClient) -> None:
    body = snapshot_json(example_snapshot("gang-min-available-4.yaml"))
    body["pod_groups"][0]["tasks"][0]["requests"]["gpu"] = 1500
    item = _detail(client.post("/v1/placements", json=body))
    assert item["pointer"] == "/pod_groups/0/tasks/0/requests"
    assert item["loc"] == ["body", "pod_groups", 0, "tasks", 0, "requests"]
    assert "1500 milli-GPU" in item["msg"]


def test_an_unknown_snapshot_key_is_named(client: TestClient) -> None:
    body = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
    body["nodes"][1]["gpus_count"] = 3
    item = _detail(client.post("/v1/placements", json=body))
    assert item["pointer"] == "/nodes/1/gpus_count"


def test_a_cross_field_error_points_at_the_whole_body(client: TestClient) -> None:
    body = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
    body["nodes"].append(body["nodes"][0])
    item = _detail(client.post("/v1/placements", json=body))
    assert item["pointer"] == "" and "duplicate node" in item["msg"]


@pytest.mark.parametrize(
    "body",
    [b"{", b"[1, 2]", b"null", b"\xff\xfe", b'{"nodes": "many"}', b'{"queues": [7]}', b'{"nodes": [{"allocatable": 5}]}'],
    ids=["truncated JSON", "an array", "null", "not UTF-8", "nodes a string", "a queue a number", "allocatable a number"],
)
def test_malformed_json_is_422_not_500(client: TestClient, body: bytes) -> None:
    response = client.post("/v1/placements", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"]


def test_a_yaml_manifest_error_names_document_and_object(client: TestClient) -> None:
    text = example_text("gang-min-available-4.yaml").replace("replicas: 20", "replicas: four")
    item = _detail(client.post("/v1/placements", content=text, headers=YAML))
    assert item["document"] == 5 and item["object"] == "Job default/gang-job"
    assert item["path"] == "spec.tasks[0].replicas" and item["pointer"] == ""


@pytest.mark.parametrize("text", ["a: [b", "- 1\n- 2\n", "kind: Node\n", "\t\x00"], ids=["bad YAML", "a list", "no apiVersion", "control chars"])
def test_malformed_yaml_is_422_not_500(client: TestClient, text: str) -> None:
    response = client.post("/v1/placements", content=text.encode(), headers=YAML)
    assert response.status_code == 422, response.text


def test_an_unknown_content_type_is_415(client: TestClient) -> None:
    response = client.post("/v1/placements", content=b"a=b", headers={"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 415
    assert "application/json" in response.json()["detail"]


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({"engine": "fastest"}, ["query", "engine"]),
        ({"time_limit_s": "-1"}, ["query", "time_limit_s"]),
        ({"time_limit_s": "nan"}, ["query", "time_limit_s"]),
        ({"engin": "greedy"}, ["query", "engin"]),
        ({"objective_order": ["fairness", "fairness"]}, ["query", "objective_order"]),
    ],
    ids=["unknown engine", "negative time limit", "NaN time limit", "a misspelt option", "a tier twice"],
)
def test_a_bad_option_is_422_naming_the_query_parameter(client: TestClient, params: dict, loc: list) -> None:
    body = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
    response = client.post("/v1/placements", json=body, params=params)
    assert response.status_code == 422, response.text
    items = response.json()["detail"]
    assert any(item["loc"] == loc and item["pointer"] is None for item in items), items


def test_the_objective_order_decides_between_fairness_and_throughput(client: TestClient) -> None:
    # One 4-GPU node; queues a, b, c of equal weight: a asks 4 GPUs, b and c 1 each.
    # Fairness first serves b and c (their deserved 1 GPU each); throughput first runs a.
    snapshot = make_snapshot(
        nodes=[make_node("n", cpu=16, gpus=4)],
        queues=[make_queue("a"), make_queue("b"), make_queue("c")],
        groups=[make_gang("big", gpus=4, queue="a"), make_gang("small-b", gpus=1, queue="b"),
                make_gang("small-c", gpus=1, queue="c")],
    )
    body = snapshot_json(snapshot)
    fair = client.post("/v1/placements", json=body, params={"engine": "cpsat"})
    busy = client.post("/v1/placements", json=body, params={"engine": "cpsat", "objective_order": ["throughput"]})
    assert fair.status_code == busy.status_code == 200
    assert sorted(b["pod"] for b in fair.json()["binds"]) == ["default/small-b-worker-0", "default/small-c-worker-0"]
    assert [b["pod"] for b in busy.json()["binds"]] == ["default/big-worker-0"]
    assert fair.json()["valid"] and busy.json()["valid"]


def test_error_bodies_never_echo_the_input(client: TestClient) -> None:
    body = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
    body["nodes"][0]["name"] = ["a-very-recognisable-marker"]
    response = client.post("/v1/placements", json=body)
    assert response.status_code == 422
    assert "a-very-recognisable-marker" not in response.text


def test_objective_tier_names_are_the_solvers() -> None:
    from solver.objective import TIERS

    from service.schemas import ObjectiveTier

    assert typing.get_args(ObjectiveTier) == TIERS


def _laughs(top_key: str) -> str:
    """Nine anchors, each nine of the previous: 9⁹ list items once the aliases are read."""
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\n{top_key}: *l8\n"


@pytest.mark.parametrize("top_key", ["nodes", "items"], ids=["snapshot form", "a List's items"])
def test_a_yaml_alias_bomb_is_refused_quickly(client: TestClient, top_key: str) -> None:
    import time

    started = time.monotonic()
    response = client.post("/v1/placements", content=_laughs(top_key).encode(), headers=YAML)
    assert response.status_code == 422 and "aliases expand" in response.json()["detail"][0]["msg"]
    assert time.monotonic() - started < 5
    base = split_example("gang-min-available-4.yaml")[0]
    bomb_in_what_if = client.post("/v1/what-if", json={"snapshot_yaml": base, "changes": {"add_jobs_yaml": _laughs(top_key)}})
    assert bomb_in_what_if.status_code == 422
    assert bomb_in_what_if.json()["detail"][0]["pointer"] == "/changes/add_jobs_yaml"


def test_modest_yaml_aliases_are_still_read(client: TestClient) -> None:
    text = (
        "nodes:\n"
        "- {name: a, allocatable: {cpu: 1000}, labels: &zone {zone: x, pool: train}}\n"
        "- {name: b, allocatable: {cpu: 1000}, labels: *zone}\n"
    )
    response = client.post("/v1/placements", content=text.encode(), headers=YAML)
    assert response.status_code == 200, response.text
