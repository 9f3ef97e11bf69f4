"""How the CP-SAT engine spends a short time limit: hard-topology candidates that can hold
the gang node by node and are spread over identical gangs, a repack that holds the hint's
admissions and moves pods to let a waiting gang in, presolve only where it has time, and
stages that choose among equals searched in rounds that stop when one finds nothing better."""

from __future__ import annotations

import random
import time

from ortools.sat.python import cp_model

from models.snapshot import Snapshot
from solver.cpsat.clock import SearchClock
from solver.cpsat.data import DataLimits, build_model_data
from solver.cpsat.engine import (
    PRESOLVE_MIN_STAGE_S,
    PRESOLVE_SECONDS_PER_VARIABLE,
    STAGNATION_MIN_S,
    CpsatConfig,
    _presolve,
    _search_stage,
    _set_hint,
    _StageSearch,
    satisfied_by,
)
from solver.cpsat.objective import Stage
from solver.cpsat.variables import Lin
from solver.objective import TIERS, ObjectiveContext
from solver.problem import build_problem
from tests.builders import make_gang, make_node, make_snapshot, solve_checked
from tests.solver.test_cpsat_properties import run_cpsat


def candidate_domains(snapshot: Snapshot, *, max_domains_per_gang: int = 8) -> dict[str, list[str]]:
    problem = build_problem(snapshot)
    data = build_model_data(
        snapshot, problem, ObjectiveContext.of(snapshot), limits=DataLimits(max_domains_per_gang=max_domains_per_gang)
    )
    return {str(unit.group.key): list(unit.domains) for unit in data.units if unit.domains}


def test_a_leaf_with_its_free_gpus_in_halves_is_no_candidate_for_a_gang_of_whole_node_pods() -> None:
    halves = [make_node(f"a{i}", gpus=8, leaf="leaf-a") for i in range(4)]  # 16 GPUs free, in fours
    empty = [make_node(f"b{i}", gpus=8, leaf="leaf-b") for i in range(2)]  # 16 GPUs free, two whole nodes
    busy = [make_gang(f"busy-{i}", gpus=4, running_on=[f"a{i}"], preemptable=False) for i in range(4)]
    gang = make_gang("llm", replicas=2, gpus=8, topology_tier=1)
    snapshot = make_snapshot(nodes=[*halves, *empty], groups=[*busy, gang])
    assert candidate_domains(snapshot) == {"default/llm": ["leaf-b"]}


def test_identical_gangs_cut_to_one_candidate_each_get_different_leaves_and_all_run() -> None:
    nodes = [make_node(f"n{i}", gpus=8, leaf=f"leaf-{i // 2}") for i in range(6)]
    gangs = [make_gang(f"llm-{k}", replicas=2, gpus=8, topology_tier=1) for k in range(3)]
    snapshot = make_snapshot(nodes=nodes, groups=gangs)
    domains = candidate_domains(snapshot, max_domains_per_gang=1)
    assert sorted(d for kept in domains.values() for d in kept[:1]) == ["leaf-0", "leaf-1", "leaf-2"]
    decision = solve_checked(snapshot, "cpsat")
    assert len(decision.placement.binds) == 6


def single_before_gang() -> Snapshot:
    """leaf-a has two empty nodes, leaf-b one; the single 8-GPU pod comes first (key order)
    and greedy gives it a0, so the leaf-bound gang of two finds no leaf with two."""
    nodes = [make_node("a0", gpus=8, leaf="leaf-a"), make_node("a1", gpus=8, leaf="leaf-a"), make_node("b0", gpus=8, leaf="leaf-b")]
    return make_snapshot(nodes=nodes, groups=[make_gang("a-single", gpus=8), make_gang("b-gang", replicas=2, gpus=8, topology_tier=1)])


def test_the_repack_moves_the_single_pod_and_lets_the_waiting_gang_in() -> None:
    result, greedy, _ = run_cpsat(single_before_gang(), 10)
    assert len(greedy.placement.binds) == 1
    assert result.stages[0].tiers == ("repack",)
    assert result.placement is not None
    placed = {b.pod: b.node for b in result.placement.binds}
    assert placed["default/a-single-worker-0"] == "b0"
    assert {placed["default/b-gang-worker-0"], placed["default/b-gang-worker-1"]} == {"a0", "a1"}


def test_no_repack_when_the_hint_admits_every_podgroup() -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8, leaf="leaf-a")], groups=[make_gang("one", gpus=8)])
    result, _, _ = run_cpsat(snapshot, 10)
    assert result.stages and all(stage.tiers != ("repack",) for stage in result.stages)


