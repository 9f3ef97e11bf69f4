"""What each topology domain has free, summed over its nodes, kept up to date as the cycle
binds and evicts.

The greedy engine asks it for every topology-aware PodGroup it tries
(`greedy.topology.candidate_domains`: which leaves or spines can hold the gang). Summed
afresh, that was one pass over every node per resource and tier for each gang. Yet between
two gangs only the nodes the cycle bound to or evicted from have changed. So the sums are
built once per tier, on its first ask. After that, each ask adds what changed on the nodes
whose `CycleState.node_changes` count moved since the last ask: binds, evictions and
their rollbacks all move it. The cost per ask is one comparison of counts over the nodes.

Input: the cycle's live `free` [R, N], `whole_free` [N] and `node_changes` [N] arrays (read,
never written). Output, per tier position of `Problem.domain_of`: [R, D] free of each
resource and [D] wholly free devices per domain, the sums over the nodes in it. They are
int64 and exact: a float sum of memory bytes rounds past 2^53, about 4,000 nodes of 2 TiB.

Only for the nodes as they are, every node counted: a gang eligible on some nodes only, or
a preemptor's hypothetical free capacity, sums its own.
"""

from __future__ import annotations

import numpy as np

from solver.problem import Problem

__all__ = ["DomainFree"]


class DomainFree:
    def __init__(self, problem: Problem, free: np.ndarray, whole_free: np.ndarray, node_changes: np.ndarray):
        self._free = free
        self._whole_free = whole_free
        self._node_changes = node_changes
        self._buckets = [domain_of + 1 for domain_of in problem.domain_of]  # bucket 0: the nodes in no domain of the tier
        self._counts = [len(names) for names in problem.domain_names]
        self._sums: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # tier position → ([R, D + 1], [D + 1])
        self._seen_changes = node_changes.copy()
        self._seen_free = free.copy()
        self._seen_whole = whole_free.copy()

    def of(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """([R, D] free per resource, [D] wholly free devices) of the domains of tier
        `position`, as the nodes are now. Read-only views: the next ask updates them."""
        self._catch_up()
        sums = self._sums.get(position)
        if sums is None:
            bucket, size = self._buckets[position], self._counts[position] + 1
            free = np.zeros((self._free.shape[0], size), dtype=np.int64)
            np.add.at(free.T, bucket, self._free.T)
            whole = np.zeros(size, dtype=np.int64)
            np.add.at(whole, bucket, self._whole_free)
            sums = self._sums[position] = (free, whole)
        free, whole = sums
        return free[:, 1:], whole[1:]

    def _catch_up(self) -> None:
        """Add to every tier's sums what changed on the nodes whose change count moved."""
        changed = np.flatnonzero(self._node_changes != self._seen_changes)
        if not changed.size:
            return
        free_delta = self._free[:, changed] - self._seen_free[:, changed]
        whole_delta = self._whole_free[changed] - self._seen_whole[changed]
        for position, (free, whole) in self._sums.items():
            bucket = self._buckets[position][changed]
            np.add.at(free.T, bucket, free_delta.T)
            np.add.at(whole, bucket, whole_delta)
        self._seen_changes[changed] = self._node_changes[changed]
        self._seen_free[:, changed] = self._free[:, changed]
        self._seen_whole[changed] = self._whole_free[changed]
