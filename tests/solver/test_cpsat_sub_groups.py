"""CP-SAT on sub-groups (gangs inside a gang): hand-computed answers — which sub-group in
which leaf, which jobs start, which pods are evicted — each placement judged by the
checker, and the model's tiers equal to `score` of what it returns.

Most cases run the model from an empty hint (`_cpsat`), so that they test the model alone,
whatever the greedy engine does with sub-groups; where greedy's placement is valid too,
`place(..., engine="cpsat")` is asked as well and must not fall back.

Nodes hold one 8-GPU pod each unless a case says otherwise, so "a shard of 2" is "two
nodes of one leaf".
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Placement
from models.snapshot import NetworkTopology, Snapshot
from solver.checker import check_placement
from solver.cpsat import CpsatConfig, CpsatResult
from solver.cpsat.engine import solve_cpsat
from solver.cpsat.units import DataLimits
from solver.greedy import solve_greedy
from solver.objective import ObjectiveContext, score
from solver.problem import build_problem
from tests.builders import (
    Gang,
    bind_gang,
    created_at,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    make_task,
    pod_term,
    solve_checked,
    with_pod_rules,
    with_sub_groups,
)


def _cpsat(
    snapshot: Snapshot, hint: Placement | None = None, config: CpsatConfig = CpsatConfig(), *, via_place: bool = True
) -> CpsatResult:
    """CP-SAT alone from `hint` (default: none); its placement passes the checker and its
    tiers are `score` of it. `via_place`: `place(..., engine="cpsat")` (greedy's hint, the
    checker, the better-of-two) keeps a CP-SAT answer as good — no fallback, as many binds."""
    context = ObjectiveContext.of(snapshot)
    result = solve_cpsat(
        snapshot,
        problem=build_problem(snapshot),
        context=context,
        config=config,
        deadline=time.perf_counter() + 20,
        hint=hint,
    )
    assert result.placement is not None and result.objective is not None
    assert check_placement(snapshot, result.placement) == ()
    assert result.objective == score(snapshot, result.placement, context=context)
    if via_place:
        decision = solve_checked(snapshot, "cpsat")
        assert decision.fallback is None and decision.engine == "cpsat"
        assert len(decision.placement.binds) == len(result.placement.binds)
    return result


def _where(snapshot: Snapshot, placement: Placement) -> dict[str, set[str]]:
    """Sub-group (or `<group>:none` for pods in none) → the leaves its bound pods are on."""
    pods, nodes = snapshot.pod_by_key, snapshot.hypernode_chain
    found: dict[str, set[str]] = {}
    for bind in placement.binds:
        pod = pods[bind.pod]
        name = pod.sub_group or f"{pod.pod_group}:none"
        found.setdefault(name, set()).add(nodes[bind.node][0])
    return found


def _started(snapshot: Snapshot, placement: Placement) -> set[str]:
    """Names of the PodGroups with a bind."""
    return {snapshot.pod_by_key[bind.pod].pod_group.split("/")[1] for bind in placement.binds}  # type: ignore[union-attr]


def _leaves(spec: dict[str, int], spine: str = "sp") -> list:
    """Nodes of one 8-GPU device each: leaf name → node count, all under `spine`."""
    return [make_node(f"{leaf}-{i}", gpus=8, leaf=leaf, spine=spine) for leaf, count in spec.items() for i in range(count)]


def _shards(name: str, shards: int, size: int = 2, **kwargs) -> Gang:  # noqa: ANN003
    """A job of `shards` × `size` 8-GPU pods, each shard inside one leaf, the job on one spine."""
    job = make_gang(name, replicas=shards * size, gpus=8, min_member=kwargs.pop("min_member", shards * size), topology_tier=2)
    return with_sub_groups(job, size, tier=1, **kwargs)


def test_both_shards_share_the_one_leaf_that_holds_them_rather_than_open_two() -> None:
    """Spine sp: leaves L1, L2 of 2 nodes; spine sq: leaf L3 of 4; all whole. A job of two
    shards of 2 on one spine fits either one shard per leaf of sp or both in L3: L3 opens
    one whole leaf, sp's two (locality 1 against 2), so both shards go to L3."""
    job = _shards("job", 2)
    snapshot = make_snapshot(nodes=[*_leaves({"L1": 2, "L2": 2}), *_leaves({"L3": 4}, "sq")], groups=[job])
    result = _cpsat(snapshot)
    assert _where(snapshot, result.placement) == {"job-0": {"L3"}, "job-1": {"L3"}}
    assert result.objective.locality == 1


