"""The `batchplace` command as a user runs it: demo verdicts, the JSON output contract,
and one clear line (exit 2, no traceback) for every kind of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR, SCENARIOS, run_demo
from models.loaders import load_snapshot_json
from solver.checker import check_placement
from models.loaders import load_snapshot_files
from models.placement import Bind, ClaimAllocation, Eviction, Placement

runner = CliRunner()
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.yaml"))


def test_every_demo_scenario_comes_out_as_expected() -> None:
    verdicts = [verdict for _, verdict in run_demo()]
    assert [v.scenario for v in verdicts] == [s.file for s in SCENARIOS]
    assert [v for v in verdicts if not v.ok] == []


def test_demo_command_prints_a_verdict_per_scenario_and_exits_zero() -> None:
    result = runner.invoke(app, ["demo", "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output.count("OK ") == len(SCENARIOS)
    assert "FAIL" not in result.output


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_solve_json_follows_the_output_contract(example: Path) -> None:
    result = runner.invoke(app, ["solve", str(example), "--output", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert set(answer) >= {"engine", "status", "solve_seconds", "binds", "evictions", "podgroups", "queues"}
    assert isinstance(answer["solve_seconds"], float)
    for bind in answer["binds"]:
        assert set(bind) >= {"pod", "node", "gpus"} and all(isinstance(g, int) for g in bind["gpus"])
    for outcome in answer["podgroups"]:
        assert set(outcome) >= {"name", "queue", "placed", "min_member", "state", "reasons"}
        assert outcome["state"] in ("scheduled", "pending")
        if outcome["state"] == "pending":
            assert outcome["reasons"], f"{outcome['name']} is pending without a reason"
    for share in answer["queues"]:
        assert set(share["allocated"]) >= {"cpu", "memory", "gpu"}
    # What the JSON says is a placement the independent checker accepts.
    snapshot = load_snapshot_files([example]).snapshot
    placement = Placement(
        binds=tuple(Bind.model_validate(b) for b in answer["binds"]),
        evictions=tuple(Eviction.model_validate(e) for e in answer["evictions"]),
        claims=tuple(ClaimAllocation.model_validate(c) for c in answer["claims"]),
    )
    assert check_placement(snapshot, placement) == ()


def test_gang_of_twenty_json_names_the_gang_rule_and_the_numbers() -> None:
    result = runner.invoke(app, ["solve", str(EXAMPLES_DIR / "gang-min-available-20.yaml"), "--output", "json"])
    answer = json.loads(result.stdout)
    (outcome,) = answer["podgroups"]
    assert outcome["state"] == "pending" and outcome["placed"] == 0 and answer["binds"] == []
    assert outcome["reasons"][0].startswith("gang: ") and "of min 20 pods fit" in outcome["reasons"][0]


def test_snapshot_command_prints_json_that_loads_back_to_the_same_snapshot() -> None:
    example = EXAMPLES_DIR / "gpu-topology.yaml"
    result = runner.invoke(app, ["snapshot", str(example)])
    assert result.exit_code == 0, result.output
    assert load_snapshot_json(result.stdout) == load_snapshot_files([example]).snapshot


BAD_INPUTS = {
    "malformed YAML": ("kind: Node\nmetadata: {name: [unclosed\n", "bad.yaml"),
    "negative replicas": (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: job-a-1}\n"
        "spec:\n  tasks:\n  - name: t\n    replicas: -2\n    template: {spec: {containers: [{name: c}]}}\n",
        "spec.tasks[0].replicas",
    ),
    "bad quantity": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n",
        "status.allocatable.cpu",
    ),
    "document is a list": ("- a\n- b\n", "document 1"),
}


@pytest.mark.parametrize("text, named", BAD_INPUTS.values(), ids=list(BAD_INPUTS))
def test_bad_input_is_one_line_naming_what_is_wrong_and_exit_two(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["solve", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "bad.yaml" in result.stderr and named in result.stderr


def test_solve_reads_a_directory_of_yaml_files_as_those_files(tmp_path: Path) -> None:
    """A replay hands over one cycle as a directory: the same answer as naming its files."""
    example = EXAMPLES_DIR / "gang-min-available-4.yaml"
    (tmp_path / "cycle.yaml").write_text(example.read_text())
    by_directory = runner.invoke(app, ["solve", str(tmp_path), "--output", "json", "--engine", "greedy"])
    by_file = runner.invoke(app, ["solve", str(example), "--output", "json", "--engine", "greedy"])
    assert by_directory.exit_code == 0, by_directory.output
    binds = json.loads(by_directory.stdout)["binds"]
    assert binds and binds == json.loads(by_file.stdout)["binds"]


def test_missing_file_is_reported_by_name() -> None:
    result = runner.invoke(app, ["solve", "no-such-file.yaml"])
    assert result.exit_code == 2 and "no-such-file.yaml" in result.stderr


def test_an_error_wider_than_the_terminal_stays_one_line_when_stderr_is_a_pipe(tmp_path: Path) -> None:
    missing = tmp_path / ("a-directory-with-a-long-name-" * 4) / "jobs.yaml"
    environment = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    completed = subprocess.run(
        [sys.executable, "-c", "from batchplace.cli import main; main()", "solve", str(missing)],
        capture_output=True, text=True, timeout=120, env=environment,
    )
    assert completed.returncode == 2
    (line,) = completed.stderr.splitlines()
    assert line.startswith(f"error: {missing}: ") and line.endswith("No such file or directory: " + repr(str(missing)))


def test_unknown_engine_and_output_are_refused() -> None:
    example = str(EXAMPLES_DIR / "hello-volcano-job.yaml")
    assert runner.invoke(app, ["solve", example, "--engine", "magic"]).exit_code == 2
    assert runner.invoke(app, ["solve", example, "--output", "xml"]).exit_code == 2


def test_installed_console_script_runs_the_demo() -> None:
    script = Path(sys.executable).parent / "batchplace"
    completed = subprocess.run([str(script), "demo", "--quiet"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert "all 12 scenarios came out as expected" in completed.stdout


def test_import_contracts_hold() -> None:
    """models ← solver ← batchplace, and no Kubernetes/HTTP code in models or solver."""
    linter = Path(sys.executable).parent / "lint-imports"
    completed = subprocess.run([str(linter)], capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "broken" in completed.stdout and ", 0 broken" in completed.stdout
