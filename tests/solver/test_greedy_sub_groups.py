"""The greedy engine places nested gangs (sub-groups) exactly: which shard lands in which
leaf, a job moved whole to another spine when its second shard fits no leaf of the first,
a job short of `min_sub_groups` binding nothing and naming the shard, pods in no
sub-group, running shards anchoring their leaf, and victims' shards kept whole or gone.
Every placement is judged by the checker (`solve_checked`), the answers computed by hand."""

from __future__ import annotations

import pytest

from models.placement import Decision
from models.snapshot import PodGroup
from solver import reasons
from tests.builders import (
    Gang,
    NodeSpec,
    make_gang,
    make_node,
    make_running,
    make_snapshot,
    make_task,
    solve_checked,
    with_sub_groups,
)


def _nodes_of(decision: Decision, gang: Gang, *indices: int) -> set[str]:
    """The nodes the pods of `gang` at `indices` are bound to."""
    keys = {gang.pods[i].key for i in indices}
    return {bind.node for bind in decision.placement.binds if bind.pod in keys}


def _bound(decision: Decision, gang: Gang) -> int:
    keys = {pod.key for pod in gang.pods}
    return sum(1 for bind in decision.placement.binds if bind.pod in keys)


def _outcome(decision: Decision, gang: Gang):  # noqa: ANN202
    return next(outcome for outcome in decision.podgroups if outcome.name == gang.group.key)


def _shards(name: str = "job", *, pods: int = 4, min_member: int = 4, job_tier: int | None = 2, **kwargs) -> Gang:  # noqa: ANN003
    """`pods` × 8 GPUs, shards of 2 pods each inside one leaf (tier 1)."""
    job = make_gang(name, replicas=pods, gpus=8, min_member=min_member, topology_tier=job_tier, **kwargs)
    return with_sub_groups(job, 2, tier=1)


def test_each_shard_takes_the_leaf_that_fits_it_best_under_one_spine() -> None:
    # Spine sp: sw-a (16 GPUs) and sw-b (24); spine sq: sw-c (16). The job (32 GPUs) fits
    # sp only; job-0 takes the tighter leaf sw-a, job-1 then sw-b; sq stays whole.
    # Nodes listed across the leaves, so that pod-by-pod best fit alone would split a shard.
    nodes = [
        make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
        make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
        make_node("b2", gpus=8, leaf="sw-b", spine="sp"),
        make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
        make_node("b3", gpus=8, leaf="sw-b", spine="sp"),
        make_node("c1", gpus=8, leaf="sw-c", spine="sq"),
        make_node("c2", gpus=8, leaf="sw-c", spine="sq"),
    ]
    job = _shards()
    for engine in ("greedy", "auto"):
        decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), engine)
        assert _bound(decision, job) == 4
        assert _nodes_of(decision, job, 0, 1) == {"a1", "a2"}
        assert len(_nodes_of(decision, job, 2, 3) & {"b1", "b2", "b3"}) == 2


def test_a_second_shard_that_fits_no_leaf_of_the_spine_moves_the_job_to_the_next_spine() -> None:
    # sp holds 32 GPUs but only sw-a holds a 2-node shard (sw-b and sw-x have one node each):
    # job-0 fits sw-a, job-1 no leaf of sp, so both shards go to sq's leaves.
    nodes = [
        make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
        make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
        make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
        make_node("x1", gpus=8, leaf="sw-x", spine="sp"),
        make_node("c1", gpus=8, leaf="sw-c", spine="sq"),
        make_node("c2", gpus=8, leaf="sw-c", spine="sq"),
        make_node("d1", gpus=8, leaf="sw-d", spine="sq"),
        make_node("d2", gpus=8, leaf="sw-d", spine="sq"),
    ]
    job = _shards()
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), "greedy")
    assert _nodes_of(decision, job, 0, 1) == {"c1", "c2"}
    assert _nodes_of(decision, job, 2, 3) == {"d1", "d2"}


_TWO_LEAVES = [
    make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
    make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
    make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
    make_node("b2", gpus=8, leaf="sw-b", spine="sp"),
]


