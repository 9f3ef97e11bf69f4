"""The CP-SAT engine: every hard rule of DESIGN.md in one model, the soft objective tier by
tier, aggregated so it scales, warm-started with the greedy placement.

Input: a `Snapshot`, its `Problem`, the `ObjectiveContext`, a `CpsatConfig` (with its
deterministic budget, `search_s`), an absolute wall-clock deadline (`time.perf_counter()`
seconds: the safety net when the budget is deterministic) and the hint placement. Output:
a `CpsatResult` — the placement, status (OPTIMAL / FEASIBLE / UNKNOWN), the model's tier
values, the throughput bound and gap, per-stage reports, what was restricted and whether
the safety net cut the search. `solver.place` wraps it (fallback, checker, better-of-two).

The model, built in named steps (each its own module):
  1. data (`cpsat.data`): the part fixed for inter-pod constraints (`cpsat.interpod`),
     units (PodGroups that may bind, with their sub-groups), shapes, node profiles, node groups with eviction
     options, victim kinds, topology atoms and candidate domains;
     patterns per profile (`cpsat.patterns`);
  2. variables (`cpsat.variables`): counts, never one boolean per (pod, node): pods per task
     (per atom when topology matters), nodes per (profile, pattern), nodes per eviction
     option, victims per kind and reason, admissions, domains;
  3. constraints (`cpsat.constraints`): capacity/eligibility/NUMA through patterns, gang,
     quota, topology, preemption and reclaim;
  4. objective (`cpsat.objective`): the six tiers of `solver.objective`, exactly;
  5. parameters: `num_workers`, a limit per stage (deterministic time by default: the same
     input gives the same answer whatever the machine's load, `cpsat.clock`), the hint;
  6. solve: when the hint leaves PodGroups out, first a *repack* (`_repack`): the first
     stage's objective with every PodGroup the hint admits held admitted; then stage by
     stage (lexicographic, weights inside a stage where provable); then,
     if every stage was proven and the answer is not the greedy hint's, a first-come
     tie-break among the placements equal on every tier (`_break_ties`);
  7. extract (`cpsat.extract`).

Aggregation techniques (what each buys on the benchmark is measured in docs/results.md,
"CP-SAT model size and speed"; a model with one boolean per (pod, node) would need 10^6
of them at 1,000 nodes / 1,000 pods):
  - counts per task, never per pod; shapes shared across tasks;
  - node profiles, with resources the GPUs bound canonicalised away (`dominated`);
  - per-node patterns checked device by device, so the aggregation stays exact;
  - victims by kind and nodes by (profile, victims);
  - topology atoms only where candidate domains need them.

Inter-pod constraints (pod affinity, anti-affinity, topology spread): the aggregation
counts interchangeable pods per profile and pattern, never one pod on one node, so the
model cannot relate particular pods in particular domains. The PodGroups these
constraints touch are taken exactly as the greedy hint places them (left pending where it
leaves them), running pods their selectors select are no victims unless the hint evicts
them, and everything else is optimised around them (`cpsat.interpod`: why nothing else
can break their rules). A restriction, reported in `restricted` ("inter-pod constraints:
3 PodGroups placed as greedy places them"), so the status is FEASIBLE; the tiers still
equal `score`, the fixed part entering as constants. Without such PodGroups nothing
changes.

Every "time" below is the search clock's (`cpsat.clock.SearchClock`): nominal seconds of
a deterministic budget by default — so a decision taken on it depends on the input alone —
or the wall clock when the caller asks for it.

Presolve runs only when the stage has time for it (`PRESOLVE_SECONDS_PER_VARIABLE`):
CP-SAT presolves the model anew for every stage, and its cost grows with the model, not
with the stage's time limit — a stage shorter than its presolve ends without searching,
with at best the hint it was given, as on the bench's models at 1,000 nodes every stage of
a 1 s call did. And presolve is not interruptible: on openb batches (small
models, but the packing tier's many distinct fragment constants) its domain reasoning
alone outlasted the stage it was given, which then ended UNKNOWN, and the call overran its
limit. So it also needs a stage of `PRESOLVE_MIN_STAGE_S` (both measured:
docs/results.md, "CP-SAT presolve").

Statuses: OPTIMAL only when every stage proved optimality and nothing was restricted;
FEASIBLE otherwise; UNKNOWN when no stage produced a solution in time (the caller falls
back to greedy). MODEL_INVALID raises `ModelInvalid` (a bug). INFEASIBLE raises it too
when no solution is in hand to contradict it. When the incumbent satisfies the model as it
stands (`satisfied_by`), the claim is CP-SAT's own fault — false INFEASIBLE answers
without presolve are reported against it (google/or-tools issue 5295) — and the stage
counts as one without an answer: the incumbent stays, unproven.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence

from ortools.sat.python import cp_model

from models.placement import Placement
from models.snapshot import Snapshot
from solver.cpsat.clock import SearchClock
from solver.cpsat.config import CpsatConfig, CpsatResult, ModelInvalid, StageReport
from solver.cpsat.constraints import add_constraints
from solver.cpsat.data import ModelData, build_model_data
from solver.cpsat.extract import extract_placement
from solver.cpsat.hint import augment, hint_values, node_uses
from solver.cpsat.interpod import fix_inter_pod, merged
from solver.cpsat.objective import Stage, Tiers, build_tiers, first_come, plan_stages
from solver.cpsat.polish import pack_shares
from solver.cpsat.units import task_atoms
from solver.cpsat.variables import Variables, create_variables
from solver.objective import TIERS, ObjectiveContext, ObjectiveVector, score
from solver.problem import Problem
from solver.rules import counted
from solver.rules.gang import is_partly_bound

__all__ = [
    "CpsatConfig", "CpsatResult", "StageReport", "ModelInvalid", "solve_cpsat", "PRESOLVE_SECONDS_PER_VARIABLE",
    "PRESOLVE_MIN_STAGE_S",
    "TIE_BREAK_MIN_S",
    "STAGNATION_MIN_S",
    "BuildSize",
    "BuildCost",
    "BUILD_COST",
    "build_size",
    "build_seconds",
    "satisfied_by",
]

log = logging.getLogger(__name__)

PRESOLVE_SECONDS_PER_VARIABLE = 2e-4
"""What CP-SAT's presolve costs per model variable, per stage, on the bench's models (the
upper half of what was measured: docs/results.md, "CP-SAT presolve"); with
`presolve=None` it runs when this estimate is at most `PRESOLVE_SHARE` of the stage's
time."""
PRESOLVE_SHARE = 0.5
PRESOLVE_MIN_STAGE_S = 1.0
"""Shorter stages never presolve (with `presolve=None`): presolve ignores the time limit,
and its cost on a small model can exceed a short stage whatever the variable count."""
MIN_SEARCH_S = 0.05
"""Below this much time left for completing the hint and searching, CP-SAT is not started."""
REPACK_WEIGHT = 8.0
"""The repack's weight in the split of the search time, where a stage that decides what
runs weighs 2 and one that only chooses among equals 1: most of the time (8 of 13 with
three stages), because on a large model a short limit finds its improvements there —
the stages seldom improve on the hint in the little time they get — and a repack that
proves its optimum early hands the rest back. On the `tight` bench family at 1,000 nodes
and 1 s, weight 8 won back clearly more of greedy's loss than 4, on average and on the
worst snapshot, and 16 no more than 8; on the standard family's 1,000-node sizes 4 and 8
gave the same answers (measured: docs/results.md, section 4, point 3)."""
SOLVE_START_SECONDS_PER_VARIABLE = 3e-6
"""What a CP-SAT solve costs before its search, per model variable: loading the model,
which its deterministic time does not count. Charged to the search clock before every
solve, so the solves a budget holds are the solves it pays for (docs/results.md, "A second
bench family")."""
STAGNATION_MIN_S = 0.5
"""The shortest round of a stage that only chooses among equals (`_search_stage`), in
nominal seconds: a round without a better solution ends the stage."""
TIE_BREAK_MIN_S = 0.2
"""The first-come tie-break may take as long as the tiers' search took, or this much."""
SATISFIED_BY_MAX_S = 10.0
"""Wall-clock cap of `satisfied_by`, a safety net: with every variable fixed it only propagates."""


@dataclasses.dataclass(frozen=True)
class BuildSize:
    """What the engine builds after its data step, by kind (`build_size`): the kinds whose
    Python cost per variable differs, counted from the `ModelData` before a variable exists."""

    patterns: int
    """Node and atom pattern variables, with their capacity and objective terms."""
    options: int
    """Eviction option variables of node groups with a choice, with what they evict."""
    unit_variables: int
    """PodGroup and victim variables (admitted, pods per task and atom, evictions per kind)."""
    nodes: int
    """Nodes: each one's use in the hint and its node group's supply."""


@dataclasses.dataclass(frozen=True)
class BuildCost:
    """Seconds per item of a `BuildSize` for building the model in Python and the hint's
    values (`build_seconds`), charged to the search's budget as nominal seconds of the
    search clock (`cpsat.clock`). Not the hint's completion, a search charged its own
    deterministic time; not the data step before it, which is done by then."""

    pattern_s: float
    option_s: float
    unit_variable_s: float
    node_s: float
    margin: float
    """On top of the fitted rates: above the largest cost measured over its fit, so the
    charge covers the build (docs/results.md, "Building the CP-SAT model")."""

    def seconds(self, size: BuildSize) -> float:
        fitted = (
            self.pattern_s * size.patterns
            + self.option_s * size.options
            + self.unit_variable_s * size.unit_variables
            + self.node_s * size.nodes
        )
        return self.margin * fitted


BUILD_COST = BuildCost(pattern_s=8.5e-6, option_s=2.3e-5, unit_variable_s=5e-6, node_s=2e-5, margin=1.25)
"""Fitted to the CPU time of building the model and the hint's values on the standard,
tight and mixed bench families at 1,000 x 1,000 and 10,000 x 5,000 (docs/results.md,
"Building the CP-SAT model"). Why per kind: one rate for every variable, set on the
standard family at 10,000 nodes, charged the mixed family's 1,000-node models several
times their cost, and at the bench's limit CP-SAT never started there (docs/results.md,
"A second bench family")."""


class _Incumbents(cp_model.CpSolverSolutionCallback):
    """Records (seconds, objective) of each solution a stage finds, for experiments; the
    seconds count from the stage's first search (`offset_s`: the searches before this one)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[float, float]] = []
        self.offset_s = 0.0

    def on_solution_callback(self) -> None:
        self.found.append((self.offset_s + self.wall_time, self.objective_value))


@dataclasses.dataclass
class _StageSearch:
    """What one stage's search (`_search_stage`) ends with."""

    solver: cp_model.CpSolver  # its last search's
    status: int  # OPTIMAL when the last search proved it; FEASIBLE with a solution; else the last search's
    solution: list[int] | None  # the best solution over its searches
    wall_s: float
    incumbents: _Incumbents


def _search_stage(
    model: cp_model.CpModel,
    stage: Stage,
    values: list[int] | None,
    partial: dict[cp_model.IntVar, int],
    config: CpsatConfig,
    clock: SearchClock,
    share: float,
) -> _StageSearch:
    """Minimise `stage` for up to `share` nominal seconds, from the hint the caller set
    (`values`, else `partial`).

    A stage that only chooses among equals (no fairness or throughput in it) on the
    deterministic clock searches in rounds, each hinted with the best solution so far and
    as long as all the rounds before it (at least `STAGNATION_MIN_S`), and stops after a
    round that found nothing better. Why: such a stage either proves its optimum at once
    or, on a weak bound, spends its whole share proving a hint it never improves — on the
    sub-group stream (Lingjun, NVL72) 5 of 218 such stages ran 0.7–3.1 s, 4 of them
    without an improvement after their first 0.03 s, and they made the p99 of the call
    (docs/results.md, "Sub-groups: nested gangs on Lingjun and NVL72"). A round is a
    fresh search with the same seed and hint: the same input still stops at the same
    point. Stages that decide what runs, and stages shorter than two rounds (every stage
    of a 1 s call), keep their whole share in one search, as before."""
    sliced = clock.deterministic and 0 not in stage.tiers and 1 not in stage.tiers and share >= 2 * STAGNATION_MIN_S
    incumbents = _Incumbents()

    def value(solution: list[int]) -> int:
        return stage.expression.value(solution)

    best: list[int] | None = None  # the best solution the rounds found
    hint = values
    searched_s = wall_s = 0.0
    while True:
        left = share - searched_s
        length = min(left, max(STAGNATION_MIN_S, searched_s)) if sliced else left
        if left - length < STAGNATION_MIN_S / 2:  # no sliver of a round left over
            length = left
        if hint is not values:  # the first round's hint the caller set, before it measured `share`
            _set_hint(model, hint, partial)
        solver = _solver(config, clock, length, presolve=_presolve(config, model, length))
        incumbents.offset_s = wall_s
        status = solver.solve(model, incumbents)
        searched_s += clock.charge(solver)
        wall_s += solver.wall_time
        improved = False
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            found = list(solver.response_proto.solution)
            improved = hint is None or value(found) < value(hint)
            if best is None or value(found) <= value(best):
                best = found
        if status != cp_model.FEASIBLE or not sliced or not improved or searched_s >= share - 1e-9:
            break
        start = _start_seconds(clock, model)
        if clock.left() <= start + 0.005:
            break
        clock.charged(start)
        searched_s += start
        hint = best
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) and best is not None:
        status = cp_model.FEASIBLE  # an earlier round's solution stands
    return _StageSearch(solver, status, best, wall_s, incumbents)


