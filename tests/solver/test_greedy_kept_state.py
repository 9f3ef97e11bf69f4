"""What the greedy engine keeps across a cycle's binds, evictions and rollbacks, against
the same made afresh: the free capacity per topology domain (`solver.greedy.domain_free`)
and where each pod shape fits (`CycleState.fit_mask`)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.snapshot import Snapshot
from solver.greedy.state import CycleState
from solver.greedy.topology import candidate_domains
from solver.problem import build_problem
from solver.rules import counted
from tests.builders import make_gang, make_node, make_snapshot
from tests.cycle_steps import CycleSteps
from tests.strategies import snapshots


def _afresh(state: CycleState, position: int) -> tuple[list[list[int]], list[int]]:
    """Each domain's free per resource and wholly free devices, summed node by node."""
    problem = state.problem
    domains = len(problem.domain_names[position])
    free = [[0] * domains for _ in range(state.free.shape[0])]
    whole = [0] * domains
    for node, domain in enumerate(problem.domain_of[position].tolist()):
        if domain < 0:
            continue
        for r in range(state.free.shape[0]):
            free[r][domain] += int(state.free[r, node])
        whole[domain] += int(state.whole_free[node])
    return free, whole


def test_a_bind_and_its_rollback_move_the_sums_of_the_leaf_it_is_in():
    """Two leaves of two 8-GPU nodes: a 4-GPU bind on n0 takes 4,000 milli and four whole
    devices off leaf-a, none off leaf-b; rolled back, leaf-a has them again."""
    nodes = [make_node(f"n{i}", gpus=8, leaf="leaf-a" if i < 2 else "leaf-b", spine="spine") for i in range(4)]
    snapshot = counted(make_snapshot(nodes=nodes, groups=[make_gang("g", gpus=4)]))
    problem = build_problem(snapshot)
    state = CycleState(problem, snapshot)
    leaves = problem.tiers.index(1)
    a, b = (problem.domain_names[leaves].index(name) for name in ("leaf-a", "leaf-b"))
    gpu = problem.gpu_column
    free, whole = state.domain_free.of(leaves)
    assert (free[gpu, a], free[gpu, b], whole[a], whole[b]) == (16_000, 16_000, 16, 16)
    mark = state.checkpoint()
    pod = next(p for p in range(len(problem.pod_keys)) if problem.pod_task_row[p] >= 0)
    assert state.bind(pod, state.shape(int(problem.pod_task_row[pod])), problem.node_index["n0"])
    free, whole = state.domain_free.of(leaves)
    assert (free[gpu, a], free[gpu, b], whole[a], whole[b]) == (12_000, 16_000, 12, 16)
    state.rollback(mark)
    free, whole = state.domain_free.of(leaves)
    assert (free[gpu, a], whole[a]) == (16_000, 16)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(max_nodes=12, max_groups=8), data=st.data())
def test_kept_sums_equal_sums_made_afresh_after_every_step(snapshot: Snapshot, data):
    """Random binds, evictions, checkpoints and rollbacks, with the sums of a random tier
    asked between them and of every tier after them (a tier asked late is built then):
    every answer equals the node by node sum, and the candidate domains found with the kept
    sums are those found without."""
    snapshot = counted(snapshot)
    problem = build_problem(snapshot)
    if not problem.tiers:
        return
    state = CycleState(problem, snapshot)
    steps = CycleSteps(state)
    if data.draw(st.booleans()):  # built before the steps; else on the first ask among them
        state.domain_free.of(0)
    for _ in range(data.draw(st.integers(1, 16))):
        if steps.take(data, "ask") == "ask":
            position = data.draw(st.integers(0, len(problem.tiers) - 1))
            free, whole = state.domain_free.of(position)
            assert (free.tolist(), whole.tolist()) == _afresh(state, position)
    for position in range(len(problem.tiers)):
        free, whole = state.domain_free.of(position)
        assert (free.tolist(), whole.tolist()) == _afresh(state, position)
    demand = np.zeros(len(problem.resource_names), dtype=np.int64)
    demand[problem.gpu_column] = data.draw(st.sampled_from([0, 1000, 4000, 16_000]))
    demand[problem.cpu_column] = data.draw(st.sampled_from([0, 1000, 8000]))
    ask = {
        "available": state.free, "whole_available": state.whole_free,
        "eligible_any": np.ones(problem.node_count, dtype=bool), "anchors": np.array([], dtype=np.int64),
        "demand_min": demand, "devices_min": int(demand[problem.gpu_column] // 1000),
        "demand_all": demand * 2, "devices_all": int(demand[problem.gpu_column] // 500),
        "tier_limit": None, "whole_only": data.draw(st.booleans()),
    }  # fmt: skip
    assert candidate_domains(problem, **ask, domain_free=state.domain_free) == candidate_domains(problem, **ask)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(max_nodes=12, max_groups=8), data=st.data())
def test_kept_fit_masks_equal_masks_made_afresh_after_every_step(snapshot: Snapshot, data):
    """Random binds, evictions, checkpoints and rollbacks, with a random task's fit asked
    between them and every task's after them (first asked late, or kept from before):
    each equals the fit judged afresh on every node, within the base mask given."""
    snapshot = counted(snapshot)
    problem = build_problem(snapshot)
    rows = sorted({int(problem.pod_task_row[p]) for p in range(len(problem.pod_keys)) if problem.pod_task_row[p] >= 0})
    if not rows:
        return
    state = CycleState(problem, snapshot)
    steps = CycleSteps(state)

    def afresh(row: int) -> list[bool]:  # judged on every node as the state is now
        return state._fit(state.shape(row), slice(None)).tolist()

    for _ in range(data.draw(st.integers(1, 16))):
        if steps.take(data, "ask") == "ask":
            row = data.draw(st.sampled_from(rows))
            base = np.array(data.draw(st.lists(st.booleans(), min_size=problem.node_count, max_size=problem.node_count)))
            expected = base & np.array(afresh(row), dtype=bool)
            assert state.fit_mask(state.shape(row), base).tolist() == expected.tolist()
    every = np.ones(problem.node_count, dtype=bool)
    for row in rows:
        assert state.fit_mask(state.shape(row), every).tolist() == afresh(row)
