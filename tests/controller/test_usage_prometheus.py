"""The Prometheus usage source against a real Prometheus (Debian's), over real HTTP.

The series are written with Prometheus' own tools (`promtool tsdb create-blocks-from
openmetrics`, `controller.testing.prometheus`) and read back by `PrometheusSource` through
`/api/v1/query_range`, then averaged and judged as the controller does each cycle."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from controller.testing.prometheus import PrometheusServer
from controller.usage import UsageSourceError, UsageTracker
from controller.usage_sources import PrometheusSource
from models.snapshot import NodeName, UsagePolicy
from solver.place import SolveConfig, place
from solver.rules import usage
from tests.builders import make_gang, make_node, make_snapshot

NOW = float(int(time.time()) // 60 * 60)  # the samples' clock: a minute boundary, now
QUERIES = {"cpu": "test_node_cpu_percent", "memory": "test_node_memory_percent", "gpu": "test_node_gpu_percent"}


def _series(metric: str, node: str, values: list[tuple[float, float]]) -> list[tuple[str, dict[str, str], float, float]]:
    return [(metric, {"node": node}, value, NOW - ago) for ago, value in values]


SAMPLES = [
    *_series("test_node_cpu_percent", "hot", [(240, 95), (180, 95), (120, 95), (60, 95), (0, 95)]),
    *_series("test_node_memory_percent", "hot", [(240, 30), (0, 30)]),
    *_series("test_node_cpu_percent", "rising", [(270, 20), (150, 40), (30, 60)]),
    *_series("test_node_gpu_percent", "rising", [(270, 70), (30, 70)]),
    *_series("test_node_cpu_percent", "cool", [(240, 10), (120, 10), (0, 10)]),
    *_series("test_node_cpu_percent", "silent", [(3600, 99)]),
]


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer(SAMPLES) as server:
        yield server


def _source(server: PrometheusServer, **options: object) -> PrometheusSource:
    return PrometheusSource(server.url, queries=QUERIES, step_s=15, **options)  # type: ignore[arg-type]


def test_the_source_reads_each_nodes_samples_of_the_window(prometheus: PrometheusServer) -> None:
    samples = _source(prometheus).read(since_s=NOW - 300, now_s=NOW, nodes={})
    by_node: dict[str, list] = {}
    for sample in samples:
        by_node.setdefault(sample.node, []).append(sample)
    assert set(by_node) == {"hot", "rising", "cool"}, "silent's one sample is past the lookback"
    assert all(s.cpu_percent == 95 and s.memory_percent == 30 and s.gpu_percent is None for s in by_node["hot"])
    assert {s.gpu_percent for s in by_node["rising"]} == {70}
    assert max(s.at_s for s in by_node["hot"]) == NOW


def test_the_controller_averages_the_window_and_the_hot_node_takes_no_pod(prometheus: PrometheusServer) -> None:
    nodes = [make_node(name, cpu=16) for name in ("hot", "rising", "cool", "silent")]
    tracker = UsageTracker(_source(prometheus), policy=UsagePolicy(), window_s=300, poll_s=15)
    snapshot = tracker.apply(make_snapshot(nodes=nodes, groups=[make_gang("job", replicas=2, cpu=8)]), NOW)
    readings = {node.name: node.usage for node in snapshot.nodes}
    assert readings["hot"].cpu_percent == 95 and readings["hot"].observed_at_s == NOW  # type: ignore[union-attr]
    rising = readings["rising"].cpu_percent  # type: ignore[union-attr]
    assert 20 < rising < 60, "a time-weighted mean of 20, 40 and 60 over the window"
    assert readings["silent"] is None
    states = {name: judgement.state for name, judgement in usage.judgements(snapshot).items()}
    assert states == {"hot": "hot", "rising": "cool", "cool": "cool", "silent": "missing"}
    decision = place(snapshot, SolveConfig(engine="auto", time_limit_s=5))
    assert {bind.node for bind in decision.placement.binds} == {"cool"}, "the least loaded node, never the hot one"


def test_a_bad_query_and_an_unreachable_server_are_source_errors(prometheus: PrometheusServer) -> None:
    with pytest.raises(UsageSourceError, match="parse error"):
        PrometheusSource(prometheus.url, queries={"cpu": "rate(("}).read(since_s=NOW - 60, now_s=NOW, nodes={})
    with pytest.raises(UsageSourceError, match="ConnectError"):
        PrometheusSource("http://127.0.0.1:9", queries=QUERIES).read(since_s=NOW - 60, now_s=NOW, nodes={})
    tracker = UsageTracker(PrometheusSource("http://127.0.0.1:9", queries=QUERIES), policy=UsagePolicy())
    snapshot = make_snapshot(nodes=[make_node("hot")])
    assert tracker.apply(snapshot, NOW) is snapshot and tracker.failures == 1
    assert NodeName("hot") not in tracker.window.averaged(NOW)