def test_presolve_runs_only_when_the_stage_is_long_and_has_twice_its_expected_cost() -> None:
    model = cp_model.CpModel()
    for i in range(10_000):
        model.new_bool_var(f"x{i}")
    expected_s = 10_000 * PRESOLVE_SECONDS_PER_VARIABLE
    assert expected_s * 2 > PRESOLVE_MIN_STAGE_S  # the variable count decides below
    assert _presolve(CpsatConfig(), model, 2 * expected_s)
    assert not _presolve(CpsatConfig(), model, 1.5 * expected_s)
    small = cp_model.CpModel()
    for i in range(100):
        small.new_bool_var(f"y{i}")
    assert not _presolve(CpsatConfig(), small, 0.9 * PRESOLVE_MIN_STAGE_S)  # cheap by count, yet a short stage
    assert _presolve(CpsatConfig(), small, PRESOLVE_MIN_STAGE_S)
    assert _presolve(CpsatConfig(presolve=True), model, 0.001)
    assert not _presolve(CpsatConfig(presolve=False), model, 100.0)


def _max_sat(seed: int, variables: int = 110) -> tuple[cp_model.CpModel, Lin]:
    """A random 3-SAT instance past the threshold ratio (4.5 clauses a variable) as MAX-SAT:
    minimise the clauses broken."""
    rng = random.Random(seed)
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{i}") for i in range(variables)]
    broken = Lin()
    for c in range(int(variables * 4.5)):
        literals = [x[v] if rng.random() < 0.5 else ~x[v] for v in rng.sample(range(variables), 3)]
        kept = model.new_bool_var(f"kept{c}")
        model.add_bool_or(literals).only_enforce_if(kept)
        broken.add(kept, -1)
        broken.constant += 1
    return model, broken


def _stage_from_optimum(seed: int, tier: int) -> tuple[_StageSearch, SearchClock, int]:
    """`_search_stage` on `_max_sat(seed)` for a stage of `tier`, hinted with an optimal
    solution, with a share of 10 nominal seconds; and the optimum."""
    model, broken = _max_sat(seed)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    model.minimize(broken.expr())
    assert solver.solve(model) == cp_model.OPTIMAL
    optimum = list(solver.response_proto.solution)
    clock = SearchClock(deadline=time.perf_counter() + 120, search_s=20.0)
    _set_hint(model, optimum, {})
    stage = Stage(tiers=[tier], weights=[1], expression=broken)
    search = _search_stage(model, stage, optimum, {}, CpsatConfig(), clock, 10.0)
    return search, clock, broken.value(optimum)


def test_a_stage_that_chooses_among_equals_stops_after_a_round_that_finds_nothing_better() -> None:
    """Locality (tier 3), hinted with the optimum of an instance whose proof the whole
    share does not finish: the first round (`STAGNATION_MIN_S`, and the few hundredths a
    search runs past its limit) finds nothing better and the stage ends there, unproven,
    keeping the hint's value — no second round, not the share of 10 s."""
    search, clock, optimum = _stage_from_optimum(3, TIERS.index("locality"))
    assert search.status == cp_model.FEASIBLE
    solution = search.solution
    assert solution is not None and _max_sat(3)[1].value(solution) == optimum
    assert clock.searched_s < 2 * STAGNATION_MIN_S


def test_a_stage_that_decides_what_runs_keeps_its_whole_share() -> None:
    """Fairness (tier 0), hinted with the optimum of an instance whose proof takes longer
    than a round: one search, longer than a round, which proves the optimum."""
    search, clock, _ = _stage_from_optimum(2, TIERS.index("fairness"))
    assert search.status == cp_model.OPTIMAL
    assert 2 * STAGNATION_MIN_S < clock.searched_s < 10.0


def test_satisfied_by_tells_a_solution_from_a_non_solution() -> None:
    """What the engine checks an INFEASIBLE answer against: a stage's claim is believed only
    when the incumbent does not satisfy the model as it stands."""
    model = cp_model.CpModel()
    x, y = model.new_bool_var("x"), model.new_bool_var("y")
    size = model.new_int_var(0, 10, "size")
    model.add(x + y <= 1)
    model.add(size == 3 * x + 5 * y)
    model.minimize(-size)  # the objective plays no part in satisfaction
    assert satisfied_by(model, [1, 0, 3])
    assert satisfied_by(model, [0, 0, 0])
    assert not satisfied_by(model, [1, 1, 8])  # x + y <= 1 broken
    assert not satisfied_by(model, [0, 1, 4])  # size != 5
    model.add(size <= 4)  # a stage's bound, as the engine adds one after each stage
    assert not satisfied_by(model, [0, 1, 5])
    assert satisfied_by(model, [1, 0, 3])
    assert model.proto.objective.vars, "the check leaves the caller's model as it was"
