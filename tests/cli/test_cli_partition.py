"""`--partition-parts` and `--ray-address`: solve cuts a cycle into parts when told, and a
Ray address that names no reachable cluster is one line naming the flag, exit status 2,
before anything is solved — on solve, bench and serve alike."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu-topology.yaml"


def _said(output: str) -> str:
    """The output as one line of words: rich wraps the error in a box."""
    return " ".join(output.replace("│", " ").split())


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_solve_in_parts_binds_what_the_whole_solve_binds() -> None:
    whole = runner.invoke(app, ["solve", str(EXAMPLE), "--output", "json"])
    parts = runner.invoke(app, ["solve", str(EXAMPLE), "--output", "json", "--partition-parts", "2"])
    assert whole.exit_code == 0 and parts.exit_code == 0, parts.output
    whole_answer, parts_answer = json.loads(whole.stdout), json.loads(parts.stdout)
    assert (parts_answer["engine"], parts_answer["status"]) == ("cpsat-partitioned", "FEASIBLE")
    assert sorted(bind["pod"] for bind in parts_answer["binds"]) == sorted(bind["pod"] for bind in whole_answer["binds"])
    assert parts_answer["binds"]


def test_partition_parts_below_one_is_a_usage_error() -> None:
    result = runner.invoke(app, ["solve", str(EXAMPLE), "--partition-parts", "0"])
    assert result.exit_code == 2
    assert "--partition-parts" in _said(result.output)


@pytest.mark.parametrize(
    "command",
    [["solve", str(EXAMPLE)], ["bench", "--sizes", "4x4", "--repeats", "1"], ["serve", "--port", "1"]],
    ids=["solve", "bench", "serve"],
)
def test_an_unreachable_ray_address_is_named_before_anything_runs(command: list[str], tmp_path: Path) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    result = runner.invoke(app, [*command, "--ray-address", address])
    assert result.exit_code == 2, result.output
    assert "--ray-address" in _said(result.output) and "does not answer" in _said(result.output)
    assert "Traceback" not in result.output


def test_a_ray_address_that_is_no_address_says_what_one_looks_like() -> None:
    result = runner.invoke(app, ["solve", str(EXAMPLE), "--ray-address", "head-node"])
    assert result.exit_code == 2
    assert "ray://HOST:PORT" in _said(result.output)
