"""Rule 3, gang: min_member and (when min_member covers their sum) each task's min_available, or
nothing; victim gangs stay whole."""

from __future__ import annotations

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
