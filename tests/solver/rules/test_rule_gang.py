"""Rule 3, gang: min_member and (when min_member covers their sum) each task's min_available, or
nothing; victim gangs stay whole."""

from __future__ import annotations

import pytest

from solver.place import ENGINES
from solver.rules import gang
from tests.builders import (
    Gang,
    bind_gang,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    make_task,
    rule_violations,
    solve_checked,
)

NODES = [make_node("n1", gpus=8), make_node("n2", gpus=8)]


def test_a_gang_bound_whole_is_valid() -> None:
    job = make_gang("job", replicas=4, gpus=2)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["n1"] * 4))) == []


def test_gang_below_min_member_is_reported() -> None:
    job = make_gang("job", replicas=4, gpus=2)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    (violation,) = rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["n1"] * 3)))
    assert violation.subject == "default/job"
    assert violation.message.startswith("pod group default/job: 0 running + 3 bound = 3 < min_member 4")


def test_running_pods_count_toward_min_member() -> None:
    job = make_gang("job", replicas=4, gpus=2, running_on=["n2", "n2"])
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["n1", "n1"]))) == []


def test_a_group_with_no_bind_is_not_judged() -> None:
    job = make_gang("job", replicas=4, running_on=["n1"])  # 1 of 4 running: not this placement's doing
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement()) == []


def test_a_task_below_its_min_available_is_reported_even_when_min_member_is_met() -> None:
    """min_member 4 covers ps 1 + worker 3, so both task minimums apply."""
    job = make_gang(
        "job", tasks=[make_task("ps", replicas=1), make_task("worker", replicas=4, min_available=3)], min_member=4
    )
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    placement = make_placement(binds=bind_gang(job, ["n1"] * 4, task="worker"))  # 4 ≥ 4, but no ps
    (violation,) = rule_violations(gang, snapshot, placement)
    assert violation.message == "pod group default/job: task ps has 0 < min_available 1"


def test_task_minimums_do_not_apply_when_min_member_is_below_their_sum() -> None:
    """min_member 3 < ps 1 + worker 3 (Volcano's bypass): any 3 pods make the gang."""
    job = make_gang("job", tasks=[make_task("ps", replicas=1), make_task("worker", replicas=3)], min_member=3)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["n1"] * 3, task="worker"))) == []
    (violation,) = rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["n1"] * 2, task="worker")))
    assert violation.message == "pod group default/job: 0 running + 2 bound = 2 < min_member 3"


def test_a_waiting_task_is_left_out_of_the_requirement() -> None:
    """min_member 4 = prep 2 + train 2; train waits on prep, so 2 prep pods suffice now."""
    job = make_gang("job", tasks=[make_task("prep", replicas=2), make_task("train", replicas=2, depends_on=["prep"])])
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["n1", "n1"], task="prep"))) == []


def test_a_victim_gang_cut_below_min_member_is_reported() -> None:
    victim = make_gang("victim", replicas=3, min_member=2, running_on=["n1", "n1", "n1"])
    job = make_gang("job", priority=9)
    snapshot = make_snapshot(nodes=NODES, groups=[victim, job])
    placement = make_placement(
        binds=bind_gang(job, ["n1"]),
        evictions=[make_eviction(victim.pods[0], for_=job), make_eviction(victim.pods[1], for_=job)],
    )
    (violation,) = rule_violations(gang, snapshot, placement)
    assert violation.subject == "default/victim"
    assert "2 evicted leaves 1 running + 0 bound = 1 < min_member 2" in violation.message


def test_a_victim_gang_may_lose_all_its_pods_or_keep_enough() -> None:
    victim = make_gang("victim", replicas=3, min_member=2, running_on=["n1", "n1", "n1"])
    job = make_gang("job", priority=9)
    snapshot = make_snapshot(nodes=NODES, groups=[victim, job])
    keep_two = make_placement(binds=bind_gang(job, ["n1"]), evictions=[make_eviction(victim.pods[0], for_=job)])
    lose_all = make_placement(binds=bind_gang(job, ["n1"]), evictions=[make_eviction(p, for_=job) for p in victim.pods])
    assert rule_violations(gang, snapshot, keep_two) == []
    assert rule_violations(gang, snapshot, lose_all) == []


