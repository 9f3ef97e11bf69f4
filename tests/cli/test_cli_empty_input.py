"""Input that holds no object is refused as kubectl refuses it ("no objects passed to
apply"): one line naming the input, exit 2 — never an empty answer printed as if solved.
Also: a blank `--scheduler-name` is a usage error naming the flag, not 0 binds."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR

runner = CliRunner()
HELLO = str(EXAMPLES_DIR / "hello-volcano-job.yaml")
EMPTY_TEXTS = {
    "empty file": "",
    "only comments": "# nothing here\n",
    "only separators": "---\n---\n",
    "an empty List": "apiVersion: v1\nkind: List\nitems: []\n",
}


@pytest.mark.parametrize("text", EMPTY_TEXTS.values(), ids=list(EMPTY_TEXTS))
@pytest.mark.parametrize("command", ["solve", "rebalance", "snapshot"])
def test_a_file_with_no_object_is_one_line_naming_it_and_exit_two(tmp_path: Path, text: str, command: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    result = runner.invoke(app, [command, str(path)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {path}: no objects passed")
    assert result.stdout == ""


def test_empty_standard_input_is_refused() -> None:
    result = runner.invoke(app, ["solve", "-"], input="")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: <stdin>: no objects passed")


def test_every_input_empty_names_them_all(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("")
    second.write_text("---\n")
    result = runner.invoke(app, ["solve", str(first), str(second)])
    assert result.exit_code == 2
    assert f"error: {first}, {second}: no objects passed" in result.stderr


def test_one_empty_file_beside_objects_is_fine_as_kubectl_applies_the_rest(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    result = runner.invoke(app, ["solve", str(empty), HELLO, "--engine", "greedy", "--output", "json"])
    assert result.exit_code == 0, result.stderr
    assert '"binds": [' in result.stdout and "no objects" not in result.stderr


def test_a_cluster_file_with_no_object_is_refused_naming_the_cluster(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    result = runner.invoke(app, ["solve", "--cluster", f"west={empty}", HELLO])
    assert result.exit_code == 2
    assert "west" in result.stderr and "no objects passed" in result.stderr


@pytest.mark.parametrize("blank", ["", "  "])
@pytest.mark.parametrize(
    "arguments",
    [["solve", HELLO], ["rebalance", HELLO], ["snapshot", HELLO], ["solve", "--cluster", f"a={HELLO}"], ["controller"]],
    ids=["solve", "rebalance", "snapshot", "solve --cluster", "controller"],
)
def test_a_blank_scheduler_name_is_a_usage_error_naming_the_flag(arguments: list[str], blank: str) -> None:
    result = runner.invoke(app, [*arguments, "--scheduler-name", "batchplace", "--scheduler-name", blank])
    assert result.exit_code == 2
    assert "--scheduler-name" in result.stderr and "blank" in result.stderr
    assert result.stdout == ""
