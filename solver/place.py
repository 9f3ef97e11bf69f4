"""`place()`: the one call the CLI, the HTTP service, the controller and the experiments make.

Input: a validated `Snapshot` and a `SolveConfig`. Output: a `Decision` whose placement
has passed the independent checker — a placement that breaks a hard rule is never
returned.

Engines:
  - `greedy`: the greedy engine alone (status GREEDY);
  - `cpsat`: CP-SAT warm-started with the greedy placement (OPTIMAL / FEASIBLE); if it
    finds nothing in time, the greedy placement labelled FALLBACK; a model CP-SAT rejects
    raises `ModelInvalid`, a placement the checker rejects raises `PlacementRejected` —
    both are engine bugs, to be seen rather than bound;
  - `auto` (the default): as `cpsat`, but any CP-SAT failure — an exception, a rejected
    placement (its violations are logged) — falls back to the greedy placement (FALLBACK).
Both CP-SAT engines return the better of CP-SAT's and greedy's placements by
`solver.objective.score`, so the answer is never worse than greedy; greedy's wins are
labelled FALLBACK.

Time: `time_limit_s` bounds the whole call (greedy, model, solve, extraction, checks):
CP-SAT gets what is left after greedy minus a reserve for what follows it, so the call
returns within the limit plus a small overshoot (measured: < 10 %).

A CP-SAT `Decision` reports `objective` = the throughput tier of its placement (the
model's value, which equals `score`; a FALLBACK reports its `score` when time allows), `bound` = an upper bound
on throughput among placements at least as fair (tier 1) as the one returned — CP-SAT's,
or the LP relaxation's (`solver.bound`) when that is tighter (`lp_gap`) — and
`gap` = (bound − objective) / bound.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Literal

from models.placement import Decision, Placement
from models.snapshot import PodGroupKey, Snapshot
from solver.bound import lp_bound
from solver.checker import PlacementRejected, check_placement
from solver.cpsat import CpsatConfig, ModelInvalid, solve_cpsat
from solver.cpsat_data import DataLimits
from solver.greedy import solve_greedy
from solver.objective import ObjectiveContext, score
from solver.outcome import build_decision
from solver.problem import Problem, build_problem

__all__ = ["EngineName", "SolveConfig", "place", "ENGINES", "ModelInvalid"]

log = logging.getLogger(__name__)

EngineName = Literal["greedy", "cpsat", "auto"]
ENGINES: tuple[EngineName, ...] = ("auto", "cpsat", "greedy")


@dataclass(frozen=True)
class SolveConfig:
    """How to solve one cycle. Every CP-SAT knob is here, one per line."""

    engine: EngineName = "auto"
    time_limit_s: float = 5.0
    """Wall-clock budget of the whole `place()` call (greedy ignores it)."""
    workers: int = 2
    """CP-SAT search workers (`num_workers`)."""
    relative_gap_limit: float = 0.0
    """Stop a stage once its gap is below this (0: prove optimality or run out of time)."""
    merge_tiers: bool = True
    """Merge consecutive tiers into one weighted stage where the weights provably keep the
    lexicographic order; False solves one stage per tier."""
    max_patterns_per_profile: int = 200
    """Node patterns per node profile before the set is cut (a restriction: FEASIBLE)."""
    max_domains_per_gang: int = 8
    """Candidate domains (hard) or atoms (soft) per topology PodGroup, best fit first."""
    max_options_per_node: int = 16
    """Eviction options per node group before only "first j victims" options remain."""
    max_topology_patterns: int = 2000
    """Pattern variables over topology atoms before atoms hold tracked pods only."""
    max_victim_options: int = 3000
    """Eviction options in all before only the most useful node groups keep their victims."""
    lp_gap: bool | None = None
    """When CP-SAT has not proven optimality, also bound throughput by the LP relaxation
    (`solver.bound`, in-process HiGHS) and report the tighter bound; its time is reserved.
    None: when the LP's expected cost is at most a fifth of `time_limit_s`."""
    presolve: bool | None = None
    """CP-SAT presolve; None: on below `PRESOLVE_VARIABLES` variables (above, its fixpoint
    loop costs more than the whole budget on 2 cores — measured 1.3 s at 12,000)."""
    log_search: bool = False

    def cpsat(self) -> CpsatConfig:
        return CpsatConfig(
            workers=self.workers,
            relative_gap_limit=self.relative_gap_limit,
            merge_tiers=self.merge_tiers,
            presolve=self.presolve,
            limits=DataLimits(
                max_patterns_per_profile=self.max_patterns_per_profile,
                max_domains_per_gang=self.max_domains_per_gang,
                max_options_per_node=self.max_options_per_node,
                max_topology_patterns=self.max_topology_patterns,
                max_victim_options=self.max_victim_options,
            ),
            log_search=self.log_search,
        )


