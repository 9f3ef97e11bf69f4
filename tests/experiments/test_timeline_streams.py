"""The timeline's job streams: llm's load, the acme trace's gangs, the openb pods as jobs."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from experiments.timeline import (
    LLM_POLICIES,
    TimelineConfig,
    run_llm_timeline,
    timeline_markdown,
    timeline_policy_summary,
)
from experiments.timeline_llm import QUEUE_WEIGHTS, llm_workload
from experiments.timeline_streams import (
    ACME_ENV,
    ACME_FILE,
    ACME_NODES,
    AcmeTraceError,
    AcmeTraceNotFound,
    acme_jobs,
    acme_trace_file,
    job_stream,
    window_load,
    openb_jobs,
)
from tests.experiments._openb_builders import write_tiny_trace

HEADER = "job_id,arrival_time,num_iteration,iteration_computing_time,iteration_networking_time,gpu_workers,ps,gpu_per_worker"


def _write_acme(folder: Path, *rows: str, header: str = HEADER) -> Path:
    path = folder / ACME_FILE
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _gpu_seconds(load: float, seed: int) -> float:
    return sum(j.gpus_milli * j.duration_s for j in llm_workload(seed, hours=12.0, capacity_gpus=1024, load=load))


@pytest.mark.parametrize("seed", [42, 43])
def test_the_llm_load_scales_the_offered_gpu_hours(seed):
    low, mid, high = (_gpu_seconds(load, seed) for load in (0.9, 1.1, 1.3))
    assert low < mid < high
    assert high / low == pytest.approx(1.3 / 0.9, rel=0.25)


def test_the_window_load_counts_gpu_time_up_to_the_horizon(tmp_path):
    path = _write_acme(tmp_path, "0,0,7200,0.5,0.25,1,0,8", "1,1800,7200,0.5,0.25,1,0,8", "2,7200,7200,0.5,0.25,1,0,8")
    jobs = acme_jobs(path)  # 8 GPUs for 1 h at 0 s, 1,800 s and 7,200 s
    assert window_load(jobs, capacity_gpu_milli=8_000, hours=1.0) == pytest.approx(1.5)


def test_the_config_s_load_reaches_the_llm_stream():
    config = TimelineConfig(scenario="llm", policy="volcano", hours=4.0)
    low = job_stream(replace(config, load=0.9)).jobs
    high = job_stream(replace(config, load=1.3)).jobs
    assert sum(j.gpus_milli * j.duration_s for j in high) > 1.2 * sum(j.gpus_milli * j.duration_s for j in low)


def test_acme_rows_become_gangs_with_queue_topology_and_time_limit(tmp_path):
    path = _write_acme(
        tmp_path,
        "0,1200.0,7200,0.5,0.25,16,0,8.0",  # 128 GPUs, 1 h
        "1,0.0,100,0.5,0.25,1,0,2.0",  # 2 GPUs, 50 s
        "2,600.0,20,0.5,0.25,8,0,8.0",  # 64 GPUs: a leaf
        "3,900.0,20,0.5,0.25,128,0,8.0",  # 1,024 GPUs: more than a spine
    )
    jobs = acme_jobs(path, compress=10.0)
    assert [j.arrival_s for j in jobs] == [0.0, 60.0, 90.0, 120.0]  # sorted, compressed
    assert [(j.pods, j.num_gpu, j.gpus_milli // 1000) for j in jobs] == [(1, 2, 2), (8, 8, 64), (128, 8, 1024), (16, 8, 128)]
    assert [j.duration_s for j in jobs] == [50.0, 10.0, 10.0, 3600.0]
    assert [j.queue for j in jobs] == ["finetune", "training", "training", "training"]
    assert [(j.topology, j.tier) for j in jobs] == [("none", 0), ("hard", 1), ("soft", 1), ("hard", 2)]
    assert jobs[3].active_deadline_s == 3600.0 and jobs[0].active_deadline_s == 900.0
    assert [j.ident for j in jobs] == [0, 1, 2, 3]
    assert all(j.queue in QUEUE_WEIGHTS for j in jobs)


def test_acme_keeps_the_jobs_arriving_within_the_horizon(tmp_path):
    path = _write_acme(tmp_path, "0,0,20,0.5,0.25,1,0,8", "1,7200,20,0.5,0.25,1,0,8", "2,72000,20,0.5,0.25,1,0,8")
    assert len(acme_jobs(path, compress=10.0, hours=0.5)) == 2  # 0 s and 720 s, not 7,200 s


@pytest.mark.parametrize(
    ("row", "line", "column"),
    [
        ("0,0,20,0.5,0.25,-2,0,8", 3, "gpu_workers"),
        ("0,0,20,0.5,0.25,2,0,sixteen", 3, "gpu_per_worker"),
        ("0,0,20,0.5,0.25,2,0,16", 3, "gpu_per_worker"),  # more than a node has
        ("0,0,20,0.5,0.25,2.5,0,8", 3, "gpu_workers"),
        ("0,,20,0.5,0.25,2,0,8", 3, "arrival_time"),
        ("0,0,nan,0.5,0.25,2,0,8", 3, "num_iteration"),
    ],
)
def test_a_bad_acme_row_names_file_line_and_column(tmp_path, row, line, column):
    path = _write_acme(tmp_path, "9,0,20,0.5,0.25,1,0,8", row)
    with pytest.raises(AcmeTraceError) as raised:
        acme_jobs(path)
    assert f"{path} line {line}, column {column!r}" in str(raised.value)


def test_an_acme_file_without_a_column_names_it(tmp_path):
    path = _write_acme(tmp_path, "0,0,20,0.5,0.25,1,0", header=HEADER.rsplit(",", 1)[0])
    with pytest.raises(AcmeTraceError, match=rf"{ACME_FILE} line 1: missing column 'gpu_per_worker'"):
        acme_jobs(path)


def test_the_acme_trace_is_found_by_option_or_variable_else_a_clear_error(tmp_path, monkeypatch):
    path = _write_acme(tmp_path, "0,0,20,0.5,0.25,1,0,8")
    monkeypatch.delenv(ACME_ENV, raising=False)
    with pytest.raises(AcmeTraceNotFound, match=ACME_ENV):
        acme_trace_file()
    with pytest.raises(AcmeTraceNotFound, match=f"{ACME_FILE} not found in {tmp_path / 'empty'}"):
        acme_trace_file(tmp_path / "empty")
    assert acme_trace_file(tmp_path) == path
    monkeypatch.setenv(ACME_ENV, str(tmp_path))
    assert acme_trace_file() == path


def test_an_acme_stream_runs_volcano_and_batchplace_with_every_gang_whole(tmp_path):
    path = _write_acme(tmp_path, "0,0,7200,0.5,0.25,128,0,8", "1,60,1200,0.5,0.25,8,0,8",
                       "2,120,1200,0.5,0.25,1,0,2", "3,180,600,0.5,0.25,64,0,8")  # fmt: skip
    for policy in ("volcano", "greedy"):
        config = TimelineConfig(scenario="acme", policy=policy, hours=2.0, compress=1.0)
        stream = job_stream(config, acme_dir=path)
        assert stream.nodes.count == ACME_NODES and int(stream.leaf.max()) + 1 == ACME_NODES // 8
        result = run_llm_timeline(config, jobs=None, acme_dir=path)
        assert sum(d.size for d in result.delays_by_queue.values()) == 4  # the 1,024-GPU gang fits the empty cluster
        assert result.extra["window_load"] == pytest.approx(
            (1024 * 3600 + 64 * 600 + 2 * 600 + 512 * 300) / (ACME_NODES * 8 * 7200), rel=1e-9
        )
        assert result.leaves_excess.max() == 0  # hard gangs in the fewest leaves


@pytest.mark.skipif(not os.environ.get(ACME_ENV), reason=f"${ACME_ENV} is not set: the acme trace is not shipped")
def test_the_real_acme_trace_loads_into_1_to_1024_gpu_gangs():
    jobs = acme_jobs(acme_trace_file(), compress=15.0, hours=144.0)  # the module docstring's whole-trace replay
    sizes = [j.gpus_milli // 1000 for j in jobs]
    assert len(jobs) > 300 and min(sizes) == 1 and max(sizes) == 1024
    assert 1.0 < window_load(jobs, capacity_gpu_milli=ACME_NODES * 8000, hours=144.0) < 1.2


def test_openb_pods_become_single_pod_jobs_queued_by_their_gpus(tmp_path):
    write_tiny_trace(tmp_path)  # pods created at 0…59 s, each living 100 s
    jobs = openb_jobs("default", tmp_path, compress=2.0)
    assert [j.arrival_s for j in jobs[:3]] == [0.0, 0.5, 1.0] and jobs[-1].arrival_s == 29.5
    assert all(j.pods == 1 and j.duration_s == 100.0 for j in jobs)
    shapes = {(j.num_gpu, j.gpu_milli): j.queue for j in jobs}
    assert shapes == {(1, 1000): "finetune", (1, 500): "inference", (2, 1000): "training", (1, 250): "inference",
                      (0, 0): "inference", (4, 1000): "training"}  # fmt: skip


def test_the_openb_window_is_the_trace_s_end_with_the_pods_alive_at_its_start(tmp_path):
    write_tiny_trace(tmp_path)
    pods = (tmp_path / "openb_pod_list_default.csv").read_text().splitlines()
    pods[1] = pods[1].replace(",0,100,0", ",0,10,0")  # pod 0 lives 10 s: gone before the window
    (tmp_path / "openb_pod_list_default.csv").write_text("\n".join(pods) + "\n")
    jobs = openb_jobs("default", tmp_path, compress=2.0, hours=10.0 / 3600.0)  # 19.5 … 29.5 s
    assert len(jobs) == 59
    assert jobs[0].arrival_s == 0.0 and jobs[0].duration_s == 100.0 - 19.0  # pod 1: 0.5 s, alive at 19.5 s
    assert [j.arrival_s for j in jobs[-21:]] == [c / 2 - 19.5 for c in range(39, 60)]
    assert all(j.duration_s == 100.0 for j in jobs[-21:])


def test_fewer_openb_nodes_are_spread_over_the_node_list(tmp_path):
    write_tiny_trace(tmp_path)
    config = TimelineConfig(scenario="openb-jobs", policy="volcano", nodes=4)
    stream = job_stream(config, trace_dir=tmp_path)
    assert stream.nodes.names == ("node-00", "node-04", "node-07", "node-11")
    assert stream.nodes.gpus.tolist() == [2, 4, 4, 6] and stream.leaf.tolist() == [0, 0, 0, 0]
    assert job_stream(replace(config, nodes=None), trace_dir=tmp_path).nodes.count == 12


@pytest.mark.parametrize("scenario", ["acme", "openb-jobs"])
@pytest.mark.parametrize("policy", LLM_POLICIES)
def test_every_llm_policy_runs_on_every_trace_stream(tmp_path, scenario, policy):
    write_tiny_trace(tmp_path)
    _write_acme(tmp_path, "0,0,7200,0.5,0.25,128,0,8", "1,60,1200,0.5,0.25,8,0,8", "2,120,1200,0.5,0.25,1,0,2")
    config = TimelineConfig(scenario=scenario, policy=policy, hours=0.1 if scenario == "openb-jobs" else 1.0)
    stream = job_stream(config, trace_dir=tmp_path, acme_dir=tmp_path)
    result = run_llm_timeline(config, trace_dir=tmp_path, acme_dir=tmp_path)
    assert sum(d.size for d in result.delays_by_queue.values()) == len(stream.jobs) == (60 if scenario == "openb-jobs" else 3)
    assert 0.0 < result.utilization_pct.max() <= 100.0
    assert f"### timeline: {scenario}, compress 1, window load" in timeline_markdown([result])


def test_the_tables_name_each_llm_load():
    runs = [run_llm_timeline(TimelineConfig(scenario="llm", policy="volcano", hours=0.5, load=load, nodes=16))
            for load in (0.9, 1.3)]  # fmt: skip
    table = timeline_markdown(runs) + timeline_policy_summary(runs)
    for load in ("0.9", "1.3"):
        assert f"### timeline: llm, load {load}, 16 nodes" in table
        assert f"### llm, load {load}, 16 nodes, mean of seeds 42" in table


def test_the_cli_runs_acme_from_its_option_and_refuses_a_bad_row(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    _write_acme(good, "0,0,1200,0.5,0.25,8,0,8", "1,60,600,0.5,0.25,1,0,1")
    runner = CliRunner()
    out = tmp_path / "out"
    done = runner.invoke(app, ["experiment", "timeline", "--scenario", "acme", "--policies", "volcano", "--hours", "0.5",
                               "--acme-dir", str(good), "--out", str(out), "--jobs", "1"])  # fmt: skip
    assert done.exit_code == 0, done.output
    summary = (out / "timeline_summary.csv").read_text().splitlines()
    assert summary[0].endswith("load,compress,window_load,time_limit_s") and summary[1].startswith("acme,volcano,42,")
    assert (out / "timeline_delay_by_size_acme.png").is_file()
    bad = tmp_path / "bad"
    bad.mkdir()
    _write_acme(bad, "0,0,1200,0.5,0.25,-8,0,8")
    refused = runner.invoke(app, ["experiment", "timeline", "--scenario", "acme", "--acme-dir", str(bad), "--out", str(out)])
    assert refused.exit_code == 2
    assert "line 2, column 'gpu_workers'" in refused.output
    _write_acme(bad, "0,0,1200,0.5,0.25,128,0,8")  # 1,024 GPUs
    small = runner.invoke(app, ["experiment", "timeline", "--scenario", "acme", "--acme-dir", str(bad), "--nodes", "64"])
    assert small.exit_code == 2
    assert "64 nodes of 8 GPUs cannot host the trace's largest job (1024 GPUs); use at least 128 nodes" in small.output
