"""`batchplace solve` refuses what the API server would refuse, with exit 2 and one line
naming file, document, object and field: objects run together by `cat a.yaml b.yaml |`
(a duplicate key), a job named `Hello_Job`, half a `nvidia.com/gpu`."""

from __future__ import annotations

from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR

runner = CliRunner()

# A user's cluster file whose last document has no `---` after it.
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: cpu-0}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-0}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "8", pods: "110"}}
"""
JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: NAME}
spec:
  schedulerName: volcano
  tasks:
    - name: worker
      replicas: 2
      template: {spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "GPUS"}}}]}}
"""


def _solve_stdin(text: str) -> tuple[int, str]:
    result = runner.invoke(app, ["solve", "-", "--engine", "greedy", "--output", "json"], input=text)
    return result.exit_code, result.output


def test_cat_of_a_cluster_and_a_job_without_a_separator_is_refused_naming_line_and_key() -> None:
    code, output = _solve_stdin(CLUSTER + JOB.replace("NAME", "train").replace("GPUS", "1"))
    assert code == 2, output
    assert '<stdin>: document 2: not valid YAML: key "apiVersion" already set in map (first at line 6) (line 10, column 1)' in output
    assert "Traceback" not in output


def test_a_job_named_hello_job_is_refused() -> None:
    code, output = _solve_stdin(CLUSTER + "---\n" + JOB.replace("NAME", "Hello_Job").replace("GPUS", "1"))
    assert code == 2, output
    assert '(Job default/Hello_Job): metadata.name: Invalid value: "Hello_Job": a lowercase RFC 1123 subdomain' in output


def test_half_a_gpu_is_refused_and_whole_ones_are_placed() -> None:
    code, output = _solve_stdin(CLUSTER + "---\n" + JOB.replace("NAME", "train").replace("GPUS", "0.5"))
    assert code == 2, output
    assert 'resources.limits.nvidia.com/gpu: Invalid value: "0.5": must be an integer' in output
    code, output = _solve_stdin(CLUSTER + "---\n" + JOB.replace("NAME", "train").replace("GPUS", "4"))
    assert code == 0, output
    assert output.count('"node": "gpu-0"') == 2


def test_every_seed_example_still_loads() -> None:
    for example in sorted(EXAMPLES_DIR.glob("*.yaml")):
        result = runner.invoke(app, ["snapshot", str(example)])
        assert result.exit_code == 0, f"{example.name}: {result.output}"
