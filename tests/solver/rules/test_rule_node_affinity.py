"""Node affinity. Required: the predicate for every operator, ORed terms, `matchFields`; the
checker's verdict; every engine keeps to it; the reason of a pod no node admits; a
property over drawn snapshots that no engine binds where the affinity excludes.
Preferred: the weight a node misses, the locality tier counting it, every engine going
where a pod prefers, and never at the cost of a placement."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from models.node_affinity import PreferredSchedulingTerm
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.objective import score
from solver.place import ENGINES, SolveConfig, place
from solver.rules import eligibility, node_affinity
from tests.builders import (
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    make_term,
    rule_violations,
    solve_checked,
)
from tests.strategies import snapshots

A100 = make_node("a100-0", gpus=8, labels={"gpu": "a100", "gen": "8", "zone": "a"})
A100_SPARE = make_node("a100-1", gpus=8, labels={"gpu": "a100", "gen": "x", "zone": "b"})
H100 = make_node("h100-0", gpus=8, labels={"gpu": "h100", "gen": "9"})
NODES = [A100, A100_SPARE, H100]  # a100-0 first and as free as h100-0: the one a blind engine picks

H100_ONLY = [make_term("gpu In h100")]


@pytest.mark.parametrize(
    ("terms", "admitted"),
    [
        ([make_term("gpu In h100")], {"h100-0"}),
        ([make_term("gpu In h100,a100")], {"a100-0", "a100-1", "h100-0"}),
        ([make_term("gpu NotIn a100")], {"h100-0"}),
        ([make_term("zone NotIn b")], {"a100-0", "h100-0"}),
        ([make_term("zone Exists")], {"a100-0", "a100-1"}),
        ([make_term("zone DoesNotExist")], {"h100-0"}),
        ([make_term("gen Gt 8")], {"h100-0"}),
        ([make_term("gen Lt 9")], {"a100-0"}),
        ([make_term("gen Gt -1")], {"a100-0", "h100-0"}),
        ([make_term(fields=["metadata.name In a100-1"])], {"a100-1"}),
        ([make_term(fields=["metadata.name NotIn a100-1"])], {"a100-0", "h100-0"}),
        ([make_term("gpu In a100", fields=["metadata.name NotIn a100-0"])], {"a100-1"}),
        ([make_term("gpu In a100", "zone In b")], {"a100-1"}),
        ([make_term("gpu In h100"), make_term(fields=["metadata.name In a100-0"])], {"a100-0", "h100-0"}),
        ([make_term("gpu In v100"), make_term("zone In c")], set()),
        ([make_term()], set()),
        ([], {"a100-0", "a100-1", "h100-0"}),
    ],
    ids=[
        "In one value",
        "In two values",
        "NotIn",
        "NotIn admits a node without the label",
        "Exists",
        "DoesNotExist",
        "Gt compares integers",
        "Lt compares integers, a label that is no integer never matches",
        "Gt a negative bound",
        "matchFields In a name",
        "matchFields NotIn a name",
        "matchExpressions and matchFields in one term are ANDed",
        "two expressions in one term are ANDed",
        "terms are ORed",
        "no term matches",
        "an empty term matches no node",
        "no terms require nothing",
    ],
)
def test_each_operator_admits_exactly_the_nodes_kubernetes_admits(terms: list, admitted: set[str]) -> None:
    assert {spec.node.name for spec in NODES if node_affinity.matches(spec.node, terms)} == admitted


def _one_pod(terms: list, *, gpus: int = 1) -> Snapshot:
    job = make_gang("job", gpus=gpus, required_node_affinity=terms)
    return make_snapshot(nodes=NODES, groups=[job])


def test_a_pod_bound_where_its_affinity_excludes_is_one_node_affinity_violation() -> None:
    snapshot = _one_pod(H100_ONLY)
    placement = make_placement(binds=[make_bind("default/job-worker-0", "a100-0", gpus=[0])])
    (violation,) = rule_violations(node_affinity, snapshot, placement)
    assert violation.rule == node_affinity.NAME and violation.subject == "default/job-worker-0"
    assert "gpu In [h100]" in violation.message and violation.message.endswith(f"({node_affinity.REASON})")
    assert rule_violations(eligibility, snapshot, placement) == []  # one mistake, one violation
    assert [v.rule for v in check_placement(snapshot, placement)] == [node_affinity.NAME]


def test_a_pod_bound_where_its_affinity_admits_breaks_no_rule() -> None:
    snapshot = _one_pod(H100_ONLY)
    assert check_placement(snapshot, make_placement(binds=[make_bind("default/job-worker-0", "h100-0", gpus=[0])])) == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_requiring_h100_is_bound_to_the_h100_node_by_every_engine(engine: str) -> None:
    snapshot = _one_pod(H100_ONLY)
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert [(bind.pod, bind.node) for bind in decision.placement.binds] == [("default/job-worker-0", "h100-0")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("term", "node"),
    [
        (make_term("gpu NotIn a100"), "h100-0"),
        (make_term("zone DoesNotExist"), "h100-0"),
        (make_term("zone Exists", "gen Gt 7"), "a100-0"),
        (make_term("gen Lt 9", "zone In a"), "a100-0"),
        (make_term(fields=["metadata.name In a100-1"]), "a100-1"),
    ],
    ids=["NotIn", "DoesNotExist", "Exists and Gt", "Lt and In", "matchFields"],
)
def test_every_engine_binds_only_where_the_operator_admits(engine: str, term, node: str) -> None:  # noqa: ANN001
    job = make_gang("job", replicas=2, gpus=4, required_node_affinity=[term])
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert sorted(bind.node for bind in decision.placement.binds) == [node, node]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_that_fits_only_over_both_ored_terms_is_placed_across_them(engine: str) -> None:
    terms = [make_term("gpu In h100"), make_term(fields=["metadata.name In a100-0"])]
    job = make_gang("job", replicas=2, gpus=8, required_node_affinity=terms)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert sorted(bind.node for bind in decision.placement.binds) == ["a100-0", "h100-0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_no_node_admits_stays_pending_saying_which_affinity_and_how_many_nodes(engine: str) -> None:
    snapshot = _one_pod([make_term("gpu In v100")])
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=5))  # type: ignore[arg-type]
    assert decision.placement.binds == ()
    (outcome,) = decision.podgroups
    assert outcome.state == "pending"
    assert outcome.reasons == (
        f"eligibility: task worker: 0/3 nodes: 3 {node_affinity.REASON} (requires gpu In [v100])",
    )


def test_a_pod_its_affinity_admits_only_on_a_full_node_names_both_causes() -> None:
    job = make_gang("job", gpus=8, required_node_affinity=H100_ONLY)
    blocker = make_gang("blocker", gpus=8, required_node_affinity=H100_ONLY, running_on=["h100-0"])
    snapshot = make_snapshot(nodes=NODES, groups=[blocker, job])
    decision = place(snapshot, SolveConfig(engine="greedy"))
    outcome = next(o for o in decision.podgroups if o.name == "default/job")
    assert outcome.reasons[0] == (
        f"capacity: task worker: 0/3 nodes fit another pod: "
        f"2 {node_affinity.REASON} (requires gpu In [h100]), 1 insufficient gpu"
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(snapshots(max_nodes=10, max_groups=6))
def test_no_engine_binds_a_pod_to_a_node_its_required_affinity_excludes(snapshot: Snapshot) -> None:
    for engine in ENGINES:
        decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=2))
        for bind in decision.placement.binds:
            pod = snapshot.pod_by_key[bind.pod]
            task = snapshot.task_of(pod)
            assert task is not None
            assert node_affinity.matches(snapshot.node_by_name[bind.node], task.required_node_affinity), (engine, bind)
        assert check_placement(snapshot, decision.placement) == ()


# ---- preferred node affinity: a preference in the locality tier ----


def _prefer(*weighted: tuple[int, object]) -> list[PreferredSchedulingTerm]:
    return [PreferredSchedulingTerm(weight=weight, preference=term) for weight, term in weighted]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("node", "missed"),
    [(H100, 20), (A100, 80), (A100_SPARE, 100)],
    ids=["h100 in no zone misses the zone", "a100 in zone a misses the model", "a100 in zone b misses both"],
)
def test_a_node_misses_the_weight_of_the_preferred_terms_it_does_not_match(node, missed: int) -> None:  # noqa: ANN001
    preferred = _prefer((80, make_term("gpu In h100")), (20, make_term("zone In a")), (50, make_term()))
    assert node_affinity.preference_missed(node.node, preferred) == missed + 50  # an empty term matches nothing


def test_the_locality_tier_counts_the_preference_weight_a_bound_pod_misses() -> None:
    job = make_gang("job", gpus=1, preferred_node_affinity=_prefer((80, make_term("gpu In h100"))))
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    on = {node: score(snapshot, make_placement(binds=[make_bind(job.pods[0], node, gpus=[0])])) for node in ("a100-0", "h100-0")}
    assert (on["a100-0"].locality, on["h100-0"].locality) == (80, 0)
    assert on["h100-0"] > on["a100-0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_puts_a_pod_where_it_prefers_when_it_fits_there(engine: str) -> None:
    job = make_gang("job", replicas=2, gpus=4, preferred_node_affinity=_prefer((10, make_term("gpu In h100"))))
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert sorted(bind.node for bind in decision.placement.binds) == ["h100-0", "h100-0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_preference_never_costs_a_placement(engine: str) -> None:
    """Three 8-GPU pods preferring h100, one h100 node: all three are placed, one on h100."""
    job = make_gang("job", replicas=3, gpus=8, preferred_node_affinity=_prefer((100, make_term("gpu In h100"))))
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    decision = solve_checked(snapshot, engine, time_limit_s=5)
    assert sorted(bind.node for bind in decision.placement.binds) == ["a100-0", "a100-1", "h100-0"]
    assert score(snapshot, decision.placement).locality == 200  # two pods miss 100 each
