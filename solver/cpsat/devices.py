"""Device-level search for one node: does a multiset of pod shapes fit, and where.

Input: a node `Profile` (free resources, GPU devices by NUMA cell and free milli, CPU per
cell when known) and `Shape`s. Output: `Pattern`s — a multiset that fits, with the NUMA
splits and fragmented milli of its best device assignment — built by `walk` (every
multiset, depth first) or `evaluate` (one multiset), and `assign`, the device positions
and cell each pod of a pattern takes.

How a multiset is checked (rules 1 and 6, exactly as the checker judges them):
  - node level: the requests add up to at most the node's free amount in every resource
    not marked DOMINATED;
  - a whole-GPU pod takes k devices with nothing on them; single-numa-node: all in one
    cell, whose CPU (when the cell states it) covers the pod's;
  - a fractional pod takes part of one device that has its milli free (single-numa-node:
    that device's cell's CPU too);
  - a single-numa-node pod without GPUs takes CPU from one cell (a declared one if the
    node declares any).
A multiset is carried as the set of *reachable device states* (whole devices free per
cell, the multiset of partly used devices, CPU left per cell), each with the fewest NUMA
splits that reach it; it fits iff that set is not empty. This is exact — every device
choice is kept — up to `EXACT_FRACTIONS` fractional pods per node; beyond, fractional
pods are placed best fit (a restriction the caller reports). Example: a node with cells
(4, 4) free and shapes 4-GPU and 4-GPU-single-numa: {4, 4n} reaches (0, 0) with 0 splits;
{4, 4, 4n} reaches nothing — it does not fit.

The best assignment of a multiset: fewest splits, then least fragment (tiers 4 and 5 are
per node, so that is optimal for it), then the densest packing (most whole devices,
fewest partly used ones) to break ties.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from models.snapshot import GPU_MILLI_PER_DEVICE
from solver.fragmentation import PackingMeasure

__all__ = [
    "WHOLE",
    "UNKNOWN",
    "DOMINATED",
    "EXACT_FRACTIONS",
    "Shape",
    "Profile",
    "Slot",
    "Pattern",
    "State",
    "MultisetFit",
    "DeviceSteps",
    "Walk",
    "initial_state",
    "state_fragment",
    "extend",
    "make_pattern",
    "walk_patterns",
    "evaluate",
    "assign",
    "declared_slots",
    "shape_rank",
]

WHOLE = GPU_MILLI_PER_DEVICE
UNKNOWN = -1  # cell CPU not stated: never binding
DOMINATED = -1  # a node resource its GPUs bound: no placement the devices allow can exceed it

# A device state: (whole free devices per cell slot, sorted (cell slot, free milli) of partly
# used devices, CPU left per cell slot or UNKNOWN).
State = tuple[tuple[int, ...], tuple[tuple[int, int], ...], tuple[int, ...]]
MultisetFit = Callable[[Mapping[int, int]], "int | None"]
"""Whether pods per shape index (a multiset) fit one node by what the device state does not
say — None when they do not — and the fragment they leave there that it does not count
(milli, added to the pattern's). Down-closed: a sub-multiset of one that fits fits too."""
Choice = tuple[object, ...]
Level = dict[State, tuple[int, "State | None", "Choice | None"]]
DeviceSteps = dict[tuple[object, ...], "Level"]
"""`extend`'s answers within one data step, by what they depend on: the states reached so
far with their splits, the shape, the declared cells and `exact` — not the profile, whose
node-level room the caller checks. Profiles that differ only in free CPU or memory (half
of the mixed bench family's ~200 at 1,000 nodes) walk the same device states; with the
memo each step is taken once (docs/results.md, "Building the CP-SAT model")."""


@dataclass(frozen=True)
class Shape:
    """What one pod of a group of interchangeable tasks asks for."""

    index: int
    requests: tuple[int, ...]  # per resource column of the Problem
    gpu_milli: int
    whole: int  # devices of a whole-GPU pod, else 0
    fraction: int  # milli of a fractional pod, else 0
    single_numa: bool
    cpu_milli: int
    topology: bool = False  # pods of topology-tracked tasks (their own shapes)


@dataclass(frozen=True)
class Profile:
    """What one node of a class has free. Devices and cells are in canonical order."""

    free: tuple[int, ...]  # per resource column; DOMINATED where it can never bind (see `dominated`)
    devices: tuple[tuple[int, int], ...]  # (cell id, free milli) of devices with free > 0, sorted
    cells: tuple[tuple[int, int], ...]  # (cell id, CPU milli free or UNKNOWN), sorted by id
    declared_cells: tuple[int, ...]  # NUMA cell ids the node declares
    eligibility: int  # the Problem's eligibility node class
    unindexed_gpu: bool  # some GPU use has no device index (node total < device sum)
    packing_cpu: int = 0  # free CPU as the packing tier reads it (`cpsat.build_context.profile_of`)
    packing_class: int = 0  # the node's class by typical-shape eligibility (`PackingMeasure.node_class`)
    considered: bool = True  # False: left out of the model's candidate nodes (`cpsat.neighbourhood`)
    gpu_node: bool = False  # the node has `gpu` allocatable: packing charges pods asking none (`solver.objective`)


@dataclass(frozen=True)
class Slot:
    """Where one pod of a pattern goes: device positions in `Profile.devices`, NUMA cell id."""

    shape: int
    positions: tuple[int, ...]
    cell: int | None


@dataclass(eq=False)
class Pattern:
    """One multiset of shapes that fits a node of the profile."""

    counts: tuple[tuple[int, int], ...]  # (shape index, pods), by shape index
    splits: int
    fragment: int
    _levels: list[dict[State, tuple[int, State | None, Choice | None]]] = field(repr=False)
    _order: tuple[int, ...] = field(repr=False)  # shape of each pod, in the order placed
    _best: State = field(repr=False)

    def count(self, shape: int) -> int:
        for index, pods in self.counts:
            if index == shape:
                return pods
        return 0

    @property
    def pods(self) -> int:
        return sum(pods for _, pods in self.counts)


# ---- device states ----


def initial_state(profile: Profile) -> tuple[State, list[int]]:
    cell_ids = [cell for cell, _ in profile.cells]
    slot_of = {cell: i for i, cell in enumerate(cell_ids)}
    whole = [0] * len(cell_ids)
    partial = []
    for cell, free in profile.devices:
        if free >= WHOLE:
            whole[slot_of[cell]] += 1
        else:
            partial.append((slot_of[cell], free))
    cpu = tuple(amount for _, amount in profile.cells)
    return (tuple(whole), tuple(sorted(partial)), cpu), cell_ids


def state_fragment(measure: PackingMeasure, profile: Profile, state: State, cpu_used: int) -> int:
    """Tier 5's value of a node of `profile` left in `state` by pods taking `cpu_used`
    (`PackingMeasure.state`, which remembers it per end state)."""
    whole, partial, _ = state
    frees = [free for _, free in partial]
    if len(frees) > 1:
        frees.sort()
    return measure.split_state(profile.packing_cpu - cpu_used, sum(whole), tuple(frees), profile.packing_class)


def take_cpu(cpu: tuple[int, ...], slot: int, amount: int) -> tuple[int, ...] | None:
    if cpu[slot] == UNKNOWN or amount == 0:
        return cpu
    if cpu[slot] < amount:
        return None
    return cpu[:slot] + (cpu[slot] - amount,) + cpu[slot + 1 :]


def compositions(total: int, limits: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Ways to take `total` devices from cells with `limits` free (each ≤ its limit)."""
    if len(limits) == 1:
        if total <= limits[0]:
            yield (total,)
        return
    rest = sum(limits[1:])
    for first in range(min(total, limits[0]), max(-1, total - rest - 1), -1):
        for tail in compositions(total - first, limits[1:]):
            yield (first, *tail)


def successors(
    state: State, shape: Shape, profile: Profile, declared: tuple[int, ...], *, exact: bool = True
) -> Iterator[tuple[State, int, Choice]]:
    """(next state, NUMA splits added, choice) for one more pod of `shape`.

    `exact=False` tries, for a fractional pod, only the fullest partly used device that
    fits and one whole device per cell (best fit) instead of every distinct device."""
    whole, partial, cpu = state
    if shape.whole:
        k = shape.whole
        if shape.single_numa:
            for slot, free in enumerate(whole):
                if free >= k:
                    left = take_cpu(cpu, slot, shape.cpu_milli)
                    if left is not None:
                        taken = tuple(k if i == slot else 0 for i in range(len(whole)))
                        yield (tuple(w - t for w, t in zip(whole, taken)), partial, left), 0, ("whole", taken, slot)
            return
        if sum(whole) < k:
            return
        for taken in compositions(k, whole):
            split = int(sum(1 for t in taken if t) > 1)
            yield (tuple(w - t for w, t in zip(whole, taken)), partial, cpu), split, ("whole", taken, -1)
        return
    if shape.fraction:
        m = shape.fraction
        seen: set[tuple[int, int]] = set()
        best_fit: dict[int, int] = {}
        if not exact:
            for slot, free in partial:
                if free >= m and free < best_fit.get(slot, WHOLE + 1):
                    best_fit[slot] = free
        for i, (slot, free) in enumerate(partial):
            if free < m or (slot, free) in seen or (not exact and best_fit.get(slot) != free):
                continue
            seen.add((slot, free))
            left = take_cpu(cpu, slot, shape.cpu_milli) if shape.single_numa else cpu
            if left is None:
                continue
            rest = partial[:i] + partial[i + 1 :]
            if free - m > 0:
                rest = tuple(sorted((*rest, (slot, free - m))))
            yield (whole, rest, left), 0, ("part", slot, free)
        for slot, free in enumerate(whole):
            if free <= 0:
                continue
            left = take_cpu(cpu, slot, shape.cpu_milli) if shape.single_numa else cpu
            if left is None:
                continue
            next_whole = whole[:slot] + (free - 1,) + whole[slot + 1 :]
            yield (next_whole, tuple(sorted((*partial, (slot, WHOLE - m)))), left), 0, ("part", slot, WHOLE)
        return
    if shape.single_numa:
        slots = declared or tuple(range(len(cpu)))
        unknown_done = False
        for slot in slots:
            if cpu[slot] == UNKNOWN:
                if unknown_done:
                    continue  # every cell of unknown CPU is the same choice
                unknown_done = True
            left = take_cpu(cpu, slot, shape.cpu_milli)
            if left is not None:
                yield (whole, partial, left), 0, ("cell", slot)
        return
    yield state, 0, ("none",)


@dataclass
class Walk:
    profile: Profile
    shapes: Sequence[Shape]
    measure: PackingMeasure
    declared: tuple[int, ...]
    first_limit: int  # the first pod must be of shapes[:first_limit] (topology patterns: a topology shape)
    most: Mapping[int, int] = field(default_factory=dict)
    """Pods of each shape there are to place: a pattern with more can never be used, so it is
    not made (exact, not a restriction). Every shape asks one of the node's `pods`, so a
    node's pod count bounds each pattern too — a BestEffort pod, asking nothing else, fits
    at most that many times."""
    fits: MultisetFit | None = None  # a further check of each multiset (DRA claims: `cpsat.dra`)
    memo: DeviceSteps | None = field(default=None, repr=False)  # `extend`'s, shared by the data step's walks
    found: list[Pattern] = field(default_factory=list)
    cut: bool = False
    pruned: bool = False  # best fit was used for fractional pods (not every device choice kept)
    steps: Iterator[bool] | None = field(default=None, repr=False)  # where `walk_patterns` paused


UNBOUNDED_PODS = 1 << 30
"""A shape's pod count per node when nothing else bounds it (see `Walk.most`)."""

EXACT_FRACTIONS = 4
"""Up to this many fractional pods on a node every device choice is kept; beyond, best fit."""


def extend(
    levels: list[dict[State, tuple[int, State | None, Choice | None]]],
    shape: Shape,
    walk_profile: Profile,
    declared: tuple[int, ...],
    *,
    exact: bool = True,
    memo: DeviceSteps | None = None,
) -> dict[State, tuple[int, State | None, Choice | None]]:
    """The states one more pod of `shape` reaches from the last level, each with its fewest
    splits and how it was reached. With `memo`, a step taken before is not taken again
    (the same dict is returned: levels are read, never changed)."""
    if memo is None:
        return _step(levels[-1], shape, walk_profile, declared, exact)
    key = (tuple((state, entry[0]) for state, entry in levels[-1].items()), shape, declared, exact)
    level = memo.get(key)
    if level is None:
        level = memo[key] = _step(levels[-1], shape, walk_profile, declared, exact)
    return level


def _step(last: Level, shape: Shape, walk_profile: Profile, declared: tuple[int, ...], exact: bool) -> Level:
    states: Level = {}
    for state, (splits, _, _) in last.items():
        for nxt, added, choice in successors(state, shape, walk_profile, declared, exact=exact):
            total = splits + added
            known = states.get(nxt)
            if known is None or total < known[0]:
                states[nxt] = (total, state, choice)
    return states


def make_pattern(
    measure: PackingMeasure,
    profile: Profile,
    counts: dict[int, int],
    levels: list[dict[State, tuple[int, State | None, Choice | None]]],
    order: tuple[int, ...],
    cpu_used: int,
    extra_fragment: int = 0,
) -> Pattern:
    """The pattern of `counts` at its best device state; `extra_fragment`: what `Walk.fits`
    adds to its fragment."""
    # Fewest splits, least fragment, then the densest packing (most whole devices, fewest
    # partly used ones) to break ties: equal for the objective.
    last = levels[-1]
    fragments = {state: state_fragment(measure, profile, state, cpu_used) for state in last}
    if len(last) == 1:
        best = next(iter(last))
    else:
        best = min(last, key=lambda s: (last[s][0], fragments[s], -sum(s[0]), len(s[1]), s))
    splits = last[best][0]
    return Pattern(
        counts=tuple(sorted((i, n) for i, n in counts.items() if n)),
        splits=splits,
        fragment=fragments[best] + extra_fragment,
        _levels=levels,
        _order=order,
        _best=best,
    )


def walk_patterns(walk: Walk, cap: int) -> None:
    """Walk on until `walk.found` holds `cap` patterns (then `walk.cut`) or the walk ends.
    A walk continued with a larger cap finds what a walk started with that cap finds: the
    same depth-first order, paused where the smaller cap stopped it (so water-filling,
    `cpsat.data._pattern_sets`, walks each pattern once)."""
    if walk.steps is None:
        state, _ = initial_state(walk.profile)
        walk.steps = _walk_steps(walk, 0, {}, [0] * len(walk.profile.free), [{state: (0, None, None)}], ())
    while len(walk.found) < cap:
        if next(walk.steps, None) is None:
            walk.cut = False
            return
    walk.cut = True


def _walk_steps(
    walk: Walk,
    start: int,
    counts: dict[int, int],
    used: list[int],
    levels: list[dict[State, tuple[int, State | None, Choice | None]]],
    order: tuple[int, ...],
    fractions: int = 0,
    cpu_used: int = 0,
) -> Iterator[bool]:
    """Depth-first over multisets of `walk.shapes` from `start` on (each multiset once, in
    shape order), yielding after each pattern it appends to `walk.found`; `fractions`
    counts the fractional pods of `order` (EXACT_FRACTIONS), `cpu_used` the CPU they ask."""
    free = walk.profile.free
    stop = walk.first_limit if not order else len(walk.shapes)
    for j in range(start, stop):
        shape = walk.shapes[j]
        if counts.get(shape.index, 0) >= walk.most.get(shape.index, UNBOUNDED_PODS):
            continue
        new_used = [u + r for u, r in zip(used, shape.requests)]
        if any(u > f >= 0 for u, f in zip(new_used, free)):
            continue
        next_fractions = fractions + (1 if shape.fraction else 0)
        exact = next_fractions <= EXACT_FRACTIONS
        walk.pruned = walk.pruned or not exact
        states = extend(levels, shape, walk.profile, walk.declared, exact=exact, memo=walk.memo)
        if not states:
            continue
        counts[shape.index] = counts.get(shape.index, 0) + 1
        extra = 0 if walk.fits is None else walk.fits(counts)
        if extra is None:
            counts[shape.index] -= 1
            continue
        next_levels = [*levels, states]
        next_order = (*order, shape.index)
        next_cpu = cpu_used + shape.cpu_milli
        walk.found.append(make_pattern(walk.measure, walk.profile, counts, next_levels, next_order, next_cpu, extra))
        yield True
        yield from _walk_steps(walk, j, counts, new_used, next_levels, next_order, next_fractions, next_cpu)
        counts[shape.index] -= 1


def fits_alone(profile: Profile, shape: Shape, start: State, declared: tuple[int, ...]) -> bool:
    """Does one pod of `shape` fit an otherwise untouched node of `profile` (in `start`)?
    The first step of `evaluate` without building its pattern."""
    if any(r > f >= 0 for r, f in zip(shape.requests, profile.free)):
        return False
    return next(successors(start, shape, profile, declared), None) is not None


def evaluate(
    profile: Profile,
    shapes: dict[int, Shape],
    counts: tuple[tuple[int, int], ...],
    measure: PackingMeasure,
    fits: MultisetFit | None = None,
) -> Pattern | None:
    """The pattern of one multiset (e.g. the greedy hint's node), or None if it does not fit
    (`fits`: as `Walk.fits`)."""
    extra = 0 if fits is None else fits(dict(counts))
    if extra is None:
        return None
    state, _ = initial_state(profile)
    declared = declared_slots(profile)
    levels: list[dict[State, tuple[int, State | None, Choice | None]]] = [{state: (0, None, None)}]
    order: list[int] = []
    used = [0] * len(profile.free)
    fractions = 0
    for index, pods in sorted(counts, key=lambda item: shape_rank(shapes[item[0]])):
        for _ in range(pods):
            shape = shapes[index]
            used = [u + r for u, r in zip(used, shape.requests)]
            fractions += 1 if shape.fraction else 0
            states = extend(levels, shape, profile, declared, exact=fractions <= EXACT_FRACTIONS)
            if not states:
                return None
            levels.append(states)
            order.append(index)
    if any(u > f >= 0 for u, f in zip(used, profile.free)):
        return None
    cpu_used = sum(shapes[index].cpu_milli * pods for index, pods in counts)
    return make_pattern(measure, profile, dict(counts), levels, tuple(order), cpu_used, extra)


def shape_rank(shape: Shape) -> tuple[int, int, int, int]:
    """Largest device users first: they branch least when placed early."""
    return (-shape.whole, -shape.fraction, -shape.cpu_milli, shape.index)


def declared_slots(profile: Profile) -> tuple[int, ...]:
    ids = [cell for cell, _ in profile.cells]
    return tuple(ids.index(cell) for cell in profile.declared_cells if cell in ids)


def assign(pattern: Pattern, profile: Profile, shapes: Mapping[int, Shape]) -> list[Slot]:
    """The devices and cell each pod of `pattern` takes on a node of `profile`, in placing order."""
    choices: list[Choice] = []
    state: State | None = pattern._best
    for depth in range(len(pattern._levels) - 1, 0, -1):
        _, previous, choice = pattern._levels[depth][state]  # type: ignore[index]
        choices.append(choice)  # type: ignore[arg-type]
        state = previous
    choices.reverse()
    _, cell_ids = initial_state(profile)
    remaining = [free for _, free in profile.devices]
    device_cell = [cell_ids.index(cell) for cell, _ in profile.devices]
    slots: list[Slot] = []
    for shape_index, choice in zip(pattern._order, choices):
        kind = choice[0]
        if kind == "whole":
            taken: tuple[int, ...] = choice[1]  # type: ignore[assignment]
            cell_slot: int = choice[2]  # type: ignore[assignment]
            positions: list[int] = []
            for slot, k in enumerate(taken):
                free_here = [p for p, r in enumerate(remaining) if device_cell[p] == slot and r >= WHOLE][:k]
                positions.extend(free_here)
            for p in positions:
                remaining[p] = 0
            slots.append(Slot(shape_index, tuple(sorted(positions)), cell_ids[cell_slot] if cell_slot >= 0 else None))
        elif kind == "part":
            cell_slot, value = choice[1], choice[2]  # type: ignore[assignment]
            p = next(p for p, r in enumerate(remaining) if device_cell[p] == cell_slot and r == value)
            remaining[p] -= shapes[shape_index].fraction
            slots.append(Slot(shape_index, (p,), cell_ids[cell_slot]))
        elif kind == "cell":
            slots.append(Slot(shape_index, (), cell_ids[choice[1]]))  # type: ignore[index]
        else:
            slots.append(Slot(shape_index, (), None))
    return slots
