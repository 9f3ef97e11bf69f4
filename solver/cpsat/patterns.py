"""Per-node packing patterns for the CP-SAT engine: which multisets of pod shapes fit one
node of a profile (Gilmore–Gomory configurations), dominance.

Input: a node `Profile` and the pod `Shape`s eligible there. Output: a `PatternSet` —
the patterns of untracked shapes (down-closed: every sub-multiset of a pattern is one
too, so each node takes exactly one), and on request the patterns with topology-tracked
pods (`topology_patterns`). Every pod, fractional ones included, is placed by a node
pattern, checked device by device. The device-level check and each pattern's best device
assignment are `cpsat.devices`'.

One reduction, exact: *dominated* resources — a node resource that no placement its
devices allow can exceed is marked DOMINATED, so nodes differing only there share a
profile (and a cell's CPU likewise for single-numa-node shapes).

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
    DeviceSteps,
    MultisetFit,
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
    "PatternSet",
    "build_pattern_set",
    "add_fill",
    "walk_further",
    "topology_patterns",
    "dominated",
    "evaluate",
    "assign",
]


@dataclass(eq=False)
class PatternSet:
    profile: Profile
    shapes: tuple[Shape, ...]  # eligible shapes that fit alone
    patterns: list[Pattern]  # non-empty node patterns
    empty_fragment: int  # fragmented milli of a node of this profile that gets nothing
    restricted: bool
    measure: PackingMeasure = field(repr=False)
    fits: MultisetFit | None = field(default=None, repr=False)  # `Walk.fits`, for every pattern of the set
    walk_cut: bool = False  # the walk stopped at its cap
    sparse_fill: bool = False  # cut, and its fill patterns sparse (`_kept_fill`)
    walk: Walk | None = field(default=None, repr=False)  # paused, until `add_fill` ends it (`walk_further`)
    memo: DeviceSteps | None = field(default=None, repr=False)  # `extend`'s (`devices.DeviceSteps`), for its fill and topology walks
    _index: dict[tuple[tuple[int, int], ...], Pattern] = field(default_factory=dict, repr=False)

    def find(self, counts: tuple[tuple[int, int], ...]) -> Pattern | None:
        return self._index.get(counts)

    def add(self, pattern: Pattern) -> None:
        if pattern.counts not in self._index:
            self._index[pattern.counts] = pattern
            self.patterns.append(pattern)



def dominated(
    profile: Profile, shapes: Sequence[Shape], gpu_column: int, *, counts: Sequence[int], pending: int
) -> Profile:
    """`profile` with every node resource that can never bind set to DOMINATED: each column
    a pod asks a few of and no packing ranks by (`counts`: the pod count, host ports —
    `Problem.column_packs`) when the node has room for more than can come
    (`_count_dominated`), then every other non-GPU resource its devices already bound.

    A resource r is dominated when every shape that may come asks GPUs and the most
    r-hungry shape per milli-GPU, times all free device milli, still fits r: then no
    placement the devices allow can exceed it, and nodes differing only in r are the same
    for the model. The CPU of a NUMA cell is treated alike for single-numa-node shapes and
    the cell's devices. Example: shapes ask 16 cores per GPU, a node has 3 GPUs and 64 cores
    free → 48 ≤ 64, cpu is dominated; with 4 GPUs (64 ≤ 64) too; with 5 GPUs not.
    """
    free = list(profile.free)
    changed = False
    for r in counts:
        if _count_dominated(profile, shapes, r, pending, counts):
            free[r] = DOMINATED
            changed = True
    if profile.unindexed_gpu or not shapes or any(shape.gpu_milli == 0 for shape in shapes):
        # (a cell's CPU may bind a CPU-only single-numa-node pod: keep it too)
        return _with_free(profile, free) if changed else profile
    device_total = sum(free for _, free in profile.devices)
    for r, amount in enumerate(free):
        if r == gpu_column or r in counts or amount < 0:
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


def _count_dominated(profile: Profile, shapes: Sequence[Shape], column: int, pending: int, counts: Sequence[int]) -> bool:
    """Can `column` never bind? When the node has room for every pod that may come to it
    (`pending`, each asking at most the most a shape asks of it), or for more pods than some
    resource every shape asks allows (the fewest asked of it, into what is free). Example,
    the pod count (every pod asks 1): 40 pending pods, 110 free → never binds; 1,000
    pending, all asking ≥ 1 core, 64 cores free → at most 64 pods ≤ 110. The resource bound
    is the real free amount of a resource that is no such column, which stays checked or is
    itself dominated by the devices — so the column is still implied. (Another such column
    may not bound it: it may be dropped by the same argument, and two host ports of one pod
    would each drop the other.)"""
    room = profile.free[column]
    most = max((shape.requests[column] for shape in shapes), default=1)
    if pending * most <= room:
        return True
    for r, amount in enumerate(profile.free):
        if r in counts or amount < 0 or not shapes:
            continue
        least = min(shape.requests[r] for shape in shapes)
        if least > 0 and (amount // least) * most <= room:
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


def build_pattern_set(
    profile: Profile,
    shapes: Sequence[Shape],
    *,
    measure: PackingMeasure,
    cap: int,
    most: Mapping[int, int],
    fits: MultisetFit | None = None,
    sparse_fill: bool = False,
    fill: bool = True,
    memo: DeviceSteps | None = None,
) -> PatternSet:
    """The node patterns of `profile` over the untracked `shapes` that fit it alone.

    `shapes` are all eligible shapes; topology-tracked ones are kept for
    `topology_patterns` and left out of these patterns. `most[shape]`: pods of that shape
    there are to place (`Walk.most`); `fits`: a further check of each multiset (`Walk.fits`);
    `sparse_fill`: when the set is cut, the homogeneous patterns of `_add_homogeneous` are
    thinned (`_kept_fill`); `fill=False`: a cut set gets them only from `add_fill`, for a
    caller that may walk the profile again with another cap and would throw them away;
    `memo`: device steps shared with the other profiles' walks (`devices.DeviceSteps`)."""
    state, _ = initial_state(profile)
    declared = declared_slots(profile)
    fitting = [s for s in shapes if fits_alone(profile, s, state, declared) and (fits is None or fits({s.index: 1}) is not None)]
    node_shapes = sorted((s for s in fitting if not s.topology), key=shape_rank)
    walk = Walk(
        profile=profile,
        shapes=node_shapes,
        measure=measure,
        declared=declared,
        first_limit=len(node_shapes),
        most=most,
        fits=fits,
        memo=memo,
    )
    result = PatternSet(
        profile=profile,
        shapes=tuple(fitting),
        patterns=[],
        empty_fragment=state_fragment(measure, profile, state, 0) + ((fits({}) or 0) if fits is not None else 0),
        restricted=False,
        measure=measure,
        fits=fits,
        walk=walk,
        memo=memo,
    )
    walk_further(result, cap, sparse_fill=sparse_fill)
    if fill:
        add_fill(result, most=most)
    return result


