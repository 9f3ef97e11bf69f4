"""Rule 8, preemption and reclaim: who may be evicted, for whom, and how far a queue is reclaimed."""

from __future__ import annotations

import pytest

from solver.checker import check_placement
from solver.place import ENGINES
from solver.rules import preemption
from tests.builders import (
    Gang,
    bind_gang,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_queue,
    make_running,
    make_snapshot,
    resources,
    rule_violations,
    solve_checked,
)

NODES = [make_node("n1", gpus=8), make_node("n2", gpus=8)]
# Fixed deserved shares keep the numbers readable: b deserves 4 GPUs, a deserves 12.
EVERYTHING = resources(cpu=1000, memory=10_000)
QUEUES = [
    make_queue("a", deserved={**EVERYTHING, **resources(gpus=12)}),
    make_queue("b", deserved={**EVERYTHING, **resources(gpus=4)}),
    make_queue("locked", deserved={**EVERYTHING, **resources(gpus=0)}, reclaimable=False),
]


def _snapshot(*gangs: Gang, running=()):
    return make_snapshot(nodes=NODES, groups=gangs, running=running, queues=QUEUES)


def test_no_eviction_is_always_valid() -> None:
    job = make_gang("job", queue="a")
    assert rule_violations(preemption, _snapshot(job), make_placement(binds=bind_gang(job, ["n1"]))) == []


def test_preempting_a_lower_priority_pod_of_the_same_queue_is_valid() -> None:
    low = make_gang("low", gpus=8, queue="a", priority=1, running_on=["n1"])
    high = make_gang("high", gpus=8, queue="a", priority=5)
    snapshot = _snapshot(low, high)
    placement = make_placement(binds=bind_gang(high, ["n1"]), evictions=[make_eviction(low.pods[0], for_=high)])
    assert check_placement(snapshot, placement) == ()


def _preempt(victim: Gang, *, preemptor_queue: str = "a", priority: int = 5) -> list:
    high = make_gang("high", gpus=8, queue=preemptor_queue, priority=priority)
    placement = make_placement(binds=bind_gang(high, ["n2"]), evictions=[make_eviction(victim.pods[0], for_=high)])
    return rule_violations(preemption, _snapshot(victim, high), placement)


def test_evicting_a_non_preemptable_pod_is_reported() -> None:
    (violation,) = _preempt(make_gang("low", queue="a", priority=1, preemptable=False, running_on=["n1"]))
    assert violation.subject == "default/low-worker-0"
    assert violation.message == "preempt of pod default/low-worker-0 for default/high is not allowed: not preemptable"


def test_evicting_a_pod_of_a_non_preemptable_pod_group_is_reported() -> None:
    low = make_gang("low", queue="a", priority=1, preemptable=False, running_on=["n1"])
    pod = low.pods[0].model_copy(update={"preemptable": True})  # the pod says yes, its group says no
    (violation,) = _preempt(Gang(group=low.group, pods=(pod,)))
    assert "pod group default/low is not preemptable" in violation.message


def test_evicting_an_equal_or_higher_priority_pod_is_reported() -> None:
    (violation,) = _preempt(make_gang("vip", queue="a", priority=5, running_on=["n1"]))
    assert violation.message.endswith("priority 5 is not below 5")


def test_preempting_across_queues_is_reported() -> None:
    (violation,) = _preempt(make_gang("low", queue="b", priority=1, running_on=["n1"]))
    assert "preempt stays within a queue (b is not a)" in violation.message


def test_evicting_another_schedulers_pod_is_reported() -> None:
    foreign = make_running("foreign", node="n1")
    high = make_gang("high", queue="a", priority=5)
    placement = make_placement(binds=bind_gang(high, ["n2"]), evictions=[make_eviction(foreign, for_=high)])
    (violation,) = rule_violations(preemption, _snapshot(high, running=[foreign]), placement)
    assert "no PodGroup" in violation.message


