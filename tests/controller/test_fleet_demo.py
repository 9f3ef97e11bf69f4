"""`batchplace demo --live --clusters 2`: the multi-cluster example on a manager and two real
worker clusters comes out as its file says, and the command exits 0."""

from __future__ import annotations

from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()


def test_the_live_multi_cluster_demo_dispatches_binds_and_completes_the_job() -> None:
    result = runner.invoke(app, ["demo", "--live", "--clusters", "2"])
    assert result.exit_code == 0, result.output
    assert "OK   multicluster (2 workers)" in result.output
    assert "Dispatched" in result.output and "llm-pretrain-worker-0  Succeeded  east-" in result.output


def test_clusters_without_live_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["demo", "--clusters", "2"])
    assert result.exit_code == 2, result.output
    assert "only with --live" in result.output