def solve_cpsat(
    snapshot: Snapshot,
    *,
    problem: Problem,
    context: ObjectiveContext,
    config: CpsatConfig,
    deadline: float,
    hint: Placement | None = None,
) -> CpsatResult:
    started = time.perf_counter()
    clock = SearchClock(deadline=deadline, search_s=config.search_s)
    snapshot = counted(snapshot)  # what `build_problem` reads (solver.rules.counted)
    stats: dict[str, float] = {}
    # 1. data (the PodGroups inter-pod constraints touch: as the hint places them)
    fixed = fix_inter_pod(snapshot, problem, context, hint or Placement())
    if fixed is not None:
        problem, hint = fixed.problem, fixed.residual_hint
    data = build_model_data(snapshot, problem, context, limits=config.limits, hint=hint, fixed=fixed)
    hint = hint or Placement()
    uses, pods_per_task, evictions = node_uses(data, hint)
    augment(data, uses)
    stats["data_s"] = time.perf_counter() - started
    expected = build_seconds(data)
    if clock.left() < expected + MIN_SEARCH_S:
        log.info("cpsat: no time to build the model (~%.2fs) and search", expected)
        return _unknown(data, (), stats, clock)
    clock.charged(expected)
    # 2–4. variables, constraints, objective
    model = cp_model.CpModel()
    variables = create_variables(model, data)
    allocation = add_constraints(model, data, variables)
    _keep_partly_bound_completed(model, data, variables, hint)
    tiers = build_tiers(model, data, variables, allocation)
    order = [TIERS.index(name) for name in config.objective_order]
    stages = plan_stages(tiers, order) if config.merge_tiers else _one_per_tier(tiers, order)
    stats["model_s"] = time.perf_counter() - started - stats["data_s"]
    stats["variables"] = len(model.proto.variables)
    stats["constraints"] = len(model.proto.constraints)
    if clock.left() < MIN_SEARCH_S:
        return _unknown(data, (), stats, clock)
    if not stages:  # nothing varies: the empty placement (or any) is optimal
        values = _complete(model, {}, config, clock)[0] or [0] * len(model.proto.variables)
        status_name = "OPTIMAL" if not data.restricted else "FEASIBLE"
        return _result(data, variables, tiers, values, status_name, [], stats, None, clock)
    # 5. hint, completed by the solver from the decision variables
    partial = hint_values(data, variables, uses, pods_per_task, evictions, hint)
    values, completion = _complete(model, partial, config, clock)
    # With a fixed part the model's value of the residual hint is no score of greedy's own
    # placement: `place()` then scores both.
    hint_objective = None if values is None or fixed is not None else _objective(tiers, values)
    if values is None:
        log.warning("cpsat: the greedy hint did not complete to a model solution (%s); solving without it", completion)
    stats["hint_s"] = time.perf_counter() - started - stats["data_s"] - stats["model_s"]
    # 6. solve: the repack, then stage by stage
    reports: list[StageReport] = []
    searched_before = clock.searched_s  # the hint's completion is no search of the tiers
    if values is not None and _leaves_out(variables, values):
        share = clock.left() * REPACK_WEIGHT / (REPACK_WEIGHT + _weights(stages))
        values = _repack(model, variables, stages[0], values, config, clock, share, reports)
    proven = True
    throughput_bound: int | None = None
    for position, stage in enumerate(stages):
        remaining = clock.left()
        if remaining <= _start_seconds(clock, model) + 0.005:
            proven = False
            break
        clock.charged(_start_seconds(clock, model))
        model.minimize(stage.expression.expr())
        _set_hint(model, values, partial)
        # The share of what is left once the stage's objective and hint are set (tens of ms
        # on a large model), so the stage's limit does not count that time twice.
        share = max(0.001, clock.left()) * _share(stages, position)
        search = _search_stage(model, stage, values, partial, config, clock, share)
        solver, status = search.solver, search.status
        name = solver.status_name(status)
        if status == cp_model.MODEL_INVALID:
            raise ModelInvalid(f"CP-SAT rejected the model: {model.validate()}")
        if status == cp_model.INFEASIBLE:
            if values is None or not satisfied_by(model, values):
                raise ModelInvalid("CP-SAT found the model infeasible" + ("" if values is None else ", and the incumbent breaks it"))
            # A solution in hand satisfies every constraint so far: the claim is CP-SAT's own fault.
            log.warning("cpsat: CP-SAT answered INFEASIBLE on the stage of tiers %s, which the incumbent satisfies; "
                        "the stage keeps the incumbent", [TIERS[t] for t in stage.tiers])
        stage_tiers = tuple(TIERS[t] for t in stage.tiers)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            assert search.solution is not None
            values = _kept(tiers, order, position, stages, values, search.solution)
            # Exact, from the solution: the objective value is a double, a few units off above 2^53.
            value = stage.expression.value(values)
            reports.append(
                StageReport(stage_tiers, name, search.wall_s, value, solver.best_objective_bound, tuple(search.incumbents.found))
            )
            proven = proven and status == cp_model.OPTIMAL
            if 1 in stage.tiers:  # throughput
                throughput_bound = _throughput_bound(stage, tiers, values, solver, status == cp_model.OPTIMAL)
            model.add(stage.expression.expr() <= value)
        else:
            reports.append(StageReport(stage_tiers, name, search.wall_s, None, None))
            proven = False
            if values is not None:
                # Keep what the incumbent has on these tiers: later stages may not trade it.
                model.add(stage.expression.expr() <= stage.expression.value(values))
    if values is None:
        return _unknown(data, reports, stats, clock)
    if proven and hint_objective != _objective(tiers, values):
        searched = clock.searched_s - searched_before
        values = _break_ties(model, data, variables, values, config, clock, max(TIE_BREAK_MIN_S, searched), reports)
    status_name = "OPTIMAL" if proven and not data.restricted else "FEASIBLE"
    result = _result(data, variables, tiers, values, status_name, reports, stats, throughput_bound, clock)
    return dataclasses.replace(result, hint_objective=hint_objective)


