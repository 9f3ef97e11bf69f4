"""`batchplace demo --live FILE...`: the user's own manifests on the local control plane
(issue 29, item 11: `demo --live` could only run the seed examples). The files are applied
at once, each object in its own namespace, the real controller runs, and the command says
per namespace what was bound; bad input stops before any server starts."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: cpu-a, labels: {kubernetes.io/hostname: cpu-a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: cpu-b, labels: {kubernetes.io/hostname: cpu-b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""

JOBS = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: etl, namespace: team-a}
spec:
  schedulerName: volcano
  minAvailable: 2
  tasks:
    - replicas: 2
      name: worker
      template:
        spec:
          containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: too-big, namespace: team-a}
spec:
  schedulerName: volcano
  minAvailable: 3
  tasks:
    - replicas: 3
      name: worker
      template:
        spec:
          containers: [{name: c, image: busybox, resources: {requests: {cpu: "3"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: lone}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
"""


def _write(directory: Path) -> list[str]:
    (directory / "cluster.yaml").write_text(CLUSTER, encoding="utf-8")
    (directory / "jobs.yaml").write_text(JOBS, encoding="utf-8")
    return [str(directory / "cluster.yaml"), str(directory / "jobs.yaml")]


def test_live_demo_runs_the_users_manifests_in_their_namespaces(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--live", *_write(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "team-a: 2 of 5 pending pods bound" in result.output
    assert "PodGroup etl Running" in result.output
    assert "PodGroup too-big Pending (" in result.output  # with the reason it waits
    assert "default: 1 of 1 pending pods bound" in result.output
    assert "etl-worker-0" in result.output and "cpu-" in result.output
    assert "hello-volcano-job" not in result.output  # not the seed examples


def test_live_demo_reads_a_directory_as_solve_does(tmp_path: Path) -> None:
    _write(tmp_path)
    result = runner.invoke(app, ["demo", "--live", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "team-a: 2 of 5 pending pods bound" in result.output


def test_bad_manifests_stop_before_any_server_starts(tmp_path: Path) -> None:
    bad = tmp_path / "jobs.yaml"
    bad.write_text(JOBS.replace("replicas: 2", "replicas: -2"), encoding="utf-8")
    result = runner.invoke(app, ["demo", "--live", str(bad)])
    assert result.exit_code == 2, result.output
    assert "jobs.yaml: document 1 (Job team-a/etl): spec.tasks[0].replicas" in result.output
    assert "starting etcd" not in result.output


def test_files_need_live_and_not_clusters(tmp_path: Path) -> None:
    files = _write(tmp_path)
    without_live = runner.invoke(app, ["demo", *files])
    assert without_live.exit_code == 2 and "FILE only with --live" in without_live.output
    with_clusters = runner.invoke(app, ["demo", "--live", "--clusters", "2", *files])
    assert with_clusters.exit_code == 2 and "FILE not with --clusters" in with_clusters.output
    from_stdin = runner.invoke(app, ["demo", "--live", "-"], input=JOBS)
    assert from_stdin.exit_code == 2 and "--live reads files" in from_stdin.output


def test_a_kube_apiserver_that_is_not_there_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "kube-apiserver"
    result = runner.invoke(app, ["demo", "--live", *_write(tmp_path)], env={"BATCHPLACE_KUBE_APISERVER": str(missing)})
    assert result.exit_code == 2, result.output
    assert f"error: --live: BATCHPLACE_KUBE_APISERVER={missing}: not an executable file" in result.output
    assert "Traceback" not in result.output


def test_manifests_with_dra_claims_are_refused_before_any_server_starts() -> None:
    """The local API server (1.20) drops pods' spec.resourceClaims: the pods would be placed
    without their devices, so --live says so instead of showing a wrong placement."""
    example = Path(__file__).resolve().parents[2] / "examples" / "dra-gpus.yaml"
    result = runner.invoke(app, ["demo", "--live", str(example)], env={"BATCHPLACE_KUBE_APISERVER": "/nonexistent"})
    assert result.exit_code == 2, result.output
    assert "names DRA resource claims" in result.output and "batchplace solve" in result.output
