"""Node usage on `batchplace solve`: the `batchplace.io/usage` annotation, and the
`--usage-threshold`, `--usage-weight` and `--usage-max-age` flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()


def _node(name: str, usage: str) -> str:
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations: {{batchplace.io/usage: "{usage}"}}
status: {{allocatable: {{cpu: "8", memory: 32Gi}}}}
---
"""


# busy is above the default 80 % cpu threshold; warm is fresh at 55 %; idle was measured
# ten minutes before the others, so it is stale by the default 300 s and not judged: its
# load is unknown, scored as warm's (the least loaded node that may take pods).
CLUSTER = (
    _node("busy", "cpu=93,memory=40,observed=2024-05-01T12:00:00Z")
    + _node("warm", "cpu=55,memory=50,observed=2024-05-01T12:00:00Z")
    + _node("idle", "cpu=5,memory=5,observed=2024-05-01T11:50:00Z")
    + """apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  schedulerName: batchplace
  containers: [{name: c, resources: {requests: {cpu: "6"}}}]
"""
)


@pytest.fixture()
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER, encoding="utf-8")
    return path


def _binds(path: Path, *flags: str) -> list[str]:
    result = runner.invoke(app, ["solve", str(path), "--output", "json", *flags])
    assert result.exit_code == 0, result.output
    return [bind["node"] for bind in json.loads(result.output)["binds"]]


def test_the_annotation_keeps_the_pod_off_the_busy_node_and_prefers_fresh_low_load(cluster: Path) -> None:
    assert _binds(cluster) == ["warm"], "idle's reading is stale: it ties with warm, which comes first"


def test_a_longer_max_age_judges_the_idle_node_and_the_pod_goes_there(cluster: Path) -> None:
    assert _binds(cluster, "--usage-max-age", "900") == ["idle"]


def test_thresholds_and_weights_from_flags(cluster: Path) -> None:
    assert _binds(cluster, "--usage-threshold", "cpu=50") == ["idle"], "warm at 55 % is now hot too"
    assert _binds(cluster, "--usage-threshold", "cpu=off", "--usage-weight", "memory=0") == ["warm"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--usage-threshold", "disk=50"], "expected cpu=…, memory=… or gpu=…"),
        (["--usage-threshold", "cpu=lots"], "cpu: Input should be a valid number"),
        (["--usage-weight", "gpu=1000"], "gpu: Input should be less than or equal to 100"),
    ],
    ids=["an unknown resource", "a threshold that is no number", "a weight past 100"],
)
def test_a_bad_flag_is_a_usage_error_naming_it(cluster: Path, flags: list[str], message: str) -> None:
    result = runner.invoke(app, ["solve", str(cluster), *flags], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert message in result.output


def test_a_bad_annotation_is_one_line_naming_the_node_and_part(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(_node("n1", "cpu=high,observed=2024-05-01T12:00:00Z"), encoding="utf-8")
    result = runner.invoke(app, ["solve", str(path)])
    assert result.exit_code == 2
    assert "(Node n1): metadata.annotations.batchplace.io/usage: cpu: expected a percent" in result.output


def _h100(name: str) -> str:
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations: {{batchplace.io/usage: "cpu=20,memory=30,gpu=70,observed=2024-05-01T12:00:00Z"}}
status: {{allocatable: {{cpu: "224", memory: 2000Gi, nvidia.com/gpu: "8"}}}}
---
"""


def _cpu_job(name: str) -> str:
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  schedulerName: volcano
  minAvailable: 2
  tasks:
    - name: w
      replicas: 2
      template:
        spec:
          containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "2", memory: 4Gi}}}}}}]
---
"""


@pytest.mark.parametrize("engine", ["greedy", "cpsat", "auto"])
def test_readings_on_the_h100_nodes_only_leave_cpu_only_jobs_on_the_cpu_nodes(tmp_path: Path, engine: str) -> None:
    """The issue's run: H100 nodes annotated with their load, CPU nodes not. Every CPU-only
    pod went to an H100 while the three CPU nodes stayed empty (unknown load was the top band)."""
    cpu_nodes = "".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: cpu-{i}}}\nstatus: {{allocatable: {{cpu: '32', memory: 128Gi}}}}\n---\n"
        for i in range(3)
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(_h100("h100-0") + _h100("h100-1") + cpu_nodes + "".join(_cpu_job(f"cpu-job-{j}") for j in range(4)))
    nodes = _binds(path, "--engine", engine)
    assert len(nodes) == 8 and all(node.startswith("cpu-") for node in nodes), nodes