def test_requirement_subtracts_waiting_tasks() -> None:
    job = make_gang("job", tasks=[make_task("a", replicas=2), make_task("b", replicas=2, depends_on=["a"])])
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    requirement = gang.gang_requirement(snapshot, job.group)
    assert (requirement.min_member, requirement.min_per_task, requirement.waiting) == (2, {"a": 2}, {"b"})


# ---- the definition: gang_requirement ----


def _requirement(job: Gang) -> gang.GangRequirement:
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    return gang.gang_requirement(snapshot, snapshot.pod_groups[0])


def test_requirement_with_task_minimums_applying_keeps_each_task_minimum() -> None:
    job = make_gang(
        "job", tasks=[make_task("ps", replicas=1), make_task("worker", replicas=4, min_available=3)], min_member=6
    )
    requirement = _requirement(job)
    assert requirement.task_minimums_apply
    assert (requirement.min_member, requirement.min_per_task) == (6, {"ps": 1, "worker": 3})


def test_requirement_with_min_member_equal_to_the_task_sum_applies_them() -> None:
    """Volcano bypasses only when minAvailable < the sum: equal is enforced."""
    job = make_gang("job", tasks=[make_task("ps", replicas=1), make_task("worker", replicas=3)], min_member=4)
    assert _requirement(job).min_per_task == {"ps": 1, "worker": 3}


def test_requirement_below_the_task_sum_keeps_min_member_only() -> None:
    """Volcano's quick-start job: 20 replicas (task minimum 20), minAvailable 4."""
    requirement = _requirement(make_gang("job", replicas=20, cpu=4, min_member=4))
    assert not requirement.task_minimums_apply
    assert (requirement.min_member, requirement.min_per_task) == (4, {"worker": 0})
    assert requirement.task_minimum("worker") == 0


def test_requirement_applying_takes_a_waiting_task_minimum_off_min_member() -> None:
    job = make_gang(
        "job",
        tasks=[make_task("prep", replicas=2), make_task("train", replicas=4, min_available=2, depends_on=["prep"])],
        min_member=6,
    )
    requirement = _requirement(job)
    assert (requirement.min_member, requirement.min_per_task, requirement.waiting) == (4, {"prep": 2}, {"train"})


def test_requirement_below_the_task_sum_with_a_waiting_task_needs_min_member_of_the_rest() -> None:
    """min_member 4 < prep 3 + train 5, train waits: 3 prep pods now (not 4 − 5 → 0)."""
    job = make_gang(
        "job", tasks=[make_task("prep", replicas=3), make_task("train", replicas=5, depends_on=["prep"])], min_member=4
    )
    requirement = _requirement(job)
    assert not requirement.task_minimums_apply
    assert (requirement.min_member, requirement.min_per_task) == (3, {"prep": 0})


def test_requirement_below_the_task_sum_with_enough_ready_pods_keeps_min_member() -> None:
    job = make_gang(
        "job", tasks=[make_task("prep", replicas=6), make_task("train", replicas=5, depends_on=["prep"])], min_member=4
    )
    assert _requirement(job).min_member == 4


def test_requirement_below_the_task_sum_counts_running_pods_of_a_waiting_task() -> None:
    """prep 1 pod pending (it was restarted), train 2 of 5 still running: 1 + 2 = 3 can count."""
    job = make_gang(
        "job",
        tasks=[make_task("prep", replicas=1), make_task("train", replicas=5, depends_on=["prep"])],
        min_member=4,
        running_on={"train": ["n1", "n1"]},
    )
    requirement = _requirement(job)
    assert (requirement.min_member, requirement.waiting) == (3, {"train"})


