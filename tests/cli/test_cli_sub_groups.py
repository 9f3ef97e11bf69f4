"""`batchplace solve FILE` on nested gangs as users submit them: a Volcano PodGroup with a
`subGroupPolicy`, a vcjob with a `partitionPolicy`, pods naming a Kubernetes Workload. Good
input places; bad input is exit 2 and one line naming file, document, object and field;
what only skips a pod is a warning — never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n0}
status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}}
"""
POD_GROUP = """\
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train}
spec:
  minMember: 4
  subGroupPolicy:
    - {name: shard, subGroupSize: SIZE, minSubGroups: 2, matchLabelKeys: [shard]}
"""
SHARD_POD = """\
---
apiVersion: v1
kind: Pod
metadata: {name: NAME, labels: {shard: "SHARD"}, annotations: {scheduling.k8s.io/group-name: train}}
spec: {schedulerName: volcano, containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "2"}}}]}
"""
WORKLOAD_POD = """\
---
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec: {schedulerName: batchplace, workloadRef: REF, containers: [{name: c, image: x}]}
"""
VCJOB = """\
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: llm}
spec:
  tasks:
    - name: worker
      replicas: REPLICAS
      partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartitions: 2}
      template: {spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "2"}}}]}}
"""


def _shard_pods() -> str:
    return "".join(
        SHARD_POD.replace("NAME", f"w{shard}-{index}").replace("SHARD", str(shard)) for shard in (0, 1) for index in (0, 1)
    )


def _solve(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "input.yaml"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["solve", str(path), "--engine", "greedy", "--output", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_a_volcano_pod_group_with_a_sub_group_policy_places_every_shard(tmp_path: Path) -> None:
    code, output = _solve(tmp_path, NODES + POD_GROUP.replace("SIZE", "2") + _shard_pods())
    assert code == 0, output
    binds = json.loads(output)["binds"]
    assert sorted(bind["pod"] for bind in binds) == ["default/w0-0", "default/w0-1", "default/w1-0", "default/w1-1"]


def test_a_negative_sub_group_size_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    code, output = _solve(tmp_path, NODES + POD_GROUP.replace("SIZE", "-2") + _shard_pods())
    assert code == 2, output
    assert "input.yaml: document 3 (PodGroup default/train): spec.subGroupPolicy[0].subGroupSize: must be >= 1, got -2" in output


def test_a_partition_policy_that_does_not_cover_the_replicas_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    code, output = _solve(tmp_path, NODES + VCJOB.replace("REPLICAS", "3"))
    assert code == 2, output
    assert (
        "input.yaml: document 3 (Job default/llm): spec.tasks[0].partitionPolicy.totalPartitions: totalPartitions 2 × "
        "partitionSize 2 = 4, not the task's replicas (3)"
    ) in output


def test_a_pod_naming_a_workload_not_in_the_input_is_skipped_with_a_warning(tmp_path: Path) -> None:
    pod = WORKLOAD_POD.replace("NAME", "lost").replace("REF", "{name: train, podGroup: workers}")
    code, output = _solve(tmp_path, NODES + pod)
    assert code == 0, output
    assert (
        "warning: " in output
        and "document 3 (Pod default/lost): spec.workloadRef.name names Workload 'train', which is not in the input; skipped"
        in output
    )


def test_a_workload_ref_without_its_pod_group_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    code, output = _solve(tmp_path, NODES + WORKLOAD_POD.replace("NAME", "p").replace("REF", "{name: train}"))
    assert code == 2, output
    assert "input.yaml: document 3 (Pod default/p): spec.workloadRef.podGroup: required, got nothing" in output
