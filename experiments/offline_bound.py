"""The offline bound of the FGD protocol: the most GPU any policy could have placed on a
seed, had it known every arrived pod at once — so each table says how far a policy is
from the best possible, not only from the other policies.

Input: the node list and one seed's arrived pods (`seed_bound` tunes them with
`experiments.fgd.fgd_workload`, exactly as the protocol feeds the policies). Output: a
frozen `OfflineBound`: GPU milli no placement of those pods exceeds, as % of capacity
(the protocol's headline column: no policy's allocation at 130 % arrived is above it),
which shapes its optimum leaves out, and how full it leaves each node class.

The model, one integer program over classes of identical nodes (CPU, memory, GPU count,
GPU model) and shapes of identical pods (CPU, memory, GPU count, milli per device,
allowed models); pods without GPUs are left out, they can only take room:
  - x[s, c] ≥ 0 integer: pods of shape s on nodes of class c, only where one such pod
    fits an empty node of c (its model allowed), at most `arrived[s]` over all classes;
  - per (shape, class): x ≤ nodes · the most pods of s one node of c holds alone;
  - per class, summed over its nodes: CPU, memory;
  - per class, devices: whole-GPU pods' devices + D[c] ≤ the class's devices, where D[c]
    (integer) counts the devices that hold shares (a device holds one whole-GPU pod or
    shares, never both), and the shares' milli ≤ 1000 · D[c];
  - share patterns: z[p] ≥ 0 integer devices filled as pattern p, a maximal multiset of
    the arrived share sizes within 1,000 milli (`share_patterns`; 20 sizes in openb →
    1,871 patterns); Σ z = Σ D, and per size, shares placed ≤ Σ z[p] · its count in p.
    Example: two 810-milli shares need two devices, however much milli the devices'
    sum leaves; 470 + 470 leaves 60 that only a 50 fills;
  - objective: maximise GPU milli placed.

Why it bounds every policy: take any placement the protocol allows (`ClusterState.bind`
checks each pod: CPU, memory, model, `num_gpu` distinct devices each with room). Count
its pods per shape and class as x, its share-holding devices per class as D, and give
each such device a maximal pattern that contains its shares (one exists: add shares
until none fits) as z: every constraint above is a sum, over the class's nodes or the
devices, of something that holds on each node or device, so (x, D, z) is feasible and
its objective is the placement's GPU milli. The integer optimum is therefore ≥ every
placement of the seed's arrived pods — in particular ≥ what any policy holds at the end,
and the end is its largest allocation (no pod leaves). The solver is `solver.bound`'s
`lp_solver` (HiGHS when pulp finds it, else CBC), asked for a zero optimality gap. When
the time limit ends the search first, the LP relaxation's optimum is reported instead
(still a bound, weaker) and `method` says so.

How tight: what it relaxes is the per-node packing — a class is one big node for CPU
and memory, and shares are packed per device but not per node. `offline_packing` places
the same pods offline (largest first, every bind checked): a lower bound on the offline
optimum, so the optimum lies between the two (measured in docs/results.md).

Not promised: the bound at arrived levels below 130 % (it bounds them too, more loosely:
fewer pods have arrived), nor any order: an offline optimum need not be reachable online.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pulp

from experiments.cluster_state import WHOLE, ClusterState, best_fit_devices, requests_of
from experiments.fgd import TUNE_RATIO, fgd_workload
from experiments.trace_openb import GPU_MODELS, OpenbNodes, OpenbPods, load_nodes, load_pods
from solver.bound import lp_solver

__all__ = [
    "TIME_LIMIT_S",
    "MAX_SHARE_PATTERNS",
    "NodeClasses",
    "PodShapes",
    "ShapeOutcome",
    "ClassOutcome",
    "OfflineBound",
    "node_classes",
    "pod_shapes",
    "share_patterns",
    "offline_bound",
    "seed_bound",
    "seed_bounds",
    "offline_packing",
]

TIME_LIMIT_S = 60.0
"""Per MIP solve; above what the slowest default-trace seed took (docs/results.md,
"Offline bound: how far from the best possible")."""
MAX_SHARE_PATTERNS = 50_000
"""Past this many share patterns (many distinct share sizes) the pattern rows are left
out: the bound stays valid on the milli row alone, only looser."""

BoundMethod = Literal["mip", "lp"]


@dataclass(frozen=True, eq=False)
class NodeClasses:
    """Identical nodes grouped: `[C]` columns, `nodes` how many of each."""

    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpus: np.ndarray
    model: np.ndarray  # index into GPU_MODELS, −1: no GPU
    nodes: np.ndarray

    @property
    def count(self) -> int:
        return int(self.nodes.size)

    def label(self, c: int) -> str:
        """`"549 × G2 8 GPU, 96 CPU"`."""
        model = GPU_MODELS[int(self.model[c])] if self.model[c] >= 0 else "CPU"
        return f"{int(self.nodes[c])} × {model} {int(self.gpus[c])} GPU, {int(self.cpu_milli[c]) // 1000} CPU"


@dataclass(frozen=True, eq=False)
class PodShapes:
    """Identical GPU pods grouped: `[S]` columns, `arrived` how many of each arrived."""

    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray  # per device
    spec: np.ndarray  # allowed models, bitmask over GPU_MODELS (0: any)
    arrived: np.ndarray

    @property
    def count(self) -> int:
        return int(self.arrived.size)

    @property
    def gpu_milli_per_pod(self) -> np.ndarray:
        return self.num_gpu * self.gpu_milli

    @property
    def shared(self) -> np.ndarray:
        """`[S]` bool: a share of a device (1–999 milli), not whole devices."""
        return self.gpu_milli < WHOLE


@dataclass(frozen=True)
class ShapeOutcome:
    """One pod shape: how many arrived, how many the bound's optimum places, and the most
    an empty cluster holds of it alone (capped by arrived). Counts are fractional only
    when `method` is "lp"."""

    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    spec: int
    arrived: int
    in_bound: float
    at_most: int

    @property
    def left_out(self) -> float:
        return self.arrived - self.in_bound


@dataclass(frozen=True)
class ClassOutcome:
    """One node class in the bound's optimum: its GPU and CPU capacity and what is used."""

    label: str
    gpu_milli: int
    gpu_milli_used: float
    cpu_milli: int
    cpu_milli_used: float


