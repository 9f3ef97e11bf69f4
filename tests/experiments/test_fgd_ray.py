"""The sweep fans out over Ray (the `ray` extra, part of `dev`), on a local Ray instance.

The trace is a tiny openb-format folder written by the test, so the Ray workers (which
inherit the environment at `ray.init`) and the in-process run read the same data; the
Ray run must measure exactly what the in-process run measures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.fgd import FgdConfig, run_sweep
from experiments.trace_openb import TRACE_ENV
from tests.experiments._openb_builders import write_tiny_trace

ray = pytest.importorskip("ray")


def test_sweep_runs_as_ray_tasks_on_a_local_instance_and_measures_what_a_local_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tiny_trace(tmp_path)
    monkeypatch.setenv(TRACE_ENV, str(tmp_path))
    configs = [FgdConfig(policy="random", seed=42), FgdConfig(policy="bestfit", seed=43)]
    local = {(run.config.policy, run.config.seed): run for run in run_sweep(configs)}
    try:
        remote = {(run.config.policy, run.config.seed): run for run in run_sweep(configs, ray_address="local")}
    finally:
        ray.shutdown()
    assert remote.keys() == local.keys() == {("random", 42), ("bestfit", 43)}
    for key, run in remote.items():
        assert run.placed > 0
        assert run.placed == local[key].placed
        assert run.allocated_milli.tolist() == local[key].allocated_milli.tolist()