def _unknown(data: ModelData, reports: Sequence[StageReport], stats: dict[str, float], clock: SearchClock) -> CpsatResult:
    return CpsatResult(
        None, "UNKNOWN", None, None, None, tuple(reports), tuple(data.restricted), stats, wall_clock_cut=clock.cut
    )


def _keep_partly_bound_completed(model: cp_model.CpModel, data: ModelData, variables: Variables, hint: Placement) -> None:
    """A partly bound gang (`solver.rules.gang.is_partly_bound`) the greedy hint completes stays
    completed: greedy serves such gangs before their priority peers, and the hint proves the
    completion fits. Without this the fairness tier, first, would trade it for a new gang of
    the same queue that allocates more of the room — and leave the half gang holding GPUs idle."""
    completed = {data.snapshot.pod_by_key[bind.pod].pod_group for bind in hint.binds if bind.pod in data.snapshot.pod_by_key}
    for unit, unit_vars in zip(data.units, variables.units):
        if unit.group.key in completed and is_partly_bound(data.snapshot, unit.group):
            model.add(unit_vars.admitted == 1)


def _kept(
    tiers: Tiers, order: list[int], position: int, stages: list[Stage], incumbent: list[int] | None, found: list[int]
) -> list[int]:
    """The solution a stage hands on: what it found, unless the incumbent it was hinted with
    (the completed greedy hint, or an earlier stage's answer) is as good on this stage and
    better on the tiers still to come.

    CP-SAT returns *a* solution at the stage's optimum, not the hinted one: on a 10,000-node
    snapshot the fairness stage proved its optimum with a solution of less throughput than
    the greedy hint's, and when the throughput stage then ran out of time the answer was
    worse than greedy. Both satisfy everything added so far, so keeping the better one is free."""
    if incumbent is None:
        return found
    stage = stages[position]
    later = [t for t in order if not any(t in s.tiers for s in stages[: position + 1])]

    def ranked(values: list[int]) -> tuple[int, ...]:
        return (stage.expression.value(values), *(tiers.minimised[t].value(values) for t in later))

    return incumbent if ranked(incumbent) <= ranked(found) else found