def _interleaved(name: str, shards: int, size: int) -> Gang:
    """A job like `_shards`, but pod i in shard i mod `shards`: shard job-0 is pods 0, 2, …,
    so that placing the task's pods in order, leaf by leaf, never lines up with the shards."""
    job = make_gang(name, replicas=shards * size, gpus=8, topology_tier=2)
    cut = with_sub_groups(job, size, tier=1)
    pods = tuple(pod.model_copy(update={"sub_group": f"{name}-{i % shards}"}) for i, pod in enumerate(job.pods))
    return Gang(group=cut.group, pods=pods)


def test_shards_of_one_job_go_to_different_leaves_when_no_leaf_holds_both() -> None:
    """Leaves L1 and L2 of 3 nodes under sp, L3 of 1 node under sq; shards job-0 (pods 0, 2)
    and job-1 (pods 1, 3): no leaf holds both shards, so each takes 2 nodes of its own
    leaf of sp — the job's spine alone would also allow 3 + 1 or mixing the shards."""
    job = _interleaved("job", 2, 2)
    snapshot = make_snapshot(nodes=[*_leaves({"L1": 3, "L2": 3}), *_leaves({"L3": 1}, "sq")], groups=[job])
    result = _cpsat(snapshot)
    where = _where(snapshot, result.placement)
    assert sorted(sorted(leaves) for leaves in where.values()) == [["L1"], ["L2"]]
    assert len(result.placement.binds) == 4


def test_cut_candidates_keep_a_domain_for_every_shard_inside_each_job_domain() -> None:
    """Spines S1 (racks r1, r2) and S2 (r3, r4), racks of 2 nodes; a job of two shards of 2,
    each in one rack, the job in one spine, and 2 candidate domains per gang. Cut by spread
    alone, shard job-0 would keep r1, r2 and job-1 r3, r4 — no spine holds a candidate of
    each, and nothing starts; taken in turn from each job candidate, each shard keeps a rack
    of S1 and one of S2, and the job starts whole in one spine."""
    job = _shards("job", 2)
    nodes = [*_leaves({"r1": 2, "r2": 2}, "S1"), *_leaves({"r3": 2, "r4": 2}, "S2")]
    snapshot = make_snapshot(nodes=nodes, groups=[job])
    result = _cpsat(snapshot, config=CpsatConfig(limits=DataLimits(max_domains_per_gang=2)))
    assert len(result.placement.binds) == 4
    where = _where(snapshot, result.placement)
    assert sorted(sorted(leaves) for leaves in where.values()) in ([["r1"], ["r2"]], [["r3"], ["r4"]])


def test_a_hard_shard_outside_every_hypernode_sits_on_one_node() -> None:
    """No HyperNodes: a node is a domain of its own, so each shard of two 4-GPU pods takes
    one 8-GPU node (n1, n2), never the 4-GPU n3 with half of another node."""
    job = with_sub_groups(make_gang("job", replicas=4, gpus=4), 2, tier=1)
    nodes = [make_node("n1", gpus=8), make_node("n2", gpus=8), make_node("n3", gpus=4)]
    snapshot = make_snapshot(nodes=nodes, groups=[job])
    result = _cpsat(snapshot)
    on: dict[str, set[str]] = {}
    for bind in result.placement.binds:
        on.setdefault(snapshot.pod_by_key[bind.pod].sub_group or "", set()).add(bind.node)
    assert sorted(sorted(nodes) for nodes in on.values()) == [["n1"], ["n2"]]


