"""Disruption: an eviction costs the victim's GPU-time lost since its start or, when later,
its last checkpoint, times its priority weight; the engines evict where less is lost."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.snapshot import Pod, ReservationPolicy
from solver.objective import ObjectiveContext
from solver.place import ENGINES
from tests.builders import created_at, make_gang, make_node, make_running, make_snapshot, solve_checked

HOUR = 3600.0


def _victims(*, checkpoint_a: float | None, checkpoint_b: float | None):  # noqa: ANN202
    """Two 8-GPU priority-0 jobs started at 0 on n1 and n2; a priority-1 8-GPU job pending;
    the clock at 7 h."""
    low_a, low_b = (created_at(make_gang(name, gpus=8), 0.0) for name in ("a", "b"))
    high = created_at(make_gang("high", gpus=8, priority=1), 6 * HOUR)
    pods = [
        make_running(f"{gang.group.name}-0", node=node, group=gang.group).model_copy(
            update={"start_time": 0.0, "checkpoint_time": checkpoint}
        )
        for gang, node, checkpoint in ((low_a, "n1", checkpoint_a), (low_b, "n2", checkpoint_b))
    ]
    return make_snapshot(
        nodes=[make_node("n1", gpus=8), make_node("n2", gpus=8)],
        groups=[replace(low_a, pods=()), replace(low_b, pods=()), high],
        running=pods,
        reservation_policy=ReservationPolicy(judged_at_s=7 * HOUR),
    )


def test_a_checkpoint_lowers_what_an_eviction_costs() -> None:
    snapshot = _victims(checkpoint_a=None, checkpoint_b=6.5 * HOUR)
    context = ObjectiveContext.of(snapshot)
    cost = {pod.name: context.eviction_cost(pod) for pod in snapshot.pods if pod.phase == "running"}
    assert cost["a-0"] > cost["b-0"]  # 7 h lost against 30 min


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("checkpointed", ["a", "b"])
def test_the_engines_evict_the_victim_that_loses_less(engine: str, checkpointed: str) -> None:
    recent = 6.5 * HOUR
    snapshot = _victims(checkpoint_a=recent if checkpointed == "a" else None,
                        checkpoint_b=recent if checkpointed == "b" else None)  # fmt: skip
    decision = solve_checked(snapshot, engine)
    assert [e.pod for e in decision.placement.evictions] == [f"default/{checkpointed}-0"]


@given(
    start=st.floats(0, 10 * HOUR),
    run=st.floats(0, 10 * HOUR),
    checkpoint=st.one_of(st.none(), st.floats(0, 1)),
    gpus=st.integers(1, 8),
)
def test_an_eviction_never_costs_more_after_a_checkpoint_or_less_with_more_gpus(
    start: float, run: float, checkpoint: float | None, gpus: int
) -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8)], reservation_policy=ReservationPolicy(judged_at_s=start + run))
    context = ObjectiveContext.of(snapshot)
    pod = make_running("p", node="n1", gpus=gpus).model_copy(update={"start_time": start})
    saved = pod.model_copy(update={"checkpoint_time": None if checkpoint is None else start + checkpoint * run})
    more = make_running("q", node="n1", gpus=min(8, gpus + 1)).model_copy(update={"start_time": start})
    assert context.eviction_cost(saved) <= context.eviction_cost(pod) <= context.eviction_cost(more)
    assert isinstance(pod, Pod)
