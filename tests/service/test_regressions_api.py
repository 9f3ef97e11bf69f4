"""`POST /v1/placements` on inputs that once killed the server (see `tests/regression_inputs.py`):
a 200 with a valid placement, every pending pod bound, and the server still answering."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from service.settings import ServiceSettings
from tests.regression_inputs import (
    BEST_EFFORT_REPLICAS,
    OPENB_PENDING,
    best_effort_job,
    best_effort_job_text,
    openb_last_batch,
    openb_last_batch_text,
)
from tests.service.service_helpers import assert_valid_answer

YAML = {"content-type": "application/yaml"}


@pytest.mark.parametrize("engine", ["auto", "cpsat"])
def test_the_openb_last_batch_gets_a_valid_answer_and_the_server_lives_on(client: TestClient, engine: str) -> None:
    response = client.post(
        "/v1/placements", content=openb_last_batch_text(), headers=YAML, params={"engine": engine, "time_limit_s": 5}
    )
    assert response.status_code == 200, response.text[:500]
    answer = response.json()
    assert_valid_answer(openb_last_batch(), answer)
    assert len(answer["binds"]) == OPENB_PENDING
    assert client.get("/healthz").status_code == 200


def test_a_best_effort_job_gets_an_optimal_answer(client: TestClient) -> None:
    response = client.post("/v1/placements", content=best_effort_job_text(), headers=YAML, params={"engine": "cpsat"})
    assert response.status_code == 200, response.text[:500]
    answer = response.json()
    assert_valid_answer(best_effort_job(), answer)
    assert (answer["status"], len(answer["binds"])) == ("OPTIMAL", BEST_EFFORT_REPLICAS)


def test_a_search_past_the_servers_memory_ceiling_answers_with_greedy_and_counts_it(client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(solver_memory_bytes=ServiceSettings.model_fields["solver_memory_bytes"].metadata[0].ge)
    response = client.post(
        "/v1/placements", content=openb_last_batch_text(), headers=YAML, params={"engine": "cpsat", "time_limit_s": 5}
    )
    assert response.status_code == 200, response.text[:500]
    answer = response.json()
    assert_valid_answer(openb_last_batch(), answer)
    assert answer["status"] == "FALLBACK" and answer["fallback"]["cause"] == "memory"
    assert 'batchplace_engine_fallbacks_total{cause="memory"} 1.0' in client.get("/metrics").text