def test_the_joint_choice_starts_a_job_a_shard_by_shard_best_fit_does_not() -> None:
    """Leaves L1 (3 nodes) and L2 (4) under one spine. `wide` (older): two shards of 2, all
    4 pods needed; `big` (younger): 3 pods inside one leaf. Shard by shard, best fit puts
    wide-0 on L1 (the tightest leaf that holds 2: 1 node left), wide-1 on L2 (2 left), and
    no leaf holds big's 3: one job starts, 1 + 2 nodes idle. Chosen jointly: both shards of
    wide on L2, big on L1 — 2 jobs, 7 of 7 nodes busy."""
    wide = created_at(_shards("wide", 2), 100.0)
    big = created_at(make_gang("big", replicas=3, gpus=8, topology_tier=1), 200.0)
    snapshot = make_snapshot(nodes=_leaves({"L1": 3, "L2": 4}), groups=[wide, big])
    result = _cpsat(snapshot)
    assert _started(snapshot, result.placement) == {"wide", "big"}
    assert len(result.placement.binds) == 7
    assert _where(snapshot, result.placement) == {"wide-0": {"L2"}, "wide-1": {"L2"}, "default/big:none": {"L1"}}


def test_two_sharded_jobs_pack_into_two_leaves_and_leave_the_third_whole() -> None:
    """Three leaves of 4 nodes; jobs a and b of two shards of 2 each, then c: 4 pods in one
    leaf. c starts only if a and b leave a whole leaf: they fill two leaves, c the third."""
    a = created_at(_shards("a", 2), 100.0)
    b = created_at(_shards("b", 2), 200.0)
    c = created_at(make_gang("c", replicas=4, gpus=8, topology_tier=1), 300.0)
    snapshot = make_snapshot(nodes=_leaves({"L1": 4, "L2": 4, "L3": 4}), groups=[a, b, c])
    result = _cpsat(snapshot)
    assert _started(snapshot, result.placement) == {"a", "b", "c"}
    where = _where(snapshot, result.placement)
    (c_leaf,) = where["default/c:none"]
    shard_leaves = set().union(*(where[f"{job}-{i}"] for job in "ab" for i in range(2)))
    assert c_leaf not in shard_leaves and len(shard_leaves) == 2


def test_locality_counts_the_whole_racks_hard_shards_open() -> None:
    """`score`'s locality tier: two shards of 2 on one whole 4-node leaf → 1, on two whole
    leaves → 2, on the free half of L3 (where `other` runs) and L1 → 1; a job without hard
    sub-groups (and without soft topology) → 0 wherever it goes."""
    job = _shards("job", 2)
    plain = make_gang("plain", replicas=4, gpus=8, topology_tier=2)
    other = make_gang("other", replicas=2, gpus=8, running_on=["L3-0", "L3-1"])
    nodes = _leaves({"L1": 4, "L2": 4, "L3": 4})
    packed, spread, half = ["L1-0", "L1-1", "L1-2", "L1-3"], ["L1-0", "L1-1", "L2-0", "L2-1"], ["L3-2", "L3-3", "L1-0", "L1-1"]
    for gang, where, locality in ((job, packed, 1), (job, spread, 2), (job, half, 1), (plain, spread, 0)):
        snapshot = make_snapshot(nodes=nodes, groups=[gang, other])
        placement = make_placement(binds=bind_gang(gang, where))
        assert check_placement(snapshot, placement) == ()
        assert score(snapshot, placement).locality == locality


def test_two_sharded_jobs_open_two_leaves_of_three() -> None:
    """Three whole leaves of 4 nodes, jobs a and b of two shards of 2 (each shard in one
    leaf, each job on the spine): their 8 pods open 2 leaves (locality 2), not 3 or 4 —
    one leaf stays whole."""
    a = created_at(_shards("a", 2), 100.0)
    b = created_at(_shards("b", 2), 200.0)
    snapshot = make_snapshot(nodes=_leaves({"L1": 4, "L2": 4, "L3": 4}), groups=[a, b])
    result = _cpsat(snapshot)
    assert len(result.placement.binds) == 8
    assert result.objective.locality == 2
    used = {snapshot.hypernode_chain[b.node][0] for b in result.placement.binds}
    assert len({"L1", "L2", "L3"} - used) == 1


