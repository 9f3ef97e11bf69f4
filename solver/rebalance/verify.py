"""Advice judged by the checker: moves become binds of requeued pods, checked like any placement.

Input: an `Instance` and moves (`(mover, node)` pairs from either planner). Output:
`Realized` — the moves' projected usage per node, their `Bind`s (GPU devices and NUMA
cell chosen on the destination), the snapshot the checker judged them on, and every hard
rule they break (`violations`), or the movers no device choice fits (`unplaced`).

A move is "evict the pod, its controller recreates it, it is bound elsewhere" — so it is
judged as exactly that: in the *checked snapshot* each moved pod is pending again (as
`kubectl drain` leaves it, `solver.whatif`: its task's requests, no node) and every node
the moves touch carries its projected usage (`solver.rebalance.load`), observed when its
reading was (so freshness is judged as before); the placement binds each moved pod to its
destination. `solver.checker` then judges capacity, GPU devices, NUMA, eligibility, node
and pod (anti-)affinity, topology spread, hard topology, the gang rule — and the usage
rule on the projected usage, so a destination pushed past a threshold is a violation.

Two rules are not asked of a move, and their violations are dropped (`NOT_ASKED`):
  - quota: a move leaves every queue's allocation as it was (the pod leaves and comes back
    in the same queue), so a queue already over a lowered capability, or closed, does not
    forbid moving its running pods;
  - dependency: a moved pod's task already started, so the tasks it depends on ran; a pod
    is not held back because another of its PodGroup moves too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.placement import Bind, Placement
from models.snapshot import NodeName, Snapshot
from solver.checker import check_placement
from solver.greedy.state import CycleState
from solver.rebalance.load import USAGE_PERCENT_CEILING_MILLI, percent_of
from solver.rebalance.movable import Instance
from solver.rules import dependency, quota
from solver.violation import Violation
from solver.whatif import requeued_pod

__all__ = ["NOT_ASKED", "Realized", "project", "realize", "checked_snapshot", "culprits"]

NOT_ASKED = frozenset({quota.NAME, dependency.NAME})
"""Rules a move cannot break (module docstring); their violations are not held against it."""

MovePairs = Sequence[tuple[int, int]]


@dataclass(frozen=True)
class Realized:
    moves: tuple[tuple[int, int], ...]
    levels: Mapping[NodeName, Mapping[str, int]]  # projected milli-percent of every judged node
    binds: tuple[Bind, ...]
    checked: Snapshot | None  # None when devices did not fit (nothing was checked)
    violations: tuple[Violation, ...]
    unplaced: tuple[tuple[int, int], ...]  # moves whose pod no device choice fits, in bind order

    @property
    def valid(self) -> bool:
        return not self.violations and not self.unplaced


def project(instance: Instance, moves: MovePairs) -> dict[NodeName, dict[str, int]]:
    """Every judged node's usage in milli-percent after `moves` (the estimate of `load`)."""
    table = instance.table
    levels = {node: dict(values) for node, values in table.levels.items()}
    for mover, node in moves:
        m = instance.movers[mover]
        destination = instance.problem.node_names[node]
        for r, share in m.load.leaving.items():
            levels[m.source][r] -= share
        target = instance.snapshot.node_by_name[destination]
        for r in levels.get(destination, {}):
            levels[destination][r] += m.load.arriving(target, r)
    return levels


def _bind_order(instance: Instance, moves: MovePairs) -> list[tuple[int, int]]:
    """Whole-GPU pods first, most devices first, then fractions, largest first: the order in
    which devices fill without stranding a large pod behind small ones."""

    def key(move: tuple[int, int]) -> tuple[int, int, int]:
        gpu_milli = instance.problem.task_requests[instance.movers[move[0]].task_row][instance.problem.gpu_column]
        whole = int(gpu_milli) % 1000 == 0 and gpu_milli > 0
        return (0 if whole else 1 if gpu_milli else 2, -int(gpu_milli), move[0])

    return sorted(moves, key=key)


def realize(instance: Instance, moves: MovePairs) -> Realized:
    """The `Realized` of `moves` (see the module docstring)."""
    problem = instance.problem
    levels = project(instance, moves)
    state = CycleState(problem, instance.snapshot)
    for mover, _ in moves:
        state.evict(instance.movers[mover].index, reason="rebalance", for_group=-1)
    binds: list[Bind] = []
    unplaced: list[tuple[int, int]] = []
    for mover, node in _bind_order(instance, moves):
        m = instance.movers[mover]
        if not state.bind(m.index, state.shape(m.task_row), node):
            unplaced.append((mover, node))
            continue
        record = state.binds[m.index]
        gpu_row = problem.gpu_index[node]
        binds.append(
            Bind(
                pod=m.pod.key,
                node=problem.node_names[node],
                gpus=tuple(sorted(int(gpu_row[slot]) for slot in record.slots)),
                numa_cell=record.numa_cell,
            )
        )
    frozen_moves = tuple(moves)
    if unplaced:
        return Realized(frozen_moves, levels, tuple(binds), None, (), tuple(unplaced))
    checked = checked_snapshot(instance, moves, levels)
    violations = tuple(
        v for v in check_placement(checked, Placement(binds=tuple(binds))) if v.rule not in NOT_ASKED
    )
    return Realized(frozen_moves, levels, tuple(binds), checked, violations, ())


def checked_snapshot(instance: Instance, moves: MovePairs, levels: Mapping[NodeName, Mapping[str, int]]) -> Snapshot:
    """The snapshot moves are judged on: moved pods pending again, touched nodes at their
    projected usage (module docstring)."""
    snapshot = instance.snapshot
    moved = {instance.movers[mover].pod.key for mover, _ in moves}
    touched = {instance.movers[mover].source for mover, _ in moves}
    touched |= {instance.problem.node_names[node] for _, node in moves}
    nodes = []
    for node in snapshot.nodes:
        if node.name in touched and node.usage is not None:
            update = {
                f"{r}_percent": percent_of(min(max(0, level), USAGE_PERCENT_CEILING_MILLI))
                for r, level in levels[node.name].items()
            }
            node = node.model_copy(update={"usage": node.usage.model_copy(update=update)})
        nodes.append(node)
    pods = [requeued_pod(snapshot, pod) if pod.key in moved else pod for pod in snapshot.pods]
    return snapshot.replaced(nodes=nodes, pods=pods)


def culprits(instance: Instance, realized: Realized) -> set[frozenset[tuple[int, int]]]:
    """No-goods: sets of moves that may not all be made together, one per rejection. A move
    whose pod no device choice fits, alone on its node, is a no-good by itself (a ban); so
    is a move a violation names when nothing else moves onto its node. Otherwise a
    violation about a pod → its move with every other move onto the same node (two pods
    that repel each other on one node: either may go there, not both); about a node →
    the moves onto it; about a PodGroup → its pods' moves; anything else → all the moves."""
    moves = realized.moves
    onto: dict[int, set[tuple[int, int]]] = {}
    for mover, node in moves:
        onto.setdefault(node, set()).add((mover, node))
    if realized.unplaced:
        return {frozenset(onto[node]) for _, node in realized.unplaced}
    by_pod = {instance.movers[mover].pod.key: (mover, node) for mover, node in moves}
    found: set[frozenset[tuple[int, int]]] = set()
    for violation in realized.violations:
        subject = violation.subject
        if subject in by_pod:
            found.add(frozenset(onto[by_pod[subject][1]]))
            continue
        hits = {
            (mover, node)
            for mover, node in moves
            if instance.problem.node_names[node] == subject or instance.movers[mover].group == subject
        }
        found.add(frozenset(hits or moves))
    return found
