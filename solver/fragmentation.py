"""Fragmentation-aware packing for the greedy engine: how much of a node's free GPU the
workload's typical pods could not use, and by how much placing one pod there grows it.

Input: the greedy engine's cycle state (free CPU `[N]`, free milli per device `[N, G]`)
and *typical shapes* — the pod shapes the cluster expects, with weights: either given in
`SolveConfig.typical_shapes` (e.g. the trace's pod list in the experiments) or taken from
the snapshot's pending pods (`typical_shapes_of`). Output: a rank per candidate node that
the engine's Score uses in place of plain best fit (`FragmentationScore.rank`). Pure
numpy; nothing here binds, and the checker judges whatever the engine does with it.

The measure is the FGD paper's (Weng et al., "Beware of Fragmentation", USENIX ATC '23,
§3), written over arrays. For one node and one typical shape t, the node's free GPU milli
is split:
  - t asks for no GPU, or may not go to the node (node selector) → all of it is fragment;
  - t fits (CPU, and ≥ its device count with ≥ its per-device milli free each) → only
    devices with less free milli than t asks are fragment;
  - t does not fit → all of it is fragment.
A node's fragmentation is the weighted mean over shapes (weights sum to 1).
Worked example: free CPU 8,000 m and devices (1000, 300); shapes a = 1 × 500 milli with
4,000 m CPU (weight 0.5) and b = CPU-only (weight 0.5): for a the 300 device is fragment,
for b all 1,300 → 0.5 · 300 + 0.5 · 1300 = 800 milli.

Score: growth = fragmentation after the pod − before (milli; the pod's own device choice,
as `greedy.state.choose_devices` makes it: the tightest device for a share, any idle
devices for whole GPUs). It is made coarse as FGD does — int(100 · sigmoid(−growth /
1000)), i.e. ≈ 40-milli steps around 0 — because exact growth is worse: on the openb
trace, exact greed on a few milli loses allocation to the coarse buckets (measured:
docs/results.md, section 1, "What was tried and did not help").
Nodes are then ranked by that bucket (larger wins), then by the engine's best-fit score,
then by node index (snapshot order).

Not promised: memory, NUMA cells and taints are not part of a shape (FGD's measure has
CPU and GPU only); the score looks one pod ahead, not over a batch.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from models.cached import cached_property
from models.snapshot import GPU_MILLI_PER_DEVICE, Snapshot
from models.typical_shapes import TypicalShape
from solver.memo import memoized
from solver.problem import Problem, build_problem
from solver.rules.eligibility import matches_selector

__all__ = [
    "PackingName",
    "PACKINGS",
    "POPULARITY_THRESHOLD",
    "TypicalShape",
    "TypicalShapes",
    "fragmentation_milli",
    "PackingMeasure",
    "packing_measure",
    "WEIGHT_SCALE",
    "typical_shapes_of",
    "prepare_shapes",
    "FragmentationScore",
    "packing_score",
]

WHOLE = GPU_MILLI_PER_DEVICE
PackingName = Literal["fragmentation", "best-fit"]
PACKINGS: tuple[PackingName, ...] = ("fragmentation", "best-fit")
POPULARITY_THRESHOLD = 0.95
"""Shapes from pending pods: the most frequent ones covering this share of the pods (FGD's 95 %)."""


@dataclass(frozen=True, eq=False)
class TypicalShapes:
    """Typical shapes prepared for one cycle's nodes. GPU shapes are columns; each one's
    per-device threshold is a column of `thresholds` (`column`)."""

    cpu_only_weight: int  # parts per million of the weight (`WEIGHT_SCALE`)
    cpu_milli: np.ndarray  # [T] per GPU shape
    devices: np.ndarray  # [T] devices it needs
    weight: np.ndarray  # [T] int64 parts per million (with cpu_only_weight, ~WEIGHT_SCALE)
    eligible: np.ndarray  # [T, N] bool
    thresholds: np.ndarray  # [D] distinct per-device milli asked
    column: np.ndarray  # [T] → column of thresholds


WEIGHT_SCALE = 1_000_000
"""Weights are integers in parts per million, so a node's fragmentation is an exact integer
(floor of the weighted sum): the same for the objective, the greedy score and every CP-SAT
pattern, whatever order numpy sums in."""


def _per_device(gpu_milli: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(devices, milli per device) of `gpu` requests: 2000 → (2, 1000); 460 → (1, 460); 0 → (0, 0)."""
    whole = gpu_milli >= WHOLE
    devices = np.where(whole, gpu_milli // WHOLE, np.where(gpu_milli > 0, 1, 0))
    return devices, np.where(whole, WHOLE, gpu_milli)


@dataclass(frozen=True, eq=False)
class _Columns:
    """What `prepare_shapes` derives from the shapes alone — everything but eligibility.
    `gpu` marks the shapes that ask for GPUs (the columns, in order)."""

    gpu: np.ndarray  # [T all] bool
    cpu_only_weight: int
    cpu_milli: np.ndarray
    devices: np.ndarray
    weight: np.ndarray
    thresholds: np.ndarray
    column: np.ndarray

    @staticmethod
    def of(cpu_milli: np.ndarray, gpu_milli: np.ndarray, weight: np.ndarray) -> _Columns:
        weight = np.asarray(weight, dtype=np.float64)
        total = float(weight.sum()) or 1.0
        ppm = np.rint(weight / total * WEIGHT_SCALE).astype(np.int64)
        gpu = np.asarray(gpu_milli) > 0
        devices, per_device = _per_device(np.asarray(gpu_milli, dtype=np.int64))
        thresholds, column = np.unique(per_device[gpu], return_inverse=True)
        arrays = (
            gpu, np.asarray(cpu_milli, dtype=np.int64)[gpu], devices[gpu], ppm[gpu],
            thresholds.astype(np.int64), column.reshape(-1),
        )  # fmt: skip
        for array in arrays:  # shared by every cycle of a config (`_prepared`): read-only
            array.setflags(write=False)
        gpu, cpu, device_count, share, threshold, position = arrays
        return _Columns(
            gpu=gpu,
            cpu_only_weight=int(ppm[~gpu].sum()),
            cpu_milli=cpu,
            devices=device_count,
            weight=share,
            thresholds=threshold,
            column=position,
        )

    def shapes(self, eligible: np.ndarray) -> TypicalShapes:
        """The columns with `eligible [T columns, N]`."""
        return TypicalShapes(
            cpu_only_weight=self.cpu_only_weight,
            cpu_milli=self.cpu_milli,
            devices=self.devices,
            weight=self.weight,
            eligible=eligible,
            thresholds=self.thresholds,
            column=self.column,
        )


def prepare_shapes(
    cpu_milli: np.ndarray, gpu_milli: np.ndarray, weight: np.ndarray, eligible: np.ndarray
) -> TypicalShapes:
    """Columns for `fragmentation_milli` from per-shape `cpu_milli [T]`, `gpu_milli [T]`
    (the `gpu` request), `weight [T]` and `eligible [T, N]`; weights are renormalized."""
    columns = _Columns.of(cpu_milli, gpu_milli, weight)
    return columns.shapes(np.asarray(eligible, dtype=bool)[columns.gpu])


def fragmentation_milli(cpu_free: np.ndarray, gpu_free: np.ndarray, shapes: TypicalShapes, nodes: np.ndarray) -> np.ndarray:
    """`[M]` fragmented milli-GPU of M node states: free CPU `[M]`, free milli per device
    `[M, G]` (negative = padding, counts as nothing), for the node indices `nodes [M]`
    (their eligibility per shape), as int64 milli: the weighted sum is floored (`WEIGHT_SCALE`).
    See the module docstring for the rule and an example.

    Per threshold d (a distinct per-device milli some shape asks) it needs the devices with
    at least d free and the milli on those with less. Each device falls in one bucket between
    consecutive thresholds, so both come from a per-node histogram over the D + 1 buckets
    (two `bincount`s) and its running sums — not from an `[M, G, D]` comparison. Example:
    thresholds (300, 1000), devices (1000, 500, 100) → buckets (2, 1, 0) → at least 300:
    2 devices, below 300: 100 milli; at least 1000: 1 device, below 1000: 600 milli."""
    left = np.maximum(np.asarray(gpu_free, dtype=np.int64), 0)
    total = left.sum(axis=1)
    weighted = total * shapes.cpu_only_weight
    if shapes.weight.size == 0:
        return weighted // WEIGHT_SCALE
    states, buckets = left.shape[0], shapes.thresholds.size + 1
    bucket = np.arange(states)[:, None] * buckets + np.searchsorted(shapes.thresholds, left, side="right")  # [M, G]
    devices = np.bincount(bucket.ravel(), minlength=states * buckets).reshape(states, buckets)
    milli = np.bincount(bucket.ravel(), weights=left.ravel(), minlength=states * buckets)
    milli = milli.astype(np.int64).reshape(states, buckets)  # sums of integers below 2**53: exact
    count = np.cumsum(devices[:, :0:-1], axis=1)[:, ::-1]  # [M, D] devices with ≥ threshold d free
    below = np.cumsum(milli[:, :-1], axis=1)  # [M, D] milli on devices with less
    fits = count[:, shapes.column] >= shapes.devices[None, :]  # [M, T]
    fits &= np.asarray(cpu_free)[:, None] >= shapes.cpu_milli[None, :]
    fits &= shapes.eligible[:, nodes].T
    value = np.where(fits, below[:, shapes.column], total[:, None])
    return (weighted + value @ shapes.weight) // WEIGHT_SCALE


def typical_shapes_of(snapshot: Snapshot, problem: Problem, *, threshold: float = POPULARITY_THRESHOLD) -> TypicalShapes:
    """Typical shapes from the snapshot's pending pods: (CPU, `gpu` request, eligibility)
    counted over pods, most frequent first until they cover `threshold` of them.
    Example: pending 6 × (1 CPU, 500 milli), 3 × (2 CPU, 1 GPU), 1 × (4 CPU, 0), threshold
    0.8 → the first two shapes, weights 6/9 and 3/9."""
    pending = np.flatnonzero(~problem.pod_running & (problem.pod_task_row >= 0))
    if pending.size == 0:
        return prepare_shapes(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros((0, problem.node_count), bool))
    rows = problem.pod_task_row[pending]
    key = np.column_stack(
        (
            problem.pod_requests[pending, problem.cpu_column],
            problem.pod_requests[pending, problem.gpu_column],
            problem.task_eligibility_class[rows],
        )
    )
    shapes, counts = np.unique(key, axis=0, return_counts=True)
    # Most pods first; equal counts: the larger shape first (GPU, then CPU).
    order = np.lexsort((-shapes[:, 0], -shapes[:, 1], -counts))
    covered = np.cumsum(counts[order])
    keep = order[: int(np.searchsorted(covered, threshold * pending.size)) + 1]
    return prepare_shapes(
        shapes[keep, 0], shapes[keep, 1], counts[keep].astype(np.float64), problem.eligible_by_class[shapes[keep, 2]]
    )


_NodeView = tuple[tuple[str | None, ...], bool]
"""What a configured shape's eligibility reads of a node: the values of the label keys its
selectors name (`_Configured.keys`, in order) and whether the node is unschedulable."""


@dataclass(frozen=True, eq=False)
class _Configured:
    """Configured typical shapes, prepared once: their columns, their distinct node
    selectors, which selector each column's shape has, the label keys the selectors read,
    and the eligibility of every column by node view, judged the first time a view is seen
    and kept across cycles (`eligible`)."""

    columns: _Columns
    selectors: tuple[tuple[tuple[str, str], ...], ...]
    selector_of_column: np.ndarray  # [T columns] → index in `selectors`
    keys: tuple[str, ...]
    _view_index: dict[_NodeView, int] = field(default_factory=dict, repr=False)
    _by_view: list[np.ndarray] = field(default_factory=list, repr=False)  # [V] of [T columns] bool
    _table: list[np.ndarray] = field(default_factory=list, repr=False)  # [[T columns, V] bool], replaced whole
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def eligible(self, views: Sequence[_NodeView]) -> np.ndarray:
        """`[T columns, len(views)]` bool: whether each column's shape may go to a node of each
        view. A cluster has a handful of views, so after its first cycles this is a lookup
        per node and one take — judging every selector against every view on each cycle
        cost more than the rest of the measure. Views are only ever added (under a lock),
        the table holding a view's column before the view is indexed, so a reader that
        finds its views indexed finds their columns in the table it reads after."""
        index = self._view_index
        at = [index.get(view, -1) for view in views]
        if -1 in at:
            with self._lock:
                new = [view for view in dict.fromkeys(views) if view not in index]
                if new:
                    self._by_view.extend(map(self._judge, new))
                    self._table[:] = [np.stack(self._by_view, axis=1)]
                    for view in new:
                        index[view] = len(index)
            at = [index[view] for view in views]
        if not at:
            return np.zeros((self.selector_of_column.size, 0), dtype=bool)
        return self._table[-1][:, at]

    def _judge(self, view: _NodeView) -> np.ndarray:
        values, unschedulable = view
        labels = dict(zip(self.keys, values))
        matches = np.array(
            [not unschedulable and matches_selector(labels, dict(selector)) for selector in self.selectors], dtype=bool
        )
        return matches[self.selector_of_column]


_CONFIGURED: dict[int, tuple[tuple[TypicalShape, ...], _Configured]] = {}
"""Prepared configured shapes by the identity of the tuple given, which the entry holds
(so its id cannot be reused while the entry lives; a tuple of frozen shapes cannot change):
`SolveConfig.typical_shapes` is one tuple for every cycle solved with that config, so its
columns are computed once, not per cycle. At most `_CONFIGURED_KEPT` tuples are kept (a
few configs are in use at once; past that the cache starts over)."""
_CONFIGURED_KEPT = 16


def _prepared(shapes: Sequence[TypicalShape]) -> _Configured:
    entry = _CONFIGURED.get(id(shapes))
    if entry is not None and entry[0] is shapes:
        return entry[1]
    prepared = _prepare(shapes)
    if isinstance(shapes, tuple):  # a list could change under the same identity
        if len(_CONFIGURED) >= _CONFIGURED_KEPT:
            _CONFIGURED.clear()  # one operation: safe while another thread reads
        _CONFIGURED[id(shapes)] = (shapes, prepared)
    return prepared


def _prepare(shapes: Sequence[TypicalShape]) -> _Configured:
    selectors = tuple(dict.fromkeys(shape.node_selector for shape in shapes))
    index = {selector: i for i, selector in enumerate(selectors)}
    columns = _Columns.of(
        np.array([s.cpu_milli for s in shapes], dtype=np.int64),
        np.array([s.gpu_milli for s in shapes], dtype=np.int64),
        np.array([s.weight for s in shapes], dtype=np.float64),
    )
    selector_of = np.array([index[s.node_selector] for s in shapes], dtype=np.int64)[columns.gpu]
    keys = tuple(sorted({key for selector in selectors for key, _ in selector}))
    return _Configured(columns=columns, selectors=selectors, selector_of_column=selector_of, keys=keys)


def _configured(snapshot: Snapshot, shapes: Sequence[TypicalShape]) -> TypicalShapes:
    """Typical shapes given by the caller, eligible where the node selector matches (and
    the node is schedulable): judged once per distinct selector and node view — the labels
    the selectors read and whether it is schedulable (`_Configured.eligible`)."""
    prepared = _prepared(shapes)
    keys = prepared.keys
    return prepared.columns.shapes(
        prepared.eligible([(tuple(map(node.labels.get, keys)), node.unschedulable) for node in snapshot.nodes])
    )


class _ScoredShape(Protocol):
    """What the score needs of the engine's `TaskShape`."""

    gpu_milli: int
    whole_devices: int
    fractional: bool
    cpu_milli: int


class _CycleFree(Protocol):
    """What the score reads of the engine's `CycleState`."""

    free: np.ndarray  # [R, N]
    gpu_free: np.ndarray  # [N, G]
    node_changes: np.ndarray  # [N] how often this cycle's binds and evictions changed each node


def fgd_bucket(growth_milli: np.ndarray) -> np.ndarray:
    """FGD's integer score of a fragmentation growth, higher is better:
    int(100 · sigmoid(−growth / 1000)). Examples: 0 → 50; +1000 → 26; −1000 → 73."""
    return (100.0 / (1.0 + np.exp(np.clip(growth_milli, -50_000, 50_000) / 1000.0))).astype(np.int64)


class _GrowthMemo:
    """Per pod shape: the last growth computed for each node, its FGD bucket, and the node's
    change count (`_CycleFree.node_changes`) they were computed at (−1: never)."""

    def __init__(self, node_count: int):
        self.changes = np.full(node_count, -1, dtype=np.int64)
        self.growth = np.zeros(node_count, dtype=np.float64)
        self.bucket = np.zeros(node_count, dtype=np.int64)


class FragmentationScore:
    """The engine's packing rank with fragmentation first; see the module docstring."""

    def __init__(self, problem: Problem, shapes: TypicalShapes):
        self.shapes = shapes
        self.cpu_column = problem.cpu_column
        self._memo: dict[tuple[int, int, int, bool], _GrowthMemo] = {}
        self._memo_of: weakref.ref[_CycleFree] | None = None  # the state the memo's change counts are of

    def growth(self, state: _CycleFree, shape: _ScoredShape, nodes: np.ndarray) -> np.ndarray:
        """`[len(nodes)]` fragmentation growth in milli if one pod of `shape` goes to each node.

        The growth is a pure function of a node's free CPU and free milli per device (and of
        its index, for eligibility), so it is remembered per pod shape and recomputed only
        for nodes a bind or eviction changed since (`node_changes`) — a gang's pods change a
        few nodes each, while every pod scores thousands: the cache is what keeps this score
        affordable at 10,000 nodes. Exact: a stale entry is never used. Why the change count
        and not the state itself: comparing every scored node's free milli per device with
        the remembered one, for every pod, was most of greedy's time at 30,000 nodes
        (docs/results.md, "The greedy engine's fragmentation score")."""
        return self._fresh(state, shape, nodes).growth[nodes]

    def _fresh(self, state: _CycleFree, shape: _ScoredShape, nodes: np.ndarray) -> _GrowthMemo:
        """`shape`'s memo with every node of `nodes` up to date (growth and bucket)."""
        if self._memo_of is None or self._memo_of() is not state:  # counts of another state say nothing here
            self._memo.clear()
            self._memo_of = weakref.ref(state)
        changes = state.node_changes[nodes]
        key = (shape.cpu_milli, shape.gpu_milli, shape.whole_devices, shape.fractional)
        memo = self._memo.get(key)
        if memo is None:
            memo = self._memo[key] = _GrowthMemo(state.node_changes.size)
        stale = memo.changes[nodes] != changes
        if stale.any():
            at = nodes[stale]
            growth = self._growth(state.free[self.cpu_column, at], state.gpu_free[at], shape, at)
            memo.growth[at] = growth
            memo.bucket[at] = fgd_bucket(growth)
            memo.changes[at] = changes[stale]
        return memo

    def _growth(self, cpu: np.ndarray, rows: np.ndarray, shape: _ScoredShape, nodes: np.ndarray) -> np.ndarray:
        """The growth computed afresh for node states `cpu [M]`, `rows [M, G]` of `nodes [M]`:
        the states before and after the pod measured in one `fragmentation_milli` call over
        2M rows, since at a few dozen nodes a call costs its fixed numpy overhead, not its rows."""
        after_rows = rows
        if shape.whole_devices:
            idle = rows == WHOLE
            after_rows = np.where(idle & (np.cumsum(idle, axis=1) <= shape.whole_devices), 0, rows)
        elif shape.fractional:
            fitting = np.where(rows >= shape.gpu_milli, rows, WHOLE + 1)
            slot = np.argmin(fitting, axis=1)  # the tightest device that fits, lowest index on ties
            after_rows = rows.copy()
            after_rows[np.arange(nodes.size), slot] -= shape.gpu_milli
        both = fragmentation_milli(
            np.concatenate((cpu, cpu - shape.cpu_milli)), np.concatenate((rows, after_rows)), self.shapes,
            np.concatenate((nodes, nodes)),
        )  # fmt: skip
        return both[nodes.size :] - both[: nodes.size]

    def rank(self, state: _CycleFree, shape: _ScoredShape, nodes: np.ndarray, best_fit: np.ndarray) -> np.ndarray:
        """`[len(nodes)]` rank, smaller is better: FGD bucket of the growth (larger first),
        then `best_fit` (smaller first), then position in `nodes`. The buckets are kept with
        the growth they come from, so a pod's rank computes them for the nodes that changed
        only (docs/results.md, "The greedy engine's fragmentation score")."""
        bucket = self._fresh(state, shape, nodes).bucket[nodes]
        order = np.lexsort((best_fit, -bucket))
        rank = np.empty(nodes.size, dtype=np.float64)
        rank[order] = np.arange(nodes.size, dtype=np.float64)
        return rank


def packing_score(
    snapshot: Snapshot, problem: Problem, *, packing: PackingName, typical: Sequence[TypicalShape] = ()
) -> FragmentationScore | None:
    """The packing rank the greedy engine uses this cycle: None for plain best fit; else
    the objective's own measure (`packing_measure`) over the cycle's typical shapes."""
    if packing == "best-fit" or problem.node_count == 0:
        return None
    return FragmentationScore(problem, packing_measure(snapshot, typical, problem=problem).shapes)


@dataclass(eq=False)
class PackingMeasure:
    """The objective's packing tier for one snapshot: FGD's fragmentation of a node state
    over the cycle's typical shapes, as exact integers (`fragmentation_milli`).

    `nodes` measures node states by index (the objective, greedy); `state` one node state
    given by its free CPU, device frees and `node_class` — nodes of a class are alike for
    every typical shape's eligibility — remembered per (class, CPU band, device frees):
    CP-SAT's pattern walks ask for the same end states over and over. The CPU band is how
    many typical shapes' CPU fit, all the measure reads of the CPU. The classes are found
    when first read: the greedy engine measures by index only and never pays for them (a
    row-wise `np.unique` of the eligibility table, the dearest step of a one-pod cycle)."""

    shapes: TypicalShapes
    _memo: dict[tuple[int, int, int, tuple[int, ...]], int] = field(default_factory=dict, repr=False)
    _classes: dict[int, tuple[int, list[tuple[int, list[tuple[int, int, int]]]]]] = field(default_factory=dict, repr=False)

    @cached_property
    def _node_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(`node_class [N]`, `representative [K]`)."""
        shapes = self.shapes
        node_count = shapes.eligible.shape[1]
        if shapes.weight.size and node_count:
            _, first, node_class = np.unique(shapes.eligible.T, axis=0, return_index=True, return_inverse=True)
        else:
            first, node_class = np.zeros(min(1, node_count), dtype=np.int64), np.zeros(node_count, dtype=np.int64)
        return np.asarray(node_class, dtype=np.int64).reshape(-1), np.asarray(first, dtype=np.int64)

    @property
    def node_class(self) -> np.ndarray:
        """`[N]` class of each node by typical-shape eligibility."""
        return self._node_classes[0]

    @property
    def representative(self) -> np.ndarray:
        """`[K]` one node of each class."""
        return self._node_classes[1]

    @cached_property
    def cpu_thresholds(self) -> np.ndarray:
        """Sorted distinct CPU of the GPU shapes."""
        return np.unique(self.shapes.cpu_milli)

    @cached_property
    def _cpu_thresholds(self) -> list[int]:
        return self.cpu_thresholds.tolist()

    def nodes(self, cpu_free: np.ndarray, gpu_free: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """`[M]` fragmented milli of M node states of the nodes `nodes`."""
        return fragmentation_milli(cpu_free, gpu_free, self.shapes, nodes)

    def state(self, cpu_free: int, device_free: Sequence[int], node_class: int) -> int:
        """Fragmented milli of one node of `node_class` with `cpu_free` and `device_free`
        (free milli per device; devices with none may be left out)."""
        partial = tuple(sorted(free for free in device_free if free < WHOLE))
        return self.split_state(cpu_free, len(device_free) - len(partial), partial, node_class)

    def split_state(self, cpu_free: int, whole_devices: int, partial_free: tuple[int, ...], node_class: int) -> int:
        """`state` of a node with `whole_devices` wholly free devices and the partly used
        ones' free milli `partial_free` (sorted): the form CP-SAT's device states come in,
        looked up without building a device list."""
        key = (node_class, bisect_right(self._cpu_thresholds, cpu_free), whole_devices, partial_free)
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = self._one_state(cpu_free, whole_devices, partial_free, node_class)
        return value

    def _one_state(self, cpu_free: int, whole_devices: int, partial_free: tuple[int, ...], node_class: int) -> int:
        """`fragmentation_milli` of one node state in plain Python: the same integers, at a
        tenth of the cost of a one-row numpy call (thresholds are at most one device's
        milli, so wholly free devices always meet them)."""
        total = whole_devices * WHOLE + sum(partial_free)
        ineligible, columns = self._by_class(node_class)
        weighted = total * (self.shapes.cpu_only_weight + ineligible)
        for threshold, shapes in columns:
            count = whole_devices + sum(1 for free in partial_free if free >= threshold)
            below = sum(free for free in partial_free if free < threshold)
            for devices, cpu_milli, weight in shapes:
                weighted += weight * (below if count >= devices and cpu_free >= cpu_milli else total)
        return weighted // WEIGHT_SCALE

    def _by_class(self, node_class: int) -> tuple[int, list[tuple[int, list[tuple[int, int, int]]]]]:
        """(weight of the GPU shapes a node of `node_class` may not take, and per threshold
        the (devices, CPU, weight) of those it may), built once per class."""
        known = self._classes.get(node_class)
        if known is None:
            shapes = self.shapes
            eligible = shapes.eligible[:, int(self.representative[node_class])] if shapes.weight.size else ()
            ineligible = 0
            columns: dict[int, list[tuple[int, int, int]]] = {}
            for t, may in enumerate(eligible):
                if not may:
                    ineligible += int(shapes.weight[t])
                    continue
                threshold = int(shapes.thresholds[shapes.column[t]])
                columns.setdefault(threshold, []).append((int(shapes.devices[t]), int(shapes.cpu_milli[t]), int(shapes.weight[t])))
            known = self._classes[node_class] = (ineligible, sorted(columns.items()))
        return known


def packing_measure(
    snapshot: Snapshot, typical: Sequence[TypicalShape] = (), *, problem: Problem | None = None
) -> PackingMeasure:
    """The snapshot's packing measure (once per snapshot and `typical`, `solver.memo`):
    over `typical` when given (the operator's, `--typical-shapes`, the API's), else over the
    pending pods' shapes (`typical_shapes_of`). Keyed by the prepared shapes, which stand for
    the `typical` tuple by identity (`_prepared`): hashing the tuple's shapes on every cycle
    cost as much as the lookup saved."""

    def build() -> PackingMeasure:
        if typical:
            return PackingMeasure(_configured(snapshot, typical))
        return PackingMeasure(typical_shapes_of(snapshot, problem if problem is not None else build_problem(snapshot)))

    return memoized(snapshot, ("packing_measure", _prepared(typical) if typical else None), build)
