"""controller.usage, pure: samples averaged over the window, onto the Snapshot, judged by the clock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.errors import Unavailable
from controller.usage import UsageSample, UsageSourceError, UsageTracker, UsageWindow, with_usage
from models.snapshot import Node, NodeName, NodeUsage, UsagePolicy
from solver.rules import usage
from tests.builders import make_node, make_snapshot


def _cpu(node: str, at_s: float, percent: float) -> UsageSample:
    return UsageSample(node=NodeName(node), at_s=at_s, cpu_percent=percent)


def test_the_docstrings_example_the_mean_of_the_window_observed_at_the_newest() -> None:
    window = UsageWindow(300)
    window.add([_cpu("n1", 760, 60), _cpu("n1", 880, 80), _cpu("n1", 990, 100), _cpu("n1", 600, 0)])
    (averaged,) = window.averaged(1000).values()
    assert averaged == NodeUsage(cpu_percent=80, observed_at_s=990, window_s=300)


def test_a_resource_missing_from_some_samples_is_averaged_over_those_that_have_it() -> None:
    window = UsageWindow(300)
    window.add([UsageSample(NodeName("n1"), 900, cpu_percent=10, gpu_percent=50), _cpu("n1", 950, 30)])
    assert window.averaged(1000)["n1"] == NodeUsage(cpu_percent=20, gpu_percent=50, observed_at_s=950, window_s=300)


def test_without_a_recent_sample_the_newest_is_kept_so_it_reads_as_stale_then_is_forgotten() -> None:
    window = UsageWindow(300)
    window.add([_cpu("n1", 100, 95), _cpu("n1", 200, 99)])
    assert window.averaged(1000)["n1"] == NodeUsage(cpu_percent=99, observed_at_s=200)
    assert window.averaged(200 + 10 * 300 + 1) == {}


def test_nodes_no_longer_in_the_snapshot_are_dropped() -> None:
    window = UsageWindow(300)
    window.add([_cpu("gone", 990, 50), _cpu("n1", 990, 50)])
    assert set(window.averaged(1000, nodes=[NodeName("n1")])) == {"n1"}


def test_with_usage_replaces_readings_keeps_other_nodes_as_they_are_and_sets_the_policy() -> None:
    annotated = make_node("annotated", usage={"cpu_percent": 10, "observed_at_s": 500})
    snapshot = make_snapshot(nodes=[make_node("n1"), annotated, make_node("n2")])
    reading = NodeUsage(cpu_percent=95, observed_at_s=990)
    policy = UsagePolicy(judged_at_s=1000)
    updated = with_usage(snapshot, {NodeName("n1"): reading}, policy)
    assert updated.node_by_name["n1"].usage == reading
    assert updated.nodes[1] is snapshot.nodes[1] and updated.nodes[2] is snapshot.nodes[2]
    assert updated.usage_policy == policy
    assert usage.judgements(updated)["n1"].state == "hot" and usage.judgements(updated)["annotated"].state == "stale"


class _Source:
    name = "test"

    def __init__(self, answers: list[object]) -> None:
        self.answers = answers
        self.calls: list[tuple[float, float]] = []

    def read(self, *, since_s: float, now_s: float, nodes: Mapping[NodeName, Node]) -> Sequence[UsageSample]:
        self.calls.append((since_s, now_s))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]


def test_the_tracker_polls_at_most_every_poll_s_and_a_failing_source_leaves_the_readings_to_go_stale() -> None:
    source = _Source([[_cpu("n1", 1000, 95)], UsageSourceError("down"), Unavailable("refused", verb="list", what="x")])
    tracker = UsageTracker(source, policy=UsagePolicy(), window_s=300, poll_s=15)
    snapshot = make_snapshot(nodes=[make_node("n1")])
    first = tracker.apply(snapshot, 1000)
    assert usage.judgements(first)["n1"].state == "hot" and first.usage_policy.judged_at_s == 1000
    tracker.apply(snapshot, 1010)
    assert source.calls == [(700, 1000)], "not polled again within poll_s"
    tracker.apply(snapshot, 1015)
    later = tracker.apply(snapshot, 1400)
    assert tracker.failures == 2 and "refused" in (tracker.last_error or "")
    assert usage.judgements(later)["n1"].state == "stale", "stale usage never blocks"


def test_without_usage_anywhere_the_snapshot_is_left_as_it_is() -> None:
    tracker = UsageTracker(None, policy=UsagePolicy())
    snapshot = make_snapshot(nodes=[make_node("n1")])
    assert tracker.apply(snapshot, 1000) is snapshot
