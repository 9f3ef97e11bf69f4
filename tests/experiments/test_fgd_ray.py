"""The sweep fans out over Ray (the optional `ray` extra), on a local Ray instance.

Starting Ray takes a minute on a busy 2-core machine, so this runs only when asked:
`BATCHPLACE_RAY_TESTS=1 .venv/bin/pytest tests/experiments/test_fgd_ray.py`.
"""

from __future__ import annotations

import os

import pytest

from experiments.fgd import FgdConfig, run_sweep


@pytest.mark.skipif(not os.environ.get("BATCHPLACE_RAY_TESTS"), reason="set BATCHPLACE_RAY_TESTS=1 to start a local Ray")
def test_sweep_runs_as_ray_tasks_on_a_local_instance():
    ray = pytest.importorskip("ray")
    try:
        from experiments.trace_openb import trace_dir

        trace_dir()
    except FileNotFoundError:
        pytest.skip("openb trace not available")
    try:
        runs = list(run_sweep([FgdConfig(policy="random", seed=42)], ray_address="local"))
    finally:
        ray.shutdown()
    assert len(runs) == 1 and 80.0 < runs[0].alloc_at_130 < 95.0
