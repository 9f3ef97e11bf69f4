"""`POST /v1/what-if` with `rebalance: true`: advice on moving running pods off hot nodes —
alone, combined with other changes, on the live snapshot, and refused when malformed."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from models.placement import Placement
from models.rebalance import RebalanceAdvice
from models.snapshot import Snapshot
from service.dependencies import get_live_source
from service.live import FixedSnapshot
from solver.checker import check_placement
from solver.rebalance.verify import NOT_ASKED
from tests.builders import make_bind, make_gang, make_node, make_running, make_snapshot
from tests.service.service_helpers import snapshot_json


def hot_cluster() -> Snapshot:
    """`solver.rebalance.load`'s worked example, with a pending job and a bystander node."""
    return make_snapshot(
        nodes=[
            make_node("n1", cpu=16, usage={"cpu_percent": 95}),
            make_node("n2", cpu=32, usage={"cpu_percent": 50}),
            make_node("n3", cpu=8, usage={"cpu_percent": 75}),
        ],
        groups=[
            *(make_gang(name, cpu=cpu, running_on=["n1"]) for name, cpu in (("a", 8), ("b", 4), ("c", 4))),
            make_gang("waiting", cpu=26),
        ],
    )


def ask(client: TestClient, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post("/v1/what-if", json=body)
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


def test_rebalance_alone_advises_one_move_on_the_cycle_the_solve_leaves(client: TestClient) -> None:
    answer = ask(client, {"snapshot": snapshot_json(hot_cluster()), "rebalance": True, "options": {"engine": "auto"}})
    advice = RebalanceAdvice.model_validate(answer["rebalance"])
    assert [b["node"] for b in answer["placement"]["binds"]] == ["n2"], "the waiting job takes 26 of n2's 32 cpu"
    (move,) = advice.moves
    assert (move.from_node, move.to_node, move.usage[0].resource) == ("n1", "n2", "cpu")
    assert (advice.hot_before, advice.hot_after, advice.engine, advice.status) == (1, 0, "cpsat", "OPTIMAL")
    assert {row.node: row.verdict for row in advice.nodes} == {"n1": "cooled", "n2": "cool", "n3": "cool"}
    assert move.pod in ("default/b-worker-0", "default/c-worker-0"), "a (8 cpu) no longer fits in the 6 cpu the new job leaves"


def test_without_rebalance_there_is_no_advice(client: TestClient) -> None:
    assert ask(client, {"snapshot": snapshot_json(hot_cluster())})["rebalance"] is None


def test_with_a_drain_the_drained_node_is_no_destination(client: TestClient) -> None:
    """n2 drained: nowhere cool has room for a pod of n1 (n3 would go past 80 %)."""
    answer = ask(client, {"snapshot": snapshot_json(hot_cluster()), "rebalance": True, "changes": {"drain_nodes": ["n2"]}})
    advice = RebalanceAdvice.model_validate(answer["rebalance"])
    assert advice.moves == () and advice.hot_after == 1
    (uncooled,) = advice.uncooled
    assert uncooled.node == "n1" and uncooled.cause == "no_destination"


def test_the_advice_passes_the_checker_on_the_posted_snapshot(client: TestClient) -> None:
    snapshot = make_snapshot(
        nodes=[make_node(f"n{i}", cpu=16, usage={"cpu_percent": percent}) for i, percent in enumerate((97, 92, 30, 20))],
        groups=[make_gang(f"g{i}", cpu=2 + i % 3, running_on=[f"n{i % 2}"]) for i in range(8)],
        running=[make_running("system", node="n0", cpu=1)],
    )
    advice = RebalanceAdvice.model_validate(ask(client, {"snapshot": snapshot_json(snapshot), "rebalance": True})["rebalance"])
    assert advice.hot_after == 0 and advice.moves
    moved = {move.pod for move in advice.moves}
    pods = [pod.model_copy(update={"phase": "pending", "node": None}) if pod.key in moved else pod for pod in snapshot.pods]
    checked = snapshot.replaced(pods=pods)
    binds = tuple(make_bind(move.pod, move.to_node) for move in advice.moves)
    assert [v for v in check_placement(checked, Placement(binds=binds)) if v.rule not in NOT_ASKED] == []


def test_rebalance_on_the_live_snapshot(client: TestClient) -> None:
    client.app.dependency_overrides[get_live_source] = lambda: FixedSnapshot(hot_cluster())  # type: ignore[attr-defined]
    answer = ask(client, {"rebalance": True})
    assert answer["base"] == "live" and answer["rebalance"]["hot_after"] == 0


def test_a_cluster_without_usage_needs_no_advice(client: TestClient) -> None:
    snapshot = make_snapshot(nodes=[make_node("n1")], groups=[make_gang("a", running_on=["n1"])])
    advice = ask(client, {"snapshot": snapshot_json(snapshot), "rebalance": True})["rebalance"]
    assert (advice["engine"], advice["moves"], advice["not_judged"]) == ("none", [], {"stale": 0, "missing": 1})


@pytest.mark.parametrize(
    ("body", "pointer", "words"),
    [
        ({"rebalance": "yes"}, "/rebalance", "valid boolean"),
        ({"rebalance": 1}, "/rebalance", "valid boolean"),
        ({"rebalance": None}, "/rebalance", "valid boolean"),
        ({"rebalanse": True}, "/rebalanse", "Extra inputs"),
        ({"changes": {"rebalance": True}}, "/changes/rebalance", "Extra inputs"),
    ],
    ids=["a string", "a number", "null", "a misspelt field", "inside changes"],
)
def test_a_bad_rebalance_is_422_naming_the_field(client: TestClient, body: dict[str, Any], pointer: str, words: str) -> None:
    detail = ask(client, {"snapshot": snapshot_json(hot_cluster()), **body}, status=422)["detail"]
    assert any(item["pointer"] == pointer and words in item["msg"] for item in detail), detail


def test_the_schema_documents_rebalance(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "rebalance" in schema["WhatIfRequest"]["properties"]
    assert {"moves", "nodes", "uncooled", "engine"} <= set(schema["RebalanceAdvice"]["properties"])