def walk_further(pattern_set: PatternSet, cap: int, *, sparse_fill: bool) -> None:
    """Continue the set's walk (before `add_fill`) until it holds `cap` walked patterns: the
    set a walk with that cap builds, without walking its first patterns again."""
    walk = pattern_set.walk
    assert walk is not None, "the set's fill patterns were added: its walk is over"
    walk_patterns(walk, cap)
    for pattern in walk.found[len(pattern_set.patterns) :]:
        pattern_set.add(pattern)
    pattern_set.restricted = walk.cut or walk.pruned
    pattern_set.walk_cut = walk.cut
    pattern_set.sparse_fill = walk.cut and sparse_fill


def add_fill(pattern_set: PatternSet, *, most: Mapping[int, int]) -> None:
    """A cut set's homogeneous fill patterns (`_add_homogeneous`, sparse when the set says
    so), once its walk is final; nothing for a set whose walk was not cut."""
    pattern_set.walk = None  # the walk is over: its paused state goes
    if pattern_set.walk_cut:
        node_shapes = sorted((s for s in pattern_set.shapes if not s.topology), key=shape_rank)
        _add_homogeneous(pattern_set, node_shapes, pattern_set.measure, most=most, sparse=pattern_set.sparse_fill)


SPARSE_FILL_DENSE = 4
"""With `sparse` fill patterns, every k up to this many pods of a shape is kept; above it
powers of two and the most that fit (`_kept_fill`)."""