def _result(data, variables, tiers, values, status, reports, stats, throughput_bound, clock) -> CpsatResult:  # noqa: ANN001
    started = time.perf_counter()

    def value_of(var: cp_model.IntVar) -> int:
        return int(values[var.index])

    placement = merged(extract_placement(data, variables, value_of), data.fixed)
    objective = _objective(tiers, values)
    if status != "OPTIMAL":  # a restricted or unproven model may leave shares on fresh devices
        packed = pack_shares(data.snapshot, placement, data.ctx)
        if packed is not placement:
            placement, objective = packed, score(data.snapshot, packed, context=data.ctx)
    stats["extract_s"] = time.perf_counter() - started
    gap = None
    if throughput_bound is not None:
        gap = max(0.0, (throughput_bound - objective.throughput) / max(1, abs(throughput_bound)))
    return CpsatResult(
        placement=placement,
        status=status,
        objective=objective,
        throughput_bound=throughput_bound,
        gap=gap,
        stages=tuple(reports),
        restricted=tuple(data.restricted),
        statistics=stats,
        wall_clock_cut=clock.cut,
    )


def _break_ties(model, data, variables, values, config, clock, seconds, reports) -> list[int]:  # noqa: ANN001
    """Among the placements as good as `values` on every tier (the stages' bounds hold them
    there), the one `first_come` prefers, stage by stage — when the search left the greedy
    hint's answer behind. Two workers find optima in no fixed order: without this, jobs
    tied on every tier (across queues, or of different shapes in one queue) started one way
    or the other from run to run. When the hint is optimal it stays, as greedy's answer, so
    the engines agree. Stops at a stage not proven optimal or after `seconds` of the clock (the
    caller's budget: as long as the tiers' search took, at least `TIE_BREAK_MIN_S`, so a proven
    answer does not wait for the whole time limit)."""
    kept = clock.left() - min(seconds, clock.left())  # what the tie-break leaves of the clock
    for expression in first_come(data, variables):
        remaining = clock.left() - kept - _start_seconds(clock, model)
        if remaining < MIN_SEARCH_S:
            break
        clock.charged(_start_seconds(clock, model))
        model.minimize(expression.expr())
        _set_hint(model, values, {})
        solver = _solver(config, clock, remaining, presolve=_presolve(config, model, remaining))
        status = solver.solve(model)
        clock.charge(solver)
        reports.append(StageReport(("first-come",), solver.status_name(status), solver.wall_time, None, None))
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        values = list(solver.response_proto.solution)
        if status != cp_model.OPTIMAL:
            break
        model.add(expression.expr() <= expression.value(values))
    return values


