"""What the CP-SAT engine's searches are timed by: deterministic time by default, the wall
clock on request, and the wall-clock safety net.

Why deterministic time: a search stopped by `max_time_in_seconds` stops wherever the time
slice the machine gave it ran out, so the same snapshot got different answers from run to
run — two sets of binds, a gang's reason saying "5 of min 20" one run and "6 of min 20"
the next. OR-Tools counts *deterministic time* instead: a weighted count of the solver's
operations, the same for the same model and parameters whatever the load. A search
limited by `max_deterministic_time`, with a fixed seed and one worker (or several in
`interleave_search`, which synchronises them in fixed batches), stops at the same point
every run. Every other decision of the engine that used to read the clock (each stage's
share, presolve on or off, whether there is time for the model, the tie-break's budget)
reads this clock's budget instead, which only the input moves.

The budget is `search_s` nominal seconds: what the search would get on an idle machine
(`solver.place` derives it from the time limit and the input alone), converted to
deterministic time at `DETERMINISTIC_TIME_PER_S`. Building the model is charged its
estimate (`charged`), never the seconds it took; a search is charged its deterministic
time.

The wall clock stays as a safety net only: every search also gets `max_time_in_seconds`
up to `deadline` (the caller's, a multiple of the time limit). When it fires, the answer
depends on the machine after all: `cut` records it and `place()` reports the decision as
not reproducible. With `search_s=None` the clock is the wall clock alone, as before
deterministic time (`SolveConfig.deterministic=False`): each search's limit is its share
of the time to `deadline`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

__all__ = ["SearchClock", "DETERMINISTIC_TIME_PER_S", "SEARCH_OVERSHOOT"]

DETERMINISTIC_TIME_PER_S = 0.5
"""OR-Tools' deterministic time per CPU second of one worker's search, on this engine's
models. CP-SAT aims its unit at about a second, but the ratio depends on the model: high on
the openb packing batches (FGD replay: the packing tier's fragment constants), low on the
synthetic bench's gang models, spread on small ones. Half a unit per second sits between
(about their geometric mean): an openb search gets less CPU time than a nominal second
buys, a bench search more (the ratios measured: docs/results.md, "Same input, same
answer")."""

SEARCH_OVERSHOOT = 0.2
"""How far past its `max_time_in_seconds` a wall-clock search may run, as a share of it: a
search given `s` seconds gets `s / (1 + SEARCH_OVERSHOOT)` as its limit, so it ends within
`s`. Why: CP-SAT checks its limit between steps, and on the packing models some steps run
long, so a search overshoots its limit by a share of it, which this margin covers. Without
it, a call's last stage took its whole share and then the overshoot, and `place()` returned
past its limit at p99 on the FGD protocol (both measured: docs/results.md, "CP-SAT past its
own limit")."""

_CUT_SHARE = 0.99
"""A search whose wall time reached this share of its wall-clock limit was stopped by it."""


@dataclass
class SearchClock:
    """The time one `solve_cpsat` call has left, in nominal seconds (module docstring)."""

    deadline: float
    """`time.perf_counter()` seconds: the wall-clock limit (the safety net when deterministic)."""
    search_s: float | None
    """The deterministic budget in nominal seconds; None: the wall clock alone."""
    spent_s: float = 0.0
    """Nominal seconds charged so far (deterministic only)."""
    searched_s: float = 0.0
    """Seconds the searches took: deterministic time over the rate, or wall time."""
    cut: bool = False
    """The wall-clock safety net stopped a deterministic search (or left it no time)."""

    @property
    def deterministic(self) -> bool:
        return self.search_s is not None

    def left(self) -> float:
        """Nominal seconds left: of the budget, or to the deadline."""
        if self.search_s is None:
            return self.deadline - time.perf_counter()
        if time.perf_counter() >= self.deadline:
            self.cut = True
            return 0.0
        return self.search_s - self.spent_s

    def charged(self, seconds: float) -> None:
        """Charge work done outside CP-SAT at its estimate (deterministic only: the wall
        clock charges what it took by itself)."""
        if self.search_s is not None:
            self.spent_s += seconds

    def limit(self, solver: cp_model.CpSolver, seconds: float) -> None:
        """Stop `solver` after `seconds` nominal seconds, or at the deadline."""
        wall_left = max(0.001, self.deadline - time.perf_counter())
        if self.search_s is None:
            solver.parameters.max_time_in_seconds = max(0.001, min(seconds, wall_left) / (1 + SEARCH_OVERSHOOT))
            return
        solver.parameters.max_deterministic_time = max(1e-4, seconds * DETERMINISTIC_TIME_PER_S)
        solver.parameters.max_time_in_seconds = wall_left

    def charge(self, solver: cp_model.CpSolver) -> float:
        """Charge the search `solver` just ran; return the nominal seconds it took."""
        if self.search_s is None:
            self.searched_s += solver.wall_time
            return solver.wall_time
        took = solver.response_proto.deterministic_time / DETERMINISTIC_TIME_PER_S
        self.spent_s += took
        self.searched_s += took
        if solver.wall_time >= _CUT_SHARE * solver.parameters.max_time_in_seconds:
            self.cut = True
        return took