def _kept_fill(pods: int) -> bool:
    """k pods of one shape kept as a sparse fill pattern: 1–4, 8, 16, 32, … (the most that
    fit is kept besides). Example: a node with room for 24 CPU-only pods keeps k = 1, 2,
    3, 4, 8, 16, 24 — 7 patterns instead of 24."""
    return pods <= SPARSE_FILL_DENSE or pods & (pods - 1) == 0


def _add_homogeneous(
    result: PatternSet, shapes: Sequence[Shape], measure: PackingMeasure, *, most: Mapping[int, int], sparse: bool = False
) -> None:
    """Every homogeneous pattern (k pods of one shape, k ≤ `most[shape]`), so each shape can
    still fill a node. Fractional pods are placed best fit (a restriction). `sparse`: only
    the k `_kept_fill` keeps and the largest (a further restriction, for models past
    `DataLimits.max_patterns`: small pods — CPU-only, 250-milli shares — fit a node 20–30
    times over, and one pattern per k on every profile was most of such a model)."""
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
            extra = 0 if result.fits is None else result.fits({shape.index: pods + 1})
            if extra is None:
                break
            states = extend(levels, shape, profile, declared, exact=not shape.fraction, memo=result.memo)
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
            last = (pods, levels, extra)
            if (not sparse or _kept_fill(pods)) and result.find(((shape.index, pods),)) is None:
                result.add(make_pattern(measure, profile, {shape.index: pods}, levels, (shape.index,) * pods, pods * shape.cpu_milli, extra))
        if sparse and pods and result.find(((shape.index, pods),)) is None:
            pods, levels, extra = last
            result.add(make_pattern(measure, profile, {shape.index: pods}, levels, (shape.index,) * pods, pods * shape.cpu_milli, extra))


def topology_patterns(
    pattern_set: PatternSet,
    tracked: Sequence[Shape],
    *,
    mode: str,
    measure: PackingMeasure,
    cap: int,
    most: Mapping[int, int],
    sparse_fill: bool = False,
) -> tuple[list[Pattern], bool]:
    """Patterns with at least one pod of a `tracked` shape. `mode`: "mixed" (untracked node
    shapes may share the node: exact) or "homogeneous" (k ≤ `most[shape]` pods of one
    tracked shape: a restriction; `sparse_fill`: only the k `_kept_fill` keeps and the
    largest). Returns (patterns, restricted)."""
    profile = pattern_set.profile
    fitting_ids = {s.index for s in pattern_set.shapes}
    tracked = sorted((s for s in tracked if s.index in fitting_ids), key=shape_rank)
    if not tracked:
        return [], False
    holder = PatternSet(
        profile=profile, shapes=(), patterns=[], empty_fragment=0, restricted=True, measure=measure,
        fits=pattern_set.fits, memo=pattern_set.memo,
    )
    if mode == "homogeneous":
        _add_homogeneous(holder, tracked, measure, most=most, sparse=sparse_fill)
        return holder.patterns, True
    others = sorted((s for s in pattern_set.shapes if not s.topology), key=shape_rank)
    walk = Walk(
        profile=profile,
        shapes=[*tracked, *others],
        measure=measure,
        declared=declared_slots(profile),
        first_limit=len(tracked),
        most=most,
        fits=pattern_set.fits,
        memo=pattern_set.memo,
    )
    walk_patterns(walk, cap)
    for pattern in walk.found:
        holder.add(pattern)
    if walk.cut:
        _add_homogeneous(holder, tracked, measure, most=most)
    return holder.patterns, walk.cut or walk.pruned