@dataclass(frozen=True)
class OfflineBound:
    """GPU milli no placement of the arrived pods exceeds (see the module docstring)."""

    capacity_milli: int
    bound_milli: float
    method: BoundMethod
    solve_seconds: float
    shapes: tuple[ShapeOutcome, ...]
    classes: tuple[ClassOutcome, ...]
    share_devices: float  # devices holding shares in the optimum
    counts: np.ndarray = field(repr=False)  # [S, C] pods of `pod_shapes`' shape s on `node_classes`' class c in the optimum

    @property
    def share_remainder_milli(self) -> float:
        """GPU milli the optimum leaves free on devices that hold shares: what share sizes
        cannot fill (e.g. 190 beside an 810 share); the rest of `capacity − bound` is idle
        whole devices."""
        return WHOLE * self.share_devices - sum(o.gpu_milli * o.num_gpu * o.in_bound for o in self.shapes if o.gpu_milli < WHOLE)

    @property
    def bound_pct(self) -> float:
        """% of GPU capacity: the protocol's allocation at 130 % is at most this."""
        return 100.0 * self.bound_milli / self.capacity_milli


def node_classes(nodes: OpenbNodes) -> NodeClasses:
    """Nodes alike in CPU, memory, GPU count and model; 1,213 openb GPU nodes → 15 classes."""
    columns = np.stack([nodes.cpu_milli, nodes.memory_mib, nodes.gpus, nodes.model], axis=1)
    unique, counts = np.unique(columns, axis=0, return_counts=True)
    return NodeClasses(*(unique[:, i].copy() for i in range(4)), nodes=counts)


def pod_shapes(pods: OpenbPods) -> PodShapes:
    """Pods alike in CPU, memory, GPU count, milli per device and allowed models; pods
    without a GPU are left out (they add nothing to the objective)."""
    gpu = pods.num_gpu > 0
    columns = np.stack([pods.cpu_milli, pods.memory_mib, pods.num_gpu, pods.gpu_milli, pods.gpu_spec], axis=1)[gpu]
    if not columns.size:
        empty = np.zeros(0, dtype=np.int64)
        return PodShapes(empty, empty, empty, empty, empty, arrived=empty)
    unique, counts = np.unique(columns, axis=0, return_counts=True)
    return PodShapes(*(unique[:, i].copy() for i in range(5)), arrived=counts)


