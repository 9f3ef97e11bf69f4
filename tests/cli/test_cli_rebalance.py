"""`batchplace rebalance`: advice on moving running pods off hot nodes, from YAML with the
`batchplace.io/usage` annotation, as a table or as the JSON `/v1/what-if` returns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from models.rebalance import RebalanceAdvice

runner = CliRunner()


def _node(name: str, cpu_percent: int, cpu: int) -> str:
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations: {{batchplace.io/usage: "cpu={cpu_percent},memory=40,observed=2024-05-01T12:00:00Z"}}
status: {{allocatable: {{cpu: "{cpu}", memory: 64Gi}}}}
---
"""


def _pod(name: str, *, node: str, cpu: int, group: str | None) -> str:
    annotations = f"\n  annotations: {{scheduling.k8s.io/group-name: {group}}}" if group else ""
    scheduler = "batchplace" if group else "default-scheduler"
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}{annotations}
spec:
  schedulerName: {scheduler}
  nodeName: {node}
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
---
"""


# hot runs two pods of the 2-pod PodGroup web (minMember 1, so one may move alone) and a pod
# of another scheduler; the cpu shares are 23.75 % each for web and 47.5 % for the other.
CLUSTER = (
    _node("hot", 95, 16)
    + _node("cool", 50, 32)
    + """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: web, namespace: default}
spec: {minMember: 1, queue: default}
---
"""
    + _pod("web-0", node="hot", cpu=4, group="web")
    + _pod("web-1", node="hot", cpu=4, group="web")
    + _pod("other", node="hot", cpu=8, group=None)
)


@pytest.fixture()
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER, encoding="utf-8")
    return path


def test_json_is_the_advice_the_api_returns(cluster: Path) -> None:
    result = runner.invoke(app, ["rebalance", str(cluster), "--output", "json"])
    assert result.exit_code == 0, result.output
    advice = RebalanceAdvice.model_validate_json(result.output)
    (move,) = advice.moves
    assert (move.from_node, move.to_node, move.usage[0].from_percent) == ("hot", "cool", 23.75)
    assert advice.hot_after == 0


def test_the_table_names_the_move_and_the_nodes_before_and_after(cluster: Path) -> None:
    result = runner.invoke(app, ["rebalance", str(cluster), "--engine", "greedy"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "1 hot → 0 after 1 moves" in result.output
    assert "batchplace evicts nothing for balance" in result.output
    assert "cooled" in result.output
    assert "cpu 95.0%" in result.output and "cpu 71.2%" in result.output


def test_a_threshold_no_move_can_meet_is_a_reason_not_an_error(cluster: Path) -> None:
    result = runner.invoke(app, ["rebalance", str(cluster), "--usage-threshold", "cpu=40", "--output", "json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.output)
    reasons = {row["node"]: row["cause"] for row in advice["uncooled"]}
    assert reasons == {"hot": "not_enough_movable", "cool": "no_movable_pod"}


def test_a_bad_flag_is_a_usage_error(cluster: Path) -> None:
    result = runner.invoke(app, ["rebalance", str(cluster), "--engine", "magic"])
    assert result.exit_code == 2 and "--engine: unknown engine 'magic'" in result.output
