"""The engines behind one interface: the two searches `solver.place` runs, typed by role.

`place()` runs a heuristic search first (greedy: a checked-ready `Decision` with reasons)
and, for `cpsat` and `auto`, a model search warm-started with its placement (CP-SAT: a
`CpsatResult` with exact tiers, a status and what it restricted). `Engines` is the pair it
runs, and the one place a caller swaps either — a test injects an engine that fails or
returns a chosen placement instead of patching module attributes, an experiment could run
another model search under the same fallback, checker and better-of-two.

The protocols say only what `place()` relies on; the engines' own configuration
(`GreedyConfig`, `CpsatConfig`) is built from `SolveConfig` by `place()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from models.placement import Decision, Placement
from models.snapshot import Snapshot
from solver.cpsat import CpsatConfig, CpsatResult
from solver.greedy import GreedyConfig, solve_greedy
from solver.objective import ObjectiveContext
from solver.problem import Problem

__all__ = ["HeuristicSearch", "ModelSearch", "Engines", "DEFAULT_ENGINES"]


class HeuristicSearch(Protocol):
    """Places one cycle fast and alone: the answer of `greedy`, the hint and fallback of the rest."""

    def __call__(self, snapshot: Snapshot, *, config: GreedyConfig, problem: Problem) -> Decision: ...


class ModelSearch(Protocol):
    """Searches one cycle's model from `hint`, within `config.search_s` of deterministic
    time when it is set, and never past `deadline` (perf_counter seconds)."""

    def __call__(
        self,
        snapshot: Snapshot,
        *,
        problem: Problem,
        context: ObjectiveContext,
        config: CpsatConfig,
        deadline: float,
        hint: Placement | None = None,
    ) -> CpsatResult: ...


@dataclass(frozen=True)
class Engines:
    greedy: HeuristicSearch = solve_greedy
    cpsat: ModelSearch | None = None  # None: CP-SAT, `solver.cpsat.engine.solve_cpsat`

    def model_search(self) -> ModelSearch:
        """The model search. CP-SAT's module is imported here, on the first search and in the
        caller's process: not at start-up (OR-Tools, pandas and SciPy, slow to import, that a
        greedy-only run never needs: docs/results.md, "Import times"), and not in the forked
        child that runs the search, which would import it again on every call."""
        if self.cpsat is not None:
            return self.cpsat
        from solver.cpsat.engine import solve_cpsat

        return solve_cpsat


DEFAULT_ENGINES = Engines()
