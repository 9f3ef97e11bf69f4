"""The `Problem`: one cycle's `Snapshot` as numpy arrays, built once, read by every engine.

kube-scheduler's `CycleState` ("write once, read many"), with typed fields instead of
string keys. Input: a validated `Snapshot`. Output: a frozen `Problem` whose arrays are
read-only; engines copy what they mutate (`greedy` copies `free` and the GPU tables).

Layout choices, and why:
- Node × resource tables are *resource-major*, `free[r]` is one contiguous row over all
  nodes, because the greedy engine's hot path is "which nodes have ≥ x of resource r",
  one row at a time. Example: cpu, memory, gpu on 3 nodes → `free.shape == (3, 3)`,
  `free[problem.resource_index["gpu"]]` the free milli-GPUs of each node.
- GPU devices are a padded `[N, Gmax]` table (`-1` where a node has fewer devices); a
  device's free milli is 1000 minus `Gpu.used_milli` minus the running pods that list it.
  A device lent to offline pods (colocation, `Gpu.lent_milli`) has two: online pods' free
  milli and offline pods' lent room (`gpu_online_free_milli`, `gpu_lent_free_milli`); an
  engine that tells no pod class apart reads the smaller (`_lent_devices`).
- The node tables are incremental across snapshots: what a `Node` contributes (`_NodeRow`)
  is memoized on the node object (`solver.memo`), so a snapshot that reuses the nodes that
  did not change (the next cycle of a replay, a what-if variant) reads only its new nodes.
- Eligibility is computed per *class*: tasks with the same (node selector, required and
  preferred node affinity, tolerations) share a row, and nodes with the same (values of
  every label some selector or affinity term reads, name when some `matchFields` names it,
  taints, unschedulable) share a column, so `solver.rules.eligibility.eligible` runs
  once per (task class, node class) pair, not per (task, node). 1,000 tasks × 10,000 nodes
  with a handful of selectors is a few dozen predicate calls. The projection is exact:
  selectors and affinity terms read only those keys and names, all in the signature.
  `eligible_nodes(task_row)` gives one task's `[N]` mask; `eligible_by_class[S, N]` holds
  them all (rather than a `[T, N]` table, which would not fit at 100,000 PodGroups);
  `preference_missed_by_class[S, node class]` is the preferred node affinity weight
  missed (`solver.rules.node_affinity.preference_missed`), per pair likewise. A node's
  usage band (`usage_band_by_class`, `solver.usage_tier`) joins the node signature. So does
  what each node filter a rule declares knows of the node (`solver.columns.NodeFilter`,
  `solver.rules.declared_node_filters`), and what it reads of a task joins the task's:
  rule `usage` finds a node hot (then no task is eligible there); rule `reservation` holds a
  node for an overdue PodGroup and reads a task's PodGroup and activeDeadlineSeconds (a
  held node is eligible for its holder's tasks and for tasks that backfill it). Example:
  j7 holds n24 with 2,280 s until its domain drains → n24 is eligible for j7's tasks and
  for a task of deadline 1,800 s, not for one of 3,600 s nor one without a deadline.
- Columns a rule declares (`solver.columns`, `solver.rules.declared_columns`) are rows like
  any resource: the node offers, each pod and task asks, running pods take theirs off
  `free`. So node capacity — `free`, every engine's fit test, CP-SAT's patterns, what an
  eviction frees — counts them like any resource, and a new node-local rule needs no
  engine edit. `pods` is rule `capacity`'s (every pod asks `POD_SLOT`, the kubelet's
  count), each host port rule `nodeports`'s. Example: a node with `pods` 3 running 2 pods
  has `free[pods] == 1`. Per row, `column_rule` names the rule that limits it (`capacity`
  for the snapshot's own resources), `column_dealt` whether queues deal it, `column_packs`
  whether it is a packing dimension, `column_shortage` how a node short of it is counted.
- Queues: `queue_allocated` and `queue_deserved` come from `solver.shares` (subtree
  included), `queue_capability` uses `-1` for "not capped". A column no queue deals (the
  pod count, a host port) is held by a queue but never capped (`NO_CAP`), guaranteed
  nothing, and deserved `UNLIMITED`, so no queue rule — quota, the fairness order (one pod
  is 2^-60 of a share), reclaim's "above its deserved share" — is ever decided by it.

- PodGroups: `group_facts[k]` holds what every reader asks of PodGroup k's pods and gang,
  computed once: its running and pending pods per task, its gang requirement
  (`solver.rules.gang.gang_requirement`) and whether it can ever be met
  (`solver.rules.gang.can_be_met`). Example: min_member 4, one task with 1 running and 2
  pending pods → running {"worker": 1}, pending {"worker": (p1, p2)}, can_be_met False.
  This is where pending pods enter every engine (greedy's plans, CP-SAT's data, the bound),
  so a pod with scheduling gates (rule `gated`) is left out here and only here: it sits in
  `gated`, never in `pending`, and the gang is judged on the pods that may be placed. With
  p2 gated above → pending {"worker": (p1,)}, gated {"worker": (p2,)}.
  `group_has_pending[k]` says whether PodGroup k has a pod that is not running (pending or
  gated). Most PodGroups of a busy cluster have none: engines place pods of the others
  only, and the facts of one whose every pod runs come from the running pods counted per
  task row for all PodGroups at once, not from its pods one by one (every default path
  reads them all: greedy for its reasons, the LP bound for what may keep running).

Not promised: anything about pods' placement — `Problem` describes, engines decide. Running
pods that request GPUs but list no device indices take node-level GPU capacity only.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import NamedTuple

import numpy as np

from models.snapshot import (
    CPU,
    GPU,
    GPU_MILLI_PER_DEVICE,
    MEMORY,
    PODS,
    LENT_GPU,
    Node,
    Pod,
    NodeName,
    PodGroupKey,
    PodKey,
    QueueName,
    Snapshot,
    Task,
)
from solver.memo import memoized_each
from solver.columns import Column
from solver.rules import capacity, counted, declared_columns, declared_node_filters, node_affinity
from solver.rules.eligibility import eligible
from solver.rules.gang import GangRequirement, can_be_met, gang_requirement
from solver.rules.gated import is_gated
from solver.shares import deserved_shares
from solver.usage_tier import usage_bands

__all__ = ["Problem", "GroupFacts", "build_problem", "UNLIMITED", "NO_CAP"]

UNLIMITED = np.int64(1) << np.int64(60)
"""Free amount of a NUMA cell whose capacity the snapshot does not state (never binding)."""
NO_CAP = -1
"""`queue_capability` value for a resource the queue does not cap."""

TaskKey = tuple[PodGroupKey, str]


def _ints(values: list[int]) -> np.ndarray:
    """An index or amount array; an empty list must stay integer to index with."""
    return np.array(values, dtype=np.int64)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class GroupFacts:
    """One PodGroup's pods and gang at the snapshot, for the engines, the bound and the
    decision to read rather than recount. The mappings are shared: do not mutate them."""

    requirement: GangRequirement  # `gang_requirement`'s
    running: Mapping[str, int]  # every task of the PodGroup → its pods running at the snapshot
    pending: Mapping[str, tuple[int, ...]]  # every task → its pending pod indices without gates, snapshot order
    running_pods: tuple[int, ...]  # pod indices running at the snapshot, snapshot order
    can_be_met: bool  # `can_be_met`: enough pods to ever meet the requirement, gated pods left out
    gated: Mapping[str, tuple[int, ...]]  # tasks with gated pending pods (`solver.rules.gated`) → their indices
    met_once_ungated: bool  # `can_be_met` were the gates lifted: False when more than the gates keep it short

    @property
    def pending_count(self) -> dict[str, int]:
        """Every task → its pending pods."""
        return {task: len(pods) for task, pods in self.pending.items()}


@dataclass(frozen=True, eq=False)
class Problem:
    """Arrays of one cycle. Indices: r resource, n node, g GPU slot, c NUMA-cell slot,
    t task row, s eligibility class, p pod, q queue, k PodGroup."""

    # ---- resources ----
    resource_names: tuple[str, ...]
    resource_index: Mapping[str, int]
    column_rule: tuple[str, ...]  # [R] the rule that limits each row: `capacity` for the snapshot's resources
    column_dealt: np.ndarray  # [R] bool: queues deal it (quota, shares, reclaim)
    column_packs: np.ndarray  # [R] bool: a packing dimension (greedy's best fit)
    column_shortage: tuple[str, ...]  # [R] how a node short of it is counted in a reason
    # ---- nodes ----
    node_names: tuple[NodeName, ...]
    node_index: Mapping[NodeName, int]
    allocatable: np.ndarray  # [R, N] int64
    free: np.ndarray  # [R, N] int64: allocatable − running pods − Gpu.used_milli
    schedulable: np.ndarray  # [N] bool
    gpu_index: np.ndarray  # [N, Gmax] device index, −1 padding
    gpu_free_milli: np.ndarray  # [N, Gmax] free milli per device, −1 padding; a lent device: min(online, lent)
    gpu_cell: np.ndarray  # [N, Gmax] slot (column of cell_ids) of the device's NUMA cell, −1 padding
    cell_ids: np.ndarray  # [N, Cmax] NUMA cell ids, −1 padding
    cell_cpu_free: np.ndarray  # [N, Cmax] milli free in the cell, UNLIMITED when unknown, −1 padding
    cell_memory_free: np.ndarray  # [N, Cmax] bytes, same conventions
    # ---- eligibility ----
    node_class: np.ndarray  # [N] node class id
    node_class_representative: tuple[int, ...]  # a node index per node class
    eligible_by_class: np.ndarray  # [S, N] bool
    preference_missed_by_class: np.ndarray  # [S, node class] int64: preferred node affinity weight missed
    usage_band_by_class: np.ndarray  # [node class] int64: the usage tier's band (`solver.usage_tier`)
    # ---- tasks (one row per task of every PodGroup) ----
    task_keys: tuple[TaskKey, ...]
    task_row: Mapping[TaskKey, int]
    task_requests: np.ndarray  # [T, R] int64, per pod
    task_eligibility_class: np.ndarray  # [T] → row of eligible_by_class
    task_single_numa: np.ndarray  # [T] bool: numa_policy single-numa-node
    # ---- pods ----
    pod_keys: tuple[PodKey, ...]
    pod_index: Mapping[PodKey, int]
    pod_requests: np.ndarray  # [P, R] int64
    pod_node: np.ndarray  # [P] node index, −1 when pending
    pod_group: np.ndarray  # [P] PodGroup index, −1 for pods of other schedulers
    pod_task_row: np.ndarray  # [P] task row, −1 for pods of other schedulers
    pod_running: np.ndarray  # [P] bool
    pod_gpu_slots: Mapping[int, tuple[int, ...]]  # running pod → GPU slots it holds (those that list devices)
    pod_cell_slot: Mapping[int, int]  # running pod → slot of the NUMA cell it holds (those that name one)
    # ---- PodGroups ----
    group_keys: tuple[PodGroupKey, ...]
    group_index: Mapping[PodGroupKey, int]
    group_queue: np.ndarray  # [K] queue index, −1 when the queue does not exist
    group_pods: tuple[np.ndarray, ...]  # [K] pod indices of each PodGroup, snapshot order
    group_facts: tuple[GroupFacts, ...]  # [K] running and pending pods per task, gang requirement
    group_has_pending: np.ndarray  # [K] bool: some pod of it is not running (pending or gated)
    # ---- topology ----
    tiers: tuple[int, ...]  # HyperNode tiers present, ascending
    domain_of: np.ndarray  # [len(tiers), N] HyperNode id within its tier, −1 when in none
    domain_names: tuple[tuple[str, ...], ...]  # per tier, id → HyperNode name
    # ---- queues ----
    queue_names: tuple[QueueName, ...]
    queue_index: Mapping[QueueName, int]
    queue_parent: np.ndarray  # [Q] parent index, −1 under root
    queue_ancestors: tuple[tuple[int, ...], ...]  # per queue: itself, then parents up to root
    queue_weight: np.ndarray  # [Q]
    queue_priority: np.ndarray  # [Q]
    queue_open: np.ndarray  # [Q] bool
    queue_reclaimable: np.ndarray  # [Q] bool
    queue_capability: np.ndarray  # [Q, R] int64, NO_CAP where uncapped
    queue_guarantee: np.ndarray  # [Q, R] int64
    queue_deserved: np.ndarray  # [Q, R] int64 (water-filled, subtree level)
    queue_allocated: np.ndarray  # [Q, R] int64 (running pods, subtree included)
    # ---- lent GPU devices (colocation; None when no device is lent) ----
    gpu_online_free_milli: np.ndarray | None = None  # [N, Gmax] free milli per device for online pods
    gpu_lent_free_milli: np.ndarray | None = None  # [N, Gmax] lent room left for offline pods, −1 where not lent
    task_takes_lent: np.ndarray | None = None  # [T] bool: a fractional pod of it may take lent room (`Column.device_takers`)

    @property
    def node_count(self) -> int:
        return len(self.node_names)

    @property
    def gpu_column(self) -> int:
        return self.resource_index[GPU]

    @property
    def cpu_column(self) -> int:
        return self.resource_index[CPU]

    @property
    def memory_column(self) -> int:
        return self.resource_index[MEMORY]

    @property
    def pods_column(self) -> int:
        return self.resource_index[PODS]

    @property
    def gpu_numa(self) -> np.ndarray:
        """`[N, Gmax]` NUMA cell id of each GPU device, −1 padding (derived from `gpu_cell`)."""
        rows = np.arange(self.node_count)[:, None]
        return np.where(self.gpu_cell >= 0, self.cell_ids[rows, np.maximum(self.gpu_cell, 0)], -1)

    def eligible_nodes(self, task_row: int) -> np.ndarray:
        """`[N]` bool: the nodes the pods of `task_row` may go to (rule 2)."""
        return self.eligible_by_class[self.task_eligibility_class[task_row]]

    def preference_missed(self, task_row: int) -> np.ndarray:
        """`[N]` int: the preferred node affinity weight the task's pods miss on each node."""
        return self.preference_missed_by_class[self.task_eligibility_class[task_row]][self.node_class]

    def usage_band(self) -> np.ndarray:
        """`[N]` int: each node's usage band (`solver.usage_tier`); all 0 when no usage is fresh."""
        return self.usage_band_by_class[self.node_class]

    def resources_dict(self, row: np.ndarray) -> dict[str, int]:
        """An `[R]` row as the snapshot writes a resource list: without zeros and without the
        columns no queue deals (`pods`, host ports), which no request or share names —
        `{"cpu": 2000, "gpu": 8000}`. So queue rows turned back into shares compare as the
        checker's do (`victim_refusal`)."""
        dealt = self.column_dealt
        return {name: int(row[i]) for i, name in enumerate(self.resource_names) if row[i] and dealt[i]}


