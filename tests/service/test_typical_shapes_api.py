"""The API's typical shapes: `options.typical_shapes` of `POST /v1/what-if`, and the server's
own (`serve --typical-shapes`, `ServiceSettings.typical_shapes`) for every request that names
none; a bad shape is a 422 naming the entry and field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from fastapi.testclient import TestClient

from models.typical_shapes import TypicalShape
from service.settings import ServiceSettings
from tests.cli.test_cli_typical_shapes import CLUSTER

HALF_GPU = {"cpu": "1", "gpu": 0.5, "weight": 1}


def _base_and_job() -> tuple[str, list[dict[str, Any]]]:
    """The cluster without its pending pod, and that pod as the job to add (see CLUSTER)."""
    documents = list(yaml.safe_load_all(CLUSTER))
    return yaml.safe_dump_all(documents[:-1]), [documents[-1]]


def _nodes(client: TestClient, options: dict[str, Any]) -> list[str]:
    base, jobs = _base_and_job()
    response = client.post("/v1/what-if", json={"snapshot_yaml": base, "changes": {"add_jobs": jobs}, "options": options})
    assert response.status_code == 200, response.text
    (job,) = response.json()["jobs"]
    return list(job["nodes"])


def test_what_if_keeps_room_for_the_shapes_the_request_gives(client: TestClient) -> None:
    assert _nodes(client, {"engine": "greedy"}) == ["b"]
    assert _nodes(client, {"engine": "greedy", "typical_shapes": [HALF_GPU]}) == ["a"]


def test_the_servers_shapes_apply_when_a_request_names_none(client_for: Callable[..., TestClient]) -> None:
    client = client_for(typical_shapes=(TypicalShape(cpu_milli=1000, gpu_milli=500, weight=1.0),))
    assert _nodes(client, {"engine": "greedy"}) == ["a"]
    assert _nodes(client, {"engine": "greedy", "typical_shapes": [{"cpu": "1", "gpu": 0.2}]}) == ["b"]


def test_a_bad_shape_is_a_422_naming_the_entry_and_field(client: TestClient) -> None:
    base, jobs = _base_and_job()
    body = {"snapshot_yaml": base, "changes": {"add_jobs": jobs}, "options": {"typical_shapes": [HALF_GPU, {"gpu": 1.5}]}}
    response = client.post("/v1/what-if", json=body)
    assert response.status_code == 422
    assert "[1].gpu: 1.5 GPUs is neither whole GPUs nor a fraction of one (below 1)" in response.text


def test_the_servers_shapes_reach_every_worker_through_the_environment() -> None:
    settings = ServiceSettings(typical_shapes=(TypicalShape(cpu_milli=500, gpu_milli=250, weight=3.0, node_selector=(("gpu", "a100"),)),))
    assert ServiceSettings.from_env(settings.to_env(token_file=None)) == settings
