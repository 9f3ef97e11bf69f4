"""The hard rules of DESIGN.md, one module each, listed in `RULES` in the order they run.

A rule module has `NAME` (the string stamped on its violations and reasons), a docstring
stating the rule with a worked example, plain exported predicates engines reuse
(`capacity.fits`, `eligibility.eligible`, `gang.gang_requirement`, …) and
`check(snapshot, after) -> list[Violation]`, the rule written plainly over the pydantic
`Snapshot` and the state after a placement (`solver.after.After`).

A rule that limits a countable quantity per node (the pod count, host ports, offline pods'
oversubscribed room) also has `columns(snapshot) -> tuple[Column, ...]` (`solver.columns`):
`declared_columns` asks every rule once and `solver.problem` builds the tables from the
answers, so every engine enforces the rule with no engine edit. A rule that keeps tasks off
nodes for what it knows of them this snapshot has `node_filter(snapshot) -> NodeFilter |
None` likewise (`declared_node_filters`), folded into the eligibility classes.

`RULES` is an explicit tuple, as kube-scheduler's `plugins/registry.go`, not filled by
import side effects: a new rule is one file, one line here, one test file. The order is
the checker's reporting order: well-formedness first (`binding`), then the rules a
single pod breaks, then whole-group and whole-queue rules, then preemption.
"""

from __future__ import annotations

from typing import Protocol

from models.snapshot import Snapshot
from solver.after import After
from solver.columns import Column, NodeFilter
from solver.rules import (
    binding,
    capacity,
    colocation,
    dependency,
    eligibility,
    gang,
    gated,
    node_affinity,
    nodeports,
    numa,
    pod_affinity,
    preemption,
    quota,
    reservation,
    topology,
    topology_spread,
    usage,
)
from solver.violation import Violation

__all__ = ["Rule", "RULES", "declared_columns", "declared_node_filters"]


class Rule(Protocol):
    """What the checker needs of a rule module."""

    NAME: str

    def check(self, snapshot: Snapshot, after: After, /) -> list[Violation]: ...


RULES: tuple[Rule, ...] = (
    binding,
    gated,
    capacity,
    eligibility,
    usage,
    colocation,
    reservation,
    node_affinity,
    nodeports,
    pod_affinity,
    topology_spread,
    gang,
    quota,
    topology,
    numa,
    dependency,
    preemption,
)


def declared_columns(snapshot: Snapshot) -> tuple[Column, ...]:
    """Every column the rules declare for `snapshot`, in `RULES` order (module docstring).
    Names are unique: a rule declares each of its columns once, and no two rules share one."""
    columns = tuple(column for rule in RULES if hasattr(rule, "columns") for column in rule.columns(snapshot))
    names = [column.name for column in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"rules declare a column twice: {sorted(n for n in set(names) if names.count(n) > 1)}")
    return columns


def declared_node_filters(snapshot: Snapshot) -> tuple[NodeFilter, ...]:
    """Every node filter the rules declare for `snapshot`, in `RULES` order (module docstring)."""
    return tuple(
        node_filter
        for rule in RULES
        if hasattr(rule, "node_filter") and (node_filter := rule.node_filter(snapshot)) is not None
    )
