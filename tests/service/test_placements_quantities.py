"""`POST /v1/placements` on any quantity in any resource field, as YAML manifests and as the
JSON snapshot: a checked placement within the ceiling, else 422 naming the field — never a
5xx (models.quantity's ceilings)."""

from __future__ import annotations

import json
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.loaders import load_snapshot_json, load_snapshot_yaml_text, snapshot_to_json
from models.quantity import ceiling_problem
from tests.quantity_strategies import EDGES, FIELDS, QuantityCase, quantity_cases
from tests.service.service_helpers import assert_valid_answer

YAML = {"content-type": "application/yaml"}
SLOW_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]  # one app serves every example


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(case=quantity_cases())
def test_a_yaml_quantity_is_placed_within_its_ceiling_or_refused_with_its_path(
    case: QuantityCase, client: TestClient
) -> None:
    response = client.post("/v1/placements?time_limit_s=5", content=case.yaml_text().encode(), headers=YAML)
    assert response.status_code in (200, 422), response.text
    expected = case.expected_amount()
    if response.status_code == 422:
        (item,) = response.json()["detail"]
        assert item["document"] >= 1 and item["object"].startswith(f"{case.field.kind} ")
        if expected is None or expected < 0 or expected > case.field.ceiling:
            assert item["path"] == case.field.path and item["pointer"] == ""
        return
    assert expected is not None and 0 <= expected <= case.field.ceiling
    assert_valid_answer(load_snapshot_yaml_text(case.yaml_text()).snapshot, response.json())


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(
    resource=st.sampled_from(["cpu", "memory", "gpu", "example.com/widgets"]),
    amount=st.one_of(st.sampled_from(EDGES), st.integers(-(2**70), 2**70)),
    node_or_queue=st.booleans(),
)
def test_a_json_quantity_is_placed_within_its_ceiling_or_refused_at_its_pointer(
    resource: str, amount: int, node_or_queue: bool, client: TestClient
) -> None:
    body = json.loads(snapshot_to_json(load_snapshot_yaml_text(QuantityCase(FIELDS[0], "64").yaml_text()).snapshot))
    where = ("nodes", 0, "allocatable") if node_or_queue else ("queues", 0, "capability")
    body[where[0]][where[1]][where[2]][resource] = amount
    response = client.post("/v1/placements?time_limit_s=5", content=json.dumps(body).encode(),
                           headers={"content-type": "application/json"})
    assert response.status_code in (200, 422), response.text
    quota = where[-1] == "capability"
    if response.status_code == 422:
        (item,) = response.json()["detail"]
        if amount < 0 or ceiling_problem(resource, amount, quota=quota):
            assert item["pointer"] == f"/{where[0]}/0/{where[2]}/{resource.replace('/', '~1')}"  # RFC 6901
            assert item["loc"] == ["body", *where, resource]
        return
    assert 0 <= amount and ceiling_problem(resource, amount, quota=quota) is None
    assert_valid_answer(load_snapshot_json(body), response.json())
