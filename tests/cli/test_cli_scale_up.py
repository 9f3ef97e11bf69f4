"""`batchplace solve --scale-up TEMPLATES`: the plan in the tables and in the JSON output,
on the example `examples/scale-up/` (whose header says what to expect), and a bad
templates file is one line naming file, template and field, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scale-up"
SOLVE = ["solve", str(EXAMPLE / "cluster.yaml"), "--time-limit", "1", "--scale-up"]


def test_json_output_carries_the_plan_of_the_example() -> None:
    result = runner.invoke(app, [*SOLVE, str(EXAMPLE / "templates.yaml"), "--output", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)["scale_up"]
    assert [(row["template"], len(row["nodes"])) for row in plan["bought"]] == [("p5-48xlarge", 4)]
    assert plan["started"] == ["research/llm-pretrain"]
    assert [w["pod_group"] for w in plan["not_planned"]] == ["research/sweep"]
    assert "quota: queue capped capability 8 gpu, 0 in use, job needs 16" in plan["not_planned"][0]["reasons"]
    assert {bind["node"] for bind in plan["binds"]} == set(plan["bought"][0]["nodes"])


def test_table_output_shows_the_nodes_to_buy_and_the_gangs() -> None:
    result = runner.invoke(app, [*SOLVE, str(EXAMPLE / "templates.yaml")], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "scale-up plan: 4 node(s), 393.28 per hour, starts 1 waiting PodGroup(s)" in result.output
    assert "p5-48xlarge-domain-1" in result.output
    assert "no node helps" in result.output


def test_a_bad_template_is_one_line_naming_file_template_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "templates.yaml"
    bad.write_text("templates:\n  - {name: p5, allocatable: {gpu: 8000}, price_per_hour: -1, max_count: 2}\n")
    result = runner.invoke(app, [*SOLVE, str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: templates[0].price_per_hour: Input should be greater than or equal to 0" in result.output
    assert "Traceback" not in result.output


def test_a_template_naming_an_unknown_hypernode_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "templates.json"
    bad.write_text(json.dumps([{"name": "p5", "allocatable": {"gpu": 8000}, "price_per_hour": 1, "max_count": 2, "hypernodes": ["nowhere"]}]))
    result = runner.invoke(app, [*SOLVE, str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: templates[0].hypernodes[0]: no HyperNode 'nowhere' in the snapshot" in result.output


def test_scale_up_is_refused_with_several_clusters(tmp_path: Path) -> None:
    result = runner.invoke(app, ["solve", "--cluster", f"a={EXAMPLE / 'cluster.yaml'}", "--scale-up", str(EXAMPLE / "templates.yaml")])
    assert result.exit_code == 2
    assert "--scale-up: not with --cluster" in result.output


def test_what_if_answers_with_the_same_plan_as_solve() -> None:
    """`batchplace what-if --scale-up` plans on the cluster as the changes leave it; with no
    change that is the plan `solve --scale-up` gives, in the JSON and in the tables."""
    what_if = ["what-if", str(EXAMPLE / "cluster.yaml"), "--time-limit", "1", "--scale-up", str(EXAMPLE / "templates.yaml")]
    result = runner.invoke(app, [*what_if, "--output", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)["scale_up"]
    solved = json.loads(runner.invoke(app, [*SOLVE, str(EXAMPLE / "templates.yaml"), "--output", "json"]).output)["scale_up"]
    assert plan["bought"] == solved["bought"] and plan["started"] == solved["started"] == ["research/llm-pretrain"]
    table = runner.invoke(app, what_if, terminal_width=200)
    assert table.exit_code == 0, table.output
    assert "scale-up plan: 4 node(s), 393.28 per hour, starts 1 waiting PodGroup(s)" in table.output


def test_what_if_names_a_bad_templates_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "templates.yaml"
    bad.write_text("templates:\n  - {name: p5, allocatable: {gpu: 8000}, price_per_hour: -1, max_count: 2}\n")
    result = runner.invoke(app, ["what-if", str(EXAMPLE / "cluster.yaml"), "--scale-up", str(bad)])
    assert result.exit_code == 2, result.output
    assert "price_per_hour" in result.output and "Traceback" not in result.output
