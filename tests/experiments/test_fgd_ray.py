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

ray = pytest.importorskip("ray")


def _write_tiny_trace(folder: Path) -> None:
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"]
    nodes += [f"node-{index:02d},32000,131072,{2 + index % 3 * 2},{'V100M16' if index % 2 else 'T4'}" for index in range(12)]
    (folder / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
    pods = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"]
    shapes = [(4000, 1, 1000), (2000, 1, 500), (8000, 2, 1000), (1000, 1, 250), (6000, 0, 0), (4000, 4, 1000)]
    for index in range(60):
        cpu, gpus, milli = shapes[index % len(shapes)]
        pods.append(f"pod-{index:03d},{cpu},8192,{gpus},{milli},,LS,Running,{index},{index + 100},{index}")
    (folder / "openb_pod_list_default.csv").write_text("\n".join(pods) + "\n")


def test_sweep_runs_as_ray_tasks_on_a_local_instance_and_measures_what_a_local_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_tiny_trace(tmp_path)
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
