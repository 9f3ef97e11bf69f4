"""Pods with scheduling gates over HTTP: a posted JSON snapshot carries `scheduling_gates`,
and neither a placement nor a what-if binds a gated pod; both say which gate it waits for."""

from __future__ import annotations

import copy
from typing import Any

from fastapi.testclient import TestClient

from tests.builders import gated, make_gang, make_node, make_snapshot
from tests.service.service_helpers import snapshot_json
from tests.service.test_what_if_api import ask, node_object, vcjob

QUOTA_CHECK = "example.com/quota-check"
GATED = f"gated: waiting for {QUOTA_CHECK}"


def test_a_posted_snapshot_s_gated_pod_is_not_bound_and_its_group_says_why(client: TestClient) -> None:
    body = snapshot_json(make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[gated(make_gang("job", cpu=0.1), QUOTA_CHECK)]))
    assert body["pods"][0]["scheduling_gates"] == [QUOTA_CHECK]
    for engine in ("greedy", "auto"):
        answer = client.post("/v1/placements", json=body, params={"engine": engine}).json()
        assert answer["valid"] is True and answer["binds"] == []
        (group,) = answer["podgroups"]
        assert group["state"] == "pending" and group["reasons"] == [GATED]


def test_the_snapshot_schema_describes_the_gates(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    pod = next(value for name, value in schema["components"]["schemas"].items() if name.startswith("Pod") and "scheduling_gates" in value.get("properties", {}))
    assert "schedulingGates" in pod["properties"]["scheduling_gates"]["description"]


def test_a_what_if_job_whose_template_is_gated_does_not_start_and_names_the_gate(client: TestClient) -> None:
    job: dict[str, Any] = vcjob("llm", replicas=2, gpus=1)
    held = copy.deepcopy(job)
    held["spec"]["tasks"][0]["template"]["spec"]["schedulingGates"] = [{"name": QUOTA_CHECK}]
    base = {"snapshot": {}, "changes": {"add_nodes": [node_object("n0", gpus=8)]}}
    free = ask(client, {**base, "changes": {**base["changes"], "add_jobs": [job]}})["jobs"][0]
    assert free["starts"] is True  # the same job without its gate starts: the gate is what holds it
    (answer,) = ask(client, {**base, "changes": {**base["changes"], "add_jobs": [held]}})["jobs"]
    assert answer["starts"] is False and answer["binds"] == [] and answer["placed"] == 0
    assert answer["blocking"] == [GATED] and answer["blocking_rules"] == ["gated"]
