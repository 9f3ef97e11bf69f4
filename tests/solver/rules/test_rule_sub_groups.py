"""Sub-groups (gangs inside a gang): rule 3's sub-group parts and rule 5's per-sub-group
domains, judged by the rules alone on hand-built placements."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from models.placement import Eviction
from models.snapshot import PodGroup
from solver.rules import gang, topology
from tests.builders import (
    bind_gang,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    rule_violations,
    with_sub_groups,
)

# Spine sp over leaves sw-a (a1, a2) and sw-b (b1, b2); spine sq over sw-c (c1).
NODES = [
    make_node("a1", gpus=8, leaf="sw-a", spine="sp"),
    make_node("a2", gpus=8, leaf="sw-a", spine="sp"),
    make_node("b1", gpus=8, leaf="sw-b", spine="sp"),
    make_node("b2", gpus=8, leaf="sw-b", spine="sp"),
    make_node("c1", gpus=8, leaf="sw-c", spine="sq"),
]


def _shards(**kwargs) -> object:  # noqa: ANN003
    """4 pods × 8 GPUs, min_member 2 (the job), shards of 2, each on one leaf, the job on one spine."""
    job = make_gang("job", replicas=4, gpus=8, min_member=2, topology_tier=2)
    return with_sub_groups(job, 2, tier=1, **kwargs)


def test_whole_shards_on_their_leaves_under_one_spine_break_nothing() -> None:
    job = _shards()
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    placement = make_placement(binds=bind_gang(job, ["a1", "a2", "b1", "b2"]))
    assert rule_violations(gang, snapshot, placement) == []
    assert rule_violations(topology, snapshot, placement) == []


def test_one_whole_shard_alone_starts_the_job() -> None:
    job = _shards()
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a1", "a2"]))) == []


def test_a_shard_cut_below_its_minimum_is_reported_by_name() -> None:
    job = _shards()
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    (violation,) = rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a1", "a2", "b1"])))
    assert "sub-group job-1: 0 running + 1 bound = 1 < min_member 2" in violation.message


def test_a_shard_split_over_two_leaves_breaks_its_tier_but_not_the_jobs() -> None:
    job = _shards()
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    (violation,) = rule_violations(topology, snapshot, make_placement(binds=bind_gang(job, ["a1", "b1"])))
    assert violation.message.startswith("sub-group job-0 of pod group default/job must stay within")
    assert "a1 in sw-a, b1 in sw-b" in violation.message


def test_shards_on_two_spines_break_the_jobs_tier() -> None:
    job = with_sub_groups(make_gang("job", replicas=4, gpus=8, min_member=2, topology_tier=2), 2, tier=2)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    placement = make_placement(binds=bind_gang(job, ["a1", "a2", "c1", "c1"][:3]))
    messages = [v.message for v in rule_violations(topology, snapshot, placement)]
    assert any(m.startswith("pod group default/job must stay within one HyperNode of tier <= 2") for m in messages)


def test_min_sub_groups_counts_started_shards_per_policy() -> None:
    job = _shards(min_sub_groups=2)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    (violation,) = rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a1", "a2"])))
    assert "1 more sub-group(s) of policy shard must start (min_sub_groups 2)" in violation.message
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a1", "a2", "b1", "b2"]))) == []


def test_running_pods_of_a_shard_count_toward_its_minimum() -> None:
    job = with_sub_groups(
        make_gang("job", replicas=4, gpus=8, min_member=2, topology_tier=2, running_on=["a1"]), 2, tier=1
    )
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    # job-0 has a1 running; binding its other pod to a2 completes it, b1 alone does not start job-1.
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a2"]))) == []
    (violation,) = rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a2", "b1"])))
    assert "sub-group job-1" in violation.message
    (wrong_leaf,) = rule_violations(topology, snapshot, make_placement(binds=bind_gang(job, ["b1"])))
    assert "sub-group job-0" in wrong_leaf.message


def _evict(pod) -> Eviction:  # noqa: ANN001
    return Eviction.model_validate({"pod": pod.key, "node": pod.node, "reason": "preempt", "for": "default/new"})


def test_a_victim_shard_keeps_all_or_enough() -> None:
    running = with_sub_groups(
        make_gang("old", replicas=4, gpus=8, min_member=2, running_on=["a1", "a2", "b1", "b2"]), 2
    )
    snapshot = make_snapshot(nodes=NODES, groups=[running])
    one = make_placement(evictions=[_evict(running.pods[0])])
    (violation,) = rule_violations(gang, snapshot, one)
    assert "victim sub-group old-0 is cut below its gang" in violation.message
    both = make_placement(evictions=[_evict(pod) for pod in running.pods[:2]])
    assert rule_violations(gang, snapshot, both) == []


def test_a_pod_in_no_sub_group_counts_for_the_job_only() -> None:
    job = make_gang("job", replicas=3, gpus=8, min_member=3)
    subs = with_sub_groups(job, 2)
    # The third pod leaves its sub-group: the job needs 3 pods, job-0 needs 2.
    loose = subs.pods[2].model_copy(update={"sub_group": None})
    group = subs.group.model_copy(update={"sub_groups": subs.group.sub_groups[:1]})
    job = type(subs)(group=PodGroup.model_validate(group.model_dump()), pods=(*subs.pods[:2], loose))
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(gang, snapshot, make_placement(binds=bind_gang(job, ["a1", "a2", "b1"]))) == []
    assert gang.sub_group_pods(snapshot, job.group) == {"job-0": job.pods[:2]}


def test_a_pod_naming_an_unknown_sub_group_is_refused() -> None:
    job = _shards()
    stray = job.pods[0].model_copy(update={"sub_group": "job-9"})
    with pytest.raises(ValidationError, match="unknown sub-group 'job-9'"):
        make_snapshot(nodes=NODES, groups=[type(job)(group=job.group, pods=(stray, *job.pods[1:]))])


def test_min_sub_groups_must_name_a_policy() -> None:
    job = _shards()
    with pytest.raises(ValidationError, match="min_sub_groups names policy 'decode'"):
        PodGroup.model_validate({**job.group.model_dump(), "min_sub_groups": {"decode": 1}})


def test_repeated_sub_group_names_are_refused() -> None:
    job = _shards()
    data = job.group.model_dump()
    data["sub_groups"] = [data["sub_groups"][0], data["sub_groups"][0]]
    with pytest.raises(ValidationError, match="sub-group names repeat"):
        PodGroup.model_validate(data)


@pytest.mark.parametrize(("placed", "shortfall"), [(0, 0), (1, 1), (2, 0), (3, 0)])
def test_sub_group_shortfall(placed: int, shortfall: int) -> None:
    (sub, _) = _shards().group.sub_groups
    assert gang.sub_group_shortfall(sub, placed) == shortfall
