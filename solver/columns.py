"""Columns and node filters: what a rule declares so that every engine enforces it unread.

A `Column` is a countable quantity per node that a rule limits; a `NodeFilter` keeps some
tasks off some nodes for what the rule knows of the node at this snapshot (a node too hot
to take pods, a node held for an overdue PodGroup). Both become tables of the `Problem`
(`solver.problem`): columns rows of `free`, filters part of the eligibility classes.

Columns.

kube-scheduler's `NodeResourcesFit` and `NodePorts` are two plugins with two filters; in
batchplace both are one arithmetic — a node offers an amount, each pod asks some, what
runs there and what binds there must fit — so a rule that limits such a quantity declares
it as a `Column` and every engine, the LP bound, what-if and the explanations read it as
one more row of `Problem.free` (`solver.problem`). The rule keeps its own `check` for the
checker, written plainly over the snapshot.

A column declared here is used exactly like a resource the snapshot names (`cpu`,
`nvidia.com/gpu`, …); what differs is said by its fields: whether queues deal it (quota,
deserved shares, reclaim — a pod count or a host port is no one's share), whether it is a
packing dimension (greedy's best fit and the fragmentation score rank nodes by the
resources a pod is short of, never by a port), and how a node short of it is called in a
reason. Example: rule `nodeports` declares `hostPort 0.0.0.0:8080/TCP`, every node offers
1, each pod that binds port 8080/TCP on every address asks 1; two such pods never share a
node, in every engine, with no engine edit.

`offer` is what each node offers: one amount for every node, a mapping (nodes not in it
offer 0), or `None` when each node's `allocatable` states it (`pods`). `ask` is what each
pod asks, running or pending: one amount for every pod, a mapping by pod key (pods not
in it ask 0), or `None` when each pod's requests state it; `task_ask`, what each pending pod
of a task asks, likewise by task key.

A column may stand in for a resource the snapshot names (`moves`): the pods in its `ask`
and the tasks in its `task_ask` ask the column instead of that resource, the nodes in its
`offer` offer the column's amount, and everything else keeps what the snapshot states of
the column's name. Rule `colocation` declares `kubernetes.io/batch-cpu` so: an offline
pod's 2 cpu are asked as 2000 batch-cpu, which a colocation node offers as what online
pods leave unused (a node that lists batch-cpu itself keeps it). `device_room` is the
same per device: what each device offers the pods of the tasks in `device_takers` that ask
a fraction of one device (a GPU device lent to offline pods, `Gpu.lent_milli`); other pods
count against the device as always. `solver.rules.counted` applies every such column to the
snapshot once, and every engine, the bound and the checker read the result.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from models.snapshot import NodeName, PodGroup, PodGroupKey, PodKey, Task

__all__ = ["Column", "NodeFilter", "TaskKey"]

TaskKey = tuple[PodGroupKey, str]
"""A task of a PodGroup: (PodGroup key, task name)."""


@dataclass(frozen=True)
class Column:
    """One countable quantity per node, declared by the rule that limits it (module docstring)."""

    name: str  # its row name in `Problem.resource_names`; never a resource the snapshot names
    rule: str  # NAME of the rule that declares it
    offer: int | Mapping[NodeName, int] | None  # per node; None: the node's allocatable states it
    ask: int | Mapping[PodKey, int] | None  # per pod, running or pending; None: its requests state it
    task_ask: int | Mapping[TaskKey, int] | None  # per pending pod of a task; None: the task's requests state it
    shortage: str | None = None  # how a node short of it is counted in a reason; None: "insufficient <name>"
    dealt_to_queues: bool = False  # queues hold, cap and deserve it (quota, fairness, reclaim)
    packs: bool = False  # a packing dimension: best fit ranks nodes by what is left of it
    moves: str | None = None  # the snapshot resource it stands in for, for the pods, tasks and nodes it names
    device_room: Mapping[tuple[NodeName, int], int] | None = None  # per (node, GPU index): what the device offers
    device_takers: frozenset[TaskKey] = frozenset()  # tasks whose fractional pods may take `device_room`


@dataclass(frozen=True)
class NodeFilter:
    """Tasks kept off nodes by what a rule knows of each node this snapshot (module docstring).

    `node_part` is what the rule knows of each node it has something to say of (others:
    nothing, every task may go there); `task_part(group, task)` what it reads of a task;
    `allows(task, task_part, node_part)` whether a pod of the task may go to such a node.
    Nodes with equal parts and tasks with equal parts are judged once (the eligibility
    classes of `solver.problem`). Example: rule `usage` says `{"n3": "hot"}` and allows no
    task there; rule `reservation` says `{"n24": "llm/j7"}` and allows j7's tasks there and
    the tasks that backfill it."""

    rule: str
    node_part: Mapping[NodeName, Hashable]
    task_part: Callable[[PodGroup, Task], Hashable]
    allows: Callable[[Task, Hashable, Hashable], bool]
