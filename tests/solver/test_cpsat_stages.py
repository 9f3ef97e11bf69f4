"""`plan_stages`: which tiers share a weighted stage (solver.cpsat.objective)."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model

from solver.cpsat.objective import MERGE_MAGNITUDE, Tiers, plan_stages
from solver.cpsat.variables import Lin


def _tiers(*, throughput_constant: int) -> Tiers:
    """Fairness spans 0..1000, throughput (negated) 0..10 pods above a constant, the rest constant."""
    model = cp_model.CpModel()
    fairness = model.new_int_var(0, 1000, "fairness")
    pods = model.new_int_var(0, 10, "pods")
    return Tiers(
        minimised=[
            Lin([(fairness, 1)]),
            Lin([(pods, -1)], constant=-throughput_constant),
            Lin(),
            Lin(),
            Lin(),
        ]
    )


@pytest.mark.parametrize(
    ("throughput_constant", "stages"),
    [(10**6, [[0, 1]]), (MERGE_MAGNITUDE, [[0], [1]])],
    ids=[
        "small ranges and values share one stage",
        "a stage whose value would not be exact in a double is split, though its ranges are small",
    ],
)
def test_tiers_merge_only_while_the_stage_value_stays_exact(throughput_constant: int, stages: list[list[int]]) -> None:
    planned = plan_stages(_tiers(throughput_constant=throughput_constant))
    assert [stage.tiers for stage in planned] == stages
    for stage in planned:
        low, high = stage.expression.bounds()
        assert len(stage.tiers) == 1 or max(abs(low), abs(high)) <= MERGE_MAGNITUDE