@dataclass(frozen=True)
class _NodeTables:
    """`_nodes`' part of the `Problem` (same field names and meanings)."""

    node_names: tuple[NodeName, ...]
    node_index: Mapping[NodeName, int]
    allocatable: np.ndarray
    free: np.ndarray
    schedulable: np.ndarray
    gpu_index: np.ndarray
    gpu_free_milli: np.ndarray
    gpu_cell: np.ndarray
    cell_ids: np.ndarray
    cell_cpu_free: np.ndarray
    cell_memory_free: np.ndarray


@dataclass(frozen=True)
class _PodTables:
    """`_pods`' part of the `Problem`."""

    pod_keys: tuple[PodKey, ...]
    pod_index: Mapping[PodKey, int]
    pod_requests: np.ndarray
    pod_node: np.ndarray
    pod_group: np.ndarray
    pod_task_row: np.ndarray
    pod_running: np.ndarray
    pod_gpu_slots: Mapping[int, tuple[int, ...]]
    pod_cell_slot: Mapping[int, int]


@dataclass(frozen=True)
class _EligibilityTables:
    """`_eligibility`'s part of the `Problem`."""

    node_class: np.ndarray
    node_class_representative: tuple[int, ...]
    eligible_by_class: np.ndarray
    preference_missed_by_class: np.ndarray
    usage_band_by_class: np.ndarray
    task_requests: np.ndarray
    task_eligibility_class: np.ndarray
    task_single_numa: np.ndarray


