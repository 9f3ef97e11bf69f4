"""The greedy rebalancing planner: hot nodes one at a time, each as a transaction.

Input: an `Instance` (`solver.rebalance.movable`) and the (mover, node) pairs a previous
round of checking banned. Output: moves as `(mover index, node index)` pairs. The CP-SAT
planner's hint, and the answer when CP-SAT has none (or is not asked).

For each hot node, hottest first: its movers by how much of its excess each one's share
covers (pods that may move alone before those that move only with their whole gang), and
each to the cool candidate where it leaves the most usage headroom (the lowest projected
usage relative to the thresholds, so one destination is not filled to the brim), on a
`CycleState` copy of free capacity, devices and inter-pod counts — until the node is at
or under its thresholds. A node that cannot be cooled so gives back every move it took
(`CycleState.rollback`, Volcano's Statement again): moves that cool nothing are no advice.

Worked example: thresholds cpu 80 %; n1 (16 cpu) at 95 %, its pods a (47.5 % of it), b
and c (23.75 % each); cool n2 at 50 % and n3 at 70 %, both 16 cpu. n1's excess is 15 %, and
each pod's share covers all of it, so they go in snapshot order: a adds 47.5 % anywhere
(n2 97.5 %, n3 117.5 %: over) and stays; b goes to n2 (73.75 %) rather than n3 (93.75 %,
over); n1 is at 71.25 %. One move.

Not promised: the fewest moves (a pod taken early may make a later node impossible);
CP-SAT's answer is compared with this one and the better is given.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np

from models.snapshot import NodeName
from solver.greedy.state import CycleState
from solver.rebalance.movable import Instance, Mover

__all__ = ["Moves", "greedy_plan"]

Moves = tuple[tuple[int, int], ...]
"""(index into `Instance.movers`, destination node index), in the order they were chosen."""


class _Planner:
    def __init__(self, instance: Instance, banned: Collection[tuple[int, int]]):
        self.instance = instance
        self.problem = instance.problem
        self.table = instance.table
        self.state = CycleState(instance.problem, instance.snapshot)
        self.levels: dict[NodeName, dict[str, int]] = {n: dict(levels) for n, levels in self.table.levels.items()}
        self.moved: dict[int, int] = {}
        self.moved_per_gang: dict[str, dict[str, int]] = {gang.key: {} for gang in instance.gangs}
        self.undo: list[tuple[str, object]] = []
        self.masks: list[np.ndarray] = []
        banned_set = set(banned)
        for i, mover in enumerate(instance.movers):
            mask = np.zeros(self.problem.node_count, dtype=bool)
            mask[[n for n in mover.candidates if (i, n) not in banned_set]] = True
            self.masks.append(mask)

    # ---- levels, with an undo log alongside CycleState's ----

    def _shift(self, node: NodeName, deltas: Mapping[str, int], sign: int) -> None:
        levels = self.levels.get(node)
        if levels is None:
            return
        for r, delta in deltas.items():
            if r in levels:
                levels[r] += sign * delta

    def _apply(self, mover: int, node: int) -> None:
        m = self.instance.movers[mover]
        destination = self.problem.node_names[node]
        self._shift(m.source, m.load.leaving, -1)
        self._shift(destination, self._arriving(m, destination), +1)
        self.moved[mover] = node
        per_task = self.moved_per_gang[m.group]
        per_task[m.task] = per_task.get(m.task, 0) + 1
        self.undo.append(("move", (mover, node)))

    def _revert(self, mark: tuple[int, int]) -> None:
        state_mark, undo_mark = mark
        while len(self.undo) > undo_mark:
            _, (mover, node) = self.undo.pop()  # type: ignore[misc]
            m = self.instance.movers[mover]
            destination = self.problem.node_names[node]
            self._shift(m.source, m.load.leaving, +1)
            self._shift(destination, self._arriving(m, destination), -1)
            del self.moved[mover]
            self.moved_per_gang[m.group][m.task] -= 1
        self.state.rollback(state_mark)

    def _mark(self) -> tuple[int, int]:
        return self.state.checkpoint(), len(self.undo)

    def _arriving(self, mover: Mover, node: NodeName) -> dict[str, int]:
        target = self.instance.snapshot.node_by_name[node]
        return {r: mover.load.arriving(target, r) for r in self.levels.get(node, {})}

    # ---- one node ----

    def over(self, node: NodeName) -> dict[str, int]:
        return self.table.over(self.levels[node])

    def cool(self, hot: NodeName) -> bool:
        mark = self._mark()
        for mover in self._order(hot):
            if not self.over(hot):
                break
            unit = self._unit(mover)
            if unit:
                self._move_unit(unit)
        if self.over(hot):
            self._revert(mark)
            return False
        return True

    def _order(self, hot: NodeName) -> list[int]:
        excess = self.over(hot)

        def covered(i: int) -> float:
            leaving = self.instance.movers[i].load.leaving
            return sum(min(leaving.get(r, 0), e) / e for r, e in excess.items())

        movers = [i for i in self.instance.movable_on[hot] if i not in self.moved]
        return sorted(movers, key=lambda i: (not self.instance.movers[i].alone, -covered(i), i))

    def _unit(self, mover: int) -> list[int]:
        """The movers that go together with `mover`: itself when its gang keeps enough
        without it, else its whole PodGroup when that may move and nothing of it moved yet."""
        if mover in self.moved:
            return []
        m = self.instance.movers[mover]
        gang = self.instance.gang_by_key[m.group]
        moved = dict(self.moved_per_gang[m.group])
        moved[m.task] = moved.get(m.task, 0) + 1
        if m.alone and gang.may_keep(moved):
            return [mover]
        if gang.whole and not any(i in self.moved for i in gang.movers):
            return list(gang.movers)
        return []

    def _move_unit(self, unit: list[int]) -> bool:
        mark = self._mark()
        state = self.state
        for mover in unit:
            state.evict(self.instance.movers[mover].index, reason="rebalance", for_group=-1)
        for mover in unit:
            if not self._move_one(mover):
                self._revert(mark)
                return False
        return True

    def _move_one(self, mover: int) -> bool:
        m = self.instance.movers[mover]
        state = self.state
        shape = state.shape(m.task_row)
        nodes = np.flatnonzero(state.fit_mask(shape, state.inter_pod_base(m.task_row, self.masks[mover])))
        ranked = []
        for n in nodes.tolist():
            name = self.problem.node_names[n]
            levels = self.levels[name]
            arriving = self._arriving(m, name)
            after = {r: levels[r] + arriving[r] for r in self.table.judged(name)}
            if any(after[r] > self.table.thresholds[r] for r in after):
                continue
            peak = max((after[r] / max(1, self.table.thresholds[r]) for r in after), default=0.0)
            ranked.append((peak, n))
        for _, n in sorted(ranked):
            if state.bind(m.index, shape, n):
                self._apply(mover, n)
                return True
        return False


def greedy_plan(instance: Instance, *, banned: Collection[tuple[int, int]] = ()) -> Moves:
    """Moves that cool the hot nodes greedily (see the module docstring)."""
    planner = _Planner(instance, banned)
    for hot in instance.table.hot:
        if planner.over(hot):
            planner.cool(hot)
    return tuple(sorted(planner.moved.items()))
