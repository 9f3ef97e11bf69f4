"""`--typical-shapes FILE` on solve, serve and controller: the packing keeps room for the
shapes given, and a bad file is one line naming the entry and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()

# Node a has two idle devices; on node b a running pod holds 400 of device 0. A 200-milli
# pod by best fit goes to b's 600 left (tightest), stranding 400 that no half-GPU pod can
# use; told that half-GPU pods are typical, the packing sends it to a instead.
CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "8", memory: 16Gi, nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: "8", memory: 16Gi, nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: holder, annotations: {batchplace.io/gpus: "0"}}
spec:
  nodeName: b
  containers: [{name: c, resources: {requests: {cpu: "1", batchplace.io/gpu-milli: "400"}, limits: {batchplace.io/gpu-milli: "400"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  schedulerName: batchplace
  containers: [{name: c, resources: {requests: {cpu: "1", batchplace.io/gpu-milli: "200"}, limits: {batchplace.io/gpu-milli: "200"}}}]
"""


def _solve(tmp_path: Path, *extra: str) -> list[dict[str, object]]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    result = runner.invoke(app, ["solve", str(cluster), "--engine", "greedy", "--output", "json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["binds"]  # type: ignore[no-any-return]


def test_solve_keeps_room_for_the_typical_shapes_given(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("shapes:\n  - {cpu: \"1\", gpu: 0.5, weight: 1}\n")
    assert [b["node"] for b in _solve(tmp_path)] == ["b"]  # the pending pod's own shape: 400 left is usable
    assert [b["node"] for b in _solve(tmp_path, "--typical-shapes", str(shapes))] == ["a"]


@pytest.mark.parametrize("command", [["solve", "cluster.yaml"], ["serve"], ["controller", "--no-leader-elect"]])
def test_a_bad_file_is_refused_before_anything_runs_naming_the_field(tmp_path: Path, command: list[str]) -> None:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("shapes:\n  - {cpu: \"1\", gpu: 1.5}\n")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    args = [part if part != "cluster.yaml" else str(tmp_path / part) for part in command]
    result = runner.invoke(app, [*args, "--typical-shapes", str(shapes)])
    assert result.exit_code == 2
    assert "shapes[0].gpu: 1.5 GPUs is neither whole GPUs nor a fraction of one (below 1)" in " ".join(result.output.split())
