"""The CP-SAT data step's build context: what every step of building `ModelData` reads,
and the node profiles it interns as it goes.

`solver.cpsat.data` builds one `BuildContext` per model (`new_build_context`) and passes
it to its steps — units and patterns (`data`), topology (`topology`), victims and node
groups (`victims`) — which are plain functions of it. The context is frozen: no step
rebinds what another step reads. What the steps add to are its registries, each written
by one step and read by the later ones: node profiles (`profiles`, `profile_id`, interned
by `profile_of`, with `raw_profile` and `after_cache` as their caches), devices in profile
order (`device_order`), the shapes eligible per node class and pending pods per shape
(filled by the units step), HyperNode domains (`hypernode_domains`, the topology step's
cache) and the restrictions made (`restricted`).

Profiles are here, not in `data`, because the victim step computes what a node becomes
after evictions (`after_profile`) with the same interning as the data step's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from models.placement import Placement
from models.snapshot import Snapshot
from solver.after import milli_per_device
from solver.cpsat.interpod import FixedPart
from solver.cpsat.patterns import DOMINATED, UNKNOWN, Profile, Shape, dominated
from solver.cpsat.units import DataLimits
from solver.objective import ObjectiveContext
from solver.problem import UNLIMITED, Problem

__all__ = ["BuildContext", "new_build_context", "profile_of", "node_state", "node_profile", "after_profile"]


@dataclass(frozen=True, eq=False)
class BuildContext:
    snapshot: Snapshot
    problem: Problem
    ctx: ObjectiveContext
    limits: DataLimits
    hint: Placement
    fixed: FixedPart | None
    held: frozenset[str]  # PodGroups the inter-pod part fixes: no units
    protected: frozenset[int]  # pods the inter-pod part protects: no victims
    gpu_column: int
    count_columns: tuple[int, ...]  # columns no packing ranks by (the pod count, host ports): `patterns.dominated`
    hint_nodes: dict[str, set[int]]  # group key → nodes the hint binds it to
    declared: list[tuple[int, ...]]  # per node: its declared NUMA cell ids
    # The node tables as Python lists, read once: the per-node steps index them tens of
    # thousands of times, and a numpy scalar read costs far more than a list's
    # (docs/results.md, "Building the CP-SAT model").
    free_by_node: list[list[int]]
    devices_by_node: list[list[tuple[int, int, int]]]  # (cell, free milli, index)
    cells_by_node: list[list[tuple[int, int]]]  # (cell id, cpu or UNKNOWN)
    # ---- registries the steps fill ----
    restricted: list[str] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    profile_id: dict[Profile, int] = field(default_factory=dict)
    raw_profile: dict[tuple[object, ...], int] = field(default_factory=dict)
    after_cache: dict[tuple[object, ...], int] = field(default_factory=dict)
    device_order: dict[int, list[int]] = field(default_factory=dict)  # node → device indices, profile order
    eligible_shapes: dict[int, list[Shape]] = field(default_factory=dict)  # node class → shapes eligible there
    pending_by_shape: dict[int, int] = field(default_factory=dict)  # shape → pending pods
    hypernode_domains: dict[int, list[tuple[str, int, frozenset[str]]]] = field(default_factory=dict)
    left_out: set[int] = field(default_factory=set)  # nodes no pending pod may go to (`cpsat.neighbourhood`)


def new_build_context(
    snapshot: Snapshot, problem: Problem, ctx: ObjectiveContext, limits: DataLimits, hint: Placement, fixed: FixedPart | None
) -> BuildContext:
    rows = np.arange(problem.node_count)[:, None]
    gpu_cell_id = np.where(problem.gpu_index >= 0, problem.cell_ids[rows, np.maximum(problem.gpu_cell, 0)], -1)
    cell_cpu = np.where(problem.cell_cpu_free == UNLIMITED, UNKNOWN, problem.cell_cpu_free)
    hint_nodes: dict[str, set[int]] = {}
    for bind in hint.binds:
        pod = snapshot.pod_by_key.get(bind.pod)
        if pod is not None and pod.pod_group is not None and bind.node in problem.node_index:
            hint_nodes.setdefault(pod.pod_group, set()).add(problem.node_index[bind.node])
    return BuildContext(
        snapshot=snapshot,
        problem=problem,
        ctx=ctx,
        limits=limits,
        hint=hint,
        fixed=fixed,
        held=fixed.held if fixed is not None else frozenset(),
        protected=fixed.protected if fixed is not None else frozenset(),
        gpu_column=problem.gpu_column,
        count_columns=tuple(np.flatnonzero(~problem.column_packs).tolist()),
        hint_nodes=hint_nodes,
        declared=[tuple(sorted(c.id for c in node.numa_cells)) for node in snapshot.nodes],
        free_by_node=problem.free.T.tolist(),
        devices_by_node=[
            [(cell, free, index) for cell, free, index in zip(cells, frees, indices) if index >= 0]
            for cells, frees, indices in zip(gpu_cell_id.tolist(), problem.gpu_free_milli.tolist(), problem.gpu_index.tolist())
        ],
        cells_by_node=[
            [(cell, cpu) for cell, cpu in zip(ids, cpus) if cell >= 0]
            for ids, cpus in zip(problem.cell_ids.tolist(), cell_cpu.tolist())
        ],
        restricted=list(fixed.notes) if fixed is not None else [],
    )


def profile_of(
    build: BuildContext, free: list[int], device_free: list[tuple[int, int, int]], cell_cpu: list[tuple[int, int]], node: int
) -> int:
    """Profile id of a node with `free`, devices (cell, free, index) and cells (id, cpu)."""
    ordered = sorted(d for d in device_free if d[1] > 0)
    devices = tuple((cell, value) for cell, value, _ in ordered)
    # A node already past its allocatable (lowered under running pods) has none left;
    # a negative amount would read as DOMINATED, never binding.
    left = tuple(max(0, amount) for amount in free)
    considered = node not in build.left_out
    gpu_node = bool(build.problem.allocatable[build.gpu_column, node] > 0)
    raw = (
        left, devices, tuple(sorted(cell_cpu)), build.declared[node], int(build.problem.node_class[node]), considered,
        gpu_node,
    )  # fmt: skip
    known = build.raw_profile.get(raw)
    if known is not None:
        return known
    device_total = sum(d[1] for d in ordered)
    profile = Profile(
        free=raw[0],
        devices=devices,
        cells=raw[2],
        declared_cells=build.declared[node],
        eligibility=raw[4],
        unindexed_gpu=free[build.gpu_column] < device_total,
        considered=considered,
    )
    eligible = build.eligible_shapes[profile.eligibility] if considered else []
    pending = sum(build.pending_by_shape.get(shape.index, 0) for shape in eligible)
    profile = dominated(profile, eligible, build.gpu_column, counts=build.count_columns, pending=pending)
    profile = dataclasses.replace(
        profile,
        packing_cpu=_packing_cpu(build, profile, eligible, left[build.problem.cpu_column], device_total),
        packing_class=int(build.ctx.packing.node_class[node]),
        gpu_node=gpu_node,
    )
    if profile not in build.profile_id:
        build.profile_id[profile] = len(build.profiles)
        build.profiles.append(profile)
    build.raw_profile[raw] = build.profile_id[profile]
    return build.profile_id[profile]

def _packing_cpu(build: BuildContext, profile: Profile, eligible: list[Shape], cpu_free: int, device_total: int) -> int:
    """The node's free CPU as the packing tier needs it, exact and as coarse as that allows.

    The tier compares the CPU left after a pattern with each typical shape's CPU. When the
    profile's CPU is DOMINATED (its devices bind first), a pattern takes at most the most
    CPU-hungry shape's CPU per milli-GPU times the free device milli; a node with at least
    that plus the largest typical CPU free leaves every typical shape its CPU after any
    pattern, so all such nodes read alike at that cap and share a profile."""
    if profile.free[build.problem.cpu_column] != DOMINATED or not eligible:
        return cpu_free
    worst = max(eligible, key=lambda shape: shape.cpu_milli / shape.gpu_milli)
    taken = -(-worst.cpu_milli * device_total // worst.gpu_milli)
    thresholds = build.ctx.packing.cpu_thresholds
    return min(cpu_free, taken + (int(thresholds[-1]) if thresholds.size else 0))


def node_state(build: BuildContext, n: int) -> tuple[list[int], list[tuple[int, int, int]], list[tuple[int, int]]]:
    """Node n's free resources, devices (cell, free milli, index) and cells (id, cpu or UNKNOWN): fresh lists."""
    return list(build.free_by_node[n]), list(build.devices_by_node[n]), list(build.cells_by_node[n])