def test_the_declared_task_sum_decides_when_a_task_does_not_carry_its_minimum() -> None:
    """ps 1 + worker 0 here, but minTaskMember declared ps 1 + worker 20 (its pods split by
    shape): 3 < 21, so ps's minimum does not apply either."""
    job = make_gang(
        "job", tasks=[make_task("ps", replicas=1), make_task("worker", replicas=3, min_available=0)], min_member=3
    )
    assert _requirement(job).min_per_task == {"ps": 1, "worker": 0}
    declared = Gang(group=job.group.model_copy(update={"task_min_available_total": 21}), pods=job.pods)
    assert not _requirement(declared).task_minimums_apply


# ---- the definitions: can it be met, is it met, which pods make it ----

# min_member 4 = ps 1 + worker 3: task minimums apply.
APPLYING = gang.GangRequirement(
    min_member=4, min_per_task={"ps": 1, "worker": 3}, waiting=frozenset(), task_minimums_apply=True
)
# min_member 2 < ps 1 + worker 2 (Volcano's bypass): only min_member counts, from any task.
BYPASS = gang.GangRequirement(
    min_member=2, min_per_task={"ps": 0, "worker": 0}, waiting=frozenset(), task_minimums_apply=False
)
# min_member 3 < prep 3 + train 5, train waits on prep: 3 pods, none of them a pending train pod.
WAITING = gang.GangRequirement(
    min_member=3, min_per_task={"prep": 0}, waiting=frozenset({"train"}), task_minimums_apply=False
)


def test_pod_shortages_name_min_member_first_then_each_short_task_running_pods_counted() -> None:
    """ps 1 pending; worker 1 running + 1 pending: 3 pods < 4, and worker 2 < 3."""
    shortages = gang.pod_shortages(APPLYING, {"ps": 0, "worker": 1}, {"ps": 1, "worker": 1})
    assert shortages == [
        gang.PodShortage(task=None, minimum=4, pods=3),
        gang.PodShortage(task="worker", minimum=3, pods=2),
    ]
    assert not gang.can_be_met(APPLYING, {"ps": 0, "worker": 1}, {"ps": 1, "worker": 1})
    assert gang.can_be_met(APPLYING, {"ps": 0, "worker": 1}, {"ps": 1, "worker": 2})


def test_can_be_met_per_task_even_when_min_member_is_reached() -> None:
    """6 pods ≥ 4, but no ps pod at all: the ps minimum can never be met."""
    assert gang.pod_shortages(APPLYING, {}, {"worker": 6}) == [gang.PodShortage(task="ps", minimum=1, pods=0)]


def test_can_be_met_under_the_bypass_asks_min_member_only() -> None:
    """No ps pod, yet 2 workers make min_member 2: task minimums do not apply."""
    assert gang.can_be_met(BYPASS, {}, {"worker": 2})
    assert gang.pod_shortages(BYPASS, {}, {"worker": 1}) == [gang.PodShortage(task=None, minimum=2, pods=1)]


def test_can_be_met_counts_a_waiting_task_running_pods_not_its_pending_ones() -> None:
    """prep 1 pending + train 2 running = 3 ≥ 3; with 1 train running, 2 < 3 whatever train has pending."""
    assert gang.can_be_met(WAITING, {"prep": 0, "train": 2}, {"prep": 1, "train": 3})
    assert gang.pod_shortages(WAITING, {"prep": 0, "train": 1}, {"prep": 1, "train": 4}) == [
        gang.PodShortage(task=None, minimum=3, pods=2)
    ]


def test_is_met_needs_min_member_and_each_task_minimum() -> None:
    assert gang.is_met(APPLYING, {"ps": 1, "worker": 3})
    assert not gang.is_met(APPLYING, {"worker": 4})  # 4 ≥ 4, no ps
    assert gang.unmet_tasks(APPLYING, {"worker": 4}) == [("ps", 0, 1)]
    assert not gang.is_met(APPLYING, {"ps": 2, "worker": 1})  # 3 < 4, and worker 1 < 3
    assert gang.unmet_tasks(APPLYING, {"ps": 2, "worker": 1}) == [("worker", 1, 3)]


