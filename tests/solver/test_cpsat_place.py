"""`place()` with the CP-SAT engines: every status branch, the fallbacks, the better-of-two."""

from __future__ import annotations

import logging

import pytest

from experiments.synthetic_mixed import mixed_snapshot
from models.placement import Placement
from models.snapshot import Snapshot
from solver.bound import lp_bound
from solver.checker import PlacementRejected, check_placement
from solver.cpsat import CpsatResult, ModelInvalid
from solver.engines import Engines
from solver.objective import TIERS, ObjectiveVector, score
from solver.place import SolveConfig, place
from solver.problem import build_problem
from solver.rules import counted
from tests.builders import bind_gang, make_gang, make_node, make_queue, make_snapshot


def knapsack() -> Snapshot:
    """Greedy takes the 5-GPU job first and fits nothing else; the optimum is the two 4s."""
    return make_snapshot(
        nodes=[make_node("n1", gpus=8)],
        groups=[make_gang("a-five", gpus=5), make_gang("b-four", gpus=4), make_gang("c-four", gpus=4)],
    )


def fake_result(placement: Placement | None, *, better: bool = True) -> CpsatResult:
    """A CP-SAT answer whose model claims to beat (or lose to) the greedy hint."""
    high, low = ObjectiveVector(0, 10**9, 0, 0, 0, 0), ObjectiveVector(0, 0, 0, 0, 0, 0)
    return CpsatResult(
        placement=placement,
        status="FEASIBLE",
        objective=None if placement is None else (high if better else low),
        throughput_bound=None,
        gap=None,
        stages=(),
        restricted=(),
        hint_objective=low if better else high,
    )


def test_greedy_engine_answers_greedy() -> None:
    decision = place(knapsack(), SolveConfig(engine="greedy"))
    assert (decision.engine, decision.status) == ("greedy", "GREEDY")
    assert decision.bound is None and decision.gap is None


@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_cpsat_proves_the_optimum_with_bound_and_gap(engine: str) -> None:
    snapshot = knapsack()
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=20))  # type: ignore[arg-type]
    assert (decision.engine, decision.status) == ("cpsat", "OPTIMAL")
    assert decision.objective == score(snapshot, decision.placement).throughput
    assert decision.bound == decision.objective and decision.gap == 0.0
    assert len(decision.placement.binds) == 2


def test_an_unproven_answer_carries_the_lp_bound_computed_beside_the_search() -> None:
    """Unproven, the Decision's bound is the LP bound (here below the model's own), which
    `place()` computes while the search runs: the same number as computed on its own."""
    snapshot = mixed_snapshot(nodes=40, pending_pods=30, seed=5)
    decision = place(snapshot, SolveConfig(time_limit_s=1))
    assert (decision.engine, decision.status) == ("cpsat", "FEASIBLE")
    alone = counted(snapshot)
    relaxed = int(lp_bound(alone, problem=build_problem(alone), backend="scipy"))
    assert decision.bound == relaxed and decision.objective is not None and decision.objective < relaxed
    assert decision.gap == (relaxed - decision.objective) / relaxed
    assert check_placement(snapshot, decision.placement) == ()


def test_the_default_engine_is_auto() -> None:
    assert SolveConfig().engine == "auto"
    assert place(knapsack()).engine == "cpsat"


def test_an_absurdly_small_time_limit_falls_back_to_greedy() -> None:
    snapshot = knapsack()
    decision = place(snapshot, SolveConfig(engine="auto", time_limit_s=1e-6))
    assert (decision.engine, decision.status) == ("greedy", "FALLBACK")
    assert check_placement(snapshot, decision.placement) == ()


def test_cpsat_without_a_solution_falls_back() -> None:
    decision = place(knapsack(), SolveConfig(engine="cpsat"), engines=Engines(cpsat=lambda *a, **k: fake_result(None)))
    assert (decision.engine, decision.status) == ("greedy", "FALLBACK")


def test_a_worse_cpsat_placement_is_replaced_by_greedys() -> None:
    snapshot = knapsack()
    worse = Engines(cpsat=lambda *a, **k: fake_result(Placement(), better=False))
    decision = place(snapshot, SolveConfig(engine="auto"), engines=worse)
    assert decision.status == "FALLBACK" and decision.placement.binds