@dataclass(frozen=True)
class _TopologyTables:
    """`_topology`'s part of the `Problem`."""

    tiers: tuple[int, ...]
    domain_of: np.ndarray
    domain_names: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class _QueueTables:
    """`_queues`' part of the `Problem`."""

    queue_names: tuple[QueueName, ...]
    queue_index: Mapping[QueueName, int]
    queue_parent: np.ndarray
    queue_ancestors: tuple[tuple[int, ...], ...]
    queue_weight: np.ndarray
    queue_priority: np.ndarray
    queue_open: np.ndarray
    queue_reclaimable: np.ndarray
    queue_capability: np.ndarray
    queue_guarantee: np.ndarray
    queue_deserved: np.ndarray
    queue_allocated: np.ndarray


def build_problem(snapshot: Snapshot) -> Problem:
    """Turn `snapshot` into arrays; see the module docstring for the layout. Built from the
    snapshot as the rules' columns count it (`solver.rules.counted`: offline pods ask
    `kubernetes.io/batch-cpu` and `-memory`, colocation nodes offer them), so every engine
    reads those rules in its capacity arithmetic; engines read that snapshot too."""
    snapshot = counted(snapshot)
    columns = declared_columns(snapshot)
    resource_names = _resource_names(snapshot, columns)
    resource_index = {name: i for i, name in enumerate(resource_names)}
    task_keys = tuple((group.key, task.name) for group in snapshot.pod_groups for task in group.tasks)
    task_row = {key: t for t, key in enumerate(task_keys)}
    group_keys = tuple(group.key for group in snapshot.pod_groups)
    group_index = {key: k for k, key in enumerate(group_keys)}
    nodes = _nodes(snapshot, resource_names, columns)
    pods = _pods(snapshot, resource_index, nodes, task_row, group_index, columns)
    online_free, lent_free = _lent_devices(snapshot, nodes)
    if lent_free is not None:
        nodes = dataclasses.replace(nodes, gpu_free_milli=np.where(lent_free >= 0, np.minimum(online_free, lent_free), online_free))
        online_free.setflags(write=False)
        lent_free.setflags(write=False)
    for array in (
        nodes.allocatable, nodes.free, nodes.schedulable, nodes.gpu_index, nodes.gpu_free_milli, nodes.gpu_cell,
        nodes.cell_ids, nodes.cell_cpu_free, nodes.cell_memory_free,
    ):
        array.setflags(write=False)
    eligibility = _eligibility(snapshot, resource_index, task_row, columns)
    rows = _column_rows(resource_names, columns)
    queues = _queues(snapshot, resource_index, pods, rows.column_dealt)
    topology = _topology(snapshot, nodes.node_index)
    owner = pods.pod_group
    grouped = np.flatnonzero(owner >= 0)
    by_group = grouped[np.argsort(owner[grouped], kind="stable")]
    bounds = np.searchsorted(owner[by_group], np.arange(len(group_keys) + 1))
    group_pods = tuple(_readonly(by_group[bounds[k] : bounds[k + 1]]) for k in range(len(group_keys)))
    group_queue = np.array([queues.queue_index.get(group.queue, -1) for group in snapshot.pod_groups], dtype=np.int64)
    has_pending = np.zeros(len(group_keys), dtype=bool)
    has_pending[owner[grouped[~pods.pod_running[grouped]]]] = True
    groups = _GroupTables(
        group_keys=group_keys,
        group_index=group_index,
        group_queue=_readonly(group_queue),
        group_pods=group_pods,
        group_facts=_all_group_facts(snapshot, group_pods, has_pending, pods, task_keys, task_row),
        group_has_pending=_readonly(has_pending),
    )
    lent = _LentTables(
        gpu_online_free_milli=online_free if lent_free is not None else None,
        gpu_lent_free_milli=lent_free,
        task_takes_lent=None if lent_free is None else _task_takes_lent(columns, task_keys),
    )
    return Problem(
        resource_names=resource_names,
        resource_index=resource_index,
        task_keys=task_keys,
        task_row=task_row,
        **_fields(rows), **_fields(nodes), **_fields(eligibility), **_fields(pods),
        **_fields(topology), **_fields(queues), **_fields(groups), **_fields(lent),
    )  # fmt: skip


