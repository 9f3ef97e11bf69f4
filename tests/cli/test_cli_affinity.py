"""Required node affinity from the command line: the manifest that was bound to the wrong GPU
model is bound to the right one by every engine; a pod no node admits prints its affinity
as written; the snapshot JSON carries the terms and loads back to the same snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from models.loaders import load_snapshot_files, load_snapshot_json
from solver.checker import check_placement
from solver.place import ENGINES

runner = CliRunner()

MANIFEST = """\
apiVersion: v1
kind: Node
metadata: {name: a100-0, labels: {gpu: a100}}
status: {allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Node
metadata: {name: h100-0, labels: {gpu: h100}}
status: {allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  schedulerName: batchplace
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: gpu, operator: In, values: [MODEL]}
  containers: [{name: c, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]
"""


def _manifest(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(MANIFEST.replace("MODEL", model))
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_requiring_h100_is_bound_to_h100_not_to_the_first_a100(tmp_path: Path, engine: str) -> None:
    path = _manifest(tmp_path, "h100")
    result = runner.invoke(app, ["solve", str(path), "--engine", engine, "--output", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert [(bind["pod"], bind["node"]) for bind in answer["binds"]] == [("default/trainer", "h100-0")]
    assert "not read" not in result.stderr


def test_a_pod_no_node_admits_prints_its_affinity_as_written(tmp_path: Path) -> None:
    result = runner.invoke(app, ["solve", str(_manifest(tmp_path, "v100")), "--engine", "greedy"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "eligibility: task main: 0/2 nodes: 2 node affinity mismatch (requires gpu In [v100])" in result.stdout


def test_the_snapshot_json_keeps_the_terms_and_loads_back(tmp_path: Path) -> None:
    path = _manifest(tmp_path, "h100")
    result = runner.invoke(app, ["snapshot", str(path)])
    assert result.exit_code == 0, result.output
    snapshot = load_snapshot_json(result.stdout)
    assert snapshot == load_snapshot_files([path]).snapshot
    (term,) = snapshot.pod_groups[0].tasks[0].required_node_affinity
    assert term.match_expressions[0].values == ("h100",)
    assert check_placement(snapshot, _a_bind_to(snapshot, "a100-0"))[0].rule == "node_affinity"


def _a_bind_to(snapshot, node: str):  # noqa: ANN001, ANN202
    from models.placement import Bind, Placement

    return Placement(binds=(Bind(pod=snapshot.pods[0].key, node=node, gpus=(0,)),))