def test_is_met_under_the_bypass_takes_min_member_from_any_task() -> None:
    assert gang.is_met(BYPASS, {"worker": 2})
    assert gang.is_met(BYPASS, {"ps": 1, "worker": 1})
    assert not gang.is_met(BYPASS, {"ps": 1})
    assert gang.unmet_tasks(BYPASS, {"ps": 1}) == []


def test_is_met_counts_a_waiting_task_running_pods() -> None:
    """1 prep placed + 2 train still running = 3 ≥ 3."""
    assert gang.is_met(WAITING, {"prep": 1, "train": 2})
    assert not gang.is_met(WAITING, {"prep": 1, "train": 1})


def test_minimum_pods_takes_each_task_minimum_then_fills_min_member_in_the_given_order() -> None:
    """min_member 5 = a 2 + b 2 (+1 from either): the order decides which task gives the fifth pod."""
    requirement = gang.GangRequirement(
        min_member=5, min_per_task={"a": 2, "b": 2}, waiting=frozenset(), task_minimums_apply=True
    )
    assert gang.minimum_pods(requirement, {}, [("a", 4), ("b", 4)]) == {"a": 3, "b": 2}
    assert gang.minimum_pods(requirement, {}, [("b", 4), ("a", 4)]) == {"a": 2, "b": 3}
    # b has only its 2: the order's b run is used up by b's minimum, the fifth pod is a's.
    assert gang.minimum_pods(requirement, {}, [("b", 2), ("a", 4)]) == {"a": 3, "b": 2}


def test_minimum_pods_counts_running_pods_per_task_and_toward_min_member() -> None:
    """a 1 running: a needs 1 more, b 2; 1 + 1 + 2 = 4 < 5, so one more from the order (a)."""
    requirement = gang.GangRequirement(
        min_member=5, min_per_task={"a": 2, "b": 2}, waiting=frozenset(), task_minimums_apply=True
    )
    assert gang.minimum_pods(requirement, {"a": 1, "b": 0}, [("a", 3), ("b", 4)]) == {"a": 2, "b": 2}
    assert gang.minimum_pods(requirement, {"a": 3, "b": 2}, [("a", 3), ("b", 4)]) == {"a": 0, "b": 0}


def test_minimum_pods_gives_a_task_its_first_pods_in_the_order_for_its_minimum() -> None:
    """Pods by cost: a (0), b (50), a (100); min_member 2, a min 1 (b min 0). a's minimum takes
    its cheapest pod, the first in the order; the second pod is the next one after it, b's —
    not a's 100 one, which taking a's minimum pod again would give."""
    requirement = gang.GangRequirement(
        min_member=2, min_per_task={"a": 1, "b": 0}, waiting=frozenset(), task_minimums_apply=True
    )
    assert gang.minimum_pods(requirement, {}, [("a", 1), ("b", 1), ("a", 1)]) == {"a": 1, "b": 1}


def test_minimum_pods_under_the_bypass_takes_the_first_pods_of_any_task() -> None:
    """Volcano's bypass: min_member 2 < ps 1 + worker 2 → the two first pods in the order."""
    assert gang.minimum_pods(BYPASS, {}, [("ps", 1), ("worker", 4)]) == {"ps": 1, "worker": 1}
    assert gang.minimum_pods(BYPASS, {}, [("worker", 4), ("ps", 1)]) == {"ps": 0, "worker": 2}
    # The same tasks with their minimums applying (min_member 3 = 1 + 2) would take ps 1, worker 2.
    applying = gang.GangRequirement(
        min_member=3, min_per_task={"ps": 1, "worker": 2}, waiting=frozenset(), task_minimums_apply=True
    )
    assert gang.minimum_pods(applying, {}, [("worker", 4), ("ps", 1)]) == {"ps": 1, "worker": 2}


def test_minimum_pods_skips_waiting_tasks_and_counts_their_running_pods() -> None:
    """train waits: its pending pods are never chosen; its 2 running pods leave 1 of min_member 3."""
    assert gang.minimum_pods(WAITING, {"prep": 0, "train": 2}, [("train", 3), ("prep", 2)]) == {"prep": 1}