def _fields(table: object) -> dict[str, object]:
    """A part's fields by name: each part's field names are the `Problem`'s (a name that is
    not one fails at construction), so the `Problem` is its parts laid side by side."""
    return {field.name: getattr(table, field.name) for field in dataclasses.fields(table)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class _ColumnRows:
    """`_column_rows`' part of the `Problem`."""

    column_rule: tuple[str, ...]
    column_dealt: np.ndarray
    column_packs: np.ndarray
    column_shortage: tuple[str, ...]


@dataclass(frozen=True)
class _GroupTables:
    """The PodGroups' part of the `Problem`."""

    group_keys: tuple[PodGroupKey, ...]
    group_index: Mapping[PodGroupKey, int]
    group_queue: np.ndarray
    group_pods: tuple[np.ndarray, ...]
    group_facts: tuple[GroupFacts, ...]
    group_has_pending: np.ndarray


@dataclass(frozen=True)
class _LentTables:
    """`_lent_devices`' part of the `Problem` (None when no device is lent)."""

    gpu_online_free_milli: np.ndarray | None
    gpu_lent_free_milli: np.ndarray | None
    task_takes_lent: np.ndarray | None


def _task_takes_lent(columns: tuple[Column, ...], task_keys: tuple[TaskKey, ...]) -> np.ndarray:
    """`[T]`: the tasks a column that offers device room names (`Column.device_takers`)."""
    takers = frozenset().union(*(column.device_takers for column in columns if column.device_room is not None))
    return _readonly(np.array([key in takers for key in task_keys], dtype=bool))


def _column_rows(resource_names: tuple[str, ...], columns: tuple[Column, ...]) -> _ColumnRows:
    """Per row: the rule that limits it and how (`Problem.column_rule` …). A resource the
    snapshot names is rule `capacity`'s, dealt to queues, a packing dimension."""
    declared = {column.name: column for column in columns}
    rows = [declared.get(name) for name in resource_names]
    return _ColumnRows(
        column_rule=tuple(capacity.NAME if column is None else column.rule for column in rows),
        column_dealt=_readonly(np.array([column is None or column.dealt_to_queues for column in rows], dtype=bool)),
        column_packs=_readonly(np.array([column is None or column.packs for column in rows], dtype=bool)),
        column_shortage=tuple(
            f"insufficient {name}" if column is None or column.shortage is None else column.shortage
            for name, column in zip(resource_names, rows)
        ),
    )


def _lent_devices(snapshot: Snapshot, nodes: _NodeTables) -> tuple[np.ndarray, np.ndarray | None]:
    """`(online free, lent free)` per GPU slot when some device is lent (`Gpu.lent_milli`),
    else `(gpu_free_milli, None)`.

    Online pods count against the online table, offline pods with fractional requests on
    a lent device against the lent one (their room `lent_milli` less the lent pods running
    there, whose request the counted snapshot asks as `LENT_GPU`). The `gpu_free_milli` an engine reads
    when it tells no pod class apart is the smaller of the two on a lent device: any pod it
    puts there then fits both. Example: device 2 lent with online pods requesting 600 and
    using 300, margin 100, a 400-milli offline pod running there → online free 1000 − 600 =
    400, lent free 1000 − 300 − 100 − 400 = 200, `gpu_free_milli` 200. A lent device whose
    offline pods already hold more than its room (online usage rose) has 0 lent free, never
    −1, which marks a device not lent."""
    online = nodes.gpu_free_milli
    lent_nodes = [(n, node) for n, node in enumerate(snapshot.nodes) if node.lends_gpus]
    if not lent_nodes:
        return online, None
    lent = np.full(online.shape, -1, dtype=np.int64)
    slot_of: dict[tuple[int, int], int] = {}
    for n, node in lent_nodes:
        for g, index in enumerate(nodes.gpu_index[n].tolist()):
            gpu = node.gpu_by_index.get(index) if index >= 0 else None
            if gpu is not None and gpu.lent_milli is not None:
                lent[n, g] = gpu.lent_milli
                slot_of[(n, index)] = g
    for pod in snapshot.pods:
        milli = pod.requests.get(LENT_GPU, 0)
        if milli and pod.phase == "running":
            n = nodes.node_index[pod.node]  # type: ignore[index]  # running pods have a node
            for index in pod.gpu_indices:
                if (n, index) in slot_of:
                    lent[n, slot_of[(n, index)]] -= milli
    is_lent = np.zeros(lent.shape, dtype=bool)
    for (n, _), g in slot_of.items():
        is_lent[n, g] = True
    return online, np.where(is_lent, np.maximum(lent, 0), lent)


def _all_group_facts(
    snapshot: Snapshot,
    group_pods: tuple[np.ndarray, ...],
    group_has_pending: np.ndarray,
    pods: _PodTables,
    task_keys: tuple[TaskKey, ...],
    task_row: Mapping[TaskKey, int],
) -> tuple[GroupFacts, ...]:
    """Every PodGroup's facts: from its pods one by one when it has a pod to place, else
    from the running pods counted per task row for all PodGroups at once."""
    counted = pods.pod_running & (pods.pod_task_row >= 0)
    running_by_task_row = np.bincount(pods.pod_task_row[counted], minlength=len(task_keys)).tolist()
    return tuple(
        _group_facts(snapshot, k, group_pods[k], pods.pod_task_row, pods.pod_running, task_keys)
        if group_has_pending[k]
        else _running_group_facts(snapshot, k, group_pods[k], running_by_task_row, task_row)
        for k in range(len(group_pods))
    )


def _group_facts(
    snapshot: Snapshot,
    k: int,
    rows: np.ndarray,
    pod_task_row: np.ndarray,
    pod_running: np.ndarray,
    task_keys: tuple[TaskKey, ...],
) -> GroupFacts:
    """PodGroup `k`'s facts from its pods' `rows` and every pod's task row and running flag
    (`Problem.pod_task_row`, `pod_running`)."""
    group = snapshot.pod_groups[k]
    requirement = gang_requirement(snapshot, group)
    pending: dict[str, list[int]] = {task.name: [] for task in group.tasks}
    gated: dict[str, list[int]] = {}
    running: dict[str, int] = {task.name: 0 for task in group.tasks}
    running_pods: list[int] = []
    for p, row, is_running in zip(rows.tolist(), pod_task_row[rows].tolist(), pod_running[rows].tolist()):
        task = task_keys[row][1]
        if is_running:
            running[task] += 1
            running_pods.append(p)
        elif is_gated(snapshot.pods[p]):  # no engine sees it: the one seam (module docstring)
            gated.setdefault(task, []).append(p)
        else:
            pending[task].append(p)
    pending_count = {task: len(pods) for task, pods in pending.items()}
    met = can_be_met(requirement, running, pending_count)
    if gated and not met:
        met_ungated = can_be_met(
            requirement, running, {task: count + len(gated.get(task, ())) for task, count in pending_count.items()}
        )
    else:
        met_ungated = met
    return GroupFacts(
        requirement=requirement,
        running=running,
        pending={task: tuple(pods) for task, pods in pending.items()},
        running_pods=tuple(running_pods),
        can_be_met=met,
        gated={task: tuple(pods) for task, pods in gated.items()},
        met_once_ungated=met_ungated,
    )


def _running_group_facts(
    snapshot: Snapshot, k: int, rows: np.ndarray, running_by_task_row: list[int], task_row: Mapping[TaskKey, int]
) -> GroupFacts:
    """`_group_facts` of a PodGroup whose every pod runs (`Problem.group_has_pending`
    false: most of a busy cluster's), from the running pods counted per task row for all
    PodGroups at once, reading none of its pods. The same facts as pod by pod:
    `tests/solver/test_group_facts.py`."""
    group = snapshot.pod_groups[k]
    requirement = gang_requirement(snapshot, group)
    running = {task.name: running_by_task_row[task_row[(group.key, task.name)]] for task in group.tasks}
    met = can_be_met(requirement, running, dict.fromkeys(running, 0))
    return GroupFacts(
        requirement=requirement,
        running=running,
        pending=dict.fromkeys(running, ()),
        running_pods=tuple(rows.tolist()),
        can_be_met=met,
        gated={},
        met_once_ungated=met,
    )


_NAME = attrgetter("name")
_KEY = attrgetter("key")
_NODE = attrgetter("node")
_POD_GROUP = attrgetter("pod_group")
_TASK = attrgetter("task")
_ALLOCATABLE = attrgetter("allocatable")
_UNSCHEDULABLE = attrgetter("unschedulable")
_TAINTS = attrgetter("taints")
_INDEX = attrgetter("index")
_NUMA_CELL = attrgetter("numa_cell")
_USED_MILLI = attrgetter("used_milli")
_GPU_INDEX = attrgetter("gpu_index")
_CELL_IDS = attrgetter("cell_ids")


def _resource_names(snapshot: Snapshot, columns: tuple[Column, ...]) -> tuple[str, ...]:
    """cpu, memory, gpu, pods first (fixed columns), then every other resource named anywhere
    and every declared column, sorted."""
    others: set[str] = set().union(*map(_ALLOCATABLE, snapshot.nodes), (column.name for column in columns))
    for group in snapshot.pod_groups:
        for task in group.tasks:
            others.update(task.requests)
    for pod in snapshot.pods:
        others.update(pod.requests)
    for queue in snapshot.queues:
        others.update(queue.capability or ())
    others -= {CPU, MEMORY, GPU, PODS}
    return (CPU, MEMORY, GPU, PODS, *sorted(others))


_Layout = tuple[tuple[str, ...], int, int]
"""How a snapshot lays node rows out: (resource names, GPU slots, NUMA-cell slots)."""
_LAYOUT_IDS: dict[_Layout, int] = {}
"""A small id per layout seen, so each row's lookup hashes an int, not the names again.
Layouts are few: the resource names a cluster uses and its largest device and cell counts."""


class _NodeRow(NamedTuple):
    """One node's part of the node tables, in its own terms — so it does not depend on the
    snapshot around it and is memoized on the `Node` object (`solver.memo`): a node that sits
    in many snapshots (consecutive cycles built from the nodes that did not change, what-if
    variants) is read once. Example: 2 devices on cell 0, one with used_milli 300, no
    declared cells → gpu_index (0, 1), gpu_free_milli (1000, 700), gpu_cell (0, 0),
    cell_ids (0,), both cell capacities (UNLIMITED,), gpu_used_milli 300.

    `packed(layout_id, layout)` is the row as one snapshot's tables lay it out, as raw int64
    bytes, kept per layout: `_nodes` joins the rows' bytes and reads every table of the snapshot with one
    `np.frombuffer`. Handing numpy the same Python ints to convert one by one costs some 20
    times more, and was most of the node tables' time in a cycle of a few hundred nodes."""

    allocatable: Mapping[str, int]
    gpu_index: tuple[int, ...]  # device indices, ascending
    gpu_free_milli: tuple[int, ...]  # 1000 − used_milli, per device
    gpu_cell: tuple[int, ...]  # slot in `cell_ids` of each device's cell
    cell_ids: tuple[int, ...]  # declared cells and the cells devices name, ascending; (0,) when neither
    cell_cpu_free: tuple[int, ...]  # milli, UNLIMITED when not declared
    cell_memory_free: tuple[int, ...]  # bytes, likewise
    gpu_used_milli: int  # Σ used_milli
    packed_by_layout: dict[int, bytes]  # what `packed` made so far, by layout id

    def packed(self, layout_id: int, layout: _Layout) -> bytes:
        row = self.packed_by_layout.get(layout_id)
        if row is None:
            resources, gpu_slots, cell_slots = layout
            gpu_pad = (-1,) * (gpu_slots - len(self.gpu_index))
            cell_pad = (-1,) * (cell_slots - len(self.cell_ids))
            columns = [
                *map(self.allocatable.get, resources, (0,) * len(resources)),
                *self.gpu_index, *gpu_pad, *self.gpu_free_milli, *gpu_pad, *self.gpu_cell, *gpu_pad,
                *self.cell_ids, *cell_pad, *self.cell_cpu_free, *cell_pad, *self.cell_memory_free, *cell_pad,
                self.gpu_used_milli,
            ]  # fmt: skip
            row = self.packed_by_layout[layout_id] = struct.pack(f"{len(columns)}q", *columns)
        return row


def _node_rows(nodes: tuple[Node, ...]) -> list[_NodeRow]:
    """Each node's `_NodeRow`, memoized on the node; nodes that share their allocatable, GPU
    and NUMA objects (a cluster built from one template, as the benchmark's are) share one
    row, computed once. Example: 10,000 nodes of one template → 1 row, whose packed bytes
    every node's entry points at."""
    by_parts: dict[tuple[int, int, int], _NodeRow] = {}  # this call's nodes are alive: their ids are theirs

    def compute(node: Node) -> _NodeRow:
        parts = (id(node.allocatable), id(node.gpus), id(node.numa_cells))
        row = by_parts.get(parts)
        if row is None:
            row = by_parts[parts] = _compute_node_row(node)
        return row

    return memoized_each(nodes, ("problem_row",), compute)  # type: ignore[arg-type]


def _compute_node_row(node: Node) -> _NodeRow:
    gpus = sorted(node.gpus, key=_INDEX)
    gpu_cells = tuple(map(_NUMA_CELL, gpus))
    unlimited = int(UNLIMITED)
    if not node.numa_cells and not any(gpu_cells):  # the common case: one cell, 0, of unknown capacity
        cells: tuple[int, ...] = (0,)
        cpu = memory = (unlimited,)
    else:
        known = {cell.id: cell for cell in node.numa_cells}
        cells = tuple(sorted(known.keys() | set(gpu_cells)))
        declared = [known.get(cell) for cell in cells]
        cpu = tuple(unlimited if c is None or c.cpu_milli is None else c.cpu_milli for c in declared)
        memory = tuple(unlimited if c is None or c.memory_bytes is None else c.memory_bytes for c in declared)
    slot_of = {cell: slot for slot, cell in enumerate(cells)}
    used = tuple(map(_USED_MILLI, gpus))
    return _NodeRow(
        allocatable=node.allocatable,
        gpu_index=tuple(map(_INDEX, gpus)),
        gpu_free_milli=tuple(GPU_MILLI_PER_DEVICE - milli for milli in used),
        gpu_cell=tuple(map(slot_of.__getitem__, gpu_cells)),
        cell_ids=cells,
        cell_cpu_free=cpu,
        cell_memory_free=memory,
        gpu_used_milli=sum(used),
        packed_by_layout={},
    )


def _nodes(snapshot: Snapshot, resource_names: tuple[str, ...], columns: tuple[Column, ...]) -> _NodeTables:
    """Node tables: every node's `_NodeRow` packed in this snapshot's layout, all read with
    one `np.frombuffer`, then sliced into the tables; then what the declared columns offer."""
    nodes = snapshot.nodes
    rows = _node_rows(nodes)
    gpu_slots = max(map(len, map(_GPU_INDEX, rows)), default=0)
    cell_slots = max(map(len, map(_CELL_IDS, rows)), default=1)
    layout = (resource_names, gpu_slots, cell_slots)
    layout_id = _LAYOUT_IDS.setdefault(layout, len(_LAYOUT_IDS))
    width = len(resource_names) + 3 * gpu_slots + 3 * cell_slots + 1
    packed = b"".join([row.packed(layout_id, layout) for row in rows])
    table = np.frombuffer(packed, dtype=np.int64).reshape(len(rows), width).copy()  # writable: `_pods` takes running pods off
    at = np.cumsum([0, len(resource_names), gpu_slots, gpu_slots, gpu_slots, cell_slots, cell_slots, cell_slots])
    allocatable = np.ascontiguousarray(table[:, : at[1]].T)
    _offer(allocatable, resource_names, columns, nodes)
    free = allocatable.copy()
    free[resource_names.index(GPU)] -= table[:, -1]
    names = tuple(map(_NAME, nodes))
    return _NodeTables(
        node_names=names,
        node_index=dict(zip(names, range(len(names)))),
        allocatable=allocatable,
        free=free,
        schedulable=~np.fromiter(map(_UNSCHEDULABLE, nodes), dtype=bool, count=len(nodes)),
        gpu_index=table[:, at[1] : at[2]],
        gpu_free_milli=table[:, at[2] : at[3]],
        gpu_cell=table[:, at[3] : at[4]],
        cell_ids=table[:, at[4] : at[5]],
        cell_cpu_free=table[:, at[5] : at[6]],
        cell_memory_free=table[:, at[6] : at[7]],
    )


def _offer(allocatable: np.ndarray, resource_names: tuple[str, ...], columns: tuple[Column, ...], nodes: tuple[Node, ...]) -> None:
    """Each declared column's offer into its `[N]` row of `allocatable`, in place."""
    for column in columns:
        if column.offer is None or column.moves is not None:
            continue  # the node's allocatable states it (`counted` put a moving column's offer there)
        row = allocatable[resource_names.index(column.name)]
        if isinstance(column.offer, int):
            row[:] = column.offer
        else:
            row[:] = [column.offer.get(node.name, 0) for node in nodes]


def _asks(table: np.ndarray, r: int, ask: int | Mapping | None, index: Mapping) -> None:
    """A declared column's asks into column `r` of a `[rows, R]` table: one amount for every
    row, or by key (rows not named ask 0), in place; None: the requests stated it already."""
    if ask is None:
        return
    if isinstance(ask, int):
        table[:, r] = ask
    else:
        table[:, r] = 0
        for key, amount in ask.items():
            table[index[key], r] = amount


def _pods(
    snapshot: Snapshot,
    resource_index: Mapping[str, int],
    nodes: _NodeTables,
    task_row: Mapping[TaskKey, int],
    group_index: Mapping[PodGroupKey, int],
    columns: tuple[Column, ...],
) -> _PodTables:
    """Pod tables; takes running pods' usage off the node, device and cell tables in place.
    Each pass over the cluster's pods gathers one attribute with `map` and looks it up in
    C: they run over every pod of the cluster, each cycle."""
    pods = snapshot.pods
    pod_keys = tuple(map(_KEY, pods))
    pod_index = dict(zip(pod_keys, range(len(pods))))
    pod_requests = _pod_requests(pods, resource_index)
    gpu_milli = pod_requests[:, resource_index[GPU]].copy()  # as requested: the declared columns' asks come next
    for column in columns:
        if column.moves is None:  # a moving column's asks are requests already (`counted`)
            _asks(pod_requests, resource_index[column.name], column.ask, pod_index)
    pod_group, pod_task_row = _membership(pods, task_row, group_index)
    # A pod has a node exactly when it runs (`Pod`), and a running pod's node is in the snapshot.
    pod_node = np.fromiter(map(nodes.node_index.get, map(_NODE, pods), repeat(-1)), dtype=np.int64, count=len(pods))
    running = np.flatnonzero(pod_node >= 0)
    device_slots = _hold_devices(pods, running, pod_node, gpu_milli, nodes)
    cell_slots = _hold_cells(pods, pod_node, nodes)
    if running.size:
        usage = np.zeros_like(nodes.free.T)
        np.add.at(usage, pod_node[running], pod_requests[running])
        nodes.free[...] -= usage.T
    return _PodTables(
        pod_keys=pod_keys,
        pod_index=pod_index,
        pod_requests=_readonly(pod_requests),
        pod_node=_readonly(pod_node),
        pod_group=_readonly(pod_group),
        pod_task_row=_readonly(pod_task_row),
        pod_running=_readonly(pod_node >= 0),
        pod_gpu_slots=device_slots,
        pod_cell_slot=cell_slots,
    )


def _pod_requests(pods: Sequence[Pod], resource_index: Mapping[str, int]) -> np.ndarray:
    """`[P, R]`: each pod's requests (the declared columns' asks are set after). Gathered
    into flat arrays in C (`chain`, `fromiter`): this runs over every pod of the cluster, each
    cycle."""
    table = np.zeros((len(pods), len(resource_index)), dtype=np.int64)
    requests = [pod.requests for pod in pods]
    counts = np.fromiter(map(len, requests), dtype=np.int64, count=len(requests))
    total = int(counts.sum())
    if total:
        at_p = np.repeat(np.arange(len(pods), dtype=np.int64), counts)
        at_r = np.fromiter(map(resource_index.__getitem__, chain.from_iterable(requests)), dtype=np.int64, count=total)
        amounts = np.fromiter(chain.from_iterable(map(dict.values, requests)), dtype=np.int64, count=total)
        table[at_p, at_r] = amounts
    return table


def _membership(
    pods: Sequence[Pod], task_row: Mapping[TaskKey, int], group_index: Mapping[PodGroupKey, int]
) -> tuple[np.ndarray, np.ndarray]:
    """`[P]` PodGroup index and `[P]` task row of each pod, −1 for pods of other schedulers
    (a pod of a PodGroup names one of its tasks: `Snapshot`)."""
    group_of = list(map(_POD_GROUP, pods))
    pod_group = np.fromiter(map(group_index.get, group_of, repeat(-1)), dtype=np.int64, count=len(pods))
    task_keys = zip(group_of, map(_TASK, pods))
    pod_task_row = np.fromiter(map(task_row.get, task_keys, repeat(-1)), dtype=np.int64, count=len(pods))
    return pod_group, pod_task_row


def _hold_devices(
    pods: Sequence[Pod], running: np.ndarray, pod_node: np.ndarray, gpu_milli: np.ndarray, nodes: _NodeTables
) -> dict[int, tuple[int, ...]]:
    """Running pod → the GPU slots it holds (those that list devices); takes their milli
    (`gpu_milli`: each pod's request) off `nodes.gpu_free_milli` in place. Each device is
    matched to its slot by comparing it with its node's row of `gpu_index` (indices are
    unique on a node), in one numpy pass over every device every running pod holds: this
    runs over every pod of the cluster, each cycle."""
    held = [pods[p].gpu_indices for p in running.tolist()]
    counts = np.fromiter(map(len, held), dtype=np.int64, count=len(held))
    total = int(counts.sum())
    if not total:
        return {}
    device = np.fromiter(chain.from_iterable(held), dtype=np.int64, count=total)
    at_n = np.repeat(pod_node[running], counts)
    milli = gpu_milli[running]
    whole = (milli > 0) & (milli % GPU_MILLI_PER_DEVICE == 0)
    per_device = np.repeat(np.where(whole, GPU_MILLI_PER_DEVICE, milli), counts)  # as `after.milli_per_device`
    matches = (nodes.gpu_index[at_n] == device[:, None]) & (device[:, None] >= 0)
    found = matches.any(axis=1)
    slot = np.where(found, matches.argmax(axis=1), -1)
    np.subtract.at(nodes.gpu_free_milli, (at_n[found], slot[found]), per_device[found])
    holding = counts > 0
    holders = running[holding].tolist()
    ends = np.cumsum(counts)[holding].tolist()
    sizes = counts[holding].tolist()
    slots = slot.tolist()
    if found.all():
        return {p: tuple(slots[end - size : end]) for p, end, size in zip(holders, ends, sizes)}
    return {p: tuple(s for s in slots[end - size : end] if s >= 0) for p, end, size in zip(holders, ends, sizes)}


def _hold_cells(pods: Sequence[Pod], pod_node: np.ndarray, nodes: _NodeTables) -> dict[int, int]:
    """Running pod → the slot of the NUMA cell it holds (those that name one); takes its cpu
    and memory off the cell tables in place. A cell of unknown capacity stays UNLIMITED: what
    runs there is not counted against it. The pods that name a cell are found in C (`map`),
    and only they are walked: this runs over every pod of the cluster, each cycle."""
    cell_of_pod: dict[int, int] = {}
    held: list[tuple[int, int, int, int]] = []  # (node, cell slot, cpu, memory)
    names_cell = np.fromiter(map(is_not, map(_NUMA_CELL, pods), repeat(None)), dtype=bool, count=len(pods))
    holders = np.flatnonzero(names_cell & (pod_node >= 0))
    for p, n in zip(holders.tolist(), pod_node[holders].tolist()):
        pod = pods[p]
        found = np.flatnonzero(nodes.cell_ids[n] == pod.numa_cell)
        if found.size:
            cell_of_pod[p] = int(found[0])
            held.append((n, int(found[0]), pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)))
    if held:
        at_n, at_c, cpu, memory = (_ints(list(values)) for values in zip(*held))
        for table, used in ((nodes.cell_cpu_free, cpu), (nodes.cell_memory_free, memory)):
            known = table[at_n, at_c] != UNLIMITED
            np.subtract.at(table, (at_n[known], at_c[known]), used[known])
    return cell_of_pod