def test_a_job_short_of_min_sub_groups_binds_nothing_and_names_the_shard() -> None:
    # min_member 2 (one shard), but both shards must start; b2 is busy, so job-1 finds one
    # free node in any leaf: nothing is bound.
    job = with_sub_groups(make_gang("job", replicas=4, gpus=8, min_member=2), 2, tier=1, min_sub_groups=2)
    busy = make_running("other", node="b2", gpus=8)
    decision = solve_checked(make_snapshot(nodes=_TWO_LEAVES, groups=[job], running=[busy]), "greedy")
    assert _bound(decision, job) == 0
    assert _outcome(decision, job).reasons[:2] == (
        reasons.sub_groups_short("shard", job="job", started=1, minimum=2),
        reasons.sub_group_no_room("job-1", job="job", placed=1, minimum=2, tier=1),
    )
    assert str(_outcome(decision, job).reasons[1]) == "gang: subgroup job-1 of job: 1 of min 2 pods fit in any tier-1 domain"


def test_one_shard_starts_a_job_whose_minimum_is_one_shard() -> None:
    # The same cluster without min_sub_groups: job-0 starts on sw-a, job-1 has no whole leaf.
    job = with_sub_groups(make_gang("job", replicas=4, gpus=8, min_member=2), 2, tier=1)
    busy = make_running("other", node="b2", gpus=8)
    decision = solve_checked(make_snapshot(nodes=_TWO_LEAVES, groups=[job], running=[busy]), "greedy")
    assert _nodes_of(decision, job, 0, 1) == {"a1", "a2"}
    assert _bound(decision, job) == 2


def test_a_pod_in_no_sub_group_goes_anywhere_in_the_jobs_domain() -> None:
    # min_member 3: shard job-0 (2 pods, one leaf) plus one pod of no sub-group. job-0 takes
    # sw-a; the loose pod counts for the job and goes to sw-b.
    subs = with_sub_groups(make_gang("job", replicas=3, gpus=8, min_member=3), 2, tier=1)
    loose = subs.pods[2].model_copy(update={"sub_group": None})
    group = PodGroup.model_validate({**subs.group.model_dump(), "sub_groups": [subs.group.sub_groups[0].model_dump()]})
    job = Gang(group=group, pods=(*subs.pods[:2], loose))
    nodes = [_TWO_LEAVES[2], *_TWO_LEAVES[:2]]  # b1 first: pod-by-pod best fit alone would split job-0
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), "greedy")
    assert _nodes_of(decision, job, 0, 1) == {"a1", "a2"}
    assert _nodes_of(decision, job, 2) == {"b1"}


def test_a_running_pod_anchors_its_shard_to_its_leaf() -> None:
    # job-0 has a pod running on b1: its other pod must join it on b2 (sw-b), and job-1 takes sw-a.
    job = _shards(job_tier=None, running_on=["b1"])
    decision = solve_checked(make_snapshot(nodes=_TWO_LEAVES, groups=[job]), "greedy")
    assert _nodes_of(decision, job, 1) == {"b2"}
    assert _nodes_of(decision, job, 2, 3) == {"a1", "a2"}


def test_preemption_takes_a_victim_shard_whole_never_half() -> None:
    # old: 4 pods running, min_member 2, shards of 2 (old-0 on sw-a, old-1 on sw-b). new needs
    # one node: evicting one pod would leave its shard at 1 < 2, so the whole shard goes,
    # and old keeps its other shard (2 ≥ min_member 2).
    old = with_sub_groups(
        make_gang("old", replicas=4, gpus=8, min_member=2, running_on=["a1", "a2", "b1", "b2"]), 2, tier=1
    )
    new = make_gang("new", replicas=1, gpus=8, priority=10)
    decision = solve_checked(make_snapshot(nodes=_TWO_LEAVES, groups=[old, new]), "greedy")
    evicted = {eviction.pod for eviction in decision.placement.evictions}
    assert evicted in ({old.pods[0].key, old.pods[1].key}, {old.pods[2].key, old.pods[3].key})
    assert _bound(decision, new) == 1


def test_a_job_with_no_leaf_for_its_shard_names_it_with_the_jobs_topology() -> None:
    # Two shards of 2, job on one spine, every leaf one node short: nothing fits, the shard is named.
    nodes = [
        make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
        make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
        make_node("c1", gpus=8, leaf="sw-c", spine="sp"),
        make_node("d1", gpus=8, leaf="sw-d", spine="sp"),
    ]
    job = _shards()
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), "greedy")
    assert _bound(decision, job) == 0
    assert reasons.sub_group_no_room("job-0", job="job", placed=1, minimum=2, tier=1) in _outcome(decision, job).reasons


