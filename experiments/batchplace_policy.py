"""batchplace's engines as trace policies: each batch of arrivals becomes one validated
`Snapshot`, solved by `solver.place` (which runs the independent checker), and the binds
it returns are applied to the simulator's `ClusterState`.

Input: the `ClusterState` and the batch. Output: the batch's assignments. The snapshot:
- every pending pod is its own PodGroup (`min_member` 1, one task, `creation_time` = its
  arrival position, so the engine serves arrivals in order), in the `default` queue;
- what already runs is folded into the nodes — CPU and memory allocatable are what is
  free, each device's `Gpu.used_milli` what is taken ("taken by work the snapshot lists no
  pod for") — so a snapshot never lists thousands of running pods. Nothing is ever
  evicted in the FGD protocol, so nothing is lost by not naming them;
- a pod's allowed GPU models (`gpu_spec`, an OR of models) become one node label per
  distinct spec (`openb.batchplace.io/spec-<mask>: "true"` on every node whose model it
  allows) and a node selector on that label — an exact encoding of the OR;
- node order is the run's `tie_rank` (the same random-but-fixed order that breaks the
  baselines' ties), since the greedy engine gives ties to the first node.
- the engine's fragmentation score (`solver.fragmentation`, `SolveConfig.packing`) gets
  the trace's typical pods as `SolveConfig.typical_shapes` — the same shapes FGD scores
  with and the metric measures — each allowed-model spec as a node selector on its label
  (`typical_shapes`); `greedy-bestfit` turns the score off, `greedy-pending` lets the
  engine take shapes from each snapshot's pending pods, as the product does by default;
- within a batch the engine serves pods by `creation_time`: arrival order, or
  `large-first` (whole-GPU pods first) for `greedy-large-first`.

Exact pruning, so a snapshot stays small (measured: 1,213 nodes → tens to a few hundred):
a node where no pod of the batch fits is left out (the engine's own Filter would drop
it), and of nodes in the same state (free CPU, memory, model and device table — which
the engine cannot tell apart) only the first `len(batch)` in node order are kept: a batch
of k pods uses at most k nodes of a class, and the greedy engine would fill them in that
order. Node classes and `Node` objects are kept per node version (`ClusterState.version`):
a node's class is recomputed (`_NodeClasses`) and its `Node` built again only after a bind
or release changed it — and the solver, which memoizes what it derives from a `Node` on the object,
reads an unchanged node once across all the snapshots it joins.

What the engine would need to skip the snapshot altogether is written up in
docs/results.md ("What the solver needs").
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from experiments.cluster_state import WHOLE, Assignment, ClusterState, PodRequest
from experiments.fragmentation import FragTracker, TypicalPods
from models.placement import Decision
from models.snapshot import (
    DEFAULT_QUEUE,
    ColocationPolicy,
    Gpu,
    Node,
    NodeName,
    Queue,
    ReservationPolicy,
    Snapshot,
    UsagePolicy,
)
from solver.fragmentation import PackingName, TypicalShape
from solver.outcome import bound_gpu_milli
from solver.place import EngineName, SolveConfig, place

__all__ = [
    "BatchplacePolicy", "EngineAnswers", "make_batchplace_policy", "typical_shapes", "SPEC_LABEL_PREFIX", "NAMESPACE",
]  # fmt: skip

SPEC_LABEL_PREFIX = "openb.batchplace.io/spec-"
BatchOrder = Literal["arrival", "large-first"]
NAMESPACE = "openb"
MIB = 1024 * 1024
_SHARED_PARTS = {
    "queues": (Queue(name=DEFAULT_QUEUE),),
    "usage_policy": UsagePolicy(),
    "colocation_policy": ColocationPolicy(),
    "reservation_policy": ReservationPolicy(),
}
"""What every replay snapshot holds alike — Volcano's `default` queue and the default policies —
validated once and shared as instances (pydantic keeps a model instance as it is), where a
snapshot left to default them would make and validate each again per solve."""


@dataclass
class EngineAnswers:
    """Who answered each batch and whether the joint search paid: what issue-level claims
    about CP-SAT on the trace rest on.

    `answered_by` counts `engine:status` (`cpsat:FEASIBLE`, `greedy:FALLBACK:no_solution`,
    …). When CP-SAT answers, greedy is also run on the batch's snapshot and the GPU milli
    each placed compared: `beat_greedy` counts batches where CP-SAT placed strictly more,
    `behind_greedy` strictly less (a batch greedy answered ties by definition). That
    comparison's time is `comparison_seconds`, which the protocol takes out of the
    schedule call's; `place_seconds` are the `place()` calls' own."""

    answered_by: Counter[str] = field(default_factory=Counter)
    beat_greedy: int = 0
    behind_greedy: int = 0
    comparison_seconds: float = 0.0
    place_seconds: list[float] = field(default_factory=list)

    def record(self, snapshot: Snapshot, decision: Decision, config: SolveConfig) -> None:
        cause = f":{decision.fallback.cause}" if decision.fallback is not None else ""
        self.answered_by[f"{decision.engine}:{decision.status}{cause}"] += 1
        self.place_seconds.append(decision.solve_seconds)
        if decision.engine != "cpsat":
            return
        started = time.perf_counter()
        greedy = place(snapshot, replace(config, engine="greedy"))
        self.comparison_seconds += time.perf_counter() - started
        placed = bound_gpu_milli(snapshot, decision.placement)
        by_greedy = bound_gpu_milli(snapshot, greedy.placement)
        self.beat_greedy += placed > by_greedy
        self.behind_greedy += placed < by_greedy

    @property
    def batches(self) -> int:
        return sum(self.answered_by.values())

    @property
    def fallbacks(self) -> int:
        return sum(n for key, n in self.answered_by.items() if ":FALLBACK" in key)


class BatchplacePolicy:
    """One `solver.place` call per batch; see the module docstring."""

    def __init__(
        self,
        engine: EngineName,
        *,
        name: str,
        time_limit_s: float = 1.0,
        prune: bool = True,
        packing: PackingName = "fragmentation",
        typical: TypicalPods | None = None,
        order: BatchOrder = "arrival",
        partition_parts: int = 1,
    ):
        self.name = name
        self.engine = engine
        self.prune = prune
        self.order = order
        self.specs: tuple[int, ...] = ()
        shapes: tuple[TypicalShape, ...] = ()
        if typical is not None:
            shapes = typical_shapes(typical)
            self.specs = tuple(sorted({int(s) for s, g in zip(typical.spec.tolist(), typical.num_gpu.tolist()) if s and g}))
        self.config = SolveConfig(
            engine=engine, time_limit_s=time_limit_s, workers=1, packing=packing, typical_shapes=shapes,
            partition_parts=partition_parts,
        )  # fmt: skip
        self._nodes: list[Node | None] = []  # per node row: the validated Node last built
        self._built_version = np.zeros(0, dtype=np.int64)  # per node row: the version it was built at, −1 none
        self._classes = _NodeClasses()
        self._row_of: tuple[object, dict[str, int]] = (None, {})  # (node list, name → row), for the binds
        self.snapshot_nodes: list[int] = []  # size of each solve's snapshot, for the report
        self.answers = EngineAnswers()

    def schedule(self, state: ClusterState, pods: Sequence[PodRequest]) -> list[Assignment | None]:
        snapshot = self.snapshot(state, pods)
        if snapshot is None:
            return [None] * len(pods)
        decision = place(snapshot, self.config)
        self.snapshot_nodes.append(len(snapshot.nodes))
        self.answers.record(snapshot, decision, self.config)
        if self._row_of[0] is not state.nodes:
            self._row_of = (state.nodes, {name: n for n, name in enumerate(state.nodes.names)})
        row_of = self._row_of[1]
        by_pod = {f"{NAMESPACE}/p{pod.index}": pod for pod in pods}
        placed: dict[int, Assignment] = {}
        for bind in decision.placement.binds:
            pod = by_pod[bind.pod]
            placed[pod.index] = state.bind(pod, row_of[bind.node], bind.gpus)
        return [placed.get(pod.index) for pod in pods]

    def snapshot(self, state: ClusterState, pods: Sequence[PodRequest]) -> Snapshot | None:
        """The snapshot `schedule` solves for `pods` now (module docstring); None when no node
        can take any of them."""
        new_specs = {pod.spec for pod in pods if pod.spec} - set(self.specs)
        if new_specs:
            self.specs = tuple(sorted({*self.specs, *new_specs}))
            self._built_version[:] = -1  # labels change: every Node is built again
        rows = self._candidate_nodes(state, pods)
        if rows.size == 0:
            return None
        return Snapshot.model_validate(
            {
                **_SHARED_PARTS,
                "nodes": self._snapshot_nodes(state, rows),
                "pod_groups": [_pod_group(pod, at) for pod, at in zip(pods, _service_order(pods, self.order))],
                "pods": [_pending_pod(pod) for pod in pods],
            }
        )

    def _candidate_nodes(self, state: ClusterState, pods: Sequence[PodRequest]) -> np.ndarray:
        """Node rows for the snapshot, in tie order: see "Exact pruning" above."""
        fits = np.zeros(state.node_count, dtype=bool)
        for pod in pods:
            fits |= state.feasible(pod)
        rows = np.flatnonzero(fits) if self.prune else np.arange(state.node_count)
        if self.prune and rows.size > len(pods):
            cls = self._classes.of(state)[rows]
            order = np.lexsort((state.tie_rank[rows], cls))
            sorted_cls = cls[order]
            at = np.arange(order.size)
            first = np.ones(order.size, dtype=bool)  # where each class starts in `order`
            first[1:] = sorted_cls[1:] != sorted_cls[:-1]
            position = at - np.maximum.accumulate(np.where(first, at, 0))  # place within its class
            rows = rows[order[position < len(pods)]]
        return rows[np.argsort(state.tie_rank[rows], kind="stable")]

    def _snapshot_nodes(self, state: ClusterState, rows: np.ndarray) -> list[Node]:
        """The `Node` of each row, built again only when its version moved since it was built
        (found for all rows at once: most of a snapshot's nodes are unchanged)."""
        if self._built_version.size != state.node_count:
            self._nodes = [None] * state.node_count
            self._built_version = np.full(state.node_count, -1, dtype=np.int64)
        stale = rows[self._built_version[rows] != state.version[rows]]
        for n in stale.tolist():
            self._nodes[n] = self._node(state, n)
        self._built_version[stale] = state.version[stale]
        nodes = self._nodes
        return [nodes[n] for n in rows.tolist()]  # type: ignore[misc]  # every row is built above

    def _node(self, state: ClusterState, n: int) -> Node:
        count = int(state.gpu_count[n])
        bit = int(state.model_bit[n])
        return Node(
            name=NodeName(state.nodes.names[n]),
            allocatable={"cpu": int(state.cpu_free[n]), "memory": int(state.memory_free[n]) * MIB, "gpu": count * WHOLE},
            labels={f"{SPEC_LABEL_PREFIX}{spec}": "true" for spec in self.specs if spec & bit},
            gpu_model=None,
            gpus=tuple(Gpu(index=g, used_milli=WHOLE - int(state.gpu_left[n, g])) for g in range(count)),
        )


class _NodeClasses:
    """Which nodes are in the same state, as class ids (`of(state)[n]`), kept up to date
    incrementally: a node's class is recomputed only when its `ClusterState.version` has
    moved since it was last computed, so a bind costs one node's signature, not a sort of
    the cluster's. The state is free CPU, free memory, GPU model and free milli per device
    (what "Exact pruning" says the engine cannot tell apart); equal states get equal ids,
    whichever came first, so the partition is the same as one computed afresh."""

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self._class_of = np.zeros(0, dtype=np.int64)
        self._version = np.zeros(0, dtype=np.int64)  # per node: the version its class is of
        self._ids: dict[tuple[int, int, int, tuple[int, ...]], int] = {}

    def of(self, state: ClusterState) -> np.ndarray:
        """`[N]` class id of every node now (read-only: the next call may change it)."""
        if state is not self._state:  # another cluster: nothing computed so far applies
            self._state = state
            self._class_of = np.zeros(state.node_count, dtype=np.int64)
            self._version = np.full(state.node_count, -1, dtype=np.int64)
            self._ids = {}
        stale = np.flatnonzero(state.version != self._version)
        if stale.size:
            signatures = zip(
                state.cpu_free[stale].tolist(), state.memory_free[stale].tolist(), state.model[stale].tolist(),
                map(tuple, state.gpu_left[stale].tolist()),
            )  # fmt: skip
            ids = self._ids
            self._class_of[stale] = [ids.setdefault(signature, len(ids)) for signature in signatures]
            self._version[stale] = state.version[stale]
        return self._class_of


def typical_shapes(typical: TypicalPods) -> tuple[TypicalShape, ...]:
    """The trace's typical pods as the engine's `SolveConfig.typical_shapes`: a spec
    becomes the node selector on its label. Example: 2 × 1000 milli, spec V100 (bit 5),
    8 CPUs → `TypicalShape(8000, 2000, w, (("openb.batchplace.io/spec-32", "true"),))`."""
    shapes = []
    for cpu, milli, count, spec, weight in zip(
        typical.cpu_milli.tolist(), typical.gpu_milli.tolist(), typical.num_gpu.tolist(),
        typical.spec.tolist(), typical.freq.tolist(),
    ):  # fmt: skip
        gpu = count * WHOLE if milli >= WHOLE else (milli if count else 0)
        selector = ((f"{SPEC_LABEL_PREFIX}{spec}", "true"),) if spec and count else ()
        shapes.append(TypicalShape(cpu_milli=cpu, gpu_milli=gpu, weight=weight, node_selector=selector))
    return tuple(shapes)


def _requests(pod: PodRequest) -> dict[str, int]:
    requests = {"cpu": pod.cpu_milli, "memory": pod.memory_mib * MIB}
    if pod.num_gpu:
        requests["gpu"] = pod.num_gpu * WHOLE if pod.whole_devices else pod.gpu_milli
    return requests


def _service_order(pods: Sequence[PodRequest], order: BatchOrder) -> list[float]:
    """`creation_time` per pod, which is the order the engine serves them in: arrival
    order, or whole-GPU pods first (most devices first), then shares (largest first), then
    CPU-only pods, arrival order among equals. Example: arrivals (250 m, 2 GPUs, CPU-only,
    1 GPU) → served 2 GPUs, 1 GPU, 250 m, CPU-only."""
    if order == "arrival":
        return [float(pod.index) for pod in pods]
    ranked = sorted(range(len(pods)), key=lambda i: (-pods[i].whole_devices, -pods[i].total_gpu_milli, i))
    at = [0.0] * len(pods)
    for position, i in enumerate(ranked):
        at[i] = float(pods[0].index + position)
    return at


def _pod_group(pod: PodRequest, creation_time: float) -> dict[str, object]:
    task: dict[str, object] = {"name": "main", "min_available": 1, "requests": _requests(pod)}
    if pod.spec and pod.num_gpu:
        task["node_selector"] = {f"{SPEC_LABEL_PREFIX}{pod.spec}": "true"}
    return {
        "namespace": NAMESPACE,
        "name": f"p{pod.index}",
        "min_member": 1,
        "creation_time": creation_time,
        "tasks": [task],
    }


def _pending_pod(pod: PodRequest) -> dict[str, object]:
    return {
        "namespace": NAMESPACE,
        "name": f"p{pod.index}",
        "phase": "pending",
        "pod_group": f"{NAMESPACE}/p{pod.index}",
        "task": "main",
        "requests": _requests(pod),
    }


def make_batchplace_policy(
    name: str, *, state: ClusterState, tracker: FragTracker, time_limit_s: float = 1.0, partition_parts: int = 1
) -> object:
    """`greedy` / `cpsat` / `auto`: the engine through `solver.place`, its fragmentation score fed
    the trace's typical pods (as FGD's is); `greedy-bestfit`: the engine's plain best fit
    (`packing="best-fit"`); `greedy-pending`: the fragmentation score with typical shapes
    taken from each snapshot's pending pods only (what the product does when no shapes
    are configured); `greedy-frag`: the experiments-side prototype the engine score
    replaced (`experiments.frag_aware`). `partition_parts`: each batch of `cpsat` / `auto`
    solved in that many parts (`SolveConfig.partition_parts`)."""
    typical = tracker.typical
    if name in ("greedy", "cpsat", "auto"):
        return BatchplacePolicy(name, name=name, time_limit_s=time_limit_s, typical=typical, partition_parts=partition_parts)
    if name == "greedy-large-first":
        return BatchplacePolicy("greedy", name=name, time_limit_s=time_limit_s, typical=typical, order="large-first")
    if name == "greedy-bestfit":
        return BatchplacePolicy("greedy", name=name, time_limit_s=time_limit_s, packing="best-fit")
    if name == "greedy-pending":
        return BatchplacePolicy("greedy", name=name, time_limit_s=time_limit_s)
    if name == "greedy-frag":
        from experiments.frag_aware import FragAwareBatch

        return FragAwareBatch(tracker)
    raise ValueError(f"unknown batchplace policy {name!r}")
