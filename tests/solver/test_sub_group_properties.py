"""Nested gangs over drawn clusters: random leaf/spine trees, jobs cut into sub-groups
(hard or soft tiers, minimums, `min_sub_groups`, a pod or two in no sub-group, pods of two
sizes, leader + worker replicas as LeaderWorkerSet makes them), running shards, two queues and
priorities. For greedy and `auto`, the checker (which judges sub-group minimums and
domains, victims' sub-groups included) passes the placement, no sub-group that gets a
bind ends below its minimum, and `auto` never answers with greedy's placement because
the checker rejected CP-SAT's."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision
from models.snapshot import PodGroup, Snapshot
from solver.greedy.engine import GreedyConfig, GreedyEngine
from solver.checker import check_placement
from solver.greedy import sub_groups
from solver.greedy.sub_groups import why_left_out
from solver.problem import build_problem
from solver.rules.gang import sub_group_minimum
from tests.builders import Gang, make_gang, make_node, make_queue, make_snapshot, make_task, solve_checked

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _topology(draw: st.DrawFn, tiers: list[int]) -> dict[str, Any] | None:
    tier = draw(st.sampled_from([None, *tiers]))
    if tier is None:
        return None
    return {"mode": draw(st.sampled_from(["hard", "soft"])), "highest_tier_allowed": tier}


def _with_subs(gang: Gang, members: list[int | None], *, minimums: list[int], draw: st.DrawFn) -> Gang:
    """`gang` with pod i in sub-group `<name>-<members[i]>` (None: in none), each sub-group
    of the drawn minimum and topology; min_sub_groups drawn up to their count."""
    name = gang.group.name
    count = len(minimums)
    subs = [
        {"name": f"{name}-{i}", "policy": "shard", "min_member": minimums[i], "network_topology": _topology(draw, [1, 2])}
        for i in range(count)
    ]
    data = gang.group.model_dump()
    data.update(
        sub_groups=subs,
        min_sub_groups={"shard": draw(st.integers(0, count))},
        network_topology=_topology(draw, [1, 2]),
    )
    pods = tuple(
        pod.model_copy(update={"sub_group": None if member is None else f"{name}-{member}"})
        for pod, member in zip(gang.pods, members)
    )
    return Gang(group=PodGroup.model_validate(data), pods=pods)


@st.composite
def nested_clusters(draw: st.DrawFn) -> Snapshot:
    nodes = []
    for s in range(draw(st.integers(1, 2))):
        for leaf in range(draw(st.integers(1, 3))):
            for n in range(draw(st.integers(1, 3))):
                name = f"n{s}{leaf}{n}"
                nodes.append(make_node(name, gpus=draw(st.sampled_from([4, 8])), leaf=f"sw{s}{leaf}", spine=f"sp{s}"))
    free_nodes = [node.name for node in nodes]
    gpus_of = {node.name: node.node.allocatable["gpu"] // 1000 for node in nodes}
    gangs = []
    for j in range(draw(st.integers(1, 4))):
        queue = draw(st.sampled_from(["q0", "q1"]))
        priority = draw(st.integers(0, 2))
        gpus = draw(st.sampled_from([1, 2, 4]))
        if draw(st.booleans()):  # a LeaderWorkerSet: replicas of a leader and size − 1 workers
            replicas, size = draw(st.integers(1, 3)), draw(st.integers(2, 3))
            job = make_gang(
                f"lws{j}",
                tasks=[
                    make_task("leader", replicas=replicas, gpus=gpus, min_available=0),
                    make_task("worker", replicas=replicas * (size - 1), gpus=gpus, min_available=0),
                ],
                min_member=size,
                queue=queue,
                priority=priority,
            )
            members = [*range(replicas), *(i // (size - 1) for i in range(replicas * (size - 1)))]
            gangs.append(_with_subs(job, members, minimums=[size] * replicas, draw=draw))
            continue
        pods = draw(st.integers(2, 6))
        size = draw(st.integers(1, 3))
        fits = [name for name in free_nodes if gpus_of[name] >= gpus]
        running = draw(st.lists(st.sampled_from(fits), unique=True, max_size=min(3, pods))) if fits else []
        for name in running:
            free_nodes.remove(name)
        # Half its pods of a second size, drawn: sub-groups cut in pod order then differ in shape.
        second = draw(st.sampled_from([None, 1, 8]))
        tasks = None if second is None else [
            make_task("worker", replicas=pods - pods // 2, gpus=gpus, min_available=0),
            make_task("big", replicas=pods // 2, gpus=second, min_available=0),
        ]
        job = make_gang(
            f"job{j}",
            replicas=pods,
            gpus=gpus,
            tasks=tasks,
            min_member=draw(st.integers(0, pods)),
            queue=queue,
            priority=priority,
            running_on=running,
        )
        loose = draw(st.integers(0, 1))
        members = [i // size if i < pods - loose else None for i in range(pods)]
        count = -(-(pods - loose) // size)
        if not count:
            continue
        minimums = [draw(st.integers(0, size)) for _ in range(count)]
        gangs.append(_with_subs(job, members, minimums=minimums, draw=draw))
    queues = [make_queue("q0", weight=1), make_queue("q1", weight=2)]
    return make_snapshot(nodes=nodes, groups=gangs, queues=queues)


@st.composite
def full_of_shards(draw: st.DrawFn) -> Snapshot:
    """Every node (4 GPUs) runs one pod of a low-priority sharded job; a higher-priority job
    arrives, sharded or not: preempt must take victims' shards whole or leave them enough."""
    nodes = [
        make_node(f"n{s}{leaf}{n}", gpus=4, leaf=f"sw{s}{leaf}", spine=f"sp{s}")
        for s in range(draw(st.integers(1, 2)))
        for leaf in range(draw(st.integers(1, 2)))
        for n in range(draw(st.integers(1, 3)))
    ]
    names = [node.name for node in nodes]
    size = draw(st.integers(1, 3))
    old = make_gang("old", replicas=len(names), gpus=4, min_member=draw(st.integers(0, len(names))), running_on=names)
    count = -(-len(names) // size)
    old = _with_subs(old, [i // size for i in range(len(names))], minimums=[draw(st.integers(0, size)) for _ in range(count)], draw=draw)
    pods = draw(st.integers(1, 3))
    new = make_gang("new", replicas=pods, gpus=4, min_member=draw(st.integers(1, pods)), priority=10)
    if draw(st.booleans()):
        new = _with_subs(new, [0] * pods, minimums=[draw(st.integers(0, pods))], draw=draw)
    return make_snapshot(nodes=nodes, groups=[old, new])


def _sub_groups_whole(snapshot: Snapshot, decision: Decision) -> list[str]:
    """Sub-groups that get a bind and end below their minimum (running kept + bound)."""
    bound = {bind.pod for bind in decision.placement.binds}
    evicted = {eviction.pod for eviction in decision.placement.evictions}
    short = []
    for group in snapshot.pod_groups:
        for sub in group.sub_groups:
            pods = [pod for pod in snapshot.pods_by_group.get(group.key, ()) if pod.sub_group == sub.name]
            new = sum(1 for pod in pods if pod.key in bound)
            kept = sum(1 for pod in pods if pod.phase == "running" and pod.key not in evicted)
            if new and kept + new < sub_group_minimum(sub):
                short.append(f"{sub.name}: {kept} + {new} < {sub_group_minimum(sub)}")
    return short


def _not_rejected(decision: Decision) -> bool:
    """CP-SAT's own placement passed the checker: `auto` did not fall back for a rejection
    (`solve_checked` judges only what `auto` returned, which may be greedy's)."""
    return decision.fallback is None or decision.fallback.cause != "rejected"


@FAST
@given(nested_clusters())
def test_greedy_places_nested_gangs_the_checker_accepts(snapshot: Snapshot) -> None:
    decision = solve_checked(snapshot, "greedy")
    assert _sub_groups_whole(snapshot, decision) == []


@FAST
@given(nested_clusters())
def test_auto_places_nested_gangs_the_checker_accepts(snapshot: Snapshot) -> None:
    decision = solve_checked(snapshot, "auto", time_limit_s=2.0)
    assert _sub_groups_whole(snapshot, decision) == []
    assert _not_rejected(decision)


@FAST
@given(full_of_shards())
def test_auto_preemption_keeps_victim_shards_whole_or_gone(snapshot: Snapshot) -> None:
    decision = solve_checked(snapshot, "auto", time_limit_s=2.0)
    assert _sub_groups_whole(snapshot, decision) == []
    assert _not_rejected(decision)


@FAST
@given(full_of_shards())
def test_greedy_preemption_keeps_victim_shards_whole_or_gone(snapshot: Snapshot) -> None:
    decision = solve_checked(snapshot, "greedy")
    assert _sub_groups_whole(snapshot, decision) == []


@st.composite
def left_out_shards(draw: st.DrawFn) -> Snapshot:
    """A started job (its first pod running) of two tasks of drawn sizes cut, in pod order,
    into sub-groups of drawn size, minimum and tier: many left out, alike or not."""
    nodes = [
        make_node(f"n{s}{leaf}{n}", gpus=draw(st.sampled_from([4, 8])), leaf=f"sw{s}{leaf}", spine=f"sp{s}")
        for s in range(draw(st.integers(1, 2)))
        for leaf in range(draw(st.integers(1, 3)))
        for n in range(draw(st.integers(1, 3)))
    ]
    small, large = draw(st.integers(1, 8)), draw(st.integers(0, 8))
    tasks = [make_task("a", replicas=small, gpus=draw(st.sampled_from([1, 2, 4])), min_available=0)]
    if large:
        task = make_task("b", replicas=large, gpus=draw(st.sampled_from([2, 4, 8])), min_available=0)
        tasks.insert(draw(st.integers(0, 1)), task)  # the larger pods' sub-groups first, or last
    job = make_gang("job", tasks=tasks, min_member=1, running_on={"a": [nodes[0].name]})
    size = draw(st.integers(1, 3))
    count = -(-(small + large) // size)
    minimums = [draw(st.integers(1, size)) for _ in range(count)]
    return make_snapshot(nodes=nodes, groups=[_with_subs(job, [i // size for i in range(small + large)], minimums=minimums, draw=draw)])


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(nested_clusters(), left_out_shards()), st.data())
def test_sub_groups_asked_together_get_the_reasons_each_gets_alone(snapshot: Snapshot, data: st.DataObject) -> None:
    """`why_left_out` tries alike sub-groups (a LeaderWorkerSet's replicas) once for all of
    them: in the state after a drawn part of greedy's placement, each sub-group's sentence is
    the one it gets asked alone, its own name in it."""
    decision = solve_checked(snapshot, "greedy")
    binds = decision.placement.binds
    kept = data.draw(st.lists(st.booleans(), min_size=len(binds), max_size=len(binds)))
    part = decision.placement.model_copy(update={"binds": tuple(bind for bind, keep in zip(binds, kept) if keep)})
    engine = GreedyEngine(snapshot, build_problem(snapshot), GreedyConfig(preemption=False, reclaim=False))
    engine.replay(part)
    for plan in engine.plans:
        names = [sub.sub.name for sub in plan.sub_groups]
        alone = {name: why for name in names for why in why_left_out(engine, plan, [name]).values()}
        assert why_left_out(engine, plan, names) == alone
        assert all(f"subgroup {name} of" in why for name, why in alone.items())


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(nested_clusters(), left_out_shards()))
def test_no_sub_group_a_started_job_leaves_out_would_start_after_greedys_placement(snapshot: Snapshot) -> None:
    """Greedy tries alike sub-groups beyond a job's minimum once for all of them: a started
    job (no job topology, so its domain is the cluster in both places) leaves out only
    sub-groups that `why_left_out` says would not start in the state after the placement.
    Preemption off: a victim freed later in the cycle could make room greedy never saw."""
    config = GreedyConfig(preemption=False, reclaim=False)
    problem = build_problem(snapshot)
    ran = GreedyEngine(snapshot, problem, config)
    placement, _ = ran.run()
    assert check_placement(snapshot, placement) == ()
    started = {plan.group.key for plan in ran.plans if plan.minimum_met and plan.group.network_topology is None}
    after = GreedyEngine(snapshot, problem, config)
    after.replay(placement)
    for plan in after.plans:
        if plan.group.key not in started:
            continue
        placed = {pod.sub_group for pod in snapshot.pods_by_group[plan.group.key] if pod.phase == "running"}
        placed |= {snapshot.pod_by_key[bind.pod].sub_group for bind in placement.binds}
        left = [sub.sub.name for sub in plan.sub_groups if sub.sub.name not in placed]
        assert sorted(why_left_out(after, plan, left)) == sorted(left)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(nested_clusters(), left_out_shards(), full_of_shards()))
def test_trying_alike_sub_groups_once_changes_no_answer(snapshot: Snapshot) -> None:
    """Greedy answers the same — binds, evictions, every PodGroup's state and reasons, each
    pending pod's sentence — whether a sub-group alike to one that did not start is skipped
    (`sub_groups._alike`) or tried again: the shortcut saves time and nothing else."""
    with_shortcut = solve_checked(snapshot, "greedy")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sub_groups, "_alike", lambda engine, sub: None)
        without = solve_checked(snapshot, "greedy")
    assert without.placement == with_shortcut.placement
    assert without.podgroups == with_shortcut.podgroups
