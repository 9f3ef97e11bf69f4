"""`batchplace experiment` as a new user meets it: without the trace one line says where to get
it (exit 2, before any worker starts); with a trace the table's header and the gate's verdict
say what was measured.

Each test runs the installed command in its own process with a wide terminal, as a user
does, on the tiny openb-format trace of `_openb_builders` (60 pods: a run takes a second).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.trace_openb import TRACE_ENV
from tests.experiments._openb_builders import write_tiny_trace

COMMAND = Path(sys.executable).with_name("batchplace")
PAPER_BASELINES = "random,dotprod,gpuclustering,gpupacking,bestfit,fgd"


def _batchplace(*args: str, cwd: Path, trace_env: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != TRACE_ENV}
    env["COLUMNS"] = "250"
    if trace_env is not None:
        env[TRACE_ENV] = trace_env
    return subprocess.run([str(COMMAND), *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def _assert_one_line_naming_the_trace(completed: subprocess.CompletedProcess[str]) -> str:
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    for needed in ("--trace-dir", f"${TRACE_ENV}", "cluster-trace-gpu-v2023", "clusterdata"):
        assert needed in lines[0]
    return lines[0]


@pytest.mark.parametrize("how", ["--trace-dir", "the variable"], ids=["given with --trace-dir", "given in the variable"])
def test_fgd_without_the_trace_is_one_line_saying_where_to_get_it(tmp_path: Path, how: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    if how == "--trace-dir":
        completed = _batchplace("experiment", "fgd", "--trace-dir", str(empty), cwd=tmp_path)
    else:
        completed = _batchplace("experiment", "fgd", cwd=tmp_path, trace_env=str(empty))
    line = _assert_one_line_naming_the_trace(completed)
    assert f"openb_node_list_gpu_node.csv not found in {empty}" in line
    assert not (tmp_path / "results").exists()


def test_fgd_names_a_missing_pod_list(tmp_path: Path) -> None:
    write_tiny_trace(tmp_path)
    completed = _batchplace("experiment", "fgd", "--trace-dir", str(tmp_path), "--trace", "gpushare40", cwd=tmp_path)
    assert "openb_pod_list_gpushare40.csv not found" in _assert_one_line_naming_the_trace(completed)


def test_timeline_without_the_trace_says_the_llm_scenario_needs_none(tmp_path: Path) -> None:
    completed = _batchplace("experiment", "timeline", "--scenario", "openb", "--trace-dir", str(tmp_path), cwd=tmp_path)
    assert "--scenario llm" in _assert_one_line_naming_the_trace(completed)


def test_fgd_prints_its_header_whole_and_leaves_the_gate_unjudged_without_the_baselines(tmp_path: Path) -> None:
    write_tiny_trace(tmp_path)
    args = ("--policies", "fgd", "--seeds", "42", "--jobs", "1", "--out", str(tmp_path / "out"))
    completed = _batchplace("experiment", "fgd", "--trace-dir", str(tmp_path), *args, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "GPU allocated at 130 % (mean ± sd, [min, max])" in completed.stdout
    assert "| offline bound | below bound |" in completed.stdout
    assert "| default | 42 | 100.00 | mip |" in completed.stdout  # the tiny trace's pods fill its GPUs offline
    assert (tmp_path / "out" / "bounds.csv").is_file() and (tmp_path / "out" / "bound_shapes.csv").is_file()
    assert "validity gate (paper baselines, default trace, k=1, ±0.5 points): not judged" in completed.stdout
    assert "not run on the default trace at k=1: random, dotprod, gpuclustering, gpupacking, bestfit" in completed.stdout
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "not judged" in summary
    assert "## GPU idle after the last arrival" in summary and "| idle GPU % | whole devices % |" in completed.stdout
    (idle,) = csv.DictReader((tmp_path / "out" / "idle.csv").open())
    assert (idle["trace"], idle["policy"], idle["seed"]) == ("default", "fgd", "42")
    assert (tmp_path / "out" / "fgd_idle_default.png").stat().st_size > 0


def test_fgd_judges_the_gate_once_all_six_baselines_ran(tmp_path: Path) -> None:
    """On the tiny trace the baselines cannot match the paper's numbers: NOT MET, exit 1."""
    write_tiny_trace(tmp_path)
    args = ("--policies", PAPER_BASELINES, "--seeds", "42", "--jobs", "1", "--out", str(tmp_path / "out"))
    completed = _batchplace("experiment", "fgd", "--trace-dir", str(tmp_path), *args, "--require-gate", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    assert "validity gate (paper baselines, default trace, k=1, ±0.5 points): NOT MET" in completed.stdout
    assert "not judged" not in completed.stdout


def test_timeline_writes_where_each_job_s_wait_went(tmp_path: Path) -> None:
    args = ("--scenario", "llm", "--policies", "volcano,greedy", "--seeds", "42", "--hours", "2", "--jobs", "1",
            "--out", str(tmp_path / "out"))  # fmt: skip
    completed = _batchplace("experiment", "timeline", *args, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### where the training waits went: llm, load 1.1" in summary
    assert "| Volcano-like | training | all |" in summary and "| batchplace greedy | training | all |" in summary
    assert (tmp_path / "out" / "timeline_wait_classes_llm.png").stat().st_size > 0
    rows = list(csv.DictReader((tmp_path / "out" / "timeline_delays.csv").open()))
    assert {row["policy"] for row in rows} == {"volcano", "greedy"}
    for row in rows:
        parts = sum(float(row[f"{name}_s"]) for name in ("cycle", "no_room", "fairness", "passed_over", "requeued", "ran_then_evicted"))
        assert abs(parts - float(row["wait_s"])) < 1e-6


def test_timeline_runs_batchplace_at_the_budget_asked(tmp_path: Path) -> None:
    """`--time-limit` reaches batchplace's runs (the summary CSV records each run's budget;
    the peers have none) and is refused below its minimum with the flag named."""
    args = ("--scenario", "llm", "--policies", "volcano,greedy", "--seeds", "42", "--hours", "1", "--jobs", "1",
            "--out", str(tmp_path / "out"))  # fmt: skip
    completed = _batchplace("experiment", "timeline", *args, "--time-limit", "0.5", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    rows = list(csv.DictReader((tmp_path / "out" / "timeline_summary.csv").open()))
    assert {(row["policy"], row["time_limit_s"]) for row in rows} == {("volcano", ""), ("greedy", "0.5")}
    refused = _batchplace("experiment", "timeline", *args, "--time-limit", "0", cwd=tmp_path)
    assert refused.returncode != 0 and "--time-limit" in refused.stderr
