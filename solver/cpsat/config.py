"""What a CP-SAT search is given and gives back (`CpsatConfig`, `CpsatResult`), apart from
the search itself (`solver.cpsat.engine`), so that importing them costs no OR-Tools, pandas
or SciPy: `solver.place` names them at import, and most of its calls never search."""

from __future__ import annotations

from dataclasses import dataclass, field

from models.placement import Placement
from solver.cpsat.units import DataLimits
from solver.objective import TIERS, ObjectiveVector

__all__ = ["CpsatConfig", "CpsatResult", "ModelInvalid", "StageReport"]


class ModelInvalid(Exception):
    """CP-SAT rejected the model, or found it infeasible: a bug in the engine, never the input."""


@dataclass(frozen=True)
class CpsatConfig:
    workers: int = 2
    search_s: float | None = None
    """The search's budget in nominal seconds, kept as deterministic time (`cpsat.clock`);
    None: until the caller's deadline by the wall clock."""
    relative_gap_limit: float = 0.0
    merge_tiers: bool = True
    objective_order: tuple[str, ...] = TIERS  # the tiers, most important first
    presolve: bool | None = None  # None: when the stage has time for it (`_presolve`)
    limits: DataLimits = DataLimits()
    log_search: bool = False


@dataclass(frozen=True)
class StageReport:
    tiers: tuple[str, ...]
    status: str
    seconds: float
    value: int | None
    bound: float | None
    incumbents: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class CpsatResult:
    placement: Placement | None
    status: str  # OPTIMAL, FEASIBLE or UNKNOWN
    objective: ObjectiveVector | None  # the model's tier values for `placement`
    throughput_bound: int | None
    gap: float | None
    stages: tuple[StageReport, ...]
    restricted: tuple[str, ...]
    statistics: dict[str, float] = field(default_factory=dict)
    hint_objective: ObjectiveVector | None = None
    """The model's tiers for the hint placement (its pods per node, best device choice):
    ≥ `score` of the hint, since tiers 1–3 agree and 4–5 take the best devices."""
    wall_clock_cut: bool = False
    """A deterministic search was stopped by the wall-clock safety net: this answer depends
    on the machine's speed (`cpsat.clock`)."""
