"""What the CP-SAT engine charges its deterministic budget besides the searches' own time:
its estimate of building the model (`solver.cpsat.engine.build_seconds`) — the variables
the model then gets, counted kind by kind and each priced at its own rate (`BUILD_COST`);
the model is built exactly when the budget holds the estimate and `MIN_SEARCH_S` — and
each solve's start-up (`SOLVE_START_SECONDS_PER_VARIABLE`), so a solve starts only when
the budget holds it. Decisions on the input alone, never on the clock (docs/results.md,
"Building the CP-SAT model", "A second bench family")."""

from __future__ import annotations

import time

import pytest
from ortools.sat.python import cp_model

from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.cpsat.clock import SearchClock
from solver.cpsat.config import CpsatConfig
from solver.cpsat.data import ModelData, build_model_data
from solver.cpsat.engine import (
    BUILD_COST,
    MIN_SEARCH_S,
    SOLVE_START_SECONDS_PER_VARIABLE,
    BuildCost,
    BuildSize,
    _complete,
    build_seconds,
    build_size,
    solve_cpsat,
)
from solver.cpsat.hint import augment, node_uses
from solver.cpsat.variables import create_variables
from solver.greedy import solve_greedy
from solver.objective import ObjectiveContext
from solver.problem import build_problem
from tests.builders import make_gang, make_node, make_snapshot


def every_kind() -> Snapshot:
    """Node patterns (nodes of several free amounts), atom patterns (a leaf-bound gang on
    two leaves), eviction options (preemptable pods of a lower priority on every node)."""
    nodes = [make_node(f"n{i}", cpu=32 + 8 * i, memory=256, gpus=8, leaf=f"leaf-{i % 2}") for i in range(4)]
    groups = [
        make_gang("low", replicas=4, cpu=4, gpus=2, running_on=["n0", "n1", "n2", "n3"], preemptable=True),
        make_gang("train", replicas=4, cpu=4, gpus=4, priority=5, topology_tier=1),
        make_gang("shares", replicas=6, cpu=1, gpu_milli=500, priority=5),
        make_gang("cpu", replicas=8, cpu=2, priority=5),
    ]
    return make_snapshot(nodes=nodes, groups=groups)


def hinted_data(snapshot: Snapshot) -> ModelData:
    """The model data `solve_cpsat` builds from greedy's hint, the hint's patterns added."""
    problem = build_problem(snapshot)
    context = ObjectiveContext.of(snapshot)
    hint = solve_greedy(snapshot, problem=problem).placement
    data = build_model_data(snapshot, problem, context, limits=CpsatConfig().limits, hint=hint)
    augment(data, node_uses(data, hint)[0])
    return data


def test_the_estimate_counts_the_variables_the_model_gets_of_each_kind() -> None:
    data = hinted_data(every_kind())
    size = build_size(data)
    model = cp_model.CpModel()
    create_variables(model, data)
    names = [variable.name for variable in model.proto.variables]
    assert size.patterns == sum(1 for name in names if name.startswith("pattern_nodes["))
    assert size.options == sum(1 for name in names if name.startswith("option_nodes["))
    assert size.nodes == 4
    assert size.patterns > 0 and size.options > 0 and size.unit_variables > 0
    assert any("@" in name for name in names if name.startswith("pattern_nodes["))  # atom patterns counted too


def test_each_kind_is_priced_at_its_own_rate_with_the_margin_on_top() -> None:
    cost = BuildCost(pattern_s=1e-5, option_s=2e-5, unit_variable_s=5e-6, node_s=2e-5, margin=1.5)
    size = BuildSize(patterns=20_000, options=3_000, unit_variables=1_000, nodes=1_000)
    assert cost.seconds(size) == pytest.approx(1.5 * (0.2 + 0.06 + 0.005 + 0.02))
    # A mixed-family 1,000 x 1,000 model (seed 20000): 0.24-0.31 s of work measured, charged
    # well under the 0.675 s a 1 s call leaves the search, so CP-SAT starts there.
    mixed = BuildSize(patterns=21_904, options=3_264, unit_variables=2_081, nodes=1_000)
    assert 0.3 <= BUILD_COST.seconds(mixed) <= 0.675 - MIN_SEARCH_S - 0.15


def test_the_model_is_built_exactly_when_the_budget_holds_the_estimate_and_a_search() -> None:
    snapshot = every_kind()
    expected = build_seconds(hinted_data(snapshot))
    problem, context = build_problem(snapshot), ObjectiveContext.of(snapshot)
    hint = solve_greedy(snapshot, problem=problem).placement
    for search_s, built in ((expected + MIN_SEARCH_S - 1e-4, False), (expected + MIN_SEARCH_S + 0.5, True)):
        result = solve_cpsat(
            snapshot, problem=problem, context=context, config=CpsatConfig(search_s=search_s),
            deadline=time.perf_counter() + 60, hint=hint,
        )
        assert ("variables" in result.statistics) == built, search_s
        if built:
            assert result.status in ("OPTIMAL", "FEASIBLE") and result.placement is not None
            assert check_placement(snapshot, result.placement) == ()
        else:
            assert result.status == "UNKNOWN" and result.placement is None


def test_a_solve_starts_only_when_the_budget_holds_its_start_up_and_is_charged_it() -> None:
    """Loading a model costs a solve before its search, which deterministic time does not
    count: the hint's completion of a 1,000-variable model is refused by a budget short of
    that start-up (not started: nothing charged), and charged it on top of its search."""
    model = cp_model.CpModel()
    pods = [model.new_int_var(0, 1, f"x{i}") for i in range(1000)]
    model.add(sum(pods) <= 10)
    start = SOLVE_START_SECONDS_PER_VARIABLE * 1000
    short = SearchClock(deadline=time.perf_counter() + 60, search_s=start + 0.004)
    assert _complete(model, {}, CpsatConfig(), short) == (None, "no time")
    assert short.spent_s == 0
    enough = SearchClock(deadline=time.perf_counter() + 60, search_s=start + 0.5)
    values, status = _complete(model, {}, CpsatConfig(), enough)
    assert values is not None and status in ("OPTIMAL", "FEASIBLE")
    assert enough.spent_s >= start + enough.searched_s - 1e-12
    by_the_wall = SearchClock(deadline=time.perf_counter() + 60, search_s=None)  # its limits hold the start-up
    assert _complete(model, {}, CpsatConfig(), by_the_wall)[0] is not None
