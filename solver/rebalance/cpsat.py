"""The rebalancing model in CP-SAT: cool the most hot nodes, then with the fewest moves.

Input: an `Instance`, banned (mover, node) pairs and no-goods (sets of moves the checker
rejected together), the greedy moves as a hint, a time limit.
Output: `CpsatMoves` — the moves and CP-SAT's status. Runs in whatever process calls it:
`solver.rebalance.plan` calls it through `solver.isolation.run_isolated`, so a native
failure costs this answer (greedy's is given) and never the caller.

One boolean per (mover, candidate destination) — movers are few (the preemptable pods on
hot nodes), candidates already filtered per pod (`solver.rebalance.movable`), so the model
is small; what a pod does with its neighbours on a node (devices, NUMA cells, pod
affinity between movers) is left to the checker (`solver.rebalance.verify`), and the moves
it rejects together are a no-good for the next round (at most all but one of them again).

Not promised: that an OPTIMAL answer is the fewest moves among *all* valid advice when
rounds banned moves (each ban is a restriction; `plan` reports FEASIBLE then).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from solver.greedy.state import CycleState
from solver.rebalance.movable import Instance

__all__ = ["CpsatMoves", "ModelInvalid", "cpsat_plan"]

CpsatStatus = Literal["OPTIMAL", "FEASIBLE", "UNKNOWN"]


class ModelInvalid(Exception):
    """CP-SAT rejected the rebalancing model: a bug here, never the input."""


@dataclass(frozen=True)
class CpsatMoves:
    moves: tuple[tuple[int, int], ...]
    status: CpsatStatus


@dataclass
class _Vars:
    go: dict[tuple[int, int], cp_model.IntVar]  # go[mover, node]: the mover moves to node
    moved: dict[int, cp_model.LinearExpr]  # per mover with a candidate: 1 when it moves anywhere
    cooled: dict[str, cp_model.IntVar]  # per hot node: at or under every threshold after the moves
    whole: dict[str, cp_model.IntVar]  # per PodGroup that may move whole: it does


def _variables(model: cp_model.CpModel, instance: Instance, banned: Collection[tuple[int, int]]) -> _Vars:
    banned_set = set(banned)
    go = {
        (i, n): model.new_bool_var(f"go[{mover.pod.key},{instance.problem.node_names[n]}]")
        for i, mover in enumerate(instance.movers)
        for n in mover.candidates
        if (i, n) not in banned_set
    }
    by_mover: dict[int, list[cp_model.IntVar]] = {i: [] for i in range(len(instance.movers))}
    for (i, _), var in go.items():
        by_mover[i].append(var)
    moved = {i: sum(vars_) for i, vars_ in by_mover.items() if vars_}  # movers with nowhere to go are absent
    cooled = {hot: model.new_bool_var(f"cooled[{hot}]") for hot in instance.table.hot}
    whole = {gang.key: model.new_bool_var(f"whole[{gang.key}]") for gang in instance.gangs if gang.whole}
    return _Vars(go=go, moved=moved, cooled=cooled, whole=whole)


def _one_destination(model: cp_model.CpModel, v: _Vars) -> None:
    """Each mover goes to one node at most."""
    by_mover: dict[int, list[cp_model.IntVar]] = {}
    for (i, _), var in v.go.items():
        by_mover.setdefault(i, []).append(var)
    for vars_ in by_mover.values():
        model.add_at_most_one(vars_)


def _room(model: cp_model.CpModel, instance: Instance, v: _Vars) -> None:
    """What arrives on a node fits what it has free, per resource and in whole GPU devices."""
    problem = instance.problem
    state = CycleState(problem, instance.snapshot)
    by_node: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for (i, n), var in v.go.items():
        by_node.setdefault(n, []).append((i, var))
    gpu = problem.gpu_column
    for n, arrivals in by_node.items():
        for r in range(len(problem.resource_names)):
            terms = [(int(problem.task_requests[instance.movers[i].task_row][r]), var) for i, var in arrivals]
            terms = [(amount, var) for amount, var in terms if amount]
            if terms:
                model.add(sum(amount * var for amount, var in terms) <= int(state.free[r, n]))
        whole = [
            (int(problem.task_requests[instance.movers[i].task_row][gpu]) // 1000, var)
            for i, var in arrivals
            if int(problem.task_requests[instance.movers[i].task_row][gpu]) % 1000 == 0
        ]
        whole = [(devices, var) for devices, var in whole if devices]
        if whole:
            model.add(sum(devices * var for devices, var in whole) <= int(state.whole_free[n]))


def _headroom(model: cp_model.CpModel, instance: Instance, v: _Vars) -> None:
    """A destination ends at or under every threshold it is judged on."""
    table, problem = instance.table, instance.problem
    by_node: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for (i, n), var in v.go.items():
        by_node.setdefault(n, []).append((i, var))
    for n, arrivals in by_node.items():
        name = problem.node_names[n]
        node = instance.snapshot.node_by_name[name]
        for r in table.judged(name):
            terms = [(instance.movers[i].load.arriving(node, r), var) for i, var in arrivals]
            terms = [(amount, var) for amount, var in terms if amount]
            if terms:
                model.add(sum(amount * var for amount, var in terms) <= table.thresholds[r] - table.levels[name][r])


def _cooling(model: cp_model.CpModel, instance: Instance, v: _Vars) -> None:
    """A hot node counts as cooled only when its movers' shares leaving cover its every excess."""
    table = instance.table
    for hot, cooled in v.cooled.items():
        movers = instance.movable_on[hot]
        for r, excess in table.over(table.levels[hot]).items():
            relief = [(instance.movers[i].load.leaving.get(r, 0), v.moved[i]) for i in movers if i in v.moved]
            relief = [(share, moved) for share, moved in relief if share]
            if not relief:
                model.add(cooled == 0)
                break
            model.add(sum(share * moved for share, moved in relief) >= excess).only_enforce_if(cooled)


