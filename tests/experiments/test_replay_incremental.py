"""The replay's incremental path gives what a full rebuild gives.

The trace replay keeps its `Node` objects from one `place()` call to the next and builds a
node again only after a bind changed it, so the solver reads what it derived from an
unchanged node (its rows of the node tables, `solver.memo`) from earlier cycles, and the
greedy engine measures packing without the classes CP-SAT reads. These tests replay small
random traces and, at every batch, solve the snapshot the replay built beside the same
snapshot rebuilt from scratch (every object validated afresh, nothing derived before):
the `Problem` must be equal field by field, the placement equal bind by bind, and the
checker must pass it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.batchplace_policy import BatchplacePolicy
from experiments.cluster_state import ClusterState, requests_of
from experiments.fragmentation import typical_pods
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.place import place
from solver.problem import Problem, build_problem
from tests.experiments._openb_builders import make_nodes, make_pods

NODE_KINDS = [(96000, 8, "G2"), (64000, 2, "T4"), (32000, 4, "V100M16"), (16000, 0, "A10"), (48000, 1, "P100")]
POD_SHAPES = [(4000, 1, 1000), (8000, 2, 1000), (2000, 1, 500), (1000, 1, 250), (6000, 0, 0), (12000, 4, 1000)]
SPECS = ["", "", "G2|T4", "V100M16"]


def _rebuilt(snapshot: Snapshot) -> Snapshot:
    """The same snapshot with every object made and validated afresh: nothing memoized."""
    return Snapshot.model_validate(snapshot.model_dump())


def _assert_same_problem(incremental: Problem, full: Problem) -> None:
    for field in dataclasses.fields(Problem):
        mine, theirs = getattr(incremental, field.name), getattr(full, field.name)
        if isinstance(mine, np.ndarray):
            assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), field.name
        elif field.name == "group_pods":
            assert [p.tolist() for p in mine] == [p.tolist() for p in theirs]
        elif field.name == "group_facts":
            assert [dataclasses.asdict(f) for f in mine] == [dataclasses.asdict(f) for f in theirs]
        else:
            assert mine == theirs, field.name


@st.composite
def traces(draw: st.DrawFn) -> tuple[ClusterState, list, int]:
    kinds = draw(st.lists(st.sampled_from(NODE_KINDS), min_size=2, max_size=10))
    shapes = draw(st.lists(st.sampled_from(POD_SHAPES), min_size=1, max_size=40))
    spec = draw(st.sampled_from(SPECS))
    pods = make_pods(*shapes, spec=spec)
    state = ClusterState(make_nodes(*kinds))
    state.tie_rank = np.random.default_rng(draw(st.integers(0, 99))).permutation(state.node_count)
    return state, pods, draw(st.sampled_from([1, 1, 3]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_every_replay_snapshot_solves_as_its_full_rebuild(trace: tuple[ClusterState, object, int]) -> None:
    state, pods, k = trace
    policy = BatchplacePolicy("greedy", name="greedy", typical=typical_pods(pods))  # type: ignore[arg-type]
    arrivals = requests_of(pods)  # type: ignore[arg-type]
    solved = 0
    for start in range(0, len(arrivals), k):
        batch = arrivals[start : start + k]
        snapshot = policy.snapshot(state, batch)
        if snapshot is not None:
            full = _rebuilt(snapshot)
            assert all(a is not b for a, b in zip(snapshot.nodes, full.nodes))
            _assert_same_problem(build_problem(snapshot), build_problem(full))
            incremental, rebuilt = place(snapshot, policy.config), place(full, policy.config)
            assert incremental.placement == rebuilt.placement
            assert check_placement(full, incremental.placement) == ()
            solved += 1
        assigned = policy.schedule(state, batch)
        placed = sum(a is not None for a in assigned)
        assert placed == (0 if snapshot is None else len(incremental.placement.binds))
    assert solved == len(policy.snapshot_nodes)
