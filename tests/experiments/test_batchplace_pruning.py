"""The batchplace adapter's exact pruning: the node classes it keeps up to date bind by bind
are the partition a fresh computation gives, and the candidates are those the module
docstring's rule picks, so the snapshot it solves is the same."""

from __future__ import annotations

import numpy as np

from experiments.batchplace_policy import BatchplacePolicy, _NodeClasses
from experiments.cluster_state import ClusterState
from tests.experiments._openb_builders import make_nodes, occupy, pod


def _partition(classes: np.ndarray) -> set[tuple[int, ...]]:
    """Classes as sets of node rows, whatever their ids."""
    return {tuple(np.flatnonzero(classes == c).tolist()) for c in np.unique(classes)}


def _fresh_partition(state: ClusterState) -> set[tuple[int, ...]]:
    signature = np.column_stack((state.cpu_free, state.memory_free, state.model, state.gpu_left))
    _, classes = np.unique(signature, axis=0, return_inverse=True)
    return _partition(classes.reshape(-1))


def _reference_candidates(state: ClusterState, batch: list) -> list[int]:  # noqa: ANN001
    """The module docstring's rule, plainly: the nodes where a pod fits, at most len(batch) of
    each state (free CPU, memory, model, devices), the first in tie order; in tie order."""
    fits = np.zeros(state.node_count, dtype=bool)
    for request in batch:
        fits |= state.feasible(request)
    rows = sorted(np.flatnonzero(fits).tolist(), key=lambda n: state.tie_rank[n])
    if len(rows) <= len(batch):
        return rows
    kept: dict[tuple, list[int]] = {}
    for n in rows:
        signature = (int(state.cpu_free[n]), int(state.memory_free[n]), int(state.model[n]), tuple(state.gpu_left[n].tolist()))
        kept.setdefault(signature, [])
        if len(kept[signature]) < len(batch):
            kept[signature].append(n)
    return sorted((n for group in kept.values() for n in group), key=lambda n: state.tie_rank[n])


def _cluster() -> ClusterState:
    return ClusterState(make_nodes(*[(96000, 8, "G2")] * 4, *[(64000, 2, "T4")] * 3, (32000, 0, "A10")))


def test_node_classes_follow_every_bind_and_release() -> None:
    state = _cluster()
    classes = _NodeClasses()
    assert _partition(classes.of(state)) == _fresh_partition(state) == {(0, 1, 2, 3), (4, 5, 6), (7,)}
    share = pod(1000, 1, 500)
    taken = state.bind(share, 1, (0,))
    occupy(state, 5, cpu_milli=2000)
    assert _partition(classes.of(state)) == _fresh_partition(state)
    assert {(0, 2, 3), (1,), (5,)} <= _partition(classes.of(state))
    state.release(share, taken)  # node 1 is back in the state of nodes 0, 2 and 3
    assert _partition(classes.of(state)) == _fresh_partition(state)
    assert (0, 1, 2, 3) in _partition(classes.of(state))


def test_another_cluster_starts_the_classes_afresh() -> None:
    classes = _NodeClasses()
    one = _cluster()
    classes.of(one)
    other = ClusterState(make_nodes((16000, 1, "T4"), (16000, 1, "T4")))
    assert _partition(classes.of(other)) == {(0, 1)}


def test_pruned_candidates_equal_those_of_a_fresh_policy_at_every_step() -> None:
    state = _cluster()
    state.tie_rank = np.random.default_rng(7).permutation(state.node_count)
    replayed = BatchplacePolicy("greedy", name="greedy")
    arrivals = [pod(4000, 1, 1000, index=0), pod(2000, 1, 300, index=1), pod(1000, index=2), pod(8000, 2, 1000, index=3)]
    for step, arrival in enumerate(arrivals * 3):
        arrival = pod(arrival.cpu_milli, arrival.num_gpu, arrival.gpu_milli, index=step)
        batch = [arrival, pod(1000, 1, 250, index=100 + step)]
        fresh = BatchplacePolicy("greedy", name="greedy")
        chosen = replayed._candidate_nodes(state, batch).tolist()
        assert chosen == fresh._candidate_nodes(state, batch).tolist() == _reference_candidates(state, batch)
        replayed.schedule(state, batch)
