"""Rule `usage`: a node whose fresh usage is above a threshold takes no new pod; stale or
missing usage never blocks a node, and the reason says so."""

from __future__ import annotations

import pytest

from models.snapshot import Node, UsagePolicy
from solver import reasons
from solver.place import ENGINES
from solver.rules import usage
from tests.builders import (
    USAGE_OBSERVED_S,
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    rule_violations,
    solve_checked,
)

POLICY = UsagePolicy()  # cpu 80, memory 80, gpu off, 300 s


def _node(**usage_fields: float) -> Node:
    return make_node("n", usage=usage_fields).node


@pytest.mark.parametrize(
    ("usage_fields", "state", "reason"),
    [
        ({"cpu_percent": 91.5}, "hot", usage.REASON_CPU),
        ({"cpu_percent": 10, "memory_percent": 85}, "hot", usage.REASON_MEMORY),
        ({"cpu_percent": 80, "memory_percent": 80}, "cool", None),
        ({"gpu_percent": 100}, "cool", None),
        ({"cpu_percent": 99, "observed_at_s": USAGE_OBSERVED_S - 301}, "stale", None),
        ({"cpu_percent": 99, "observed_at_s": USAGE_OBSERVED_S + 60}, "hot", usage.REASON_CPU),
    ],
    ids=[
        "cpu above its threshold is hot",
        "memory above its threshold is hot",
        "at the threshold exactly is not above it",
        "gpu has no threshold by default",
        "a reading older than the max age is stale",
        "a reading from a clock ahead of ours is fresh",
    ],
)
def test_a_node_is_judged_by_its_fresh_usage_against_the_thresholds(usage_fields: dict, state: str, reason: str | None) -> None:
    judgement = usage.judge(_node(**usage_fields), POLICY, USAGE_OBSERVED_S)
    assert (judgement.state, judgement.reason) == (state, reason)


def test_a_node_without_usage_is_missing_and_a_gpu_threshold_judges_gpus() -> None:
    assert usage.judge(make_node("n").node, POLICY, USAGE_OBSERVED_S).state == "missing"
    strict = UsagePolicy(gpu_threshold_percent=90)
    assert usage.judge(_node(gpu_percent=95), strict, USAGE_OBSERVED_S).reason == usage.REASON_GPU


def test_without_a_clock_the_newest_reading_judges_the_others() -> None:
    old = make_node("old", usage={"cpu_percent": 99, "observed_at_s": USAGE_OBSERVED_S - 600})
    new = make_node("new", usage={"cpu_percent": 20})
    snapshot = make_snapshot(nodes=[old, new])
    assert usage.judged_at(snapshot) == USAGE_OBSERVED_S
    assert usage.judgements(snapshot)["old"].state == "stale"
    clocked = make_snapshot(nodes=[old, new], usage_policy=UsagePolicy(judged_at_s=USAGE_OBSERVED_S - 600))
    assert usage.judgements(clocked)["old"].state == "hot"


NODES = [
    make_node("hot", cpu=32, usage={"cpu_percent": 95}),
    make_node("cool", cpu=32, usage={"cpu_percent": 20}),
    make_node("stale", cpu=32, usage={"cpu_percent": 99, "observed_at_s": USAGE_OBSERVED_S - 1000}),
    make_node("unmeasured", cpu=32),
]


def test_a_bind_to_a_hot_node_is_a_violation_naming_the_numbers() -> None:
    job = make_gang("job", cpu=1)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    (violation,) = rule_violations(usage, snapshot, make_placement(binds=[make_bind(job.pods[0], "hot")]))
    assert violation.rule == usage.NAME and violation.subject == "default/job-worker-0"
    assert "cpu usage 95% > threshold 80%" in violation.message and violation.message.endswith(f"({usage.REASON_CPU})")


@pytest.mark.parametrize("node", ["cool", "stale", "unmeasured"], ids=lambda n: f"a bind to the {n} node is valid")
def test_binds_to_nodes_not_hot_are_valid(node: str) -> None:
    job = make_gang("job", cpu=1)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(usage, snapshot, make_placement(binds=[make_bind(job.pods[0], node)])) == []


def test_pods_already_running_on_a_hot_node_are_not_judged() -> None:
    running = make_gang("old", cpu=1, running_on=["hot"])
    snapshot = make_snapshot(nodes=NODES, groups=[running])
    assert rule_violations(usage, snapshot, make_placement()) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_trivially_feasible_every_engine_places_on_a_cool_node(engine: str) -> None:
    job = make_gang("job", replicas=2, cpu=4)
    decision = solve_checked(make_snapshot(nodes=NODES, groups=[job]), engine)
    assert len(decision.placement.binds) == 2
    assert "hot" not in {bind.node for bind in decision.placement.binds}


@pytest.mark.parametrize("engine", ENGINES)
def test_forced_only_a_hot_node_fits_so_the_gang_stays_pending_with_the_usage_reason(engine: str) -> None:
    nodes = [make_node("hot", cpu=64, usage={"cpu_percent": 95}), make_node("small", cpu=4, usage={"cpu_percent": 5})]
    job = make_gang("big", cpu=48)
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), engine)
    assert not decision.placement.binds
    (outcome,) = decision.podgroups
    assert any(usage.REASON_CPU in reason and "(80%)" in reason for reason in outcome.reasons), outcome.reasons
    assert not any(reason.rule == usage.NAME for reason in outcome.reasons), "every node was judged"


@pytest.mark.parametrize("engine", ENGINES)
def test_feasible_otherwise_stale_and_missing_usage_never_block_and_the_reason_says_so(engine: str) -> None:
    nodes = [
        make_node("hot", cpu=16, usage={"cpu_percent": 95}),
        make_node("stale", cpu=16, usage={"cpu_percent": 99, "observed_at_s": USAGE_OBSERVED_S - 1000}),
        make_node("unmeasured", cpu=16),
    ]
    fits = make_gang("fits", replicas=2, cpu=12)
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[fits]), engine)
    assert {bind.node for bind in decision.placement.binds} == {"stale", "unmeasured"}
    too_big = make_gang("too-big", replicas=3, cpu=12)
    (outcome,) = solve_checked(make_snapshot(nodes=nodes, groups=[too_big]), engine).podgroups
    assert outcome.state == "pending"
    assert reasons.usage_not_judged(stale=1, missing=1, max_age_s=300) in outcome.reasons
    assert "1 with a reading older than 300 s, 1 without one" in outcome.reasons[-1]


def test_a_higher_threshold_lets_the_node_take_pods() -> None:
    nodes = [make_node("hot", cpu=64, usage={"cpu_percent": 95})]
    job = make_gang("job", cpu=4)
    lenient = make_snapshot(nodes=nodes, groups=[job], usage_policy=UsagePolicy(cpu_threshold_percent=96))
    assert solve_checked(lenient, "auto").placement.binds
    off = make_snapshot(nodes=nodes, groups=[job], usage_policy=UsagePolicy(cpu_threshold_percent=None))
    assert solve_checked(off, "greedy").placement.binds