def _interleaved() -> list[NodeSpec]:
    """sw-a (a1, a2) and sw-b (b1, b2) under sp, listed across the leaves."""
    return [_TWO_LEAVES[2], _TWO_LEAVES[0], _TWO_LEAVES[3], _TWO_LEAVES[1]]


def test_leader_and_workers_of_a_replica_share_a_leaf_or_wait() -> None:
    # A LeaderWorkerSet of 2 replicas of size 2 (leader + 1 worker), 8 GPUs a pod, each
    # replica on one leaf (exclusive-topology), one replica starts the set. sw-a has 3 nodes,
    # sw-b one: llm-0 takes two nodes of sw-a, llm-1 finds no leaf with two free and waits.
    job = make_gang(
        "llm",
        tasks=[make_task("leader", replicas=2, gpus=8, min_available=0), make_task("worker", replicas=2, gpus=8, min_available=0)],
        min_member=2,
    )
    hard = {"mode": "hard", "highest_tier_allowed": 1}
    subs = [{"name": f"llm-{i}", "policy": "llm", "min_member": 2, "network_topology": hard} for i in range(2)]
    group = PodGroup.model_validate({**job.group.model_dump(), "sub_groups": subs})
    leader0, leader1, worker0, worker1 = job.pods
    members = {leader0.key: "llm-0", worker0.key: "llm-0", leader1.key: "llm-1", worker1.key: "llm-1"}
    job = Gang(group=group, pods=tuple(pod.model_copy(update={"sub_group": members[pod.key]}) for pod in job.pods))
    nodes = [
        make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
        make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
        make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
        make_node("a3", gpus=8, leaf="sw-a", spine="sp"),
    ]
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), "greedy")
    assert _nodes_of(decision, job, 0, 2) <= {"a1", "a2", "a3"}
    assert _bound(decision, job) == 2


def test_a_soft_shard_prefers_one_leaf() -> None:
    # Soft tier 1: the shard goes whole into a leaf although pod-by-pod best fit would split it.
    job = with_sub_groups(make_gang("job", replicas=2, gpus=8, min_member=2), 2)
    soft = {"mode": "soft", "highest_tier_allowed": 1}
    group = PodGroup.model_validate(
        {**job.group.model_dump(), "sub_groups": [{**job.group.sub_groups[0].model_dump(), "network_topology": soft}]}
    )
    job = Gang(group=group, pods=job.pods)
    decision = solve_checked(make_snapshot(nodes=_interleaved(), groups=[job]), "greedy")
    assert _nodes_of(decision, job, 0, 1) in ({"a1", "a2"}, {"b1", "b2"})


def test_a_started_shards_further_pods_stay_in_its_leaf() -> None:
    # Shard of 3 pods, min 2, one leaf: sw-a holds 2 of them, sw-b (b1) none of its pairs.
    # The shard starts on sw-a; its third pod stays pending rather than leave the leaf for b1.
    job = with_sub_groups(make_gang("job", replicas=3, gpus=8, min_member=2), 3, tier=1, minimum=2)
    decision = solve_checked(make_snapshot(nodes=_TWO_LEAVES[:3], groups=[job]), "greedy")
    assert _nodes_of(decision, job, 0, 1) == {"a1", "a2"}
    assert _bound(decision, job) == 2


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_shard_a_started_job_leaves_out_says_no_leaf_takes_it_whole(engine: str) -> None:
    """Leaves sw-a (two 8-GPU nodes) and sw-b (8 + 4 GPUs) under one spine; a job of two
    shards of 2 × 8 GPUs starts with one shard in sw-a. The other shard's pods would each fit
    a node (b1), so the task's sentence said they "fit beside this placement"; the shard's
    own sentence says why it waits: only 1 of its 2 pods fits in any leaf."""
    nodes = [
        make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
        make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
        make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
        make_node("b2", gpus=4, leaf="sw-b", spine="sp"),
    ]
    job = with_sub_groups(make_gang("job", replicas=4, gpus=8, min_member=2, topology_tier=2), 2, tier=1)
    decision = solve_checked(make_snapshot(nodes=nodes, groups=[job]), engine)
    (outcome,) = decision.podgroups
    assert outcome.state == "scheduled"
    assert {unplaced.pod: unplaced.reason for unplaced in outcome.unplaced_pods} == {
        "default/job-worker-2": "gang: subgroup job-1 of job: 1 of min 2 pods fit in any tier-1 domain",
        "default/job-worker-3": "gang: subgroup job-1 of job: 1 of min 2 pods fit in any tier-1 domain",
    }