def test_evicting_for_a_pod_group_that_gets_no_bind_or_does_not_exist_is_reported() -> None:
    low = make_gang("low", queue="a", priority=1, running_on=["n1"])
    high = make_gang("high", queue="a", priority=5)
    snapshot = _snapshot(low, high)
    no_bind = make_placement(evictions=[make_eviction(low.pods[0], for_=high)])
    (violation,) = rule_violations(preemption, snapshot, no_bind)
    assert violation.message.endswith("pod group default/high gets no bind in this placement")
    ghost = make_placement(binds=bind_gang(high, ["n2"]), evictions=[make_eviction(low.pods[0], for_="default/ghost")])
    (violation,) = rule_violations(preemption, snapshot, ghost)
    assert violation.message.endswith("pod group default/ghost does not exist")


def _reclaim(evicted: int, *, victim_queue: str = "b") -> list:
    """b runs 2×4 GPUs (deserves 4); a's job wants 8 GPUs on n2, which is free."""
    victim = make_gang("batch", replicas=2, gpus=4, queue=victim_queue, min_member=1, running_on=["n1", "n1"])
    job = make_gang("job", gpus=8, queue="a")
    placement = make_placement(
        binds=bind_gang(job, ["n2"]),
        evictions=[make_eviction(p, for_=job, reason="reclaim") for p in victim.pods[:evicted]],
    )
    return rule_violations(preemption, _snapshot(victim, job), placement)


def test_reclaiming_from_a_queue_above_its_deserved_share_is_valid() -> None:
    assert _reclaim(evicted=1) == []  # b: 8 → 4 GPUs; 4 + 4 > 4 held while taking it


def test_reclaiming_a_queue_down_to_its_deserved_share_is_reported() -> None:
    (violation,) = _reclaim(evicted=2)
    assert violation.subject == "b"
    assert "2 reclaim eviction(s) leave it nothing" in violation.message
    assert "gpu 4000 milli-GPU" in violation.message


def test_reclaiming_from_a_non_reclaimable_queue_is_reported() -> None:
    (violation,) = _reclaim(evicted=1, victim_queue="locked")
    assert violation.message.endswith("queue locked is not reclaimable")


def test_reclaiming_for_a_queue_that_holds_its_deserved_share_is_reported() -> None:
    """`full` deserves 4 GPUs and 1 CPU and already runs 8 GPUs: it may not reclaim more."""
    queues = [*QUEUES, make_queue("full", deserved=resources(gpus=4, cpu=1))]
    victim = make_gang("batch", replicas=2, gpus=4, queue="b", min_member=1, running_on=["n1", "n1"])
    busy = make_gang("busy", gpus=8, queue="full", running_on=["n2"])
    job = make_gang("job", queue="full")
    snapshot = make_snapshot(nodes=NODES, groups=[victim, busy, job], queues=queues)
    placement = make_placement(
        binds=bind_gang(job, ["n1"]), evictions=[make_eviction(victim.pods[0], for_=job, reason="reclaim")]
    )
    (violation,) = rule_violations(preemption, snapshot, placement)
    assert violation.message.endswith("queue full already holds its deserved share")


def test_queue_overused_and_above_deserved_follow_volcano() -> None:
    assert preemption.queue_overused({"gpu": 8000, "cpu": 10}, {"gpu": 8000})
    assert not preemption.queue_overused({"gpu": 4000}, {"gpu": 8000})
    assert preemption.above_deserved({"gpu": 8001}, {"gpu": 8000})
    assert not preemption.above_deserved({"gpu": 8000}, {"gpu": 8000, "cpu": 10})