def _gangs(model: cp_model.CpModel, instance: Instance, v: _Vars) -> None:
    """A PodGroup keeps its minimum with the pods that stay, or moves whole."""
    for gang in instance.gangs:
        whole = v.whole.get(gang.key)
        if whole is not None:
            if any(i not in v.moved for i in gang.movers):
                model.add(whole == 0)  # a pod of it has nowhere to go
            else:
                for i in gang.movers:
                    model.add(v.moved[i] >= 1).only_enforce_if(whole)
        moved = [v.moved[i] for i in gang.movers if i in v.moved]
        if not moved:
            continue
        keep_enough = model.add(sum(moved) <= gang.running - gang.least_kept)
        if whole is not None:
            keep_enough.only_enforce_if(whole.Not())
        for task, least in gang.task_least_kept.items():
            of_task = [v.moved[i] for i in gang.movers if instance.movers[i].task == task and i in v.moved]
            if of_task:
                constraint = model.add(sum(of_task) <= gang.task_running.get(task, 0) - least)
                if whole is not None:
                    constraint.only_enforce_if(whole.Not())


def _objective(model: cp_model.CpModel, instance: Instance, v: _Vars) -> None:
    """Most hot nodes cooled first, then fewest moves: a cooled node outweighs every move."""
    weight = len(instance.movers) + 1
    model.maximize(weight * sum(v.cooled.values()) - sum(v.go.values()))


def _no_goods(model: cp_model.CpModel, v: _Vars, no_goods: Collection[frozenset[tuple[int, int]]]) -> None:
    """Moves the checker rejected together are not all made again."""
    for no_good in no_goods:
        present = [v.go[move] for move in no_good if move in v.go]
        if len(present) == len(no_good):
            model.add(sum(present) <= len(present) - 1)


def _hint(model: cp_model.CpModel, v: _Vars, hint: Sequence[tuple[int, int]]) -> None:
    chosen = set(hint)
    for key, var in v.go.items():
        model.add_hint(var, key in chosen)


def cpsat_plan(
    instance: Instance,
    *,
    banned: Collection[tuple[int, int]],
    no_goods: Collection[frozenset[tuple[int, int]]] = (),
    hint: Sequence[tuple[int, int]],
    time_limit_s: float,
    workers: int,
) -> CpsatMoves:
    """The model of the module docstring, solved within `time_limit_s`."""
    model = cp_model.CpModel()
    v = _variables(model, instance, banned)
    _one_destination(model, v)
    _room(model, instance, v)
    _headroom(model, instance, v)
    _cooling(model, instance, v)
    _gangs(model, instance, v)
    _no_goods(model, v, no_goods)
    _objective(model, instance, v)
    _hint(model, v, hint)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit_s)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    if status in (cp_model.MODEL_INVALID, cp_model.INFEASIBLE):  # moving nothing is always feasible
        raise ModelInvalid(model.validate() or "the model is infeasible")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpsatMoves(moves=(), status="UNKNOWN")
    moves = tuple(sorted(key for key, var in v.go.items() if solver.value(var)))
    return CpsatMoves(moves=moves, status="OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE")