def test_a_shard_fills_a_rack_in_use_and_leaves_the_whole_one_free() -> None:
    """Leaf La whole (2 nodes), leaf Lz with `other` running on one of its 3 nodes: a shard
    of 2 goes to Lz's free two, so La stays whole (La sorts first: no chance by order)."""
    job = _shards("job", 1)
    other = make_gang("other", gpus=8, preemptable=False, running_on=["Lz-0"])
    snapshot = make_snapshot(nodes=_leaves({"La": 2, "Lz": 3}), groups=[job, other])
    result = _cpsat(snapshot)
    assert sorted(b.node for b in result.placement.binds) == ["Lz-1", "Lz-2"]
    assert result.objective.locality == 0


def test_a_rack_the_fixed_part_opens_is_no_rack_the_model_opens_again() -> None:
    """`f` (a shard of 2 with a required anti-affinity: placed as greedy places it, the
    model's fixed part) opens one of the whole leaves; `j`, a shard of 2 the model places,
    joins it there — that leaf counts once, in the fixed part's locality (total 1, not 2)."""
    f = with_pod_rules(
        with_sub_groups(make_gang("f", replicas=2, gpus=8, topology_tier=1), 2, tier=1),
        labels={"app": "f"},
        required_anti_affinity=[pod_term(app="f")],
    )
    j = with_sub_groups(make_gang("j", replicas=2, gpus=8, topology_tier=1), 2, tier=1)
    snapshot = make_snapshot(nodes=_leaves({"L1": 4, "L2": 4}), groups=[f, j])
    problem = build_problem(snapshot)
    greedy = solve_greedy(snapshot, problem=problem)
    assert check_placement(snapshot, greedy.placement) == ()
    result = _cpsat(snapshot, hint=greedy.placement)
    assert "inter-pod" in " ".join(result.restricted)
    where = _where(snapshot, result.placement)
    assert where["f-0"] == where["j-0"]
    assert result.objective.locality == 1


def test_min_sub_groups_holds_a_job_back_until_enough_shards_fit() -> None:
    """Three shards of 2, min_member 2, min_sub_groups 2. With one leaf of 2 and one of 1
    node, one shard fits: the job does not start at all. With two leaves of 2, two shards
    start (4 pods) and the third waits."""
    job = _shards("job", 3, min_member=2, min_sub_groups=2)
    tight = make_snapshot(nodes=_leaves({"L1": 2, "L2": 1}), groups=[job])
    assert _cpsat(tight, via_place=False).placement.binds == ()
    roomy = make_snapshot(nodes=_leaves({"L1": 2, "L2": 2}), groups=[job])
    result = _cpsat(roomy)
    where = _where(roomy, result.placement)
    assert len(where) == 2 and sorted(sorted(v) for v in where.values()) == [["L1"], ["L2"]]


def test_a_shard_running_whole_counts_toward_min_sub_groups() -> None:
    """Three shards of 2, min_sub_groups 2; job-0 runs whole on L1, and one more leaf of 2
    is free (L2; L3 has 1 node): starting job-1 or job-2 there makes two started shards,
    the other waits. Counting only the shards started this cycle, no placement would do."""
    running = make_gang("job", replicas=6, gpus=8, min_member=2, topology_tier=2, running_on=["L1-0", "L1-1"])
    job = with_sub_groups(running, 2, tier=1, min_sub_groups=2)
    snapshot = make_snapshot(nodes=_leaves({"L1": 2, "L2": 2, "L3": 1}), groups=[job])
    result = _cpsat(snapshot)
    ((shard, leaves),) = _where(snapshot, result.placement).items()
    assert shard in ("job-1", "job-2") and leaves == {"L2"}


def test_a_pod_in_no_sub_group_does_not_start_a_job_whose_shards_cannot() -> None:
    """One shard of min 2 runs half (1 pod, nothing of it pending), min_sub_groups 1, and one
    pod in no sub-group pending, with room beside it. Binding that pod would start the job
    with no shard started, so both engines bind nothing. (A case drawn by the sub-group
    property: the model asked `min_sub_groups` only of jobs with shard pods pending.)"""
    job = make_gang("job", replicas=2, gpus=1, min_member=0, running_on=["n"])
    sharded = with_sub_groups(job, 2, min_sub_groups=1)
    loose = Gang(group=sharded.group, pods=(sharded.pods[0], sharded.pods[1].model_copy(update={"sub_group": None})))
    snapshot = make_snapshot(nodes=[make_node("n", gpus=4)], groups=[loose])
    assert _cpsat(snapshot, via_place=False).placement.binds == ()
    assert solve_checked(snapshot, "greedy").placement.binds == ()


