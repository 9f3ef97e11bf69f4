"""CP-SAT with inter-pod constraints: the PodGroups they touch are placed as the greedy hint
places them (`solver.cpsat.interpod`), the rest is optimised around them, and the
restriction is reported.

The cases give CP-SAT a hand-made valid hint (`run_cpsat_from`) to test its part
alone, then run `cpsat` and `auto` through `place()` with greedy's own hint.
"""

from __future__ import annotations

from pathlib import Path
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Placement
from models.pod_affinity import (
    InterPodConstraints,
    LabelSelector,
    PodAffinityTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.greedy import solve_greedy
from solver.objective import ObjectiveContext, score
from solver.place import SolveConfig, place
from solver.problem import build_problem
from tests.builders import (
    Gang,
    bind_gang,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    solve_checked,
    with_pod_rules,
)
from tests.solver.test_cpsat_properties import run_cpsat, run_cpsat_from

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

DATA = Path(__file__).parent.parent / "data"


def web_selector() -> LabelSelector:
    return LabelSelector(match_labels={"app": "web"})


def with_inter_pod(gang: Gang, *, labels: dict[str, str], inter_pod: InterPodConstraints | None = None) -> Gang:
    """`with_pod_rules` taking the constraints as one model."""
    return with_pod_rules(gang, labels=labels, **dict(inter_pod or InterPodConstraints()))


def binds_of(placement: Placement, gang: Gang) -> set[tuple[str, str]]:
    keys = {p.key for p in gang.pods}
    return {(b.pod, b.node) for b in placement.binds if b.pod in keys}


# ---- the four cases, CP-SAT alone with a valid hint ----


def anti_affinity_case() -> tuple[Snapshot, Gang, Placement]:
    """Three 4-CPU nodes; `batch` fills two; `web` (3 × 1 CPU, one per node, min 1) fits
    three times on the third node by capacity, but only once by its anti-affinity."""
    web = with_inter_pod(
        make_gang("web", replicas=3, cpu=1, min_member=1),
        labels={"app": "web"},
        inter_pod=InterPodConstraints(required_anti_affinity=(PodAffinityTerm(label_selector=web_selector(), topology_key=HOSTNAME),)),
    )
    web = replace(web, group=web.group.model_copy(update={"tasks": (web.group.tasks[0].model_copy(update={"min_available": 1}),)}))
    batch = make_gang("batch", replicas=2, cpu=4)
    snapshot = make_snapshot(nodes=[make_node(f"n{i}", cpu=4) for i in (1, 2, 3)], groups=[web, batch])
    return snapshot, web, make_placement(binds=[*bind_gang(web, ["n3"]), *bind_gang(batch, ["n1", "n2"])])


def symmetry_case() -> tuple[Snapshot, Gang, Placement]:
    """A running pod on n1 keeps app=web off its node (its required anti-affinity); `web`
    (2 × 1 CPU, min 1, no constraint of its own) fits once on n2, twice only with n1."""
    guard = make_running("guard", node="n1", cpu=1).model_copy(
        update={"labels": {"app": "guard"}, "required_anti_affinity": (PodAffinityTerm(label_selector=web_selector(), topology_key=HOSTNAME),)}
    )
    web = with_pod_rules(make_gang("web", replicas=2, cpu=1, min_member=1), labels={"app": "web"})
    web = replace(web, group=web.group.model_copy(update={"tasks": (web.group.tasks[0].model_copy(update={"min_available": 1}),)}))
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8), make_node("n2", cpu=1)], groups=[web], running=[guard])
    return snapshot, web, make_placement(binds=bind_gang(web, ["n2"]))