def test_a_queue_reclaims_within_its_share_in_what_it_takes() -> None:
    """Volcano's capacity plugin compares only the dimensions the reclaimer asks: at its CPU
    share, a queue may take a GPU pod for a pod of a CPU and a GPU, not a CPU pod, and no
    pod that frees nothing the pod asks."""
    share = {"queue": "q", "allocated": {"cpu": 2000}, "deserved": {"cpu": 2000, "gpu": 1000}}
    request = {"cpu": 1000, "gpu": 1000}
    assert preemption.reclaim_share_refusal(**share, request=request, victim={"gpu": 1000}) is None
    refused = preemption.reclaim_share_refusal(**share, request=request, victim={"cpu": 1000, "gpu": 1000})
    assert refused == "queue q would pass its deserved cpu: 2000 held + 1000 asked > 2000"
    nothing_asked = preemption.reclaim_share_refusal(**share, request=request, victim={"memory": 4})
    assert nothing_asked == "frees nothing the pod asks"


_TREE = [make_queue("org"), make_queue("team-a", parent="org"), make_queue("team-b", parent="org"), make_queue("other")]


def _reclaim_across_subtrees(evicted: int, *, team_a_running: int = 6) -> list:
    """8 CPU. org ⊃ team-a (runs `team_a_running` 1-CPU pods) and team-b (asks 2, unplaced);
    other runs 2 and asks 4 more. Deserved: org 4, other 4; team-a 2, team-b 2. `evicted`
    team-a pods are reclaimed for other's pending job, which binds that many pods."""
    queues = _TREE
    hog = make_gang("hog", replicas=team_a_running, queue="team-a", min_member=1, running_on=["n1"] * team_a_running)
    stuck = make_gang("stuck", cpu=2, queue="team-b")
    mine = make_gang("mine", replicas=2, queue="other", running_on=["n1", "n1"])
    job = make_gang("job", replicas=4, queue="other", min_member=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[hog, stuck, mine, job], queues=queues)
    placement = make_placement(
        binds=bind_gang(job, ["n1"] * evicted),
        evictions=[make_eviction(p, for_=job, reason="reclaim") for p in hog.pods[:evicted]],
    )
    return rule_violations(preemption, snapshot, placement)


def test_reclaiming_across_subtrees_down_to_the_parents_share_is_valid() -> None:
    assert _reclaim_across_subtrees(evicted=2) == []  # org 6 → 4; 4 + 1 > 4 held


def test_reclaiming_across_subtrees_below_the_parents_share_is_reported() -> None:
    """team-a, deserving 2, is left 2 (2 + 1 > 2 holds); org, deserving 4, is left 2."""
    (violation,) = _reclaim_across_subtrees(evicted=4)
    assert violation.subject == "org"
    assert "4 reclaim eviction(s) leave it cpu 2" in violation.message


def test_reclaiming_out_of_a_subtree_at_its_share_is_reported() -> None:
    """team-a runs 4: above its own 2, but org holds just its 4, so other may take nothing."""
    (violation,) = _reclaim_across_subtrees(evicted=1, team_a_running=4)
    assert violation.message.endswith("queue org is not above its deserved share")


def test_reclaim_charges_the_subtrees_it_takes_out_of() -> None:
    queues = _TREE
    snapshot = make_snapshot(nodes=NODES, queues=queues)
    assert preemption.charged_queues(snapshot, victim_queue="team-a", preemptor_queue="team-b") == ("team-a",)
    assert preemption.charged_queues(snapshot, victim_queue="team-a", preemptor_queue="other") == ("team-a", "org")
    assert preemption.charged_queues(snapshot, victim_queue="org", preemptor_queue="team-a") == ("org",)


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_preempts_the_lower_priority_gang_for_a_higher_one(engine: str) -> None:
    # Both nodes full with a priority-0 job of queue a; a priority-5 8-GPU job of the same
    # queue evicts exactly one 8-GPU victim and binds where it was.
    victims = make_gang("low", replicas=2, gpus=8, queue="a", min_member=1, running_on=["n1", "n2"])
    urgent = make_gang("urgent", gpus=8, queue="a", priority=5)
    snapshot = make_snapshot(nodes=NODES, groups=[victims, urgent], queues=QUEUES)
    placement = solve_checked(snapshot, engine).placement
    (eviction,) = placement.evictions
    (bind,) = placement.binds
    assert bind.pod == urgent.pods[0].key and bind.node == eviction.node