def test_a_rejected_placement_falls_back_under_auto_and_raises_under_cpsat(caplog: pytest.LogCaptureFixture) -> None:
    snapshot = knapsack()
    gangs = {g.name: g for g in snapshot.pod_groups}
    five = next(p for p in snapshot.pods if p.pod_group == gangs["a-five"].key)
    four = next(p for p in snapshot.pods if p.pod_group == gangs["b-four"].key)
    from tests.builders import make_bind

    overfull = Placement(binds=(make_bind(five, "n1", gpus=(0, 1, 2, 3, 4)), make_bind(four, "n1", gpus=(4, 5, 6, 7))))
    assert check_placement(snapshot, overfull)
    overfilling = Engines(cpsat=lambda *a, **k: fake_result(overfull))
    with caplog.at_level(logging.ERROR, logger="solver.place"):
        decision = place(snapshot, SolveConfig(engine="auto"), engines=overfilling)
    assert decision.status == "FALLBACK"
    assert "rejected by the checker" in caplog.text
    with pytest.raises(PlacementRejected):
        place(snapshot, SolveConfig(engine="cpsat"), engines=overfilling)


def test_a_model_cpsat_rejects_raises_under_cpsat_and_falls_back_under_auto() -> None:
    def broken(*args: object, **kwargs: object) -> CpsatResult:
        raise ModelInvalid("bad model")

    with pytest.raises(ModelInvalid):
        place(knapsack(), SolveConfig(engine="cpsat"), engines=Engines(cpsat=broken))
    assert place(knapsack(), SolveConfig(engine="auto"), engines=Engines(cpsat=broken)).status == "FALLBACK"


def test_a_restricted_model_reports_feasible_not_optimal() -> None:
    nodes = [make_node(f"n{i}", gpus=8, leaf=f"leaf-{i // 2}") for i in range(6)]
    gang = make_gang("llm", replicas=2, gpus=8, topology_tier=1)
    snapshot = make_snapshot(nodes=nodes, groups=[gang])
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20, max_domains_per_gang=1))
    assert (decision.engine, decision.status) == ("cpsat", "FEASIBLE")
    assert len(decision.placement.binds) == 2


def test_stage_per_tier_and_merged_stages_agree() -> None:
    snapshot = knapsack()
    merged = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20))
    staged = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20, merge_tiers=False))
    assert score(snapshot, merged.placement) == score(snapshot, staged.placement)


def test_cpsat_beats_greedy_on_the_knapsack() -> None:
    snapshot = knapsack()
    greedy = place(snapshot, SolveConfig(engine="greedy"))
    best = place(snapshot, SolveConfig(engine="auto", time_limit_s=20))
    assert score(snapshot, best.placement) > score(snapshot, greedy.placement)
    assert best.placement.binds != tuple(bind_gang(make_gang("a-five", gpus=5), ["n1"]))


def _fairness_or_throughput() -> Snapshot:
    """One 4-GPU node; equal-weight queues a, b, c asking 4, 1 and 1 GPUs: fairness first
    serves b and c (their deserved GPU each), throughput first runs a's 4-GPU pod."""
    return make_snapshot(
        nodes=[make_node("n", cpu=16, gpus=4)],
        queues=[make_queue("a"), make_queue("b"), make_queue("c")],
        groups=[make_gang("big", gpus=4, queue="a"), make_gang("small-b", gpus=1, queue="b"),
                make_gang("small-c", gpus=1, queue="c")],
    )


@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_the_objective_order_puts_throughput_before_fairness_when_asked(engine: str) -> None:
    snapshot = _fairness_or_throughput()
    fair = place(snapshot, SolveConfig(engine=engine))
    busy = place(snapshot, SolveConfig(engine=engine, objective_order=("throughput", *[t for t in TIERS if t != "throughput"])))
    assert sorted(b.pod for b in fair.placement.binds) == ["default/small-b-worker-0", "default/small-c-worker-0"]
    assert [b.pod for b in busy.placement.binds] == ["default/big-worker-0"]
    assert not check_placement(snapshot, fair.placement) and not check_placement(snapshot, busy.placement)
    assert score(snapshot, busy.placement).throughput > score(snapshot, fair.placement).throughput
    assert score(snapshot, fair.placement).fairness < score(snapshot, busy.placement).fairness


def test_an_objective_order_that_is_not_a_permutation_of_the_tiers_is_refused() -> None:
    with pytest.raises(ValueError, match="permutation"):
        SolveConfig(objective_order=("throughput", "throughput", "fairness", "locality", "packing"))