def test_a_shard_is_not_started_below_its_minimum_even_when_the_job_could_be() -> None:
    """Shards of 3 (min 3), min_member 3, leaves of 2 and 2 under one spine: 4 pods would fit
    the job's spine, but no leaf holds a shard: nothing is bound."""
    job = _shards("job", 2, size=3, min_member=3)
    snapshot = make_snapshot(nodes=_leaves({"L1": 2, "L2": 2}), groups=[job])
    assert _cpsat(snapshot, via_place=False).placement.binds == ()


def _with_launcher() -> Gang:
    """`job`: a `launcher` of 40 cores (more than a 32-core GPU node has) in no sub-group and
    4 GPU workers in two shards of 2, each shard in one leaf, the whole job (launcher
    included) on one spine, min_member 5."""
    job = make_gang(
        "job",
        tasks=[make_task("launcher", cpu=40), make_task("worker", replicas=4, gpus=8)],
        topology_tier=2,
    )
    sharded = with_sub_groups(Gang(group=job.group, pods=job.pods[1:]), 2, tier=1)
    return Gang(group=sharded.group, pods=(job.pods[0], *sharded.pods))


def test_a_pod_in_no_sub_group_follows_the_jobs_domain_and_counts_for_its_minimum() -> None:
    """Spine sq (listed first): one CPU node cq; spine sp: leaves L1, L2 of 2 GPU nodes and
    CPU node cp. The launcher may only go to cp (the shards are under sp); all 5 pods
    start, since min_member 5 counts the launcher."""
    job = _with_launcher()
    nodes = [
        make_node("cq", cpu=48, spine="sq"),
        *_leaves({"L1": 2, "L2": 2}),
        make_node("cp", cpu=48, spine="sp"),
    ]
    snapshot = make_snapshot(nodes=nodes, groups=[job])
    result = _cpsat(snapshot)
    launcher = [b.node for b in result.placement.binds if "launcher" in b.pod]
    assert launcher == ["cp"]
    assert len(result.placement.binds) == 5
    where = _where(snapshot, result.placement)
    assert sorted(sorted(where[f"job-{i}"]) for i in range(2)) == [["L1"], ["L2"]]


def test_a_pod_in_no_sub_group_is_no_shard() -> None:
    """Same job, but no CPU node under the shards' spine: the launcher has nowhere to go
    inside the job's spine, and min_member 5 needs it — nothing starts."""
    job = _with_launcher()
    nodes = [make_node("cq", cpu=48, spine="sq"), *_leaves({"L1": 2, "L2": 2})]
    snapshot = make_snapshot(nodes=nodes, groups=[job])
    assert _cpsat(snapshot).placement.binds == ()


def test_a_victim_shard_is_evicted_whole_never_cut_below_its_minimum() -> None:
    """Job v (priority 0, min_member 2) runs two shards of 2 (min 2) on all four nodes;
    p (priority 5) wants one node. v's min_member alone would let one pod go (3 ≥ 2), but
    that leaves its shard with 1 < 2: both pods of one shard go, p takes one of their nodes.
    (`wide`, priority 2, fits nowhere: it makes the throughput weights 1, 2, 3, so that p's
    pod outweighs two of v's and the preemption pays.)"""
    v = with_sub_groups(
        make_gang("v", replicas=4, gpus=8, min_member=2, running_on=["L1-0", "L1-1", "L2-0", "L2-1"]), 2
    )
    p = make_gang("p", gpus=8, priority=5)
    wide = make_gang("wide", gpus=16, priority=2)
    snapshot = make_snapshot(nodes=_leaves({"L1": 2, "L2": 2}), groups=[v, p, wide])
    result = _cpsat(snapshot, via_place=False)
    evicted = sorted(e.pod for e in result.placement.evictions)
    assert evicted in (["default/v-worker-0", "default/v-worker-1"], ["default/v-worker-2", "default/v-worker-3"])
    assert [b.pod for b in result.placement.binds] == ["default/p-worker-0"]
    evicted_nodes = {snapshot.pod_by_key[key].node for key in evicted}
    assert result.placement.binds[0].node in evicted_nodes