def zone_affinity_case() -> tuple[Snapshot, Gang, Placement]:
    """`db` runs on n1 in zone a; `cache` (2 × 2 CPU, min 1) requires a db pod in its zone:
    zone a has room for one cache pod, zone b (n3) for both but holds no db."""
    db = make_running("db-0", node="n1", cpu=1).model_copy(update={"labels": {"app": "db"}})
    cache = with_inter_pod(
        make_gang("cache", replicas=2, cpu=2, min_member=1),
        labels={"app": "cache"},
        inter_pod=InterPodConstraints(
            required_affinity=(PodAffinityTerm(label_selector=LabelSelector(match_labels={"app": "db"}), topology_key=ZONE),)
        ),
    )
    cache = replace(cache, group=cache.group.model_copy(update={"tasks": (cache.group.tasks[0].model_copy(update={"min_available": 1}),)}))
    nodes = [
        make_node("n1", cpu=1, labels={ZONE: "a"}),
        make_node("n2", cpu=2, labels={ZONE: "a"}),
        make_node("n3", cpu=8, labels={ZONE: "b"}),
    ]
    snapshot = make_snapshot(nodes=nodes, groups=[cache], running=[db])
    return snapshot, cache, make_placement(binds=bind_gang(cache, ["n2"]))


def spread_case() -> tuple[Snapshot, Gang, Placement]:
    """`web` (4 × 1 CPU, min 2) spreads over zones with maxSkew 1: zone b has room for one,
    so a takes at most two — three pods, not four."""
    web = with_inter_pod(
        make_gang("web", replicas=4, cpu=1, min_member=2),
        labels={"app": "web"},
        inter_pod=InterPodConstraints(
            topology_spread=(
                TopologySpreadConstraint(max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule", label_selector=web_selector()),
            )
        ),
    )
    web = replace(web, group=web.group.model_copy(update={"tasks": (web.group.tasks[0].model_copy(update={"min_available": 2}),)}))
    nodes = [make_node("n1", cpu=8, labels={ZONE: "a"}), make_node("n2", cpu=8, labels={ZONE: "a"}), make_node("n3", cpu=1, labels={ZONE: "b"})]
    snapshot = make_snapshot(nodes=nodes, groups=[web])
    return snapshot, web, make_placement(binds=bind_gang(web, ["n1", "n2", "n3"]))


CASES = {
    "anti-affinity one per node": anti_affinity_case,
    "a running pod's anti-affinity": symmetry_case,
    "affinity to a running pod in a zone": zone_affinity_case,
    "DoNotSchedule spread over zones": spread_case,
}


@pytest.mark.parametrize("case", CASES)
def test_cpsat_places_the_involved_podgroup_as_its_hint_and_reports_it(case: str) -> None:
    snapshot, gang, hint = CASES[case]()
    result = run_cpsat_from(snapshot, hint)
    assert binds_of(result.placement, gang) == binds_of(hint, gang)
    assert result.status == "FEASIBLE"
    assert "inter-pod constraints: 1 PodGroups placed as greedy places them" in result.restricted


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_the_cpsat_engines_honour_inter_pod_constraints(case: str, engine: str) -> None:
    snapshot, gang, _ = CASES[case]()
    hint = solve_greedy(snapshot, problem=build_problem(snapshot)).placement
    assert check_placement(snapshot, hint) == ()
    decision = solve_checked(snapshot, engine)
    assert decision.engine == "cpsat" and decision.status == "FEASIBLE"
    assert binds_of(decision.placement, gang) == binds_of(hint, gang)
    assert score(snapshot, decision.placement) >= score(snapshot, hint)


def test_an_involved_podgroup_the_hint_leaves_pending_stays_pending() -> None:
    snapshot, web, _ = symmetry_case()
    result = run_cpsat_from(snapshot, Placement())
    assert binds_of(result.placement, web) == set()
    assert result.restricted == ("inter-pod constraints: 0 PodGroups placed as greedy places them, 1 left pending as greedy leaves them",)


def test_the_rest_is_still_optimised_around_the_fixed_part() -> None:
    """The hint leaves `batch` out; CP-SAT places it beside web's fixed pod."""
    snapshot, web, full = anti_affinity_case()
    hint = make_placement(binds=bind_gang(web, ["n3"]))
    result = run_cpsat_from(snapshot, hint)
    assert binds_of(result.placement, web) == binds_of(hint, web)
    assert len(result.placement.binds) == 3
    assert result.objective == score(snapshot, full)


def test_a_pod_an_involved_affinity_depends_on_is_no_victim() -> None:
    """`db` (priority 0, preemptable) on n1 is what cache's affinity needs; `urgent`
    (priority 10, same queue) would evict it to use n1. CP-SAT keeps db and cache, and
    urgent waits — never an eviction that breaks cache's affinity."""
    db_group = make_gang("db", cpu=1, running_on=["n1"])
    db = replace(db_group, pods=tuple(p.model_copy(update={"labels": {"app": "db"}}) for p in db_group.pods))
    cache = with_inter_pod(
        make_gang("cache", cpu=1, priority=5),
        labels={"app": "cache"},
        inter_pod=InterPodConstraints(
            required_affinity=(PodAffinityTerm(label_selector=LabelSelector(match_labels={"app": "db"}), topology_key=HOSTNAME),)
        ),
    )
    urgent = make_gang("urgent", cpu=1, priority=10)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=2)], groups=[db, cache, urgent])
    result = run_cpsat_from(snapshot, make_placement(binds=bind_gang(cache, ["n1"])))
    assert result.placement.evictions == ()
    assert binds_of(result.placement, cache) == {(cache.pods[0].key, "n1")}


