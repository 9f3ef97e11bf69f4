"""`batchplace solve --bound`: the LP relaxation's bound next to the placement."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR

runner = CliRunner()


def test_solve_bound_adds_the_lp_bound_to_the_json_contract() -> None:
    result = runner.invoke(app, ["solve", str(EXAMPLES_DIR / "gpu-topology.yaml"), "--output", "json", "--bound"])
    assert result.exit_code == 0, result.output
    contract = json.loads(result.stdout)
    assert contract["lp_bound"] >= contract["objective"] > 0
    assert contract["status"] in ("OPTIMAL", "FEASIBLE")


def test_solve_bound_prints_the_bound_line_for_people() -> None:
    result = runner.invoke(app, ["solve", str(EXAMPLES_DIR / "queue-weights.yaml"), "--bound"])
    assert result.exit_code == 0, result.output
    assert "LP bound on throughput" in result.stdout


def test_solve_without_bound_has_no_lp_bound() -> None:
    result = runner.invoke(app, ["solve", str(EXAMPLES_DIR / "gpu-topology.yaml"), "--output", "json"])
    assert "lp_bound" not in json.loads(result.stdout)
