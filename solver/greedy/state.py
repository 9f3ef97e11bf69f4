"""The greedy engine's mutable cycle state: free capacity, a transaction log, and the
vectorized Filter and Score over nodes (kube-scheduler's FilterPlugin / ScorePlugin,
as numpy masks and scores over all N nodes at once).

Input: a `Problem` (copied, never written) and its `Snapshot`. The engine (`greedy.py`)
drives it: `place_batch` puts up to k pods of one task on the best-fitting nodes, `evict`
frees a running pod, and every change goes to a log so that `rollback(mark)` undoes a
PodGroup's tentative binds and evictions — Volcano's `Statement`
(`pkg/scheduler/framework/statement.go`), without copying the arrays per PodGroup.

Filter (one pod of a task fits node n): eligible (precomputed), every requested resource
free, whole-GPU pods need `k` wholly free devices (nothing on them), a fractional pod
needs one device with its milli free, a single-numa-node pod needs one NUMA cell with its
devices, cpu and memory (when the cell's capacity is known). Per-node device summaries —
wholly free devices (per cell too) and the most free milli on an already shared device —
are kept up to date on every bind and eviction, so the filter reads `[N]` rows, not the
`[N, Gmax]` table.

Score, smaller is better (best fit, i.e. binpacking, GPUs dominating):
  - whole-GPU pods: free milli-GPU the node has left after the pod, so a 2-GPU pod goes
    to a node with 2 free devices before one with 8;
  - fractional pods: first the free milli of the device it would take (the least free
    that still fits, so shared devices fill up and whole devices stay whole), then the
    node's free GPU;
  - pods without GPUs: the node's free GPU now, plus 1 on a GPU node, so CPU work goes to
    nodes without GPUs first, then to GPU nodes whose GPUs are all taken, idle GPU nodes
    last — the order of packing's charge for such pods (`solver.objective`, tier 6);
  - ties: what is left of the task's dominant non-GPU resource after the pod, normalized
    by the largest node's allocatable, then the node index (`argmin` takes the first).
Example: free GPUs (2, 8, 4) and a 2-GPU pod → scores (0, 6000, 2000) → node 0.
With `packing="fragmentation"` (the default, `solver.fragmentation`) nodes are ranked
first by how much the pod grows the GPU fragmentation of the typical pod shapes (FGD's
integer score), and the best-fit score above only orders nodes within a rank.
A task with preferred node affinity tries first the nodes where it misses the least
preference weight (`Problem.preference_missed`), packing ordering only nodes that miss
alike — the order of the objective's tiers, locality before packing. Preferred pod
(anti-)affinity and ScheduleAnyway spread add their weight to it (`greedy.interpod`).

Inter-pod constraints (`inter_pod`, None when the snapshot has none): a task they concern
is placed one pod at a time, each pod filtered by `InterPod.allowed` and scored afresh, as
every bind changes where the next may go; binds and evictions, and their rollbacks, update
its counts from `_apply_bind` / `_apply_eviction`.

Inside a node, devices are chosen by `choose_devices`: whole-GPU pods take devices of
one NUMA cell when some cell has enough (the cell with the fewest free devices that
suffices), else spread over as few cells as possible (unless single-numa-node: then not
at all); a fractional pod takes the device with the least free milli that fits.

Not promised: optimality — this is one greedy pass; CP-SAT improves on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from models.snapshot import GPU_MILLI_PER_DEVICE, Snapshot
from solver.dra_allocation import Shortfall
from solver.fragmentation import FragmentationScore
from solver.greedy.domain_free import DomainFree
from solver.greedy.interpod import InterPod
from solver.problem import Problem
from solver.rules import dra
from solver.rules.capacity import device_fits, fits

__all__ = ["TaskShape", "BindRecord", "CycleState", "choose_devices"]

WHOLE = GPU_MILLI_PER_DEVICE
_BIG = np.int64(1) << np.int64(62)
FIT_SHAPES_KEPT = 32
"""Pod shapes whose fit on every node `CycleState.fit_mask` keeps (a bool and a count per
node each: at 50,000 nodes, 32 of them hold about 14 MB)."""


@dataclass(frozen=True)
class TaskShape:
    """What one pod of a task asks for, ready for the hot path (Python ints, not arrays)."""

    row: int
    requests: np.ndarray  # [R]
    columns: tuple[int, ...]  # resources asked (> 0)
    gpu_milli: int
    whole_devices: int
    fractional: bool
    single_numa: bool
    cpu_milli: int
    memory_bytes: int
    dominant: int  # column of the largest relative request but gpu and pods, −1 when none
    amounts: tuple[tuple[int, int], ...]  # (column, amount) of every resource asked
    lends: bool = False  # an offline fractional pod in a cycle with lent devices: may take their room


@dataclass(frozen=True)
class BindRecord:
    pod: int
    task: int
    node: int
    slots: tuple[int, ...]  # GPU table columns
    per_device_milli: int
    cell_slot: int  # −1 when the pod holds no cell
    numa_cell: int | None  # the cell id reported in the Bind (single-numa-node pods only)
    lent: bool = False  # on a lent device: takes its lent room, not `gpu` nor online milli
    claims: dra.PodAllocation | None = None  # the DRA devices its claims got (rule `dra`)


def choose_devices(
    shape: TaskShape,
    *,
    gpu_row: Sequence[int],
    gpu_cell_row: Sequence[int],
    cell_exists_row: Sequence[bool],
    cell_cpu_row: Sequence[int],
    cell_memory_row: Sequence[int],
) -> tuple[tuple[int, ...], int] | None:
    """(GPU slots, cell slot or −1) for one pod on one node, or None when it does not fit there.

    Only device and cell shape is judged here; node-level resources are the caller's.
    Plain Python over one node's few devices: a row of 8 is cheaper as a list than as
    numpy calls. Example: free (1000, 300, 1000, 1000) on cells (0, 0, 1, 1), a 2-GPU pod
    → cell 1 (the only one with 2 whole devices) → slots (2, 3).
    """
    cells = len(cell_exists_row)
    cell_ok = [True] * cells
    if shape.single_numa:
        cell_ok = [
            bool(cell_exists_row[c]) and cell_cpu_row[c] >= shape.cpu_milli and cell_memory_row[c] >= shape.memory_bytes
            for c in range(cells)
        ]
    if shape.whole_devices:
        k = shape.whole_devices
        full_by_cell: list[list[int]] = [[] for _ in range(cells)]
        for slot, free in enumerate(gpu_row):
            if device_fits(free, WHOLE):
                full_by_cell[gpu_cell_row[slot]].append(slot)
        fitting = [c for c in range(cells) if cell_ok[c] and len(full_by_cell[c]) >= k]
        if fitting:
            cell = min(fitting, key=lambda c: (len(full_by_cell[c]), c))  # best fit: fewest free devices
            return tuple(full_by_cell[cell][:k]), cell
        if shape.single_numa or sum(len(slots) for slots in full_by_cell) < k:
            return None
        chosen: list[int] = []
        for cell in sorted(range(cells), key=lambda c: (-len(full_by_cell[c]), c)):  # fewest cells spanned
            chosen.extend(full_by_cell[cell][: k - len(chosen)])
        return tuple(sorted(chosen)), -1
    if shape.fractional:
        best_slot, best_free = -1, WHOLE + 1
        for slot, free in enumerate(gpu_row):
            if device_fits(free, shape.gpu_milli) and free < best_free and cell_ok[gpu_cell_row[slot]]:
                best_slot, best_free = slot, free
        if best_slot < 0:
            return None
        return (best_slot,), gpu_cell_row[best_slot]
    if shape.single_numa:
        fitting = [c for c in range(cells) if cell_ok[c]]
        if not fitting:
            return None
        return (), min(fitting, key=lambda c: (cell_cpu_row[c], c))
    return (), -1


class CycleState:
    """Free capacity and this cycle's binds and evictions, with an undo log."""

    def __init__(self, problem: Problem, snapshot: Snapshot):
        self.problem = problem
        self.snapshot = snapshot
        self.free = problem.free.copy()  # [R, N]
        # [N, G] online pods' free milli (a lent device's online part); offline pods with
        # fractional requests take a lent device's room in `gpu_lent` instead (−1: not lent)
        online = problem.gpu_online_free_milli
        self.gpu_free = (problem.gpu_free_milli if online is None else online).copy()
        self.gpu_lent = None if problem.gpu_lent_free_milli is None else problem.gpu_lent_free_milli.copy()
        self._takes_lent = problem.task_takes_lent
        self.cell_cpu = problem.cell_cpu_free.copy()  # [N, C]
        self.cell_memory = problem.cell_memory_free.copy()
        self.cell_exists = problem.cell_ids >= 0
        self.gpu_cell = problem.gpu_cell
        self.whole_free = (self.gpu_free == WHOLE).sum(axis=1)  # [N] wholly free devices
        # [N] binds and evictions applied or undone on each node this cycle: what changes
        # `free` and `gpu_free` of a node changes this, so what is remembered per node is
        # fresh while it is the same: the fragmentation growth
        # (`solver.fragmentation.FragmentationScore.growth`), the domain sums (`domain_free`)
        # and where each pod shape fits (`fit_mask`)
        self.node_changes = np.zeros(problem.node_count, dtype=np.int64)
        self._domain_free: DomainFree | None = None
        self._fits: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # pod shape → ([N] fits, [N] node_changes it is of)
        # [N] the most free milli on a device some fraction (or used_milli) already sits on, −1 if none
        shared = (self.gpu_free >= 0) & (self.gpu_free < WHOLE)
        self.partial_max = np.where(shared, self.gpu_free, -1).max(axis=1, initial=-1)
        cells = problem.cell_ids.shape[1]
        self.cell_whole_free = np.zeros((problem.node_count, cells), dtype=np.int64)
        for cell in range(cells):
            self.cell_whole_free[:, cell] = ((self.gpu_free == WHOLE) & (self.gpu_cell == cell)).sum(axis=1)
        self.queue_used = problem.queue_allocated.copy()  # [Q, R], subtree included
        self.binds: dict[int, BindRecord] = {}
        self.evictions: dict[int, tuple[str, int]] = {}  # pod → (reason, PodGroup index it is for)
        self.evicted_mask = np.zeros(len(problem.pod_keys), dtype=bool)  # [P] the same, as a mask
        groups = len(problem.group_keys)
        running = problem.pod_running & (problem.pod_group >= 0)
        self.running_count = np.bincount(problem.pod_group[running], minlength=groups).astype(np.int64)
        self.running_by_task = np.bincount(
            problem.pod_task_row[running], minlength=len(problem.task_keys)
        ).astype(np.int64)
        self.bound_count = np.zeros(groups, dtype=np.int64)
        self.evicted_count = np.zeros(groups, dtype=np.int64)
        self._log: list[tuple[str, object]] = []
        self._shapes: dict[int, TaskShape] = {}
        self._scale = problem.allocatable.max(axis=1, initial=0).astype(np.float64) + 1.0  # [R]
        self._scale_list = self._scale.tolist()
        self._gpu_node = (problem.allocatable[problem.gpu_column] > 0).astype(np.float64)  # [N] 1.0 on a GPU node
        self._capped = self._capped_pairs()
        self._ancestors = [np.array(path, dtype=np.int64) for path in problem.queue_ancestors]
        self.packing: FragmentationScore | None = None  # set by the engine: rank nodes by fragmentation first
        self.inter_pod = InterPod.build(snapshot, problem)  # None: no inter-pod constraint anywhere
        # DRA devices: a pod binds only where its claims are allocated (None: no pod names a claim)
        self.devices = dra.Allocator(snapshot) if dra.has_claims(snapshot) else None

    @property
    def domain_free(self) -> DomainFree:
        """Free capacity summed per topology domain, kept up to date (`greedy.domain_free`)."""
        if self._domain_free is None:
            self._domain_free = DomainFree(self.problem, self.free, self.whole_free, self.node_changes)
        return self._domain_free

    # ---- transactions ----

    def checkpoint(self) -> int:
        return len(self._log)

    def rollback(self, mark: int) -> None:
        while len(self._log) > mark:
            kind, item = self._log.pop()
            if kind == "bind":
                self._apply_bind(item, sign=-1)  # type: ignore[arg-type]
                del self.binds[item.pod]  # type: ignore[attr-defined]
            else:
                pod = item  # type: ignore[assignment]
                self._apply_eviction(pod, sign=-1)  # type: ignore[arg-type]
                del self.evictions[pod]  # type: ignore[index]

    def forget(self) -> None:
        """Commit everything logged so far: nothing before this point can be rolled back."""
        self._log.clear()

    # ---- shapes ----

    def shape(self, task_row: int) -> TaskShape:
        shape = self._shapes.get(task_row)
        if shape is None:
            problem = self.problem
            requests = problem.task_requests[task_row]
            values = requests.tolist()
            gpu_column = problem.gpu_column
            gpu_milli = values[gpu_column]
            amounts = tuple((r, amount) for r, amount in enumerate(values) if amount)
            # Only packing dimensions rank nodes: not the pod count (every pod asks one) nor a port.
            packs = problem.column_packs
            relative = [(amount / self._scale_list[r], -r) for r, amount in amounts if r != gpu_column and packs[r]]
            shape = TaskShape(
                row=task_row,
                requests=requests,
                columns=tuple(r for r, _ in amounts),
                gpu_milli=gpu_milli,
                whole_devices=gpu_milli // WHOLE if gpu_milli % WHOLE == 0 else 0,
                fractional=0 < gpu_milli < WHOLE,
                single_numa=bool(problem.task_single_numa[task_row]),
                cpu_milli=values[problem.cpu_column],
                memory_bytes=values[problem.memory_column],
                dominant=-max(relative)[1] if relative else -1,
                amounts=amounts,
                lends=0 < gpu_milli < WHOLE and self._takes_lent is not None and bool(self._takes_lent[task_row]),
            )
            self._shapes[task_row] = shape
        return shape

    # ---- Filter and Score over all nodes ----

    def fit_mask(self, shape: TaskShape, base: np.ndarray) -> np.ndarray:
        """`[N]` bool: nodes within `base` where one more pod of `shape` fits now.

        Where it fits is kept per pod shape (the `FIT_SHAPES_KEPT` asked last) and judged
        again only on the nodes whose `node_changes` count moved since: every change of what
        a node has free moves it, and a gang's binds change a few nodes while each of its
        tasks filters all of them."""
        if shape.lends:
            return self._lending_fit_mask(shape, base)
        key = (
            shape.amounts, shape.gpu_milli, shape.whole_devices, shape.fractional, shape.single_numa,
            shape.cpu_milli, shape.memory_bytes,
        )  # fmt: skip
        kept = self._fits.pop(key, None)
        if kept is None:
            kept = (self._fit(shape, slice(None)), self.node_changes.copy())
            if len(self._fits) >= FIT_SHAPES_KEPT:
                del self._fits[next(iter(self._fits))]  # the one asked longest ago
        else:
            mask, seen = kept
            changed = np.flatnonzero(self.node_changes != seen)
            if changed.size:
                mask[changed] = self._fit(shape, changed)
                seen[changed] = self.node_changes[changed]
        self._fits[key] = kept  # last: the most recently asked
        return base & kept[0]

    def _fit(self, shape: TaskShape, nodes: np.ndarray | slice) -> np.ndarray:
        """Whether one more pod of `shape` fits each of `nodes` now (a shape that lends no GPU)."""
        free = self.free[:, nodes]
        mask = fits(free, shape.requests, shape.columns)
        if not isinstance(mask, np.ndarray):  # a shape that asks nothing: every node
            mask = np.ones(free.shape[1], dtype=bool)
        if shape.single_numa:
            mask &= self.numa_fit(shape, nodes).any(axis=1)
        elif shape.whole_devices:
            mask &= self.whole_free[nodes] >= shape.whole_devices
        elif shape.fractional:
            mask &= (self.whole_free[nodes] > 0) | (self.partial_max[nodes] >= shape.gpu_milli)
        return mask

    def device_table(self, shape: TaskShape, nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """`[N, G]` (or `nodes`' rows) free milli a pod of `shape` may take per device: the
        online table, but for a lending shape a lent device's lent room, and other devices
        only where the node's `gpu` has the pod's milli left (−1 where it may not go)."""
        if not shape.lends or self.gpu_lent is None:
            return self.gpu_free[nodes]
        lent = self.gpu_lent[nodes]
        node_gpu_ok = np.asarray(self.free[self.problem.gpu_column][nodes] >= shape.gpu_milli)
        if lent.ndim == 2:
            node_gpu_ok = node_gpu_ok[:, None]
        return np.where(lent >= 0, lent, np.where(node_gpu_ok, self.gpu_free[nodes], -1))

    def without_lent(self, shape: TaskShape, rows: np.ndarray, nodes: np.ndarray | int) -> np.ndarray:
        """Device `rows` of `nodes` with, for a lending shape, lent devices left out (−1):
        preemption frees online milli, which a pod of that shape may not take there."""
        if not shape.lends or self.gpu_lent is None:
            return rows
        return np.where(self.gpu_lent[nodes] >= 0, -1, rows)

    def _lending_fit_mask(self, shape: TaskShape, base: np.ndarray) -> np.ndarray:
        """`fit_mask` of a lending shape: the node's other resources fit, and some device
        takes it (`device_table`, which holds the `gpu` check of devices not lent)."""
        gpu = self.problem.gpu_column
        columns = tuple(r for r in shape.columns if r != gpu)
        mask = base & fits(self.free, shape.requests, columns)
        if shape.single_numa:
            return mask & self.numa_fit(shape).any(axis=1)
        return mask & device_fits(self.device_table(shape), shape.gpu_milli).any(axis=1)

    def numa_fit(self, shape: TaskShape, nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """`[N, C]` (or `nodes`' rows) bool: cells that hold one more single-numa-node pod of `shape`."""
        ok = self.cell_exists[nodes] & (self.cell_cpu[nodes] >= shape.cpu_milli)
        ok &= self.cell_memory[nodes] >= shape.memory_bytes
        if shape.whole_devices:
            ok &= self.cell_whole_free[nodes] >= shape.whole_devices
        elif shape.fractional:
            device_ok = device_fits(self.device_table(shape, nodes), shape.gpu_milli)
            gpu_cell = self.gpu_cell[nodes]
            for cell in range(ok.shape[1]):
                ok[:, cell] &= (device_ok & (gpu_cell == cell)).any(axis=1)
        return ok

    def score(self, shape: TaskShape, nodes: np.ndarray) -> np.ndarray:
        """Best-fit score of each node in `nodes` (smaller first), after the preferred node
        affinity weight missed when the task has one, then the node's usage band
        (`solver.usage_tier`) when some node reports usage; see the module docstring.

        Computed over all N rows (contiguous, cheap) when `nodes` is most of the cluster,
        over the subset (fancy-indexed) when it is a small part of it."""
        dense = nodes.size * 4 >= self.problem.node_count
        pick = (lambda row: row) if dense else (lambda row: row[nodes])
        gpu_free = pick(self.free[self.problem.gpu_column])
        if shape.whole_devices:
            score = (gpu_free - shape.gpu_milli).astype(np.float64)
        elif shape.fractional:
            device_free = self._fractional_device_free(shape, None if dense else nodes)
            score = device_free * 1e5 + (gpu_free - shape.gpu_milli)
        else:  # free milli are whole numbers and the tie-break below is < 1: the 1 orders, never mixes
            score = gpu_free + pick(self._gpu_node)
        if shape.dominant >= 0:
            d = shape.dominant
            score += (pick(self.free[d]) - shape.requests[d]) * (1.0 / self._scale_list[d])
        score = score[nodes] if dense else score
        ranked = score if self.packing is None else self.packing.rank(self, shape, nodes, score)
        missed_by_class = self.problem.preference_missed_by_class[self.problem.task_eligibility_class[shape.row]]
        soft = self.inter_pod is not None and self.inter_pod.has_soft(shape.row)
        bands = self.problem.usage_band_by_class
        banded = bool(bands.any())
        if not soft and not banded and not missed_by_class.any():
            return ranked
        classes = self.problem.node_class[nodes]
        missed = missed_by_class[classes]
        if soft:
            missed = missed + self.inter_pod.preference_missed(shape.row, nodes)  # type: ignore[union-attr]
        # The objective's order: locality (preferences missed), then usage band, then packing.
        order = np.lexsort((ranked, bands[classes], missed) if banded else (ranked, missed))
        rank = np.empty(nodes.size, dtype=np.float64)
        rank[order] = np.arange(nodes.size, dtype=np.float64)
        return rank

    def _fractional_device_free(self, shape: TaskShape, nodes: np.ndarray | None) -> np.ndarray:
        """Free milli of the device a fractional pod would take on each node (all, or `nodes`):
        the least free shared device that fits, else a whole one (1000). Only nodes that
        already share a device with room need the per-device table."""
        if shape.lends:
            rows = self.device_table(shape, slice(None) if nodes is None else nodes)
            fitting = np.where((rows >= shape.gpu_milli) & (rows < WHOLE), rows, WHOLE)
            return fitting.min(axis=1, initial=WHOLE).astype(np.float64)
        partial = self.partial_max if nodes is None else self.partial_max[nodes]
        result = np.full(partial.shape, float(WHOLE))
        shared = np.flatnonzero(partial >= shape.gpu_milli)
        if shared.size:
            rows = self.gpu_free[shared if nodes is None else nodes[shared]]
            fitting = np.where((rows >= shape.gpu_milli) & (rows < WHOLE), rows, WHOLE)
            result[shared] = fitting.min(axis=1)
        return result

    def place_batch(self, shape: TaskShape, pods: list[int], base: np.ndarray, *, queue: int) -> int:
        """Bind up to `len(pods)` pods of one task, best node first; returns how many were bound.

        Binpacking keeps filling the node it chose (its score only gets better as it
        fills), so one score vector serves the whole batch: argmin, fill, next.
        """
        if not pods:
            return 0
        limit = min(len(pods), self.quota_room(queue, shape)[0])
        if limit <= 0:
            return 0
        if self.inter_pod is not None and self.inter_pod.involved(shape.row):
            return self._place_one_by_one(shape, pods[:limit], base)
        nodes = np.flatnonzero(self.fit_mask(shape, base))
        if not nodes.size:
            return 0
        score = self.score(shape, nodes)
        placed = 0
        while placed < limit:
            best = int(np.argmin(score))
            if score[best] == np.inf:
                break
            node = int(nodes[best])
            while placed < limit and self.bind(pods[placed], shape, node):
                placed += 1
            score[best] = np.inf
        return placed

    def inter_pod_base(self, row: int, base: np.ndarray) -> np.ndarray:
        """`base` less the nodes where one more pod of task `row` breaks an inter-pod filter now."""
        allowed = None if self.inter_pod is None else self.inter_pod.allowed(row)
        return base if allowed is None else base & allowed

    def _place_one_by_one(self, shape: TaskShape, pods: list[int], base: np.ndarray) -> int:
        """`place_batch` for a task under inter-pod constraints: each bind changes where the
        next pod may go and how nodes rank, so filter and score are asked again per pod."""
        placed = 0
        while placed < len(pods):
            nodes = np.flatnonzero(self.fit_mask(shape, self.inter_pod_base(shape.row, base)))
            if not nodes.size:
                break
            score = self.score(shape, nodes)
            best = int(np.argmin(score))
            if not self.bind(pods[placed], shape, int(nodes[best])):
                order = np.argsort(score, kind="stable")
                if not any(self.bind(pods[placed], shape, int(nodes[i])) for i in order[1:]):
                    break
            placed += 1
        return placed

    # ---- one node ----

    def bind(self, pod: int, shape: TaskShape, node: int) -> bool:
        """Bind `pod` on `node` if one pod of `shape` fits there now (quota is the caller's)."""
        free = self.free
        gpu = self.problem.gpu_column
        for r, amount in shape.amounts:
            if free[r, node] < amount and not (shape.lends and r == gpu):
                return False
        choice = ((), -1) if not (shape.gpu_milli or shape.single_numa) else choose_devices(
            shape,
            gpu_row=self.device_table(shape, node).tolist(),
            gpu_cell_row=self.gpu_cell[node].tolist(),
            cell_exists_row=self.cell_exists[node].tolist(),
            cell_cpu_row=self.cell_cpu[node].tolist(),
            cell_memory_row=self.cell_memory[node].tolist(),
        )
        if choice is None:
            return False
        claims = self._claims_on(pod, node)
        if claims is False:
            return False
        slots, cell_slot = choice
        record = BindRecord(
            pod=pod,
            task=shape.row,
            node=node,
            slots=slots,
            per_device_milli=WHOLE if shape.whole_devices else shape.gpu_milli,
            cell_slot=cell_slot if shape.single_numa else -1,
            numa_cell=int(self.problem.cell_ids[node, cell_slot]) if shape.single_numa else None,
            lent=self._lent_slot(shape, node, slots),
            claims=claims,
        )
        self._apply_bind(record, sign=1)
        self.binds[pod] = record
        self._log.append(("bind", record))
        return True

    def _claims_on(self, pod: int, node: int) -> dra.PodAllocation | None | Literal[False]:
        """The DRA devices `pod`'s claims get on `node` (None: it names none), False when they
        cannot be allocated there now."""
        if self.devices is None:
            return None
        problem = self.problem
        answer = self.devices.try_bind(self.snapshot.pod_by_key[problem.pod_keys[pod]], problem.node_names[node])
        return False if isinstance(answer, Shortfall) else answer

    def bind_on(
        self, pod: int, shape: TaskShape, node: int, *, gpus: tuple[int, ...], numa_cell: int | None
    ) -> None:
        """Record a bind another engine chose, on its own GPU devices and NUMA cell, to
        judge what is left after it (`solver.pending_reasons`). No fit check: the checker
        passed the placement."""
        index_row = self.problem.gpu_index[node].tolist()
        cell_row = self.problem.cell_ids[node].tolist()
        record = BindRecord(
            pod=pod,
            task=shape.row,
            node=node,
            slots=tuple(index_row.index(i) for i in gpus),
            per_device_milli=WHOLE if shape.whole_devices else shape.gpu_milli,
            cell_slot=cell_row.index(numa_cell) if shape.single_numa and numa_cell in cell_row else -1,
            numa_cell=numa_cell if shape.single_numa else None,
            lent=self._lent_slot(shape, node, tuple(index_row.index(i) for i in gpus)),
            claims=self._claims_on(pod, node) or None,
        )
        self._apply_bind(record, sign=1)
        self.binds[pod] = record
        self._log.append(("bind", record))

    def _lent_slot(self, shape: TaskShape, node: int, slots: tuple[int, ...]) -> bool:
        """Whether a pod of `shape` on `slots` of `node` takes a lent device's room."""
        return shape.lends and len(slots) == 1 and self.gpu_lent is not None and self.gpu_lent[node, slots[0]] >= 0

    def _apply_bind(self, record: BindRecord, *, sign: int) -> None:
        problem, node = self.problem, record.node
        self.node_changes[node] += 1
        shape = self._shapes[record.task]
        free = self.free
        gpu = problem.gpu_column
        for r, amount in shape.amounts:
            if not (record.lent and r == gpu):
                free[r, node] -= sign * amount
        if record.lent:
            self.gpu_lent[node, record.slots[0]] -= sign * record.per_device_milli  # type: ignore[index]
        elif record.slots:
            for slot in record.slots:
                self.gpu_free[node, slot] -= sign * record.per_device_milli
            self._recount_whole(node)
        if record.cell_slot >= 0:
            self.cell_cpu[node, record.cell_slot] -= sign * shape.cpu_milli
            self.cell_memory[node, record.cell_slot] -= sign * shape.memory_bytes
        if self.inter_pod is not None:
            self.inter_pod.update(record.pod, node, sign)
        if record.claims is not None:
            self.devices.apply(record.claims, sign=sign)  # type: ignore[union-attr]
        group = problem.pod_group[record.pod]
        self.bound_count[group] += sign
        queue = problem.group_queue[group]
        if queue >= 0:
            self.queue_used[self._ancestors[queue]] += shape.requests if sign > 0 else -shape.requests

    def evict(self, pod: int, *, reason: str, for_group: int) -> None:
        self._apply_eviction(pod, sign=1)
        self.evictions[pod] = (reason, for_group)
        self._log.append(("evict", pod))

    def _apply_eviction(self, pod: int, *, sign: int) -> None:
        """`sign=1` frees what running `pod` holds; `sign=-1` takes it back."""
        problem = self.problem
        self.evicted_mask[pod] = sign > 0
        node = int(problem.pod_node[pod])
        self.node_changes[node] += 1
        requests = problem.pod_requests[pod]
        self.free[:, node] += sign * requests
        slots, per_device = self.running_devices(pod)
        if slots:
            self.gpu_free[node, list(slots)] += sign * per_device
            self._recount_whole(node)
        cell_slot = self.running_cell_slot(pod)
        if cell_slot >= 0:
            self.cell_cpu[node, cell_slot] += sign * requests[problem.cpu_column]
            self.cell_memory[node, cell_slot] += sign * requests[problem.memory_column]
        if self.inter_pod is not None:
            self.inter_pod.update(pod, node, -sign)
        if self.devices is not None:
            self.devices.evict(self.snapshot.pod_by_key[problem.pod_keys[pod]], sign=sign)
        group = problem.pod_group[pod]
        if group >= 0:
            self.running_count[group] -= sign
            self.running_by_task[problem.pod_task_row[pod]] -= sign
            self.evicted_count[group] += sign
            queue = problem.group_queue[group]
            if queue >= 0:
                self.queue_used[self._ancestors[queue]] -= sign * requests

    def running_devices(self, pod: int) -> tuple[tuple[int, ...], int]:
        """GPU slots a running pod holds and the milli it takes on each."""
        slots = self.problem.pod_gpu_slots.get(pod, ())
        if not slots:
            return (), 0
        gpu_milli = int(self.problem.pod_requests[pod, self.problem.gpu_column])
        return slots, (WHOLE if gpu_milli >= WHOLE else gpu_milli)

    def running_cell_slot(self, pod: int) -> int:
        return self.problem.pod_cell_slot.get(pod, -1)

    def _recount_whole(self, node: int) -> None:
        """Refresh the per-node device summaries after `node`'s devices changed."""
        row = self.gpu_free[node].tolist()
        cells = self.gpu_cell[node].tolist()
        counts = [0] * self.cell_whole_free.shape[1]
        partial = -1
        for slot, free in enumerate(row):
            if free == WHOLE:
                counts[cells[slot]] += 1
            elif free > partial:
                partial = free
        self.whole_free[node] = sum(counts)
        self.cell_whole_free[node] = counts
        self.partial_max[node] = partial

    # ---- quota ----

    def _capped_pairs(self) -> list[list[tuple[int, int, int]]]:
        """Per queue: (ancestor, resource, capability) for every cap on the way to the root."""
        problem = self.problem
        pairs = []
        for ancestors in problem.queue_ancestors:
            pairs.append(
                [
                    (a, int(r), int(problem.queue_capability[a, r]))
                    for a in ancestors
                    for r in np.flatnonzero(problem.queue_capability[a] >= 0)
                ]
            )
        return pairs

    def quota_room(self, queue: int, shape: TaskShape) -> tuple[int, tuple[int, int] | None]:
        """How many more pods of `shape` the queue and its ancestors' capabilities allow,
        and the (queue, resource) that binds first (None when nothing caps)."""
        room, blocker = 1 << 62, None
        for ancestor, r, cap in self._capped[queue]:
            asked = int(shape.requests[r])
            if asked > 0:
                fits = max(0, (cap - int(self.queue_used[ancestor, r])) // asked)
                if fits < room:
                    room, blocker = fits, (ancestor, r)
        return room, blocker

    def capped(self, queue: int) -> list[tuple[int, int, int]]:
        """(ancestor, resource, capability) for every cap from `queue` to the root, the queue's
        own first (`greedy.quota_hold` asks whether one holds a PodGroup)."""
        return self._capped[queue]

    def quota_shortfall(self, queue: int, shape: TaskShape) -> np.ndarray:
        """`[R]` what the queue must give back before one more pod of `shape` fits its
        capabilities and its ancestors': the largest excess over the caps on the way to the
        root. Example: capability 3 CPU, 3 in use, a 1-CPU pod → 1 CPU."""
        short = np.zeros(len(self.problem.resource_names), dtype=np.int64)
        for ancestor, r, cap in self._capped[queue]:
            asked = int(shape.requests[r])
            if asked > 0:
                short[r] = max(int(short[r]), int(self.queue_used[ancestor, r]) + asked - cap)
        return short