def node_profile(build: BuildContext, n: int) -> int:
    devices = build.devices_by_node[n]
    build.device_order[n] = [index for _, _, index in sorted(d for d in devices if d[1] > 0)]
    return profile_of(build, build.free_by_node[n], devices, build.cells_by_node[n], n)

def after_profile(build: BuildContext, n: int, evicted: list[int]) -> int:
    problem = build.problem
    free, devices, cells = node_state(build, n)
    by_index = {index: i for i, (_, _, index) in enumerate(devices)}
    cell_pos = {cell: i for i, (cell, _) in enumerate(cells)}
    gpu_index = problem.gpu_index
    for p in evicted:
        requests = problem.pod_requests[p].tolist()
        free = [have + more for have, more in zip(free, requests)]
        gpu = requests[build.gpu_column]
        per_device = milli_per_device(gpu)
        for g in problem.pod_gpu_slots.get(p, ()):
            i = by_index[int(gpu_index[n, g])]
            cell, value, index = devices[i]
            devices[i] = (cell, value + per_device, index)
        slot = problem.pod_cell_slot.get(p, -1)
        if slot >= 0:
            cell_id = int(problem.cell_ids[n, slot])
            position = cell_pos[cell_id]
            if cells[position][1] != UNKNOWN:
                cells[position] = (cell_id, cells[position][1] + requests[problem.cpu_column])
    return profile_of(build, free, devices, cells, n)