def test_a_preferred_term_is_a_constant_of_the_locality_tier() -> None:
    """`web` prefers (weight 30) a node holding app=db: the hint puts it elsewhere, so the
    model's locality tier holds 30, as `score` does."""
    db = make_running("db-0", node="n1", cpu=1).model_copy(update={"labels": {"app": "db"}})
    web = with_inter_pod(
        make_gang("web", cpu=1),
        labels={"app": "web"},
        inter_pod=InterPodConstraints(
            preferred_affinity=(
                WeightedPodAffinityTerm(
                    weight=30, term=PodAffinityTerm(label_selector=LabelSelector(match_labels={"app": "db"}), topology_key=HOSTNAME)
                ),
            )
        ),
    )
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=4), make_node("n2", cpu=4)], groups=[web], running=[db])
    result = run_cpsat_from(snapshot, make_placement(binds=bind_gang(web, ["n2"])))
    assert result.objective is not None and result.objective.locality == 30


# ---- nothing involved: the model as before ----


def test_without_inter_pod_constraints_nothing_is_restricted_and_optimal_is_reached() -> None:
    """Labels alone, and a running pod's anti-affinity selecting no pending pod, change nothing."""
    guard = make_running("guard", node="n1", cpu=1).model_copy(
        update={"required_anti_affinity": (PodAffinityTerm(label_selector=LabelSelector(match_labels={"app": "none"}), topology_key=HOSTNAME),)}
    )
    jobs = [with_pod_rules(make_gang(name, gpus=gpus), labels={"app": "web"}) for name, gpus in (("a-five", 5), ("b-four", 4), ("c-four", 4))]
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=jobs, running=[guard])
    plain = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[make_gang(n, gpus=g) for n, g in (("a-five", 5), ("b-four", 4), ("c-four", 4))])
    results = []
    for s in (snapshot, plain):
        result, _, _ = run_cpsat(s, 10)
        assert result.status == "OPTIMAL" and result.restricted == ()
        results.append(result)
    assert results[0].objective == results[1].objective
    assert results[0].statistics["variables"] == results[1].statistics["variables"]
    assert results[0].statistics["constraints"] == results[1].statistics["constraints"]
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20))
    assert (decision.engine, decision.status) == ("cpsat", "OPTIMAL")


# ---- property: random small snapshots with random inter-pod constraints ----

LABELS = ("web", "db", "cache")


