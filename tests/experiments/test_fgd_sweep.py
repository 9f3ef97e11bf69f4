"""A sweep of one configuration runs in this process whatever `jobs` says: a worker pool of
one would only add a new interpreter's start-up (importing the solver, reading the trace),
about a second of the FGD k = 1 command's time."""

from __future__ import annotations

from pathlib import Path

from experiments import fgd
from experiments.fgd import FgdConfig, run_sweep
from tests.experiments._openb_builders import write_tiny_trace


def test_one_configuration_runs_here_even_with_two_jobs(tmp_path: Path) -> None:
    write_tiny_trace(tmp_path)
    runs = list(run_sweep([FgdConfig(policy="bestfit", seed=42)], trace_dir=tmp_path, jobs=2))
    assert [run.config.policy for run in runs] == ["bestfit"] and runs[0].placed > 0
    assert tmp_path in fgd._NODES  # the trace was read by this process, not by a pool worker