def test_a_running_shard_keeps_its_leaf_when_its_job_grows() -> None:
    """Shard job-0 has one of its 2 pods running on Lz-0: its second pod (worker-1) joins
    it in Lz, and shard job-1 takes a leaf of its own, La — not Lb, which is 1 node. (Lz
    sorts last, so a pod placed leaf by leaf in name order would not land there by chance.)"""
    running = make_gang("job", replicas=4, gpus=8, min_member=2, topology_tier=2, running_on=["Lz-0"])
    job = with_sub_groups(running, 2, tier=1)
    snapshot = make_snapshot(nodes=_leaves({"La": 2, "Lb": 1, "Lz": 2}), groups=[job])
    result = _cpsat(snapshot)
    assert [b.node for b in result.placement.binds if b.pod == "default/job-worker-1"] == ["Lz-1"]
    assert _where(snapshot, result.placement) == {"job-0": {"Lz"}, "job-1": {"La"}}


# ---- property: random nested gangs ----


@st.composite
def _nested_gangs(draw: st.DrawFn) -> Snapshot:
    """2–3 leaves of 1–3 nodes under 1–2 spines, 1–3 jobs of 1–3 shards of 1–3 pods of
    4 or 8 GPUs, each with a random shard minimum, min_sub_groups, job minimum and priority;
    the job's topology none, hard (tier 2) or soft, each shard's none, hard (tier 1 or 2)
    or soft; a 4-GPU job's first pod sometimes running (a victim, or a shard started)."""
    leaves = draw(st.integers(2, 3))
    nodes = []
    for leaf in range(leaves):
        spine = f"sp{draw(st.integers(0, 1))}"
        nodes += [make_node(f"n{leaf}-{i}", gpus=8, leaf=f"L{leaf}", spine=spine) for i in range(draw(st.integers(1, 3)))]
    names = [n.name for n in nodes]
    groups = []
    for j in range(draw(st.integers(1, 3))):
        shards, size = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        gpus = draw(st.sampled_from([4, 8]))
        total = shards * size
        running = [names[j]] if gpus == 4 and j < len(names) and draw(st.booleans()) else []
        job = make_gang(
            f"j{j}",
            replicas=total,
            gpus=gpus,
            priority=draw(st.integers(0, 2)),
            min_member=draw(st.integers(1, total)),
            topology_tier=draw(st.sampled_from([None, 2])),
            running_on=running,
        )
        if job.group.network_topology is None and draw(st.booleans()):
            job = Gang(group=job.group.model_copy(update={"network_topology": NetworkTopology(mode="soft")}), pods=job.pods)
        tier = draw(st.sampled_from([None, 1, 2, "soft"]))
        minimum = draw(st.integers(0, size))
        min_sub_groups = draw(st.integers(0, shards))
        cut = with_sub_groups(
            job, size, tier=tier if isinstance(tier, int) else None, minimum=minimum, min_sub_groups=min_sub_groups or None
        )
        if tier == "soft":
            soft = tuple(sub.model_copy(update={"network_topology": NetworkTopology(mode="soft")}) for sub in cut.group.sub_groups)
            cut = Gang(group=cut.group.model_copy(update={"sub_groups": soft}), pods=cut.pods)
        groups.append(cut)
    return make_snapshot(nodes=nodes, groups=groups)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_nested_gangs())
def test_cpsat_on_random_nested_gangs_passes_the_checker(snapshot: Snapshot) -> None:
    """Every answer from an empty hint passes the checker with tiers equal to `score`
    (`_cpsat`), and no sub-group with a bind ends below its minimum."""
    result = _cpsat(snapshot, via_place=False)
    bound: dict[str, int] = {}
    for bind in result.placement.binds:
        pod = snapshot.pod_by_key[bind.pod]
        if pod.sub_group is not None:
            bound[pod.sub_group] = bound.get(pod.sub_group, 0) + 1
    for group in snapshot.pod_groups:
        for sub in group.sub_groups:
            running = sum(
                1 for pod in snapshot.pods_by_group[group.key] if pod.sub_group == sub.name and pod.phase == "running"
            )
            if bound.get(sub.name):
                assert running + bound[sub.name] >= max(1, sub.min_member)
