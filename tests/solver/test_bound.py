"""`solver.bound.lp_bound`: an upper bound no valid placement's throughput exceeds — or,
with `objective="gpus"`, the GPUs its binds hold."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from models.placement import Placement
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, Snapshot
from solver.bound import lp_bound
from solver.objective import score
from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_snapshot
from tests.strategies import snapshots


def test_bound_equals_the_optimum_when_everything_fits() -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8, gpus=8)], groups=[make_gang("a", gpus=4), make_gang("b", gpus=4)])
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20))
    assert lp_bound(snapshot) == score(snapshot, decision.placement).throughput


def test_bound_of_a_fractional_relaxation_is_above_the_integer_optimum() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=8)], groups=[make_gang("a-five", gpus=5), make_gang("b-four", gpus=4), make_gang("c-four", gpus=4)]
    )
    optimum = score(snapshot, place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20)).placement).throughput
    relaxed, integral = lp_bound(snapshot), lp_bound(snapshot, integral=True)
    assert relaxed >= integral >= optimum
    assert integral == optimum  # the MILP of this relaxation is exact here: one node


def bound_gpus(snapshot: Snapshot, placement: Placement) -> float:
    pods = snapshot.pod_by_key
    return sum(pods[b.pod].requests.get(GPU, 0) for b in placement.binds) / GPU_MILLI_PER_DEVICE


def test_gpu_bound_counts_the_gpus_binds_may_hold() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=8)], groups=[make_gang("a-five", gpus=5), make_gang("b-four", gpus=4), make_gang("c-four", gpus=4)]
    )
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20))
    assert lp_bound(snapshot, objective="gpus") == 8.0  # every free device, fractionally
    assert lp_bound(snapshot, objective="gpus", integral=True) == 8.0  # b-four and c-four
    assert bound_gpus(snapshot, decision.placement) == 8.0


def test_bound_counts_running_pods_and_what_evicting_them_could_free() -> None:
    victim = make_gang("victim", gpus=8, priority=0, running_on=["n1"])
    urgent = make_gang("urgent", gpus=8, priority=5)
    snapshot = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[victim, urgent])
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20))
    assert decision.placement.evictions  # preempting the lower priority wins throughput
    assert lp_bound(snapshot) >= score(snapshot, decision.placement).throughput


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(snapshots(max_nodes=12, max_groups=8))
def test_no_engine_beats_the_lp_bound(snapshot: Snapshot) -> None:
    bound = lp_bound(snapshot)
    gpus = lp_bound(snapshot, objective="gpus", backend="scipy")
    for engine in ("greedy", "cpsat"):
        decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=5))  # type: ignore[arg-type]
        # The LP solver's feasibility tolerance (1e-9 relative) can leave its optimum a few
        # millionths below an integer placement of ~2,500 that meets it exactly.
        assert score(snapshot, decision.placement).throughput <= bound * (1 + 1e-8) + 1e-6
        assert bound_gpus(snapshot, decision.placement) <= gpus * (1 + 1e-8) + 1e-6
