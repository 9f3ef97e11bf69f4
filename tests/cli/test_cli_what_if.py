"""`batchplace what-if`: the question `POST /v1/what-if` answers, asked of YAML files, with the
same answer — the CLI's JSON is the API's response body on the same input (the service's
TestClient), the seed examples split into a base and the jobs to add; bad input is one line
naming the file or the flag, exit 2."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")  # as tests/service
from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from batchplace.cli import app  # noqa: E402
from service.app import create_app  # noqa: E402
from service.schemas import WhatIfResponse  # noqa: E402
from service.settings import ServiceSettings  # noqa: E402
from tests.cli.test_cli_rebalance import CLUSTER as HOT_CLUSTER  # noqa: E402
from tests.service.service_helpers import split_example  # noqa: E402

runner = CliRunner()
EXAMPLES = ["gang-min-available-4.yaml", "gang-min-available-20.yaml", "gpu-topology.yaml", "queue-weights.yaml",
            "hello-volcano-job.yaml", "workflow-job.yaml"]


def _without_timings(body: dict[str, Any]) -> dict[str, Any]:
    """The body with its wall-clock seconds (the one part two runs may not share) set aside."""
    body = json.loads(json.dumps(body))
    body["placement"].pop("solve_seconds")
    if body["rebalance"] is not None:
        body["rebalance"].pop("solve_seconds")
    return body


def api_answer(request: dict[str, Any]) -> dict[str, Any]:
    with TestClient(create_app(ServiceSettings())) as client:
        response = client.post("/v1/what-if", json=request)
    assert response.status_code == 200, response.text
    return response.json()


def cli_answer(tmp_path: Path, cluster: str, jobs: str | None, *flags: str) -> dict[str, Any]:
    """`batchplace what-if CLUSTER [--add-jobs JOBS] FLAGS --output json`, with the CLI's file
    names put back as the API names the same inputs, so warnings compare too."""
    (tmp_path / "cluster.yaml").write_text(cluster)
    arguments = ["what-if", str(tmp_path / "cluster.yaml"), *flags, "--output", "json"]
    if jobs is not None:
        (tmp_path / "jobs.yaml").write_text(jobs)
        arguments += ["--add-jobs", str(tmp_path / "jobs.yaml")]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.stderr
    WhatIfResponse.model_validate_json(result.stdout)
    text = result.stdout.replace(str(tmp_path / "cluster.yaml"), "snapshot_yaml")
    return json.loads(text.replace(str(tmp_path / "jobs.yaml"), "changes.add_jobs_yaml"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_json_is_the_apis_answer_on_the_same_input(tmp_path: Path, example: str) -> None:
    cluster, objects = split_example(example)
    jobs = yaml.safe_dump_all(objects)
    by_api = api_answer({"snapshot_yaml": cluster, "changes": {"add_jobs_yaml": jobs}, "options": {"engine": "greedy"}})
    by_cli = cli_answer(tmp_path, cluster, jobs, "--engine", "greedy")
    assert by_api["jobs"] and by_api["placement"]["valid"]  # something was asked, and answered
    if example == "hello-volcano-job.yaml":
        assert by_api["placement"]["warnings"]  # and the loader's warnings are compared too
    assert _without_timings(by_cli) == _without_timings(by_api)


def test_drain_added_nodes_objective_order_and_rebalance_answer_as_the_api(tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "spare"},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi"}}}
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node))
    cluster = HOT_CLUSTER + yaml.safe_dump({**node, "metadata": {"name": "old"}})
    by_api = api_answer(
        {"snapshot_yaml": cluster, "rebalance": True,
         "changes": {"drain_nodes": ["old"], "add_nodes": [node]},
         "options": {"engine": "greedy", "objective_order": ["throughput", "packing"]}}
    )
    by_cli = cli_answer(
        tmp_path, cluster, None, "--drain", "old", "--add-nodes", str(tmp_path / "nodes.yaml"), "--rebalance",
        "--engine", "greedy", "--objective-order", "throughput, packing",
    )
    assert by_api["drained"][0]["node"] == "old" and by_api["added_nodes"] == ["spare"]
    assert by_api["rebalance"]["moves"]  # the hot node's advice is there to compare
    assert _without_timings(by_cli) == _without_timings(by_api)


def test_the_table_says_per_job_whether_it_starts_and_why_not(tmp_path: Path) -> None:
    cluster, objects = split_example("gang-min-available-20.yaml")
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump_all(objects))
    result = runner.invoke(
        app, ["what-if", str(tmp_path / "cluster.yaml"), "--add-jobs", str(tmp_path / "jobs.yaml"), "--engine", "greedy"]
    )
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "default/gang-job does not start: 0/20 pods placed" in text and "gang: 3 of min 20 pods fit" in text


BAD_CALLS = {
    "unknown node to drain": (["--drain", "gpu-9"], "error: --drain: no node 'gpu-9' in the base snapshot to drain"),
    "a node among the jobs": (["--add-jobs", "{cluster}"], "error: {cluster}: document 1 (Node cpu-node-0): kind: "),
    "a job among the nodes": (["--add-nodes", "{jobs}"], "error: {jobs}: document 1 (Job default/gang-job): kind: "),
    "an empty jobs file": (["--add-jobs", "{empty}"], "error: {empty}: no objects passed"),
    "a missing jobs file": (["--add-jobs", "{missing}"], "error: {missing}: cannot read the file"),
    "an unknown engine": (["--engine", "magic"], "error: --engine: "),
    "an unknown tier": (["--objective-order", "throughput,speed"], "error: --objective-order: "),
    "a tier twice": (["--objective-order", "usage,usage"], "error: --objective-order: "),
    "no time": (["--time-limit", "0"], "error: --time-limit: "),
    "too much time": (["--time-limit", "4000"], "error: --time-limit: "),
    "an unknown output": (["--output", "xml"], "error: --output: "),
    "a job of another scheduler": (["--add-jobs", "{other}"], "error: {other}: document 1 (Job default/gang-job): "),
}


@pytest.mark.parametrize("flags, expected", BAD_CALLS.values(), ids=list(BAD_CALLS))
def test_bad_input_is_one_line_naming_the_file_or_flag_and_exit_two(tmp_path: Path, flags: list[str], expected: str) -> None:
    cluster, objects = split_example("gang-min-available-4.yaml")
    other = [{**job, "spec": {**job["spec"], "schedulerName": "default-scheduler"}} for job in objects]
    paths = {name: tmp_path / f"{name}.yaml" for name in ("cluster", "jobs", "empty", "missing", "other")}
    paths["cluster"].write_text(cluster)
    paths["jobs"].write_text(yaml.safe_dump_all(objects))
    paths["empty"].write_text("")
    paths["other"].write_text(yaml.safe_dump_all(other))
    named = {name: str(path) for name, path in paths.items()}
    result = runner.invoke(app, ["what-if", named["cluster"], *[flag.format(**named) for flag in flags]])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(expected.format(**named))
    assert result.stdout == ""


def test_the_help_says_what_it_asks_and_where_the_api_is() -> None:
    result = runner.invoke(app, ["what-if", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for words in ("POST /v1/what-if", "--add-jobs FILE", "--add-nodes FILE", "--drain NODE", "--rebalance", "GPUs it is short"):
        assert words in text, words