def build_size(data: ModelData) -> BuildSize:
    """What `data` makes the engine build, by kind (variables counted before they exist)."""
    live = [g for g in data.node_groups if len(g.options) > 1]
    kinds = {k for g in live for k, _ in g.kinds}
    unit_variables = 3 * len(data.units) + 3 * len(kinds) + len({data.kinds[k].owner for k in kinds})
    unit_variables += sum(len(task_atoms(u, t)) for u in data.units for t in u.tasks)  # pods per (task, atom)
    unit_variables += sum(len(sub.domains) + 2 for u in data.units for sub in u.sub_groups)
    return BuildSize(
        patterns=sum(len(p.patterns) for p in data.pattern_sets.values())
        + sum(len(patterns) for patterns in data.topology_sets.values()),
        options=sum(len(g.options) for g in live),
        unit_variables=unit_variables,
        nodes=data.problem.node_count,
    )


def build_seconds(data: ModelData) -> float:
    """Expected Python time of building the model of `data` and the hint's values (`BUILD_COST`)."""
    return BUILD_COST.seconds(build_size(data))


def _objective(tiers: Tiers, values: list[int]) -> ObjectiveVector:
    return ObjectiveVector(*(tiers.signed(t, lin.value(values)) for t, lin in enumerate(tiers.minimised)))


