"""`batchplace solve` names every waiting task with its rule, in the table and in JSON:
the seed's workflow job binds task-a and says task-b waits for it."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_a_started_workflow_whose_task_waits_says_started_and_what_it_waits_on(tmp_path: Path) -> None:
    # The seed's workflow with the job's default minAvailable (all 3 pods) and 2 task-b pods:
    # placed/min 1/3 — "scheduled" beside it read as a contradiction.
    text = (EXAMPLES_DIR / "workflow-job.yaml").read_text()
    text = text.replace("  minAvailable: 1\n  schedulerName", "  minAvailable: 3\n  schedulerName")
    text = text.replace("    - name: task-b\n      replicas: 1\n      minAvailable: 0", "    - name: task-b\n      replicas: 2")
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text(text)
    table = runner.invoke(app, ["solve", str(workflow)], env={"COLUMNS": "250"}).stdout
    row = next(line for line in table.splitlines() if "default/workflow-job" in line)
    assert "1/3" in row and "started, task-b waiting on dependency task-a" in row
    assert " scheduled " not in row


@pytest.mark.parametrize("engine", ["auto", "greedy"])
def test_a_started_gangs_pods_left_pending_each_have_a_reason_in_the_table_and_the_json(engine: str) -> None:
    example = str(EXAMPLES_DIR / "gang-min-available-4.yaml")
    answer = json.loads(runner.invoke(app, ["solve", example, "--engine", engine, "--output", "json"]).stdout)
    (outcome,) = answer["podgroups"]
    assert (outcome["state"], outcome["placed"]) == ("scheduled", 8)
    bound = {bind["pod"] for bind in answer["binds"]}
    reasons = {pod["pod"]: pod["reason"] for pod in outcome["unplaced_pods"]}
    assert set(reasons) == {f"default/gang-job-worker-{i}" for i in range(20)} - bound
    assert set(reasons.values()) == {"capacity: task worker: 0/4 nodes fit another pod: 4 insufficient cpu"}
    table = runner.invoke(app, ["solve", example, "--engine", engine], env={"COLUMNS": "200"}).stdout
    assert "Pods of started PodGroups left pending" in table
    for pod, reason in reasons.items():
        assert any(pod in line and reason in line for line in table.splitlines()), pod
