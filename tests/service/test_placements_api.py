"""`POST /v1/placements`: a snapshot in (JSON, YAML manifests, YAML snapshot form), the
output contract plus the checker's verdict out; options as query parameters."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient

from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources
from tests.service.service_helpers import (
    assert_valid_answer,
    example_snapshot,
    example_text,
    snapshot_json,
)

EXAMPLES = (
    "hello-volcano-job.yaml",
    "queue-weights.yaml",
    "gang-min-available-20.yaml",
    "gang-min-available-4.yaml",
    "workflow-job.yaml",
    "gpu-topology.yaml",
    "mpi-job.yaml",
    "pytorch-job.yaml",
)
YAML = {"content-type": "application/yaml"}


@pytest.mark.parametrize("example", EXAMPLES)
def test_snapshot_json_of_each_example_gets_a_checked_placement(client: TestClient, example: str) -> None:
    snapshot = example_snapshot(example)
    response = client.post("/v1/placements", json=snapshot_json(snapshot), params={"engine": "greedy"})
    assert response.status_code == 200, response.text
    assert_valid_answer(snapshot, response.json())


@pytest.mark.parametrize("example", EXAMPLES)
def test_yaml_manifests_answer_as_the_cli_solves_them(client: TestClient, example: str) -> None:
    snapshot = example_snapshot(example)
    response = client.post("/v1/placements", content=example_text(example), headers=YAML, params={"engine": "greedy"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert_valid_answer(snapshot, answer)
    expected = json.loads(json.dumps(place(snapshot, SolveConfig(engine="greedy")).to_contract()))
    assert answer["binds"] == expected["binds"] and answer["podgroups"] == expected["podgroups"]


def test_answer_is_the_output_contract_plus_verdict_and_warnings(client: TestClient) -> None:
    snapshot = example_snapshot("gang-min-available-4.yaml")
    answer = client.post("/v1/placements", json=snapshot_json(snapshot)).json()
    contract_keys = set(place(snapshot).to_contract())
    assert set(answer) == contract_keys | {"valid", "violations", "warnings"}
    assert answer["valid"] is True and answer["violations"] == [] and answer["warnings"] == []


def test_the_snapshot_form_written_as_yaml_is_read_too(client: TestClient) -> None:
    snapshot = example_snapshot("gpu-topology.yaml")
    response = client.post("/v1/placements", content=yaml.safe_dump(snapshot_json(snapshot)), headers=YAML)
    assert response.status_code == 200, response.text
    assert_valid_answer(snapshot, response.json())


def test_loader_warnings_come_back_with_the_answer(client: TestClient) -> None:
    text = example_text("hello-volcano-job.yaml") + "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    answer = client.post("/v1/placements", content=text, headers=YAML).json()
    assert any("ConfigMap" in line and "skipped" in line for line in answer["warnings"])


def test_a_gang_that_cannot_fit_stays_pending_with_its_gang_reason(client: TestClient) -> None:
    answer = client.post("/v1/placements", content=example_text("gang-min-available-20.yaml"), headers=YAML).json()
    (group,) = answer["podgroups"]
    assert group["state"] == "pending" and answer["binds"] == []
    assert group["reasons"][0].startswith("gang: ")


def test_time_limit_is_capped_at_the_servers_maximum_and_said_in_a_header(client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(max_time_limit_s=2.0)
    body = snapshot_json(example_snapshot("hello-volcano-job.yaml"))
    capped = client.post("/v1/placements", json=body, params={"time_limit_s": 600})
    assert capped.status_code == 200
    assert capped.headers["x-batchplace-time-limit-s"] == "2"
    default = client.post("/v1/placements", json=body)
    assert default.headers["x-batchplace-time-limit-s"] == "2"  # the default 5 s, capped too


@pytest.mark.parametrize("engine", ["auto", "cpsat", "greedy"])
def test_every_engine_name_is_accepted(client: TestClient, engine: str) -> None:
    snapshot = example_snapshot("queue-weights.yaml")
    response = client.post("/v1/placements", json=snapshot_json(snapshot), params={"engine": engine, "time_limit_s": 2})
    assert response.status_code == 200, response.text
    assert_valid_answer(snapshot, response.json())


def test_gpu_gang_with_preemption_answers_a_valid_placement(client: TestClient) -> None:
    low = make_gang("low", replicas=2, gpus=8, queue="ml", priority=0, running_on=["n1", "n2"])
    high = make_gang("high", replicas=2, gpus=8, queue="ml", priority=10)
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=8), make_node("n2", gpus=8)],
        groups=[low, high],
        queues=[make_queue("ml", capability=resources(gpus=16))],
    )
    answer = client.post("/v1/placements", json=snapshot_json(snapshot), params={"engine": "greedy"}).json()
    assert_valid_answer(snapshot, answer)
    assert {e["for"] for e in answer["evictions"]} <= {"default/high"}


def test_the_body_can_be_sent_without_content_type(client: TestClient) -> None:
    body = json.dumps(snapshot_json(example_snapshot("hello-volcano-job.yaml"))).encode()
    response = client.post("/v1/placements", content=body, headers={"content-type": ""})
    assert response.status_code == 200, response.text
