"""The hard rules of DESIGN.md, one module each, listed in `RULES` in the order they run.

A rule module has `NAME` (the string stamped on its violations and reasons), a docstring
stating the rule with a worked example, plain exported predicates engines reuse
(`capacity.fits`, `eligibility.eligible`, `gang.gang_requirement`, …) and
`check(snapshot, after) -> list[Violation]`, the rule written plainly over the pydantic
`Snapshot` and the state after a placement (`solver.after.After`).

A rule that limits a countable quantity per node (the pod count, host ports, offline pods'
oversubscribed room) also has `columns(snapshot) -> tuple[Column, ...]` (`solver.columns`):
`declared_columns` asks every rule once and `solver.problem` builds the tables from the
answers, so every engine enforces the rule with no engine edit. Columns that stand in for
a resource the snapshot names (`Column.moves`: offline pods ask `kubernetes.io/batch-cpu`
instead of `cpu`) are applied to the snapshot once by `counted`, which every engine, the
LP bound and the checker read. A rule that keeps tasks off
nodes for what it knows of them this snapshot has `node_filter(snapshot) -> NodeFilter |
None` likewise (`declared_node_filters`), folded into the eligibility classes.

`RULES` is an explicit tuple, as kube-scheduler's `plugins/registry.go`, not filled by
import side effects: a new rule is one file, one line here, one test file. The order is
the checker's reporting order: well-formedness first (`binding`), then the rules a
single pod breaks, then whole-group and whole-queue rules, then preemption.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from models.snapshot import Node, NodeName, Pod, PodGroup, Snapshot
from solver.after import After
from solver.columns import Column, NodeFilter
from solver.memo import memoized
from solver.rules import (
    binding,
    capacity,
    colocation,
    dependency,
    dra,
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

__all__ = ["Rule", "RULES", "counted", "declared_columns", "declared_node_filters"]


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
    dra,
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
    Names are unique: a rule declares each of its columns once, and no two rules share one.
    Computed once per snapshot."""
    return memoized(snapshot, ("declared_columns",), lambda: _declared_columns(snapshot))


def _declared_columns(snapshot: Snapshot) -> tuple[Column, ...]:
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


def counted(snapshot: Snapshot) -> Snapshot:
    """`snapshot` as the rules' columns count it: each column that stands in for a resource
    (`Column.moves`) applied — the nodes in its `offer` list its amount in `allocatable`
    (and the devices in its `device_room` it as `Gpu.lent_milli`), the pods in its `ask`
    and tasks in its `task_ask` ask it in their `requests` instead of the moved resource
    (an amount of 0 asks nothing). Every engine, the LP bound and the checker read this
    snapshot, so each counts alike. `snapshot` itself when no column moves anything;
    idempotent (a result maps to itself), computed once per snapshot.

    Example (rule `colocation`): an offline pod asking `{"cpu": 2000, "gpu": 500}` asks
    `{"gpu": 500, "kubernetes.io/batch-cpu": 2000}`; colocation node n1 lists
    `kubernetes.io/batch-cpu: 10400`, what online pods leave unused."""
    if memoized(snapshot, ("counted_result",), lambda: False):
        return snapshot
    if all(column.moves is None for column in declared_columns(snapshot)):
        return snapshot  # (never memoized: a snapshot must not hold itself)
    return memoized(snapshot, ("counted",), lambda: _counted(snapshot))


def _counted(snapshot: Snapshot) -> Snapshot:
    columns = declared_columns(snapshot)
    moving = [column for column in columns if column.moves is not None]
    offered = set().union(*(column.offer for column in moving if isinstance(column.offer, Mapping)))
    room: dict[NodeName, dict[int, int]] = {}  # per node, its devices' room (`Column.device_room`)
    for column in moving:
        for (name, index), amount in (column.device_room or {}).items():
            room.setdefault(name, {})[index] = amount
    asked = set().union(*(column.ask for column in moving if isinstance(column.ask, Mapping)))
    tasked = set().union(*(column.task_ask for column in moving if isinstance(column.task_ask, Mapping)))
    result = snapshot.replaced(
        nodes=[
            _counted_node(node, moving, room.get(node.name, {})) if node.name in offered or node.name in room else node
            for node in snapshot.nodes
        ],
        pods=[_counted_pod(pod, moving) if pod.key in asked else pod for pod in snapshot.pods],
        pod_groups=[
            _counted_group(group, moving, tasked) if any((group.key, task.name) in tasked for task in group.tasks) else group
            for group in snapshot.pod_groups
        ],
    )
    memoized(result, ("counted_result",), lambda: True)  # a marker: the result must not hold itself
    dra.keep_derived(snapshot, result)
    memoized(result, ("declared_columns",), lambda: columns)  # the same columns, not asked again
    return result


def _counted_node(node: Node, moving: list[Column], room: Mapping[int, int]) -> Node:
    """`node` with what the moving columns offer there, and `room` (per GPU index) as its
    devices' `lent_milli`."""
    allocatable = dict(node.allocatable)
    for column in moving:
        if isinstance(column.offer, Mapping) and node.name in column.offer:
            allocatable[column.name] = column.offer[node.name]
    if not room:
        return node.model_copy(update={"allocatable": allocatable})
    gpus = tuple(gpu.model_copy(update={"lent_milli": room[gpu.index]}) if gpu.index in room else gpu for gpu in node.gpus)
    return node.model_copy(update={"allocatable": allocatable, "gpus": gpus})


def _moved(requests: Mapping[str, int], moving: list[Column], key: object, asks: str) -> dict[str, int]:
    result = dict(requests)
    for column in moving:
        ask = getattr(column, asks)
        if isinstance(ask, Mapping) and key in ask:
            result.pop(column.moves, None)  # type: ignore[arg-type]
            if ask[key]:
                result[column.name] = ask[key]
            else:
                result.pop(column.name, None)
    return result


def _counted_pod(pod: Pod, moving: list[Column]) -> Pod:
    return pod.model_copy(update={"requests": _moved(pod.requests, moving, pod.key, "ask")})


def _counted_group(group: PodGroup, moving: list[Column], tasked: set) -> PodGroup:
    tasks = tuple(
        task.model_copy(update={"requests": _moved(task.requests, moving, (group.key, task.name), "task_ask")})
        if (group.key, task.name) in tasked
        else task
        for task in group.tasks
    )
    return group.model_copy(update={"tasks": tasks})