def _eligibility(
    snapshot: Snapshot, resource_index: Mapping[str, int], task_row: Mapping[TaskKey, int], columns: tuple[Column, ...]
) -> _EligibilityTables:
    """Per (task class, node class) predicate calls; see the module docstring."""
    tasks: list[Task] = [task for group in snapshot.pod_groups for task in group.tasks]
    task_groups = [group for group in snapshot.pod_groups for _ in group.tasks]
    filters = declared_node_filters(snapshot)
    affinity_terms = [term for task in tasks for term in node_affinity.terms_of(task)]
    selector_keys = sorted({key for task in tasks for key in task.node_selector} | node_affinity.keys_read(affinity_terms))
    named_nodes = node_affinity.names_read(affinity_terms)

    nodes = snapshot.nodes
    bands = usage_bands(snapshot)
    # A node's signature: the label values selectors read, taints, unschedulable, then — only
    # when some node of the snapshot has one, since a part every node shares splits no class
    # — its name (read by `matchFields`) and its usage band, then what each node filter a
    # rule declares knows of it (`solver.columns.NodeFilter`: being hot, its holder).
    names = tuple(map(_NAME, nodes))
    parts: list[Iterable[object]] = [
        [tuple(map(node.labels.get, selector_keys)) for node in nodes], map(_TAINTS, nodes), map(_UNSCHEDULABLE, nodes)
    ]
    if named_nodes:
        parts.append([name if name in named_nodes else None for name in names])
    if any(bands.values()):
        parts.append(list(map(bands.__getitem__, names)))
    parts.extend(list(map(node_filter.node_part.get, names)) for node_filter in filters)
    class_of_signature: dict[object, int] = {}
    node_class = np.array(
        [class_of_signature.setdefault(signature, len(class_of_signature)) for signature in zip(*parts)], dtype=np.int64
    )  # ids in order of first appearance, so each class's first node is its representative
    representatives = np.unique(node_class, return_index=True)[1].tolist()
    representative_names = [names[rep] for rep in representatives]

    task_class_of_signature: dict[object, int] = {}
    class_tasks: list[Task] = []
    task_class = np.zeros(len(tasks), dtype=np.int64)
    task_requests = np.zeros((len(tasks), len(resource_index)), dtype=np.int64)
    class_filter_parts: list[tuple[object, ...]] = []  # per task class: what each node filter reads of it
    for t, task in enumerate(tasks):
        filter_parts = tuple(node_filter.task_part(task_groups[t], task) for node_filter in filters)
        signature = (
            tuple(sorted(task.node_selector.items())),
            task.required_node_affinity,
            task.preferred_node_affinity,
            task.tolerations,
            *filter_parts,
        )
        task_cls = task_class_of_signature.get(signature)
        if task_cls is None:
            task_cls = task_class_of_signature[signature] = len(class_tasks)
            class_tasks.append(task)
            class_filter_parts.append(filter_parts)
        task_class[t] = task_cls
        for name, amount in task.requests.items():
            task_requests[t, resource_index[name]] = amount
    for column in columns:
        if column.moves is None:  # a moving column's asks are requests already (`counted`)
            _asks(task_requests, resource_index[column.name], column.task_ask, task_row)

    pair_ok = np.array(
        [[eligible(snapshot.nodes[rep], task) for rep in representatives] for task in class_tasks],
        dtype=bool,
    ).reshape(len(class_tasks), len(representatives))
    for f, node_filter in enumerate(filters):  # rules `usage` (hot nodes), `reservation` (held nodes), …
        for node_cls, name in enumerate(representative_names):
            node_part = node_filter.node_part.get(name)
            if node_part is not None:
                kept_off = [
                    c
                    for c, task in enumerate(class_tasks)
                    if not node_filter.allows(task, class_filter_parts[c][f], node_part)
                ]
                pair_ok[kept_off, node_cls] = False
    class_band = np.array([bands[name] for name in representative_names], dtype=np.int64)
    eligible_by_class = pair_ok[:, node_class] if len(snapshot.nodes) else np.zeros((len(class_tasks), 0), bool)
    pair_missed = np.array(
        [
            [node_affinity.preference_missed(snapshot.nodes[rep], task.preferred_node_affinity) for rep in representatives]
            if task.preferred_node_affinity
            else [0] * len(representatives)
            for task in class_tasks
        ],
        dtype=np.int64,
    ).reshape(len(class_tasks), len(representatives))
    return _EligibilityTables(
        node_class=_readonly(node_class),
        node_class_representative=tuple(representatives),
        eligible_by_class=_readonly(np.ascontiguousarray(eligible_by_class)),
        preference_missed_by_class=_readonly(pair_missed),
        usage_band_by_class=_readonly(class_band),
        task_requests=_readonly(task_requests),
        task_eligibility_class=_readonly(task_class),
        task_single_numa=_readonly(np.array([task.numa_policy == "single-numa-node" for task in tasks], dtype=bool)),
    )