def _one_per_tier(tiers: Tiers, order: list[int]) -> list[Stage]:
    stages = []
    for tier in order:
        lin = tiers.minimised[tier]
        low, high = lin.bounds()
        if high > low:
            stages.append(Stage(tiers=[tier], weights=[1], expression=lin))
    return stages


def _share(stages: list[Stage], position: int) -> float:
    """Fraction of the time left for this stage: the fairness and throughput stages weigh
    double, since they decide what runs; later tiers only choose among equals."""
    return _weight(stages[position]) / _weights(stages[position:])


def _weight(stage: Stage) -> float:
    return 2.0 if (0 in stage.tiers or 1 in stage.tiers) else 1.0


def _weights(stages: list[Stage]) -> float:
    return sum(_weight(stage) for stage in stages)


def _leaves_out(variables: Variables, values: list[int]) -> bool:
    """Does the solution `values` leave some PodGroup that may bind unadmitted?"""
    return any(not values[unit.admitted.index] for unit in variables.units)


def _repack(
    model: cp_model.CpModel,
    variables: Variables,
    stage: Stage,
    values: list[int],
    config: CpsatConfig,
    clock: SearchClock,
    seconds: float,
    reports: list[StageReport],
) -> list[int]:
    """The first stage's objective over a copy of the model in which every PodGroup that
    `values` admits stays admitted with at least as many pods: only where pods go, whom
    they evict and which of the PodGroups left out join is decided. A solution of the
    copy is one of the model; the stages after start from it when it is better on the
    first stage than `values` (the hint to it), else from `values`.

    Why: the greedy hint is mostly right about what runs and wrong about where. A gang it
    left out typically needs pods it placed moved elsewhere — several counts changed at
    once, which the full model's search finds slowly while it may also re-decide every
    admission. Holding the admissions, the same search finds such moves at once
    (measured in docs/results.md, the `tight` bench family)."""
    repack = model.clone()  # same variable indices: the model's expressions and values apply to it
    for unit in variables.units:
        if values[unit.admitted.index]:
            repack.add(repack.get_int_var_from_proto_index(unit.admitted.index) == 1)
            for pods in unit.pods.values():
                repack.add(repack.get_int_var_from_proto_index(pods.index) >= values[pods.index])
    start = _start_seconds(clock, repack)
    if seconds <= start + 0.005:
        return values
    clock.charged(start)
    seconds -= start
    repack.minimize(stage.expression.expr())
    _set_hint(repack, values, {})
    solver = _solver(config, clock, seconds, presolve=_presolve(config, repack, seconds))
    incumbents = _Incumbents()
    status = solver.solve(repack, incumbents)
    clock.charge(solver)
    if status == cp_model.MODEL_INVALID:
        raise ModelInvalid(f"CP-SAT rejected the repack model: {repack.validate()}")
    found = list(solver.response_proto.solution) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    value = None if found is None else stage.expression.value(found)
    reports.append(StageReport(("repack",), solver.status_name(status), solver.wall_time, value, None, tuple(incumbents.found)))
    before = stage.expression.value(values)
    return found if found is not None and value is not None and value < before else values


