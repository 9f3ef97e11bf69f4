"""`batchplace solve` on a pod as Kubernetes 1.30 writes it with `spec.schedulingGates`: no
engine binds it, and the table and the JSON say which gate it waits for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()
GATED = "gated: waiting for example.com/quota-check"


def _cluster(tmp_path: Path) -> Path:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "held", "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "schedulingGates": [{"name": "example.com/quota-check"}],
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    path = tmp_path / "gated.yaml"
    path.write_text(yaml.safe_dump_all([node, pod]), encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", ["auto", "cpsat", "greedy"])
def test_a_gated_100m_pod_is_not_bound_and_the_answer_names_the_gate(tmp_path: Path, engine: str) -> None:
    path = _cluster(tmp_path)
    result = runner.invoke(app, ["solve", str(path), "--engine", engine, "--output", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["binds"] == []
    (outcome,) = answer["podgroups"]
    assert outcome["state"] == "pending" and outcome["reasons"] == [GATED]
    table = runner.invoke(app, ["solve", str(path), "--engine", engine], env={"COLUMNS": "200"}).stdout
    assert GATED in table
