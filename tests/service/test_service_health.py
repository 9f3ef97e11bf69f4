"""Probes, Prometheus metrics, OpenAPI with examples, and settings from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.live import FixedSnapshot
from service.app import create_app
from service.settings import ENV_PREFIX, ServiceSettings, SettingsError
from tests.service.service_helpers import example_snapshot, snapshot_json

SMALL = snapshot_json(example_snapshot("hello-volcano-job.yaml"))


def test_healthz_and_readyz_answer(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {
        "status": "ready", "solver_slots": 2, "solver_slots_in_use": 0, "solver_queued": 0, "live_snapshot": "none",
    }


def test_readyz_reports_the_live_snapshot_and_turns_503_when_stopping() -> None:
    waiting = TestClient(create_app(ServiceSettings(), live_snapshot=FixedSnapshot(None)))
    assert waiting.get("/readyz").json()["live_snapshot"] == "waiting"
    app = create_app(ServiceSettings(), live_snapshot=FixedSnapshot(example_snapshot("hello-volcano-job.yaml")))
    client = TestClient(app)
    assert client.get("/readyz").json()["live_snapshot"] == "ready"
    app.state.pool.shutdown()
    response = client.get("/readyz")
    assert (response.status_code, response.json()["status"]) == (503, "stopping")


def test_metrics_count_requests_by_route_and_code_and_time_solves(client: TestClient) -> None:
    client.post("/v1/placements", json=SMALL, params={"engine": "greedy"})
    client.post("/v1/placements", content=b"{", headers={"content-type": "application/json"})
    client.get("/no/such/path")
    text = client.get("/metrics").text
    assert 'batchplace_http_requests_total{code="200",method="POST",route="/v1/placements"} 1.0' in text
    assert 'batchplace_http_requests_total{code="422",method="POST",route="/v1/placements"} 1.0' in text
    assert 'batchplace_http_requests_total{code="404",method="GET",route="unmatched"} 1.0' in text
    assert 'batchplace_http_request_duration_seconds_count{route="/v1/placements"} 2.0' in text
    assert 'batchplace_solve_duration_seconds_count{engine="greedy",status="GREEDY"} 1.0' in text
    assert 'batchplace_rejected_requests_total{reason="invalid"} 1.0' in text
    assert "batchplace_engine_fallbacks_total{" not in text  # greedy asked for: no fallback, no cause
    assert "batchplace_solver_slots_in_use 0.0" in text


def test_each_app_has_its_own_registry() -> None:
    first, second = TestClient(create_app(ServiceSettings())), TestClient(create_app(ServiceSettings()))
    first.post("/v1/placements", json=SMALL)
    assert 'route="/v1/placements"' not in second.get("/metrics").text


def test_requests_get_a_request_id_or_keep_theirs(client: TestClient) -> None:
    assert len(client.get("/healthz").headers["x-request-id"]) == 32
    assert client.get("/healthz", headers={"x-request-id": "abc-123"}).headers["x-request-id"] == "abc-123"
    assert client.get("/healthz", headers={"x-request-id": "bad id\n"}).headers["x-request-id"] != "bad id\n"


def test_openapi_documents_routes_errors_and_examples(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    placements = schema["paths"]["/v1/placements"]["post"]
    body = placements["requestBody"]["content"]
    assert body["application/json"]["schema"] == {"$ref": "#/components/schemas/Snapshot"}
    assert "Snapshot" in schema["components"]["schemas"] and body["application/json"]["example"]["nodes"]
    assert "application/yaml" in body
    assert {"200", "401", "413", "415", "422", "429"} <= set(placements["responses"])
    what_if = schema["paths"]["/v1/what-if"]["post"]
    assert what_if["requestBody"]["content"]["application/json"]["examples"]
    assert {"200", "422", "429", "503"} <= set(what_if["responses"])
    assert {"/healthz", "/readyz", "/metrics"} <= set(schema["paths"])
    assert client.get("/docs").status_code == 200


def test_the_documented_examples_answer_200(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    placements = schema["paths"]["/v1/placements"]["post"]["requestBody"]["content"]["application/json"]["example"]
    assert client.post("/v1/placements", json=placements).status_code == 200
    examples = schema["paths"]["/v1/what-if"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    for example in examples.values():
        response = client.post("/v1/what-if", json=example["value"])
        assert response.status_code == 200, response.text


# ---- settings ----


def test_settings_round_trip_through_the_environment_without_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  sekrit-token\n")
    settings = ServiceSettings(max_body_bytes=2048, solver_slots=3, max_time_limit_s=9.5)
    env = settings.to_env(token_file=token_file)
    assert "sekrit-token" not in "".join(env.values())
    back = ServiceSettings.from_env(env)
    assert back.token is not None and back.token.get_secret_value() == "sekrit-token"
    assert back.model_dump(exclude={"token"}) == settings.model_dump(exclude={"token"})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({ENV_PREFIX + "SOLVER_SLOTS": "0"}, "SOLVER_SLOTS"),
        ({ENV_PREFIX + "MAX_BODY_BYTES": "lots"}, "MAX_BODY_BYTES"),
        ({ENV_PREFIX + "TOKEN_FILE": "/nonexistent/token"}, "cannot read"),
    ],
    ids=["zero slots", "not a number", "missing token file"],
)
def test_bad_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        ServiceSettings.from_env(env)


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("\n")
    with pytest.raises(SettingsError, match="empty"):
        ServiceSettings.from_env({ENV_PREFIX + "TOKEN_FILE": str(tmp_path / "token")})


@pytest.mark.parametrize(("requested", "effective"), [(None, 5.0), (1.5, 1.5), (120.0, 30.0), (float("inf"), 5.0)])
def test_time_limit_defaults_and_caps(requested: float | None, effective: float) -> None:
    assert ServiceSettings().time_limit_for(requested) == effective