def share_patterns(sizes: list[int], *, limit: int = MAX_SHARE_PATTERNS) -> list[tuple[int, ...]] | None:
    """Maximal multisets of share sizes one device holds, as counts per size (in `sizes`'
    order): nothing more of any size fits. None past `limit` patterns.

    Example: sizes (300, 500) → (3, 0) and (1, 1) and (0, 2); (2, 0) is not maximal."""
    smallest = min(sizes)
    out: list[tuple[int, ...]] = []

    def walk(i: int, room: int, counts: list[int]) -> bool:
        if i == len(sizes):
            if room < smallest:
                out.append(tuple(counts))
            return len(out) <= limit
        return all(walk(i + 1, room - k * sizes[i], counts + [k]) for k in range(room // sizes[i], -1, -1))

    return out if walk(0, WHOLE, []) else None


def _per_node_most(shapes: PodShapes, classes: NodeClasses) -> np.ndarray:
    """`[S, C]` pods of a shape one node of a class holds with nothing else, 0 where one
    does not fit (CPU, memory, devices or model)."""
    big = np.iinfo(np.int64).max // 4

    def most(need: np.ndarray, have: np.ndarray) -> np.ndarray:
        return np.where(need[:, None] > 0, have[None, :] // np.maximum(need[:, None], 1), big)

    per_device = np.where(shapes.shared, WHOLE // np.maximum(shapes.gpu_milli, 1), 1)
    devices = (classes.gpus[None, :] * per_device[:, None]) // shapes.num_gpu[:, None]
    held = np.minimum(np.minimum(most(shapes.cpu_milli, classes.cpu_milli), most(shapes.memory_mib, classes.memory_mib)), devices)
    model_bit = np.where(classes.model >= 0, np.left_shift(1, np.maximum(classes.model, 0)), 0)
    model_ok = (shapes.spec[:, None] == 0) | ((shapes.spec[:, None] & model_bit[None, :]) != 0)
    fits = model_ok & (shapes.num_gpu[:, None] <= classes.gpus[None, :])
    return np.where(fits, held, 0)


def offline_bound(nodes: OpenbNodes, pods: OpenbPods, *, time_limit_s: float = TIME_LIMIT_S) -> OfflineBound:
    """The bound for `pods` (the arrived pods, all known at once) on `nodes`."""
    started = time.perf_counter()
    classes, shapes = node_classes(nodes), pod_shapes(pods)
    per_node = _per_node_most(shapes, classes)
    most = per_node * classes.nodes[None, :]
    model = pulp.LpProblem("offline_bound", pulp.LpMaximize)

    # Variables: pods of each shape per class where one fits; share-holding devices per class.
    x: dict[tuple[int, int], pulp.LpVariable] = {}
    for s, c in zip(*np.nonzero(most)):
        high = int(min(shapes.arrived[s], most[s, c]))
        x[int(s), int(c)] = model.add_variable(f"pods_on[{s},{c}]", 0, high, cat=pulp.LpInteger)
    on_class: dict[int, list[int]] = {c: [] for c in range(classes.count)}
    for s, c in x:
        on_class[c].append(s)
    share_devices = {
        c: model.add_variable(f"share_devices[{c}]", 0, int(classes.nodes[c] * classes.gpus[c]), cat=pulp.LpInteger)
        for c in range(classes.count)
        if any(shapes.shared[s] for s in on_class[c])
    }

    # Each shape places at most the pods of it that arrived.
    for s in range(shapes.count):
        terms = [x[s, c] for c in range(classes.count) if (s, c) in x]
        if terms:
            model += pulp.lpSum(terms) <= int(shapes.arrived[s]), f"arrived[{s}]"

    # Each class holds, summed over its nodes, at most its CPU and memory.
    for c, placed in on_class.items():
        if not placed:
            continue
        n = int(classes.nodes[c])
        model += pulp.lpSum(int(shapes.cpu_milli[s]) * x[s, c] for s in placed) <= n * int(classes.cpu_milli[c]), f"cpu[{c}]"
        model += pulp.lpSum(int(shapes.memory_mib[s]) * x[s, c] for s in placed) <= n * int(classes.memory_mib[c]), f"memory[{c}]"
        # A device holds one whole-GPU pod or shares: whole devices + share devices ≤ devices.
        whole = [int(shapes.num_gpu[s]) * x[s, c] for s in placed if not shapes.shared[s]]
        shares = [s for s in placed if shapes.shared[s]]
        devices = share_devices.get(c)
        model += pulp.lpSum(whole + ([devices] if devices is not None else [])) <= n * int(classes.gpus[c]), f"devices[{c}]"
        if devices is None:
            continue
        # Shares fit their devices: Σ milli within the share devices.
        model += pulp.lpSum(int(shapes.num_gpu[s] * shapes.gpu_milli[s]) * x[s, c] for s in shares) <= WHOLE * devices, f"share_milli[{c}]"

    # Share devices are filled as patterns: per size, shares ≤ what the patterns hold.
    sizes = sorted(set(shapes.gpu_milli[shapes.shared].tolist()))
    patterns = share_patterns(sizes) if share_devices else None
    if patterns:
        filled = [model.add_variable(f"pattern[{i}]", 0, None, cat=pulp.LpInteger) for i in range(len(patterns))]
        model += pulp.lpSum(filled) == pulp.lpSum(share_devices.values()), "patterns"
        for j, size in enumerate(sizes):
            used = [int(shapes.num_gpu[s]) * var for (s, _), var in x.items() if shapes.shared[s] and shapes.gpu_milli[s] == size]
            held = [pattern[j] * var for pattern, var in zip(patterns, filled) if pattern[j]]
            model += pulp.lpSum(used) <= pulp.lpSum(held), f"share_size[{size}]"

    # Objective: GPU milli placed.
    model += pulp.lpSum(int(shapes.gpu_milli_per_pod[s]) * var for (s, _), var in x.items())

    value, method = _solve(model, time_limit_s=time_limit_s)
    counts = {key: float(var.varValue or 0.0) for key, var in x.items()}
    placed = np.zeros((shapes.count, classes.count))
    for (s, c), count in counts.items():
        placed[s, c] = count
    in_bound = np.zeros(shapes.count)
    gpu_used = np.zeros(classes.count)
    cpu_used = np.zeros(classes.count)
    for (s, c), count in counts.items():
        in_bound[s] += count
        gpu_used[c] += count * shapes.gpu_milli_per_pod[s]
        cpu_used[c] += count * shapes.cpu_milli[s]
    shape_rows = tuple(
        ShapeOutcome(
            cpu_milli=int(shapes.cpu_milli[s]), memory_mib=int(shapes.memory_mib[s]), num_gpu=int(shapes.num_gpu[s]),
            gpu_milli=int(shapes.gpu_milli[s]), spec=int(shapes.spec[s]), arrived=int(shapes.arrived[s]),
            in_bound=_count(in_bound[s], method), at_most=int(min(shapes.arrived[s], most[s].sum())),
        )
        for s in range(shapes.count)
    )  # fmt: skip
    class_rows = tuple(
        ClassOutcome(
            label=classes.label(c), gpu_milli=int(classes.nodes[c] * classes.gpus[c]) * WHOLE, gpu_milli_used=float(gpu_used[c]),
            cpu_milli=int(classes.nodes[c] * classes.cpu_milli[c]), cpu_milli_used=float(cpu_used[c]),
        )
        for c in range(classes.count)
    )  # fmt: skip
    return OfflineBound(
        capacity_milli=nodes.gpu_milli_total,
        bound_milli=value,
        method=method,
        solve_seconds=time.perf_counter() - started,
        shapes=shape_rows,
        classes=class_rows,
        share_devices=float(sum(var.varValue or 0.0 for var in share_devices.values())),
        counts=placed,
    )


def _count(value: float, method: BoundMethod) -> float:
    return float(round(value)) if method == "mip" else value


def _solve(model: pulp.LpProblem, *, time_limit_s: float) -> tuple[float, BoundMethod]:
    """(the optimum's bound, how it was found): the MIP's proven optimum, else — the time
    limit hit first — the LP relaxation's optimum."""
    if not model.variables():
        return 0.0, "mip"
    model.solve(_exact(lp_solver(time_limit_s)))
    if model.sol_status == pulp.LpSolutionOptimal:
        return float(pulp.value(model.objective)), "mip"
    for variable in model.variables():
        variable.cat = pulp.LpContinuous
    model.solve(lp_solver(max(time_limit_s, TIME_LIMIT_S)))  # an LP of this size takes well under a second
    if model.sol_status != pulp.LpSolutionOptimal:
        raise RuntimeError(f"the offline bound's LP relaxation did not solve: {pulp.LpStatus[model.status]}")
    return float(pulp.value(model.objective)), "lp"


def _exact(solver: pulp.LpSolver) -> pulp.LpSolver:
    """`solver` asked for the optimum itself: HiGHS stops within a 1e-4 relative gap by
    default, and an incumbent that much short is no bound."""
    if hasattr(solver, "gapRel"):  # HiGHS through highspy keeps it as an attribute
        solver.gapRel = 0.0
    else:  # the command-line solvers (CBC, HiGHS) read it from their options
        solver.optionsDict["gapRel"] = 0.0
    return solver


def seed_bound(
    nodes: OpenbNodes,
    pods: OpenbPods,
    *,
    seed: int,
    tune_ratio: float = TUNE_RATIO,
    time_limit_s: float = TIME_LIMIT_S,
) -> OfflineBound:
    """The bound for one seed of the protocol: its tuned arrivals (`fgd_workload`), all at once."""
    order = fgd_workload(pods, nodes.gpu_milli_total, seed=seed, tune_ratio=tune_ratio)
    return offline_bound(nodes, pods.take(order), time_limit_s=time_limit_s)


def seed_bounds(
    keys: Iterable[tuple[str, int]],
    *,
    trace_dir: Path | None = None,
    tune_ratio: float = TUNE_RATIO,
    time_limit_s: float = TIME_LIMIT_S,
) -> Iterator[tuple[tuple[str, int], OfflineBound]]:
    """`((pod list, seed), its bound)` as each is solved, each key once: the bound depends on
    neither the policy nor the batch size. Each trace file is read once."""
    nodes = load_nodes(trace_dir)
    lists: dict[str, OpenbPods] = {}
    for trace, seed in dict.fromkeys(keys):
        if trace not in lists:
            lists[trace] = load_pods(trace, trace_dir)
        yield (trace, seed), seed_bound(nodes, lists[trace], seed=seed, tune_ratio=tune_ratio, time_limit_s=time_limit_s)


def offline_packing(nodes: OpenbNodes, pods: OpenbPods) -> int:
    """GPU milli that one offline placement of `pods` reaches — a lower bound on the offline
    optimum, so the optimum lies in [this, the bound]. Pods go largest first (GPU milli,
    then CPU), each to the feasible node with the fewest free devices after it (ties: the
    least free CPU), shares to their tightest device; every bind is checked by
    `ClusterState.bind`."""
    state = ClusterState(nodes)
    requests = [pod for pod in requests_of(pods) if pod.num_gpu]
    requests.sort(key=lambda pod: (-pod.total_gpu_milli, -pod.cpu_milli))
    for pod in requests:
        feasible = state.feasible(pod)
        if not feasible.any():
            continue
        candidates = np.flatnonzero(feasible)
        order = np.lexsort((state.cpu_free[candidates], state.left_total[candidates]))
        node = int(candidates[order[0]])
        devices = best_fit_devices(state.gpu_left[node, : state.gpu_count[node]].tolist(), pod)
        state.bind(pod, node, devices)
    return state.allocated_gpu_milli


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m experiments.offline_bound --seeds 42-51`: the bound alone, per seed, with
    the offline packing beside it and where the GPU the bound leaves idle is."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--trace", default="default", help="openb pod list (default, gpushare40, …)")
    parser.add_argument("--seeds", default="42-51", help="e.g. 42-51 or 42,43")
    parser.add_argument("--trace-dir", type=Path, default=None, help="folder of the openb CSVs")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="per MIP solve (s)")
    args = parser.parse_args(argv)
    seeds: list[int] = []
    for part in args.seeds.split(","):
        low, _, high = part.partition("-")
        seeds.extend(range(int(low), int(high or low) + 1))
    nodes, pods = load_nodes(args.trace_dir), load_pods(args.trace, args.trace_dir)
    print("| seed | offline bound at 130 % | method | solve | offline packing | idle in the bound: share remainders | idle whole GPUs |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    values, packed = [], []
    for seed in seeds:
        bound = seed_bound(nodes, pods, seed=seed, time_limit_s=args.time_limit)
        arrived = pods.take(fgd_workload(pods, nodes.gpu_milli_total, seed=seed))
        packing = 100.0 * offline_packing(nodes, arrived) / nodes.gpu_milli_total
        remainder = bound.share_remainder_milli
        idle_whole = bound.capacity_milli - bound.bound_milli - remainder
        print(f"| {seed} | {bound.bound_pct:.3f} | {bound.method} | {bound.solve_seconds:.1f} s | {packing:.2f} | "
              f"{remainder / WHOLE:.1f} GPU | {idle_whole / WHOLE:.1f} GPU |")  # fmt: skip
        values.append(bound.bound_pct)
        packed.append(packing)
    print(f"| mean of {len(seeds)} | {np.mean(values):.3f} | | | {np.mean(packed):.2f} | | |")


if __name__ == "__main__":
    main()