def _reserve_s(snapshot: Snapshot) -> float:
    """Time kept back after CP-SAT for extraction, the checker and the Decision: measured
    on this machine at ~0.04 s per 1,000 nodes + pods (0.9 s at 10,000 nodes / 11,000
    pods), with a margin for a machine shared with other work."""
    return 0.1 + 5e-5 * (len(snapshot.nodes) + len(snapshot.pods))


def _lp_seconds(snapshot: Snapshot) -> float:
    """The LP bound's cost, measured: 0.08 s at 1,000 nodes / 1,600 pods, 0.8 s at 10,000 / 11,000."""
    return 4e-5 * (len(snapshot.nodes) + len(snapshot.pods))


def place(snapshot: Snapshot, config: SolveConfig = SolveConfig()) -> Decision:
    """Solve one cycle with the configured engine and return a checked `Decision`."""
    started = time.perf_counter()
    deadline = started + config.time_limit_s
    problem = build_problem(snapshot)
    greedy = solve_greedy(snapshot, problem=problem)
    if config.engine == "greedy":
        return _checked_greedy(snapshot, greedy)
    greedy_reasons = {o.name: o.reasons for o in greedy.podgroups}
    lp_gap = config.lp_gap if config.lp_gap is not None else _lp_seconds(snapshot) <= 0.2 * config.time_limit_s

    def fallback(why: str) -> Decision:
        log.info("cpsat: returning the greedy placement (%s)", why)
        checked = _checked_greedy(snapshot, greedy)
        objective = bound = None
        if lp_gap and deadline - time.perf_counter() > _lp_seconds(snapshot) + _reserve_s(snapshot):
            objective = score(snapshot, checked.placement).throughput
            bound = _relaxed_bound(snapshot, problem, deadline)
        return _decision(snapshot, checked.placement, "greedy", "FALLBACK", started, greedy_reasons, objective, bound=bound)

    budget_end = deadline - _reserve_s(snapshot) - (_lp_seconds(snapshot) if lp_gap else 0.0)
    if budget_end - time.perf_counter() <= 0.01:
        return fallback("no time left after greedy")
    context = ObjectiveContext.of(snapshot)
    try:
        result = solve_cpsat(
            snapshot, problem=problem, context=context, config=config.cpsat(), deadline=budget_end, hint=greedy.placement
        )
    except Exception:
        if config.engine == "cpsat":
            raise
        log.exception("cpsat: the engine failed; falling back to greedy")
        return fallback("CP-SAT failed")
    if result.placement is None or result.objective is None:
        return fallback("CP-SAT found no solution in time")
    # Never worse than greedy. The model's tiers are exact for its placement, and its value
    # of the greedy placement is at least `score(greedy)`; without it, score both.
    mine, theirs = result.objective, result.hint_objective
    if theirs is None:
        mine, theirs = score(snapshot, result.placement, context=context), score(snapshot, greedy.placement, context=context)
    if mine < theirs:
        return fallback(f"greedy scores better ({theirs} > {mine})")
    violations = check_placement(snapshot, result.placement)
    if violations:
        if config.engine == "cpsat":
            raise PlacementRejected(violations)
        log.error("cpsat: placement rejected by the checker:\n%s", PlacementRejected(violations))
        return fallback("CP-SAT's placement broke a hard rule")
    bound = result.throughput_bound
    if lp_gap and result.status != "OPTIMAL":
        relaxed = _relaxed_bound(snapshot, problem, deadline)
        if relaxed is not None:
            bound = relaxed if bound is None else min(bound, relaxed)
    return _decision(
        snapshot, result.placement, "cpsat", result.status, started, greedy_reasons, result.objective.throughput, bound=bound
    )


def _relaxed_bound(snapshot: Snapshot, problem: Problem, deadline: float) -> int | None:
    try:
        return int(lp_bound(snapshot, problem=problem, backend="scipy", time_limit_s=max(0.05, deadline - time.perf_counter())))
    except RuntimeError:
        log.warning("place: the LP bound did not solve in time")
        return None


def _checked_greedy(snapshot: Snapshot, greedy: Decision) -> Decision:
    violations = check_placement(snapshot, greedy.placement)
    if violations:
        raise PlacementRejected(violations)
    return greedy


def _decision(
    snapshot: Snapshot,
    placement: Placement,
    engine: str,
    status: str,
    started: float,
    reasons: dict[PodGroupKey, tuple[str, ...]],
    objective: int | None,
    *,
    bound: int | None = None,
) -> Decision:
    gap = None
    if bound is not None and objective is not None:
        gap = max(0.0, (bound - objective) / max(1, abs(bound)))
    return build_decision(
        snapshot,
        placement,
        engine=engine,
        status=status,  # type: ignore[arg-type]
        solve_seconds=time.perf_counter() - started,
        reasons=reasons,
        objective=None if objective is None else float(objective),
        bound=None if bound is None else float(bound),
        gap=gap,
    )
