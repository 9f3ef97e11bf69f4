"""Inputs that once took the process down (`tests/regression_inputs.py` says how) solve with
every engine: a checked placement, every pending pod placed, in seconds."""

from __future__ import annotations

import pytest

from solver.checker import check_placement
from solver.place import ENGINES, SolveConfig, place
from tests.regression_inputs import BEST_EFFORT_REPLICAS, OPENB_PENDING, best_effort_job, openb_last_batch

MIB = 1 << 20


@pytest.mark.parametrize("engine", ENGINES)
def test_the_openb_last_batch_is_placed_whole_by_every_engine(engine: str) -> None:
    snapshot = openb_last_batch()
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=5))  # type: ignore[arg-type]
    assert not check_placement(snapshot, decision.placement)
    assert len(decision.placement.binds) == OPENB_PENDING
    if engine == "cpsat":  # the model itself no longer breaks the search: it answers, not its fallback
        assert decision.fallback is None or decision.fallback.cause in ("greedy_better", "no_solution", "no_time")


def test_the_openb_last_batch_past_the_memory_ceiling_costs_one_answer() -> None:
    snapshot = openb_last_batch()
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=5, memory_limit_bytes=64 * MIB))
    assert decision.status == "FALLBACK" and decision.fallback is not None
    assert decision.fallback.cause == "memory", decision.fallback.reason
    assert not check_placement(snapshot, decision.placement)
    assert len(decision.placement.binds) == OPENB_PENDING


@pytest.mark.parametrize("engine", ENGINES)
def test_a_best_effort_job_is_as_cheap_to_model_as_any_other(engine: str) -> None:
    snapshot = best_effort_job()
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=5))  # type: ignore[arg-type]
    assert not check_placement(snapshot, decision.placement)
    assert len(decision.placement.binds) == BEST_EFFORT_REPLICAS
    if engine != "greedy":
        assert decision.status == "OPTIMAL", decision.fallback