def _presolve(config: CpsatConfig, model: cp_model.CpModel, seconds: float) -> bool:
    """Presolve a solve of `seconds`? As configured, else when the stage lasts at least
    `PRESOLVE_MIN_STAGE_S` and presolve's expected cost is at most `PRESOLVE_SHARE` of it.
    Example: 3,400 variables → ~0.68 s expected: on for a stage of 1.4 s or more, off for
    the ~0.12 s stages of a 1 s call at 1,000 nodes; 300 variables: on from 1 s."""
    if config.presolve is not None:
        return config.presolve
    if seconds < PRESOLVE_MIN_STAGE_S:
        return False
    return len(model.proto.variables) * PRESOLVE_SECONDS_PER_VARIABLE <= PRESOLVE_SHARE * seconds


def _start_seconds(clock: SearchClock, model: cp_model.CpModel) -> float:
    """The start-up a solve of `model` is charged (`SOLVE_START_SECONDS_PER_VARIABLE`); none
    by the wall clock, whose limits already hold it."""
    return SOLVE_START_SECONDS_PER_VARIABLE * len(model.proto.variables) if clock.deterministic else 0.0


def _solver(config: CpsatConfig, clock: SearchClock, seconds: float, *, presolve: bool = True) -> cp_model.CpSolver:
    """A solver for a search of `seconds` on `clock`, with a fixed seed. Several workers on
    a deterministic clock interleave their subsolvers in fixed batches (`interleave_search`):
    otherwise they share solutions as they come, and the answer depends on which thread ran
    first."""
    solver = cp_model.CpSolver()
    solver.parameters.cp_model_presolve = presolve
    clock.limit(solver, seconds)
    solver.parameters.num_workers = config.workers
    if clock.deterministic and config.workers > 1:
        solver.parameters.interleave_search = True
    solver.parameters.relative_gap_limit = config.relative_gap_limit
    solver.parameters.log_search_progress = config.log_search
    solver.parameters.random_seed = 0
    return solver


