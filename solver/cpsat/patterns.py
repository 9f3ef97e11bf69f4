"""Per-node packing patterns for the CP-SAT engine: which multisets of pod shapes fit one
node of a profile (Gilmore–Gomory configurations), pooled device patterns, dominance.

Input: a node `Profile` and the pod `Shape`s eligible there. Output: a `PatternSet` —
the patterns of untracked shapes (down-closed: every sub-multiset of a pattern is one
too, so each node takes exactly one), device patterns for pooled fractions, and on
request the patterns with topology-tracked pods (`topology_patterns`). The device-level
check and each pattern's best device assignment are `cpsat.devices`'.

Two reductions, each exact where it is used:
  - *dominated* resources: a node resource that no placement its devices allow can exceed
    is marked DOMINATED, so nodes differing only there share a profile (and a cell's CPU
    likewise for single-numa-node shapes);
  - *pooled fractions*: on a profile whose other resources are all dominated (and no
    fractional shape needs a cell's CPU), node patterns leave untracked fractional shapes
    out and those pods go to per-device patterns over the devices the node patterns
    leave — any device packing is then a valid node packing. This turns 6,615 patterns of
    an empty 8-GPU node of the benchmark into 238 node patterns plus 8 device patterns.

Not promised: all patterns when there are more than `cap` — the set is then cut (the
largest shapes first, plus every homogeneous pattern) and `restricted` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solver.cpsat.devices import (
    DOMINATED,
    UNBOUNDED_PODS,
    UNKNOWN,
    WHOLE,
    Choice,
    Pattern,
    Profile,
    Shape,
    Slot,
    State,
    Walk,
    assign,
    declared_slots,
    evaluate,
    extend,
    fits_alone,
    initial_state,
    make_pattern,
    shape_rank,
    state_fragment,
    walk_patterns,
)
from solver.fragmentation import PackingMeasure

__all__ = [
    "WHOLE",
    "UNKNOWN",
    "DOMINATED",
    "Shape",
    "Profile",
    "Slot",
    "Pattern",
    "DevicePattern",
    "PatternSet",
    "build_pattern_set",
    "topology_patterns",
    "device_patterns",
    "dominated",
    "poolable",
    "poolable_shape",
    "evaluate",
    "assign",
]

@dataclass(frozen=True)
class DevicePattern:
    """Fractional pods sharing one device of `free` milli (pooled mode)."""

    counts: tuple[tuple[int, int], ...]
    used: int  # milli taken

    def count(self, shape: int) -> int:
        for index, pods in self.counts:
            if index == shape:
                return pods
        return 0


@dataclass(eq=False)
class PatternSet:
    profile: Profile
    shapes: tuple[Shape, ...]  # eligible shapes that fit alone, in node patterns or pooled
    pooled: tuple[Shape, ...]  # fractional shapes handled by device patterns (empty unless pooled mode)
    patterns: list[Pattern]  # non-empty node patterns
    empty_fragment: int  # fragmented milli of a node of this profile that gets nothing
    empty_whole: int  # wholly free devices of such a node
    partial_free: tuple[int, ...]  # free milli of each partly used device (pooled mode: device types)
    device_patterns: dict[int, list[DevicePattern]]  # device free milli → non-empty device patterns
    restricted: bool
    measure: PackingMeasure = field(repr=False)
    _index: dict[tuple[tuple[int, int], ...], Pattern] = field(default_factory=dict, repr=False)

    def find(self, counts: tuple[tuple[int, int], ...]) -> Pattern | None:
        return self._index.get(counts)

    def add(self, pattern: Pattern) -> None:
        if pattern.counts not in self._index:
            self._index[pattern.counts] = pattern
            self.patterns.append(pattern)



def dominated(
    profile: Profile, shapes: Sequence[Shape], gpu_column: int, *, pods_column: int, pending: int
) -> Profile:
    """`profile` with every node resource that can never bind set to DOMINATED: the pod
    count when the node has room for more pods than can come (`_pods_dominated`), then every
    non-GPU resource its devices already bound.

    A resource r is dominated when every shape that may come asks GPUs and the most
    r-hungry shape per milli-GPU, times all free device milli, still fits r: then no
    placement the devices allow can exceed it, and nodes differing only in r are the same
    for the model. The CPU of a NUMA cell is treated alike for single-numa-node shapes and
    the cell's devices. Example: shapes ask 16 cores per GPU, a node has 3 GPUs and 64 cores
    free → 48 ≤ 64, cpu is dominated; with 4 GPUs (64 ≤ 64) too; with 5 GPUs not.
    """
    free = list(profile.free)
    changed = _pods_dominated(profile, shapes, pods_column, pending)
    if changed:
        free[pods_column] = DOMINATED
    if profile.unindexed_gpu or not shapes or any(shape.gpu_milli == 0 for shape in shapes):
        # (a cell's CPU may bind a CPU-only single-numa-node pod: keep it too)
        return _with_free(profile, free) if changed else profile
    device_total = sum(free for _, free in profile.devices)
    for r, amount in enumerate(free):
        if r in (gpu_column, pods_column) or amount < 0:
            continue
        worst = max(shapes, key=lambda shape: shape.requests[r] / shape.gpu_milli)
        if worst.requests[r] * device_total <= amount * worst.gpu_milli:
            free[r] = DOMINATED
            changed = True
    if free[gpu_column] >= device_total and free[gpu_column] != device_total:
        free[gpu_column] = device_total
        changed = True
    # A cell's CPU binds only single-numa-node pods; when the most CPU-hungry of them per
    # milli-GPU, on all of the cell's free device milli, still fits, it can never bind.
    numa = [shape for shape in shapes if shape.single_numa]
    cells = list(profile.cells)
    worst_numa = max(numa, key=lambda shape: shape.cpu_milli / shape.gpu_milli, default=None)
    for i, (cell, cpu) in enumerate(cells):
        if cpu == UNKNOWN:
            continue
        in_cell = sum(value for c, value in profile.devices if c == cell)
        if worst_numa is None or worst_numa.cpu_milli * in_cell <= cpu * worst_numa.gpu_milli:
            cells[i] = (cell, UNKNOWN)
            changed = True
    if not changed:
        return profile
    return Profile(
        free=tuple(free),
        devices=profile.devices,
        cells=tuple(cells),
        declared_cells=profile.declared_cells,
        eligibility=profile.eligibility,
        unindexed_gpu=profile.unindexed_gpu,
        packing_cpu=profile.packing_cpu,
        packing_class=profile.packing_class,
        considered=profile.considered,
    )


def _pods_dominated(profile: Profile, shapes: Sequence[Shape], pods_column: int, pending: int) -> bool:
    """Can the node's pod count never bind? When it has room for every pod that may come
    to it (`pending`), or for more pods than some resource every shape asks allows (the
    fewest asked of it, into what is free). Example: 40 pending pods, 110 free → never
    binds; 1,000 pending, all asking ≥ 1 core, 64 cores free → at most 64 pods ≤ 110.
    The resource bound is the real free amount, which stays checked or is itself
    dominated by the devices — so the pod count is still implied."""
    slots = profile.free[pods_column]
    if pending <= slots:
        return True
    for r, amount in enumerate(profile.free):
        if r == pods_column or amount < 0 or not shapes:
            continue
        least = min(shape.requests[r] for shape in shapes)
        if least > 0 and amount // least <= slots:
            return True
    return False


def _with_free(profile: Profile, free: Sequence[int]) -> Profile:
    return Profile(
        free=tuple(free),
        devices=profile.devices,
        cells=profile.cells,
        declared_cells=profile.declared_cells,
        eligibility=profile.eligibility,
        unindexed_gpu=profile.unindexed_gpu,
        packing_cpu=profile.packing_cpu,
        packing_class=profile.packing_class,
        considered=profile.considered,
    )


def poolable(profile: Profile, shapes: Sequence[Shape], gpu_column: int) -> bool:
    """May fractional shapes be pooled on this profile? (the dominance test of the docstring)

    `shapes` are all shapes that may come to the node (node patterns and pools alike).

    Never, while the packing tier is FGD's measure: a node's fragmentation depends on all
    its devices at once (whether a typical shape fits anywhere on it), so per-device pools
    cannot carry it exactly."""
    return False
    if profile.unindexed_gpu or not any(poolable_shape(profile, shape) for shape in shapes):
        return False
    if any(shape.gpu_milli == 0 for shape in shapes):
        return False
    return all(amount == DOMINATED for r, amount in enumerate(profile.free) if r != gpu_column)


def poolable_shape(profile: Profile, shape: Shape) -> bool:
    """A fractional, untracked shape whose device's cell needs nothing (not single-numa-node,
    or no cell states its CPU) can go to a device pool."""
    if not shape.fraction or shape.topology:
        return False
    return not shape.single_numa or all(cpu == UNKNOWN for _, cpu in profile.cells)


def build_pattern_set(
    profile: Profile,
    shapes: Sequence[Shape],
    *,
    measure: PackingMeasure,
    gpu_column: int,
    cap: int,
    most: Mapping[int, int],
) -> PatternSet:
    """The node patterns of `profile` over the untracked `shapes` that fit it alone, and
    pools for their fractions when the profile allows (see the module docstring).

    `shapes` are all eligible shapes; topology-tracked ones are kept for
    `topology_patterns` and left out of these patterns. `most[shape]`: pods of that shape
    there are to place (`Walk.most`)."""
    state, _ = initial_state(profile)
    declared = declared_slots(profile)
    fitting = [s for s in shapes if fits_alone(profile, s, state, declared)]
    pool = poolable(profile, fitting, gpu_column)
    pooled = tuple(s for s in fitting if pool and poolable_shape(profile, s))
    pooled_ids = {s.index for s in pooled}
    node_shapes = sorted((s for s in fitting if s.index not in pooled_ids and not s.topology), key=shape_rank)
    walk = Walk(
        profile=profile,
        shapes=node_shapes,
        measure=measure,
        declared=declared,
        cap=cap,
        first_limit=len(node_shapes),
        most=most,
    )
    walk_patterns(walk, 0, {}, [0] * len(profile.free), [{state: (0, None, None)}], ())
    result = PatternSet(
        profile=profile,
        shapes=tuple(fitting),
        pooled=pooled,
        patterns=[],
        empty_fragment=state_fragment(measure, profile, state, 0),
        empty_whole=sum(state[0]),
        partial_free=tuple(free for _, free in state[1]),
        device_patterns={},
        restricted=walk.cut or walk.pruned,
        measure=measure,
    )
    for pattern in walk.found:
        result.add(pattern)
    if walk.cut:
        _add_homogeneous(result, node_shapes, measure, most=most)
    return result


def _add_homogeneous(
    result: PatternSet, shapes: Sequence[Shape], measure: PackingMeasure, *, most: Mapping[int, int]
) -> None:
    """Every homogeneous pattern (k pods of one shape, k ≤ `most[shape]`), so each shape can
    still fill a node. Fractional pods are placed best fit (a restriction)."""
    profile = result.profile
    declared = declared_slots(profile)
    start, _ = initial_state(profile)
    for shape in shapes:
        limit = most.get(shape.index, UNBOUNDED_PODS)
        levels: list[dict[State, tuple[int, State | None, Choice | None]]] = [{start: (0, None, None)}]
        used = [0] * len(profile.free)
        pods = 0
        while pods < limit:
            used = [u + r for u, r in zip(used, shape.requests)]
            if any(u > f >= 0 for u, f in zip(used, profile.free)):
                break
            states = extend(levels, shape, profile, declared, exact=not shape.fraction)
            if not states:
                break
            if len(states) > 1 and shape.fraction:
                cpu = (pods + 1) * shape.cpu_milli
                best = min(
                    states,
                    key=lambda st: (states[st][0], state_fragment(measure, profile, st, cpu), -sum(st[0]), len(st[1]), st),
                )
                states = {best: states[best]}
            levels = [*levels, states]
            pods += 1
            if result.find(((shape.index, pods),)) is None:
                result.add(make_pattern(measure, profile, {shape.index: pods}, levels, (shape.index,) * pods, pods * shape.cpu_milli))


def topology_patterns(
    pattern_set: PatternSet,
    tracked: Sequence[Shape],
    *,
    mode: str,
    measure: PackingMeasure,
    cap: int,
    most: Mapping[int, int],
) -> tuple[list[Pattern], bool]:
    """Patterns with at least one pod of a `tracked` shape. `mode`: "mixed" (untracked node
    shapes may share the node: exact) or "homogeneous" (k ≤ `most[shape]` pods of one
    tracked shape: a restriction). Returns (patterns, restricted)."""
    profile = pattern_set.profile
    fitting_ids = {s.index for s in pattern_set.shapes}
    tracked = sorted((s for s in tracked if s.index in fitting_ids), key=shape_rank)
    if not tracked:
        return [], False
    holder = PatternSet(
        profile=profile, shapes=(), pooled=(), patterns=[], empty_fragment=0, empty_whole=0, partial_free=(),
        device_patterns={}, restricted=True, measure=measure,
    )
    if mode == "homogeneous":
        _add_homogeneous(holder, tracked, measure, most=most)
        return holder.patterns, True
    pooled_ids = {s.index for s in pattern_set.pooled}
    others = sorted((s for s in pattern_set.shapes if not s.topology and s.index not in pooled_ids), key=shape_rank)
    state, _ = initial_state(profile)
    walk = Walk(
        profile=profile,
        shapes=[*tracked, *others],
        measure=measure,
        declared=declared_slots(profile),
        cap=cap,
        first_limit=len(tracked),
        most=most,
    )
    walk_patterns(walk, 0, {}, [0] * len(profile.free), [{state: (0, None, None)}], ())
    for pattern in walk.found:
        holder.add(pattern)
    if walk.cut:
        _add_homogeneous(holder, tracked, measure, most=most)
    return holder.patterns, walk.cut or walk.pruned


def device_patterns(pattern_set: PatternSet, free: int, cap: int) -> list[DevicePattern]:
    """The non-empty device patterns of the pooled shapes on a device with `free` milli (cached)."""
    if free not in pattern_set.device_patterns:
        pattern_set.device_patterns[free] = _device_patterns(free, pattern_set.pooled, cap)
    return pattern_set.device_patterns[free]


def _device_patterns(free: int, shapes: Sequence[Shape], cap: int) -> list[DevicePattern]:
    """Every non-empty multiset of fractional `shapes` within `free` milli of one device."""
    ordered = sorted(shapes, key=lambda s: (-s.fraction, s.index))
    found: list[DevicePattern] = []

    def walk(start: int, counts: dict[int, int], used: int) -> None:
        for j in range(start, len(ordered)):
            shape = ordered[j]
            if used + shape.fraction > free or len(found) >= cap:
                continue
            counts[shape.index] = counts.get(shape.index, 0) + 1
            found.append(
                DevicePattern(counts=tuple(sorted((i, n) for i, n in counts.items() if n)), used=used + shape.fraction)
            )
            walk(j, counts, used + shape.fraction)
            counts[shape.index] -= 1

    walk(0, {}, 0)
    return found
