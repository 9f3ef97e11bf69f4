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

Size: one variable per (mover, candidate). Past `max_pairs` of them (`restrict`) each mover
keeps only its coolest candidates, so the model stays one CP-SAT can search in a second or
two; the answer is then optimal among those kept only (`plan` reports FEASIBLE).

Not promised: that an OPTIMAL answer is the fewest moves among *all* valid advice when
rounds banned moves (each ban is a restriction; `plan` reports FEASIBLE then).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from solver.greedy.state import CycleState
from solver.rebalance.movable import Instance, Mover
from solver.rebalance.verify import project

__all__ = ["CpsatMoves", "ModelInvalid", "cpsat_plan", "restrict"]

CpsatStatus = Literal["OPTIMAL", "FEASIBLE", "UNKNOWN"]


class ModelInvalid(Exception):
    """CP-SAT rejected the rebalancing model: a bug here, never the input."""


@dataclass(frozen=True)
class CpsatMoves:
    moves: tuple[tuple[int, int], ...]
    status: CpsatStatus
    restricted: bool = False  # candidates were cut (`restrict`): OPTIMAL only among those kept


def restrict(instance: Instance, hint: Sequence[tuple[int, int]], max_pairs: int) -> dict[int, tuple[int, ...]] | None:
    """Each mover's candidates cut to its `max_pairs // movers` (at least 4) coolest ones — the
    lowest usage relative to the thresholds after it arrives — plus the hint's, when all
    movers together have more than `max_pairs` (None: nothing cut). Example: 120 movers × 180
    cool nodes = 21,600 pairs, max 6,000 → 50 per mover."""
    total = sum(len(m.candidates) for m in instance.movers)
    if max_pairs <= 0 or total <= max_pairs:
        return None
    table, problem = instance.table, instance.problem
    per_mover = max(4, max_pairs // max(1, len(instance.movers)))
    hinted = set(hint)
    kept: dict[int, tuple[int, ...]] = {}
    for i, mover in enumerate(instance.movers):

        def peak(n: int, mover: Mover = mover) -> tuple[float, int]:
            name = problem.node_names[n]
            node = instance.snapshot.node_by_name[name]
            return max(
                ((table.levels[name][r] + mover.load.arriving(node, r)) / max(1, table.thresholds[r]) for r in table.judged(name)),
                default=0.0,
            ), n

        best = sorted(mover.candidates, key=peak)[:per_mover]
        kept[i] = tuple(sorted({*best, *(n for m, n in hinted if m == i)}))
    return kept


@dataclass
class _Vars:
    go: dict[tuple[int, int], cp_model.IntVar]  # go[mover, node]: the mover moves to node
    moved: dict[int, cp_model.LinearExpr]  # per mover with a candidate: 1 when it moves anywhere
    cooled: dict[str, cp_model.IntVar]  # per hot node: at or under every threshold after the moves
    whole: dict[str, cp_model.IntVar]  # per PodGroup that may move whole: it does


def _variables(
    model: cp_model.CpModel,
    instance: Instance,
    banned: Collection[tuple[int, int]],
    kept: dict[int, tuple[int, ...]] | None,
) -> _Vars:
    banned_set = set(banned)
    go = {
        (i, n): model.new_bool_var(f"go[{mover.pod.key},{instance.problem.node_names[n]}]")
        for i, mover in enumerate(instance.movers)
        for n in (mover.candidates if kept is None else kept[i])
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


def _hint(model: cp_model.CpModel, instance: Instance, v: _Vars, hint: Sequence[tuple[int, int]]) -> None:
    """The greedy plan, every variable of it: which moves, which nodes it cools, which gangs move whole."""
    chosen = set(hint) & set(v.go)
    for key, var in v.go.items():
        model.add_hint(var, key in chosen)
    levels = project(instance, tuple(chosen))
    for hot, var in v.cooled.items():
        model.add_hint(var, not instance.table.over(levels[hot]))
    moved = {mover for mover, _ in chosen}
    for gang in instance.gangs:
        if gang.key in v.whole:
            model.add_hint(v.whole[gang.key], all(i in moved for i in gang.movers))


def cpsat_plan(
    instance: Instance,
    *,
    banned: Collection[tuple[int, int]],
    no_goods: Collection[frozenset[tuple[int, int]]] = (),
    hint: Sequence[tuple[int, int]],
    deadline: float,
    workers: int,
    max_pairs: int = 0,
) -> CpsatMoves:
    """The model of the module docstring, built and solved by `deadline` (a `time.perf_counter()`
    instant); `restricted` when `max_pairs` cut candidates (`restrict`)."""
    model = cp_model.CpModel()
    kept = restrict(instance, hint, max_pairs)
    v = _variables(model, instance, banned, kept)
    _one_destination(model, v)
    _room(model, instance, v)
    _headroom(model, instance, v)
    _cooling(model, instance, v)
    _gangs(model, instance, v)
    _no_goods(model, v, no_goods)
    _objective(model, instance, v)
    _hint(model, instance, v, hint)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    if status in (cp_model.MODEL_INVALID, cp_model.INFEASIBLE):  # moving nothing is always feasible
        raise ModelInvalid(model.validate() or "the model is infeasible")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpsatMoves(moves=(), status="UNKNOWN", restricted=kept is not None)
    moves = tuple(sorted(key for key, var in v.go.items() if solver.value(var)))
    proven = status == cp_model.OPTIMAL
    return CpsatMoves(moves=moves, status="OPTIMAL" if proven else "FEASIBLE", restricted=kept is not None)