def _topology(snapshot: Snapshot, node_index: Mapping[NodeName, int]) -> _TopologyTables:
    tiers = tuple(sorted({hypernode.tier for hypernode in snapshot.hypernodes}))
    tier_position = {tier: i for i, tier in enumerate(tiers)}
    domain_of = np.full((len(tiers), len(snapshot.nodes)), -1, dtype=np.int64)
    names: list[list[str]] = [[] for _ in tiers]
    domain_id: dict[str, int] = {}
    for hypernode in snapshot.hypernodes:
        position = tier_position[hypernode.tier]
        domain_id[hypernode.name] = len(names[position])
        names[position].append(hypernode.name)
    for node_name, chain in snapshot.hypernode_chain.items() if snapshot.hypernodes else ():
        n = node_index[node_name]
        for name in chain:
            hypernode = snapshot.hypernode_by_name[name]
            domain_of[tier_position[hypernode.tier], n] = domain_id[name]
    return _TopologyTables(
        tiers=tiers,
        domain_of=_readonly(domain_of),
        domain_names=tuple(tuple(tier_names) for tier_names in names),
    )


def _queues(
    snapshot: Snapshot, resource_index: Mapping[str, int], pods_part: _PodTables, dealt: np.ndarray
) -> _QueueTables:
    """Queue tables. `queue_allocated` is `solver.shares.queue_allocated` computed from the
    pod tables (running pods of each queue's PodGroups, added to the queue and every
    ancestor) — one pass of numpy instead of another pass over the pod objects."""
    queues = snapshot.queues
    count, resources = len(queues), len(resource_index)
    queue_index = {queue.name: q for q, queue in enumerate(queues)}
    capability = np.full((count, resources), NO_CAP, dtype=np.int64)
    guarantee = np.zeros((count, resources), dtype=np.int64)
    deserved = np.zeros((count, resources), dtype=np.int64)
    allocated = np.zeros((count, resources), dtype=np.int64)
    deserved_map = deserved_shares(snapshot)
    for q, queue in enumerate(queues):
        for name, amount in (queue.capability or {}).items():
            capability[q, resource_index[name]] = amount
        for name, amount in queue.guarantee.items():
            if name in resource_index:
                guarantee[q, resource_index[name]] = amount
        for name, amount in deserved_map.get(queue.name, {}).items():
            if name in resource_index:
                deserved[q, resource_index[name]] = amount
    not_dealt = ~dealt  # the pod count, host ports (module docstring)
    capability[:, not_dealt] = NO_CAP
    guarantee[:, not_dealt] = 0
    deserved[:, not_dealt] = UNLIMITED
    own = np.zeros_like(allocated)
    owner = pods_part.pod_group
    running = np.flatnonzero(pods_part.pod_running & (owner >= 0))
    group_queue = np.array(
        [queue_index.get(group.queue, -1) for group in snapshot.pod_groups] + [-1], dtype=np.int64
    )
    pod_queue = group_queue[owner[running]]
    counted = running[pod_queue >= 0]
    np.add.at(own, pod_queue[pod_queue >= 0], pods_part.pod_requests[counted])
    for q, queue in enumerate(queues):
        for ancestor in snapshot.queue_ancestors(queue.name):
            allocated[queue_index[ancestor]] += own[q]
    return _QueueTables(
        queue_names=tuple(queue.name for queue in queues),
        queue_index=queue_index,
        queue_parent=_readonly(
            np.array([queue_index.get(queue.parent, -1) if queue.parent else -1 for queue in queues], dtype=np.int64)
        ),
        queue_ancestors=tuple(
            tuple(queue_index[name] for name in snapshot.queue_ancestors(queue.name)) for queue in queues
        ),
        queue_weight=_readonly(np.array([queue.weight for queue in queues], dtype=np.int64)),
        queue_priority=_readonly(np.array([queue.priority for queue in queues], dtype=np.int64)),
        queue_open=_readonly(np.array([queue.state == "open" for queue in queues], dtype=bool)),
        queue_reclaimable=_readonly(np.array([queue.reclaimable for queue in queues], dtype=bool)),
        queue_capability=_readonly(capability),
        queue_guarantee=_readonly(guarantee),
        queue_deserved=_readonly(deserved),
        queue_allocated=_readonly(allocated),
    )