def _set_hint(model: cp_model.CpModel, values: list[int] | None, partial: dict[cp_model.IntVar, int]) -> None:
    model.clear_hints()
    hint = model.proto.solution_hint
    if values is not None:
        hint.vars.extend(range(len(values)))
        hint.values.extend(values)
    else:
        for var, value in partial.items():
            hint.vars.append(var.index)
            hint.values.append(value)


def _complete(
    model: cp_model.CpModel, partial: dict[cp_model.IntVar, int], config: CpsatConfig, clock: SearchClock
) -> tuple[list[int] | None, str]:
    """A full solution extending the decision values `partial` (None if they do not fit or
    time ran out), and the completion's status name. Without presolve: with the decisions
    fixed, what is left is propagation, and presolving the whole model first cost this
    solve most of its time (docs/results.md, "A second bench family")."""
    start = _start_seconds(clock, model)
    remaining = clock.left() - start
    if remaining <= 0.005:
        return None, "no time"
    clock.charged(start)
    model.clear_objective()
    _set_hint(model, None, partial)
    solver = _solver(config, clock, min(remaining, max(0.2, remaining * 0.3)), presolve=False)
    solver.parameters.fix_variables_to_their_hinted_value = True
    status = solver.solve(model)
    clock.charge(solver)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return list(solver.response_proto.solution), solver.status_name(status)
    if status == cp_model.MODEL_INVALID:
        raise ModelInvalid(f"CP-SAT rejected the model: {model.validate()}")
    return None, solver.status_name(status)


def satisfied_by(model: cp_model.CpModel, values: list[int]) -> bool:
    """Does `values` (one per variable) satisfy `model`? CP-SAT with every variable fixed to
    it and no presolve: propagation alone, no search. What an INFEASIBLE answer is checked
    against before the engine calls its own model a bug."""
    check = model.clone()
    check.clear_objective()
    _set_hint(check, values, {})
    solver = cp_model.CpSolver()
    solver.parameters.cp_model_presolve = False
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = SATISFIED_BY_MAX_S
    return solver.solve(check) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _throughput_bound(stage: Stage, tiers: Tiers, values: list[int], solver: cp_model.CpSolver, optimal: bool) -> int:
    """An upper bound on throughput over placements at least as good on the tiers before it.

    Stage expression E = Σ w_k · tier_k (throughput enters negated) ≥ B for every solution
    of this stage; for one as good on the earlier tiers of the stage, each earlier tier is
    ≤ its value here and each later one ≤ its maximum, so
    throughput ≤ (Σ_before w·value + Σ_after w·max − B) / w_throughput."""
    throughput = -tiers.minimised[1].value(values)
    if optimal and len(stage.tiers) == 1:
        return throughput
    total = 0.0
    weight_t = 1
    seen = False
    for tier, weight in zip(stage.tiers, stage.weights):
        if tier == 1:
            weight_t, seen = weight, True
            continue
        lin = tiers.minimised[tier]
        total += weight * (lin.bounds()[1] if seen else lin.value(values))
    bound = int((total - solver.best_objective_bound) // weight_t)
    return max(bound, throughput)
