"""A PodGroup that may start without the resource its queue caps is not held by the cap:
its reasons must not say the quota, so `nodes_would_help` reads True — and a node added
to the cluster does start it (found by the scale-up property test, issue 33).

The PodGroup has two tasks and a minimum either task alone meets (min_member below the sum
of the task minimums: Volcano's bypass, `solver.rules.gang`): `small`, which asks no GPU,
and `gpu`, whose pod asks a quarter GPU of a queue capped at 0 GPU. The one node takes no
`small` pod — too small for it, or outside its node affinity — so greedy tried `gpu` and
said "quota: … job needs 0.25" (or, with `small` tried first, "… job needs 0"): a reason no
node lifts, yet a node that takes `small` starts the PodGroup. The same with no minimum at
all (any one pod starts it). With a minimum that needs both tasks the cap does hold it, and
the reasons say so.

And a cap held by the queue's own pods that the PodGroup may preempt is no hold either:
preempt gives their resources back to the queue once a node holds the pod.
"""

from __future__ import annotations

import pytest

from models.placement import Decision, PodGroupOutcome
from models.snapshot import Snapshot
from solver.reasons import nodes_would_help
from tests.builders import make_gang, make_node, make_queue, make_snapshot, make_task, make_term, solve_checked

ENGINES = ["greedy", "cpsat"]
NO_ZONE = make_term("zone DoesNotExist")


def _snapshot(*, small: str, min_member: int, small_first: bool = True, added_node: bool = False) -> Snapshot:
    """Node n1 (4 cores, zone a, no GPU); queue capped at 0 GPU; PodGroup `job` of tasks
    `small` (1 core, no GPU; "big": 8 cores, "no_zone": only nodes without a zone) and `gpu`
    (1 core, 0.25 GPU), one pod each. `added_node`: a 64-core 8-GPU node without a zone too."""
    shape = {"big": {"cpu": 8}, "no_zone": {"required_node_affinity": [NO_ZONE]}}[small]
    tasks = [make_task("small", min_available=1, **shape), make_task("gpu", gpu_milli=250, min_available=1)]
    job = make_gang("job", queue="capped", min_member=min_member, tasks=tasks if small_first else tasks[::-1])
    nodes = [make_node("n1", cpu=4, labels={"zone": "a"})]
    if added_node:
        nodes.append(make_node("added", cpu=64, gpus=8))
    return make_snapshot(nodes=nodes, groups=[job], queues=[make_queue("capped", capability={"gpu": 0})])


def _outcome(snapshot: Snapshot, engine: str) -> tuple[PodGroupOutcome, Decision]:
    decision = solve_checked(snapshot, engine, time_limit_s=2.0)
    (job,) = decision.podgroups
    return job, decision


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("small_first", [True, False])
@pytest.mark.parametrize("min_member", [0, 1])
def test_a_task_no_node_admits_not_the_capped_one_is_why_it_waits(
    engine: str, min_member: int, small_first: bool
) -> None:
    job, _ = _outcome(_snapshot(small="no_zone", min_member=min_member, small_first=small_first), engine)
    assert job.state == "pending"
    assert [(r.rule, r.code) for r in job.reasons] == [("eligibility", "no_node")], job.reasons
    assert "task small" in job.reasons[0]
    assert nodes_would_help(job.reasons)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("small_first", [True, False])
@pytest.mark.parametrize("min_member", [0, 1])
def test_a_task_too_big_for_the_nodes_not_the_capped_one_is_why_it_waits(
    engine: str, min_member: int, small_first: bool
) -> None:
    job, _ = _outcome(_snapshot(small="big", min_member=min_member, small_first=small_first), engine)
    assert job.state == "pending"
    assert [(r.rule, r.code) for r in job.reasons] == [("capacity", "no_fit")], job.reasons
    assert "task small" in job.reasons[0] and "insufficient cpu" in job.reasons[0]
    assert nodes_would_help(job.reasons)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("small", ["big", "no_zone"])
@pytest.mark.parametrize("min_member", [0, 1])
def test_a_node_added_starts_it_without_the_capped_task(engine: str, small: str, min_member: int) -> None:
    job, decision = _outcome(_snapshot(small=small, min_member=min_member, added_node=True), engine)
    assert job.state == "scheduled"
    assert [bind.pod for bind in decision.placement.binds] == ["default/job-small-0"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("small", ["big", "no_zone"])
def test_a_minimum_that_needs_the_capped_task_is_held_by_the_quota(engine: str, small: str) -> None:
    # min_member 2 = 1 + 1: both task minimums apply, so the gang needs the quarter GPU
    job, _ = _outcome(_snapshot(small=small, min_member=2), engine)
    assert ("quota", "exceeded") in {(r.rule, r.code) for r in job.reasons}, job.reasons
    assert not nodes_would_help(job.reasons)
    added, decision = _outcome(_snapshot(small=small, min_member=2, added_node=True), engine)
    assert added.state == "pending" and decision.placement.binds == ()


def _own_queue_snapshot(*, preemptable: bool, added_node: bool = False) -> Snapshot:
    """Queue capped at 1 GPU, all of it held by `low` (priority 0, two half-GPU pods on n1, a
    4-core node; min_member 1, so one may go); `high` (priority 1) waits with one pod of 5
    cores and a quarter GPU, which no node holds. `added_node`: a 64-core 8-GPU node too."""
    low = make_gang("low", replicas=2, min_member=1, cpu=0.5, gpu_milli=500, queue="q", preemptable=preemptable,
                    running_on=["n1", "n1"])  # fmt: skip
    high = make_gang("high", cpu=5, gpu_milli=250, queue="q", priority=1)
    nodes = [make_node("n1", cpu=4, gpus=2), *([make_node("added", cpu=64, gpus=8)] if added_node else [])]
    return make_snapshot(nodes=nodes, groups=[low, high], queues=[make_queue("q", capability={"gpu": 1000})])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cap_its_queue_may_free_by_preempting_its_own_pods_leaves_the_wait_to_the_nodes(engine: str) -> None:
    # the scale-up property's third case: preempt gives the queue's own pods' GPU back, once a node holds the pod
    decision = solve_checked(_own_queue_snapshot(preemptable=True), engine, time_limit_s=2.0)
    (high,) = [o for o in decision.podgroups if o.name == "default/high"]
    assert high.state == "pending" and "quota" not in {r.rule for r in high.reasons}, high.reasons
    assert nodes_would_help(high.reasons)
    added = solve_checked(_own_queue_snapshot(preemptable=True, added_node=True), engine, time_limit_s=2.0)
    assert [(b.pod, b.node) for b in added.placement.binds] == [("default/high-worker-0", "added")]
    evicted = [(e.pod.rpartition("-")[0], e.for_) for e in added.placement.evictions]
    assert evicted == [("default/low-worker", "default/high")]  # one of low's two pods


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cap_held_by_pods_it_may_not_preempt_holds_it(engine: str) -> None:
    decision = solve_checked(_own_queue_snapshot(preemptable=False), engine, time_limit_s=2.0)
    (high,) = [o for o in decision.podgroups if o.name == "default/high"]
    assert ("quota", "exceeded") in {(r.rule, r.code) for r in high.reasons}, high.reasons
    assert not nodes_would_help(high.reasons)
    added = solve_checked(_own_queue_snapshot(preemptable=False, added_node=True), engine, time_limit_s=2.0)
    assert added.placement.binds == ()
