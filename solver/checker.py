"""The independent placement checker: does a placement break a hard rule of DESIGN.md?

Input: a validated `Snapshot` and a `Placement` from any engine (greedy, CP-SAT, a
posted one). Output: every broken rule as a `Violation`, in the order of
`solver.rules.RULES`; the empty tuple means the placement is valid. The HTTP service and
the controller run it before they return or bind anything; the tests run it on
everything.

It is written plainly over the pydantic models — `solver.after.build_after` adds the
placement up once, each rule module's `check` reads that — and imports no engine and no
numpy, so an engine bug cannot hide in shared code. It judges only hard rules; the
objective (fairness, disruption, locality, usage, packing) is not its business.

The error tree of the checker:

    PlacementRejected      a placement breaks ≥ 1 hard rule; `.violations` lists them.
                           Do not bind it and do not retry the same placement: it is a bug
                           in the engine that produced it (or a bad posted placement) —
                           report it, or fall back to another engine's placement.

`check_placement` never raises for a bad placement (it returns the violations);
`require_valid` is for callers that must refuse to bind, and raises `PlacementRejected`.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.placement import Placement
from models.snapshot import Snapshot
from solver.after import build_after
from solver.rules import RULES, counted
from solver.violation import Violation

__all__ = ["Violation", "PlacementRejected", "check_placement", "require_valid"]


class PlacementRejected(Exception):
    """A placement breaks hard rules; `violations` says which, `str()` lists them one a line."""

    def __init__(self, violations: Sequence[Violation]):
        self.violations: tuple[Violation, ...] = tuple(violations)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        lines = [f"placement breaks {len(self.violations)} hard rule(s):"]
        lines += [f"  {violation}" for violation in self.violations]
        return "\n".join(lines)


def check_placement(snapshot: Snapshot, placement: Placement) -> tuple[Violation, ...]:
    """Every hard-rule violation of `placement` on `snapshot`, rule by rule; () when valid.
    Judged on the snapshot as the rules' columns count it (`solver.rules.counted`),
    as every engine sees it."""
    snapshot = counted(snapshot)
    after = build_after(snapshot, placement)
    violations: list[Violation] = []
    for rule in RULES:
        violations.extend(rule.check(snapshot, after))
    return tuple(violations)


def require_valid(snapshot: Snapshot, placement: Placement) -> None:
    """Raise `PlacementRejected` unless `placement` breaks no hard rule."""
    violations = check_placement(snapshot, placement)
    if violations:
        raise PlacementRejected(violations)