@st.composite
def inter_pod_snapshots(draw: st.DrawFn) -> Snapshot:
    zones = ("a", "b")
    node_count = draw(st.integers(2, 4))
    nodes = [
        make_node(f"n{i}", cpu=draw(st.integers(1, 4)), labels={ZONE: zones[i % 2]}) for i in range(node_count)
    ]

    def selector() -> LabelSelector:
        return LabelSelector(match_labels={"app": draw(st.sampled_from(LABELS))})

    def term() -> PodAffinityTerm:
        return PodAffinityTerm(label_selector=selector(), topology_key=draw(st.sampled_from((HOSTNAME, ZONE))))

    def constraints() -> InterPodConstraints:
        kind = draw(st.sampled_from(("none", "affinity", "anti", "spread", "preferred")))
        if kind == "affinity":
            return InterPodConstraints(required_affinity=(term(),))
        if kind == "anti":
            return InterPodConstraints(required_anti_affinity=(term(),))
        if kind == "spread":
            return InterPodConstraints(
                topology_spread=(
                    TopologySpreadConstraint(
                        max_skew=1,
                        topology_key=draw(st.sampled_from((HOSTNAME, ZONE))),
                        when_unsatisfiable=draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))),
                        label_selector=selector(),
                    ),
                )
            )
        if kind == "preferred":
            return InterPodConstraints(preferred_anti_affinity=(WeightedPodAffinityTerm(weight=draw(st.integers(1, 100)), term=term()),))
        return InterPodConstraints()

    groups = []
    for g in range(draw(st.integers(1, 4))):
        replicas = draw(st.integers(1, 3))
        running = [nodes[draw(st.integers(0, node_count - 1))].name for _ in range(draw(st.integers(0, 1)))]
        gang = make_gang(
            f"g{g}",
            replicas=replicas,
            cpu=1,
            min_member=draw(st.integers(1, replicas)),
            priority=draw(st.integers(0, 2)),
            running_on=running,
        )
        task = gang.group.tasks[0].model_copy(update={"min_available": gang.group.min_member})
        gang = replace(gang, group=gang.group.model_copy(update={"tasks": (task,)}))
        labels = {"app": draw(st.sampled_from(LABELS))}
        gang = with_inter_pod(gang, labels=labels, inter_pod=constraints())
        gang = replace(gang, pods=tuple(p.model_copy(update={"labels": labels}) if p.phase == "running" else p for p in gang.pods))
        groups.append(gang)
    running_pods = []
    if draw(st.booleans()):
        running_pods.append(
            make_running("guard", node=nodes[0].name, cpu=1).model_copy(
                update={"labels": {"app": "guard"}, "required_anti_affinity": (term(),)}
            )
        )
    return make_snapshot(nodes=nodes, groups=groups, running=running_pods)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inter_pod_snapshots())
def test_cpsat_and_auto_are_valid_on_random_inter_pod_constraints(snapshot: Snapshot) -> None:
    greedy = solve_greedy(snapshot, problem=build_problem(snapshot))
    assert check_placement(snapshot, greedy.placement) == ()
    context = ObjectiveContext.of(snapshot)
    for engine in ("cpsat", "auto"):
        decision = solve_checked(snapshot, engine)
        assert score(snapshot, decision.placement, context=context) >= score(snapshot, greedy.placement, context=context)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inter_pod_snapshots())
def test_cpsat_alone_is_valid_and_exact_whatever_greedy_does(snapshot: Snapshot) -> None:
    """CP-SAT from greedy's hint, valid or not: its placement passes the checker (a hint
    that breaks an inter-pod rule leaves the involved PodGroups pending) and its tiers are
    `score` of it."""
    result, _, context = run_cpsat(snapshot, 10)
    assert result.placement is not None
    assert check_placement(snapshot, result.placement) == ()
    assert result.objective == score(snapshot, result.placement, context=context)


def test_fixed_preemptions_credit_the_preemptor_queue_as_score_does() -> None:
    """Found by the test above: greedy's g1 (a spread constraint, so fixed as greedy places
    it) preempts g0 and g2, 1 CPU each, off an overcommitted n1 to bind 1 CPU; tier 1
    credits the queue the 1 CPU freed beyond the bind, so fairness is 0. The model had
    counted the fixed part's binds but not its preemptions in that credit: 500."""
    snapshot = Snapshot.model_validate_json((DATA / "cpsat_fixed_preemption_credit.json").read_text())
    result, greedy, context = run_cpsat(snapshot, 10)
    assert {e.pod for e in greedy.placement.evictions} == {"default/g0-worker-0", "default/g2-worker-0"}
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()
    assert result.objective == score(snapshot, result.placement, context=context)
    assert result.objective.fairness == 0
