"""Rule 4, quota: capability (own and ancestors'), open queues, guarantee under reclaim."""

from __future__ import annotations

import pytest

from solver.place import ENGINES
from solver.rules import quota
from tests.builders import (
    bind_gang,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_snapshot,
    resources,
    rule_violations,
    solve_checked,
)

NODES = [make_node("n1", gpus=8), make_node("n2", gpus=8)]


def test_queues_without_capability_take_anything() -> None:
    job = make_gang("job", replicas=2, gpus=8, queue="a")
    snapshot = make_snapshot(nodes=NODES, groups=[job], queues=[make_queue("a")])
    assert rule_violations(quota, snapshot, make_placement(binds=bind_gang(job, ["n1", "n2"]))) == []


def test_filling_a_queue_exactly_to_its_capability_is_valid() -> None:
    old = make_gang("old", gpus=4, queue="a", running_on=["n1"])
    job = make_gang("job", gpus=4, queue="a")
    snapshot = make_snapshot(nodes=NODES, groups=[old, job], queues=[make_queue("a", capability=resources(gpus=8))])
    assert rule_violations(quota, snapshot, make_placement(binds=bind_gang(job, ["n2"]))) == []


def test_exceeding_a_queue_capability_is_reported() -> None:
    old = make_gang("old", gpus=4, queue="a", running_on=["n1"])
    job = make_gang("job", gpus=8, queue="a")
    snapshot = make_snapshot(nodes=NODES, groups=[old, job], queues=[make_queue("a", capability=resources(gpus=8))])
    (violation,) = rule_violations(quota, snapshot, make_placement(binds=bind_gang(job, ["n2"])))
    assert violation.subject == "a"
    assert violation.message == (
        "queue a: gpu 12000 > capability 8000 milli-GPU after placement (was 4000, binds add 8000 milli-GPU)"
    )


def test_exceeding_an_ancestor_capability_is_reported_on_the_ancestor() -> None:
    queues = [
        make_queue("org", capability=resources(gpus=10)),
        make_queue("a", parent="org"),
        make_queue("b", parent="org"),
    ]
    old = make_gang("old", gpus=4, queue="b", running_on=["n1"])
    job = make_gang("job", gpus=8, queue="a")
    snapshot = make_snapshot(nodes=NODES, groups=[old, job], queues=queues)
    (violation,) = rule_violations(quota, snapshot, make_placement(binds=bind_gang(job, ["n2"])))
    assert violation.subject == "org"
    assert "gpu 12000 > capability 10000" in violation.message


def test_a_queue_already_over_its_cap_is_judged_only_where_binds_add() -> None:
    """An admin lowered the cap under running pods: a cpu-only bind is fine, another GPU is not."""
    old = make_gang("old", gpus=8, queue="a", running_on=["n1"])
    cpu_job, gpu_job = make_gang("cpu-job", queue="a"), make_gang("gpu-job", gpus=1, queue="a")
    snapshot = make_snapshot(
        nodes=NODES, groups=[old, cpu_job, gpu_job], queues=[make_queue("a", capability=resources(gpus=4))]
    )
    assert rule_violations(quota, snapshot, make_placement()) == []
    assert rule_violations(quota, snapshot, make_placement(binds=bind_gang(cpu_job, ["n2"]))) == []
    assert len(rule_violations(quota, snapshot, make_placement(binds=bind_gang(gpu_job, ["n2"])))) == 1


def test_binding_into_a_closed_or_unknown_queue_is_reported() -> None:
    closed, unknown = make_gang("closed", queue="shut"), make_gang("lost", queue="nowhere")
    snapshot = make_snapshot(nodes=NODES, groups=[closed, unknown], queues=[make_queue("shut", state="closed")])
    placement = make_placement(binds=[*bind_gang(closed, ["n1"]), *bind_gang(unknown, ["n1"])])
    messages = sorted(v.message for v in rule_violations(quota, snapshot, placement))
    assert messages == [
        "pod group default/closed gets 1 bind(s) but its queue shut is closed",
        "pod group default/lost gets 1 bind(s) but its queue nowhere does not exist",
    ]
    assert not quota.accepts_binds(snapshot, "shut") and quota.accepts_binds(snapshot, "default")


def _reclaim_scenario(guarantee_gpus: int, evicted: int, reason: str = "reclaim"):
    queues = [make_queue("a"), make_queue("b", guarantee=resources(gpus=guarantee_gpus))]
    victim = make_gang("victim", replicas=2, gpus=4, queue="b", min_member=1, running_on=["n1", "n1"])
    job = make_gang("job", gpus=8, queue="a")
    snapshot = make_snapshot(nodes=NODES, groups=[victim, job], queues=queues)
    placement = make_placement(
        binds=bind_gang(job, ["n2"]),
        evictions=[make_eviction(p, for_=job, reason=reason) for p in victim.pods[:evicted]],
    )
    return snapshot, placement


def test_reclaim_down_to_the_guarantee_is_valid() -> None:
    assert rule_violations(quota, *_reclaim_scenario(guarantee_gpus=4, evicted=1)) == []


def test_reclaim_below_the_guarantee_is_reported() -> None:
    (violation,) = rule_violations(quota, *_reclaim_scenario(guarantee_gpus=4, evicted=2))
    assert violation.subject == "b"
    assert violation.message == (
        "queue b: reclaim leaves gpu 0 < 4000 milli-GPU = min(guarantee 4000, allocated before 8000)"
    )


def test_preempting_inside_a_queue_is_not_held_to_its_guarantee() -> None:
    assert rule_violations(quota, *_reclaim_scenario(guarantee_gpus=8, evicted=2, reason="preempt")) == []


def test_over_capability_names_only_capped_resources() -> None:
    assert quota.over_capability({"gpu": 9000, "cpu": 99}, {"gpu": 8000}) == {"gpu": 9000}
    assert quota.over_capability({"gpu": 9000}, None) == {}


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_stops_a_queue_at_its_capability(engine: str) -> None:
    # Queue a may hold 12 GPUs; three 8-GPU jobs fit the nodes but only one fits the quota
    # (a second would make 16), so exactly one starts.
    jobs = [make_gang(f"job-{i}", gpus=8, queue="a") for i in range(3)]
    snapshot = make_snapshot(nodes=[*NODES, make_node("n3", gpus=8)], groups=jobs, queues=[make_queue("a", capability=resources(gpus=12))])
    binds = solve_checked(snapshot, engine).placement.binds
    assert len(binds) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_binds_nothing_into_a_closed_queue(engine: str) -> None:
    job = make_gang("job", gpus=1, queue="a")
    snapshot = make_snapshot(nodes=NODES, groups=[job], queues=[make_queue("a", state="closed")])
    assert solve_checked(snapshot, engine).placement.binds == ()
