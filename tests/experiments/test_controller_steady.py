"""`experiments.controller_steady`: the running load it builds, the numbers it reports, and
one tiny run against a real kube-apiserver + etcd and `batchplace controller` (processes,
as the bench runs them): every gang submitted is bound whole, and the latencies agree with
the counts and with the controller's own cycle log."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiments.controller_steady import CPU_SLOTS_PER_NODE, GPU_FILL, GPUS_PER_NODE, run, running_load
from experiments.controller_steady_records import GANG_PODS, PodRecord, SteadyConfig, SteadyRun
from experiments.controller_steady_report import gang_latencies, percentiles, summarize, write_outputs


@given(st.lists(st.floats(min_value=0.001, max_value=100.0), min_size=1, max_size=200))
def test_percentiles_are_ordered_and_count_every_value(values: list[float]) -> None:
    p = percentiles(values)
    assert p.count == len(values)
    assert min(values) - 1e-4 <= p.p50_s <= p.p90_s <= p.p99_s <= p.max_s == pytest.approx(max(values), abs=1e-4)


@given(nodes=st.integers(1, 60), running=st.integers(0, 3000), seed=st.integers(0, 3))
def test_running_load_fills_at_most_the_gpu_share_and_never_overfills_a_node(nodes: int, running: int, seed: int) -> None:
    config = SteadyConfig(nodes=nodes, running=running, seed=seed)
    try:
        load = running_load(config)
    except ValueError as error:
        gpu_gangs = int(GPU_FILL * nodes * GPUS_PER_NODE) // GANG_PODS
        assert "--running" in str(error)
        assert (running // GANG_PODS - gpu_gangs) * GANG_PODS > nodes * CPU_SLOTS_PER_NODE
        return
    assert load.pods == (running // GANG_PODS) * GANG_PODS
    assert GANG_PODS * len(load.gpu_gangs) <= GPU_FILL * nodes * GPUS_PER_NODE
    gpus = Counter(node for placed in load.gpu_gangs.values() for node in placed)
    cpus = Counter(node for placed in load.cpu_gangs.values() for node in placed)
    assert max(gpus.values(), default=0) <= GPUS_PER_NODE
    assert max(cpus.values(), default=0) <= CPU_SLOTS_PER_NODE
    assert all(len(placed) == GANG_PODS for placed in (*load.gpu_gangs.values(), *load.cpu_gangs.values()))
    assert running_load(config) == load  # seeded


def test_default_running_pods_fill_eighty_percent_of_the_gpus_and_the_rest_run_on_cpu() -> None:
    load = running_load(SteadyConfig())
    assert GANG_PODS * len(load.gpu_gangs) == 64_000  # of 10,000 × 8 GPUs
    assert load.pods == 100_000


def _pod(gang: str, i: int, *, created: float, bound: float | None) -> PodRecord:
    return PodRecord(gang=gang, pod=f"{gang}-{i}", created_unix=created, creation_timestamp="", bound_unix=bound, node="n" if bound else None)


def test_a_gang_counts_from_its_first_pod_created_to_its_last_bound_and_only_when_whole() -> None:
    whole = [_pod("a", i, created=10.0 + 0.01 * i, bound=10.5 + 0.1 * i) for i in range(GANG_PODS)]
    short = [_pod("b", i, created=11.0, bound=None if i == 3 else 11.4) for i in range(GANG_PODS)]
    steady = SteadyRun(
        config=SteadyConfig(nodes=1, running=0, duration_s=2.0), gpu_running_pods=0, cpu_running_pods=0,
        running_create_seconds=1.0, warm_up_seconds=1.0, window_start_unix=10.0, window_end_unix=12.0, gangs_finished=0,
        pods=(*whole, *short), cycles=(), cpu_seconds={}, requests={}, warm_up_requests={},
    )
    assert gang_latencies(steady) == {"a": pytest.approx(10.5 + 0.1 * (GANG_PODS - 1) - 10.0)}
    summary = summarize(steady)
    assert (summary.gangs_submitted, summary.gangs_bound_whole) == (2, 1)
    assert (summary.pods_submitted, summary.pods_bound, summary.pod_latency.count) == (16, 15, 15)


@pytest.fixture(scope="module")
def tiny_run() -> SteadyRun:
    return run(SteadyConfig(nodes=12, running=64, duration_s=5.0, interval_s=1.0, warm_up_timeout_s=120.0))


def test_every_gang_submitted_is_bound_whole_in_steady_state(tiny_run: SteadyRun) -> None:
    summary = summarize(tiny_run)
    assert summary.gangs_submitted == 5 == summary.gangs_bound_whole
    assert summary.pods_submitted == 5 * GANG_PODS == summary.pods_bound
    assert summary.gangs_finished == 5  # one old gang out for each new one in
    assert Counter(p.gang for p in tiny_run.pods) == {f"new-{n:04d}": GANG_PODS for n in range(5)}
    gpus_taken = Counter(p.node for p in tiny_run.pods)
    assert max(gpus_taken.values()) <= GPUS_PER_NODE


def test_the_running_gangs_read_as_batchplace_left_them_so_its_first_cycles_rewrite_none(tiny_run: SteadyRun) -> None:
    """Their status is the one batchplace writes for a started gang: from the controller's start
    to the warm-up settled, the PodGroup writes are the warm-up gang's (waiting, bound, running),
    fewer than the running gangs — each of which would be written had its status differed."""
    assert tiny_run.warm_up_requests.get("PATCH podgroups", 0) < tiny_run.gpu_running_pods // GANG_PODS
    assert tiny_run.warm_up_requests.get("POST pods/binding") == GANG_PODS


def test_steady_latencies_agree_with_the_counts_and_the_controller_cycle_log(tiny_run: SteadyRun, tmp_path: Path) -> None:
    summary = summarize(tiny_run)
    for latency, count in ((summary.pod_latency, summary.pods_bound), (summary.gang_latency, summary.gangs_bound_whole)):
        assert latency.count == count
        assert 0 < latency.p50_s <= latency.p90_s <= latency.p99_s <= latency.max_s
    assert summary.gang_latency.max_s >= summary.pod_latency.p50_s  # a gang waits for its slowest pod
    assert sum(c.bound for c in tiny_run.cycles) == summary.pods_bound  # the controller's log says the same binds
    assert 0 < summary.cycle_seconds.p50_s <= summary.cycle_seconds.max_s
    assert summary.cpu_seconds["controller"] > 0
    written = write_outputs(tiny_run, summary, tmp_path)
    rows = list(csv.DictReader((tmp_path / "steady_pods.csv").open()))
    assert len(rows) == summary.pods_submitted and all(float(r["latency_s"]) > 0 for r in rows)
    assert all(path.stat().st_size > 0 for path in written)


def test_a_gang_never_bound_is_reported_as_such() -> None:
    """The report holds to the watch: a pod it never saw bound is no latency of 0."""
    pods = tuple(_pod("c", i, created=1.0, bound=None) for i in range(GANG_PODS))
    steady = SteadyRun(
        config=replace(SteadyConfig(), duration_s=1.0), gpu_running_pods=0, cpu_running_pods=0, running_create_seconds=1.0,
        warm_up_seconds=0.0, window_start_unix=0.0, window_end_unix=1.0, gangs_finished=0, pods=pods, cycles=(), cpu_seconds={}, requests={}, warm_up_requests={},
    )
    summary = summarize(steady)
    assert (summary.gangs_bound_whole, summary.pods_bound, summary.pod_latency.count, summary.pod_latency.max_s) == (0, 0, 0, 0.0)