def _replicas(count: int) -> Gang:
    """A LeaderWorkerSet of `count` replicas of size 2 (leader + worker, 4 GPUs each), each
    replica inside one leaf (exclusive-topology); one replica starts the set."""
    job = make_gang(
        "llm",
        tasks=[
            make_task("leader", replicas=count, gpus=4, min_available=0),
            make_task("worker", replicas=count, gpus=4, min_available=0),
        ],
        min_member=2,
    )
    hard = {"mode": "hard", "highest_tier_allowed": 1}
    subs = [{"name": f"llm-{i}", "policy": "llm", "min_member": 2, "network_topology": hard} for i in range(count)]
    group = PodGroup.model_validate({**job.group.model_dump(), "sub_groups": subs})
    members = {pod.key: f"llm-{i % count}" for i, pod in enumerate(job.pods)}
    return Gang(group=group, pods=tuple(pod.model_copy(update={"sub_group": members[pod.key]}) for pod in job.pods))


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_hundreds_of_replicas_that_fit_nowhere_change_nothing_and_each_says_why(engine: str) -> None:
    """Two leaves of two 8-GPU nodes hold 4 replicas of 2 × 4 GPUs. A set of 300 replicas
    binds what a set of 8 binds, pod for pod: the replicas past the 4th fit in no leaf, and
    greedy tries such alike replicas once, not 296 times (a mutated manifest of 5,000
    took a 0.5 s call past 7 s). Each pod left out names its own replica."""
    nodes = [make_node(f"{leaf}{n}", gpus=8, leaf=f"sw-{leaf}", spine="sp") for leaf in "ab" for n in (1, 2)]
    few, many = _replicas(8), _replicas(300)
    placed_few = solve_checked(make_snapshot(nodes=nodes, groups=[few]), engine, time_limit_s=5.0)
    placed_many = solve_checked(make_snapshot(nodes=nodes, groups=[many]), engine, time_limit_s=5.0)
    binds_few = {(bind.pod, bind.node) for bind in placed_few.placement.binds}
    assert len(binds_few) == 8
    if engine == "greedy":
        assert {(bind.pod, bind.node) for bind in placed_many.placement.binds} == binds_few
    else:
        assert _bound(placed_many, many) == 8
    (outcome,) = placed_many.podgroups
    replica = {pod.key: pod.sub_group for pod in many.pods}
    assert len(outcome.unplaced_pods) == 2 * 300 - 8
    for unplaced in outcome.unplaced_pods:
        assert unplaced.reason == f"gang: subgroup {replica[unplaced.pod]} of llm: 0 of min 2 pods fit in any tier-1 domain"


@pytest.mark.parametrize("min_sub_groups", [1, None])
def test_a_shard_that_fits_starts_the_job_after_a_larger_one_did_not(min_sub_groups: int | None) -> None:
    """Two nodes of sw-a with 2 GPUs free each; shards of 2 pods, one of which starts the job
    (by `min_sub_groups`, or by min_member alone): job-0 (2 × 4 GPUs) fits no leaf, job-1
    (2 × 1 GPU) does. The shard tried after one that did not start is skipped only when it
    is alike (same pods' shapes, minimum, topology): job-1 is not, so it starts the job."""
    job = with_sub_groups(
        make_gang(
            "job",
            tasks=[make_task("big", replicas=2, gpus=4, min_available=0), make_task("small", replicas=2, gpus=1, min_available=0)],
            min_member=2,
        ),
        2,
        tier=1,
        min_sub_groups=min_sub_groups,
    )
    busy = [make_running(f"other-{node}", node=node, gpus=6) for node in ("a1", "a2")]
    decision = solve_checked(make_snapshot(nodes=_TWO_LEAVES[:2], groups=[job], running=busy), "greedy")
    assert _bound(decision, job) == 2
    assert _nodes_of(decision, job, 0, 1) == set()

