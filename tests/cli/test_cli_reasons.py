"""`batchplace solve` names every waiting task with its rule, in the table and in JSON:
the seed's workflow job binds task-a and says task-b waits for it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR

runner = CliRunner()
WAITS = "dependency: task-b waits for task-a (0 of 1 running)"


@pytest.mark.parametrize("engine", ["auto", "greedy"])
def test_the_workflow_jobs_waiting_task_is_in_the_json_and_the_table(engine: str) -> None:
    example = str(EXAMPLES_DIR / "workflow-job.yaml")
    answer = json.loads(runner.invoke(app, ["solve", example, "--engine", engine, "--output", "json"]).stdout)
    (outcome,) = answer["podgroups"]
    assert outcome["state"] == "scheduled" and outcome["reasons"] == [WAITS]
    table = runner.invoke(app, ["solve", example, "--engine", engine], env={"COLUMNS": "200"}).stdout
    assert WAITS in table