def test_minimum_pods_does_not_cut_a_task_minimum_to_its_pods() -> None:
    """worker needs 3, has 1 pending: the count says 3 (the gang cannot be met), not 1."""
    assert gang.minimum_pods(APPLYING, {}, [("ps", 1), ("worker", 1)]) == {"ps": 1, "worker": 3}


def test_minimum_pods_of_the_quick_start_job_is_min_member_of_its_one_task() -> None:
    """20 replicas, minAvailable 4 (< 20): 4 pods, not 20."""
    requirement = _requirement(make_gang("job", replicas=20, cpu=4, min_member=4))
    assert gang.minimum_pods(requirement, {}, [("worker", 20)]) == {"worker": 4}


def test_task_shortfalls_and_members_missing() -> None:
    assert gang.task_shortfalls(APPLYING, {"ps": 1, "worker": 1}) == {"ps": 0, "worker": 2}
    assert gang.task_shortfalls(BYPASS, {"worker": 1}) == {"ps": 0, "worker": 0}
    assert gang.members_missing(APPLYING, running=1, chosen=2) == 1
    assert gang.members_missing(APPLYING, running=3, chosen=2) == -1


def test_a_victim_gang_may_keep_none_or_at_least_min_member() -> None:
    assert gang.victim_may_keep(APPLYING, kept=0)
    assert gang.victim_may_keep(APPLYING, kept=4)
    assert not gang.victim_may_keep(APPLYING, kept=3)
    assert gang.victim_may_keep(APPLYING, kept=3, bound=1)
    assert gang.least_kept(4, running=6) == 4
    assert gang.least_kept(4, running=2) == 2


def test_the_problem_holds_each_group_facts_once() -> None:
    """ps 1 pending; worker 1 running, 1 pending, min 3: running and pending per task, the
    requirement, and can_be_met False (3 pods < 4, worker 2 < 3)."""
    from solver.problem import build_problem

    job = make_gang(
        "job", tasks=[make_task("ps", replicas=1), make_task("worker", replicas=2, min_available=3)],
        min_member=4, running_on={"worker": ["n1"]},
    )
    ok = make_gang("ok", replicas=2)
    snapshot = make_snapshot(nodes=NODES, groups=[job, ok])
    problem = build_problem(snapshot)
    facts = problem.group_facts[problem.group_index["default/job"]]
    assert facts.requirement == gang.gang_requirement(snapshot, snapshot.pod_groups[0])
    assert dict(facts.running) == {"ps": 0, "worker": 1}
    assert facts.pending_count == {"ps": 1, "worker": 1}
    assert [problem.pod_keys[p] for p in facts.running_pods] == [
        pod.key for pod in snapshot.pods_by_group["default/job"] if pod.phase == "running"
    ]
    assert all(not problem.pod_running[p] for pods in facts.pending.values() for p in pods)
    assert not facts.can_be_met
    assert problem.group_facts[problem.group_index["default/ok"]].can_be_met


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_starts_a_gang_whole_or_not_at_all(engine: str) -> None:
    # 16 GPUs free; a 3 × 8-GPU gang cannot start, a 2 × 8-GPU one can.
    big = make_gang("big", replicas=3, gpus=8)
    small = make_gang("small", replicas=2, gpus=8)
    snapshot = make_snapshot(nodes=NODES, groups=[big, small])
    binds = solve_checked(snapshot, engine).placement.binds
    assert sorted(b.pod for b in binds) == sorted(p.key for p in small.pods)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_starts_volcanos_quick_start_job_on_four_of_its_twenty(engine: str) -> None:
    # minAvailable 4 below the task's 20 (Volcano's bypass): 5 pods of 1 CPU fit, so 5 bind.
    job = make_gang("job", replicas=20, cpu=1, min_member=4)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=5)], groups=[job])
    assert len(solve_checked(snapshot, engine).placement.binds) == 5
