"""The CP-SAT engine's data step: a snapshot's pending work, nodes and victims, aggregated.

Input: the `Snapshot`, its `Problem`, the `ObjectiveContext` and (optionally) the greedy
placement, whose choices are always kept representable. Output: a `ModelData` the
variable and constraint steps read; nothing here touches OR-Tools.

What is aggregated, and why it stays exact:
  - *units*: the PodGroups that may get binds this cycle (queue exists and is open, enough
    pods for their minimum, tasks not waiting on dependencies); each task's pending pods
    are interchangeable, so a task is one count, never one variable per pod;
  - *shapes*: tasks with the same requests, eligibility class and (effective) NUMA policy
    share pattern slots. A 1-GPU or fractional single-numa-node pod is always on one cell,
    so when no NUMA cell states its CPU its policy changes nothing and it shares a shape;
  - *profiles*: nodes with the same free resources, free devices per NUMA cell, CPU per
    cell and eligibility class are interchangeable for pending work; patterns are built
    once per profile;
  - *node groups* and *victim kinds* (`cpsat.victims`): nodes with the same profile,
    atom and candidate victims are interchangeable, including what evicting them yields;
  - *atoms* (`cpsat.topology`): only nodes topology can tell apart are told apart, and
    only for atoms that are candidates of some topology PodGroup.

Candidate pruning that cannot cut off the optimum: shapes that fit no profile alone get
no patterns; nodes where nothing fits and nobody can be evicted only count (fragments);
victims no unit may evict are no victims.

Restrictions (sound, reported in `restricted`, so the engine never claims OPTIMAL): the
PodGroups inter-pod constraints touch, taken as the hint places them (`cpsat.interpod`);
the caps of `DataLimits` — patterns per profile (`cpsat.patterns`), domains per topology
PodGroup and atom patterns (`cpsat.topology`), options per node group and in all
(`cpsat.victims`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.placement import Placement
from models.snapshot import (
    GPU_MILLI_PER_DEVICE,
    QueueName,
    Snapshot,
    gpu_devices,
)
from solver.after import milli_per_device
from solver.cpsat.interpod import FixedPart
from solver.cpsat.patterns import (
    UNKNOWN,
    Pattern,
    PatternSet,
    Profile,
    Shape,
    build_pattern_set,
    dominated,
)
from solver.cpsat.topology import OUTSIDE, TopologySteps
from solver.cpsat.units import DataLimits, Unit, UnitTask
from solver.cpsat.victims import NO_ATOM, NodeGroup, VictimKind, VictimSteps
from solver.objective import ObjectiveContext, pod_value, soft_topology
from solver.problem import UNLIMITED, Problem
from solver.rules.topology import hard_tier_limit

__all__ = [
    "DataLimits",
    "UnitTask",
    "Unit",
    "VictimKind",
    "NodeGroup",
    "ModelData",
    "build_model_data",
    "device_order",
    "NO_ATOM",
    "OUTSIDE",
]


@dataclass
class ModelData:
    snapshot: Snapshot
    problem: Problem
    ctx: ObjectiveContext
    units: list[Unit]
    tasks: list[UnitTask]
    shapes: list[Shape]
    profiles: list[Profile]
    pattern_sets: dict[int, PatternSet]  # profile id → untracked node patterns and pools
    topology_sets: dict[tuple[int, str], list[Pattern]]  # (profile id, atom) → patterns with a tracked pod
    node_groups: list[NodeGroup]
    kinds: list[VictimKind]
    preemptor_classes: list[tuple[QueueName, int, bool]]  # (queue, priority, may preempt)
    atoms: list[str]  # tracked atoms
    soft_domain: dict[str, str | None]  # atom → HyperNode where soft spans count
    domain_atoms: dict[str, frozenset[str]]  # hard domain → its atoms
    device_order: dict[int, list[int]]  # node → device indices in profile order
    victim_groups: dict[int, int]  # PodGroup index → its running pods (groups with candidate kinds)
    victim_minimum: dict[int, int]
    victim_fixed: dict[int, int]  # PodGroup index → running pods that are no candidates
    restricted: list[str] = field(default_factory=list)
    fixed: FixedPart | None = None  # inter-pod constraints: the hint's part taken as it is (`cpsat.interpod`)


def device_order(data: ModelData, n: int, evicted: list[int]) -> list[int]:
    """Node n's device indices in its profile's canonical order, after `evicted` leave."""
    if not evicted and n in data.device_order:
        return list(data.device_order[n])  # the builder's, computed the same way
    problem = data.problem
    devices = {}
    for g in range(problem.gpu_index.shape[1]):
        if problem.gpu_index[n, g] >= 0:
            devices[int(problem.gpu_index[n, g])] = [int(problem.cell_ids[n, problem.gpu_cell[n, g]]), int(problem.gpu_free_milli[n, g])]
    for p in evicted:
        gpu = int(problem.pod_requests[p, problem.gpu_column])
        per_device = milli_per_device(gpu)
        for g in problem.pod_gpu_slots.get(p, ()):
            devices[int(problem.gpu_index[n, g])][1] += per_device
    ordered = sorted((cell, free, index) for index, (cell, free) in devices.items() if free > 0)
    return [index for _, _, index in ordered]


def build_model_data(
    snapshot: Snapshot,
    problem: Problem,
    ctx: ObjectiveContext,
    *,
    limits: DataLimits,
    hint: Placement | None = None,
    fixed: FixedPart | None = None,
) -> ModelData:
    """With `fixed`, `problem` is its problem (the fixed binds placed) and `hint` its
    residual hint; its PodGroups are no units and its protected pods no victims."""
    builder = _Builder(snapshot, problem, ctx, limits, hint or Placement(), fixed)
    return builder.build()


class _Builder(VictimSteps, TopologySteps):
    def __init__(
        self,
        snapshot: Snapshot,
        problem: Problem,
        ctx: ObjectiveContext,
        limits: DataLimits,
        hint: Placement,
        fixed: FixedPart | None = None,
    ):
        self.snapshot, self.problem, self.ctx, self.limits, self.hint = snapshot, problem, ctx, limits, hint
        self.fixed = fixed
        self.held = fixed.held if fixed is not None else frozenset()
        self.protected = fixed.protected if fixed is not None else frozenset()
        self.restricted: list[str] = list(fixed.notes) if fixed is not None else []
        self.profiles: list[Profile] = []
        self.profile_id: dict[Profile, int] = {}
        self.device_order: dict[int, list[int]] = {}
        self.raw_profile: dict[tuple[object, ...], int] = {}
        self.after_cache: dict[tuple[object, ...], int] = {}
        self._declared = [tuple(sorted(c.id for c in node.numa_cells)) for node in snapshot.nodes]
        self.gpu_column = problem.gpu_column
        # The node tables as Python lists, read once: the per-node steps below index them
        # tens of thousands of times, and a numpy scalar read costs ~10× a list's.
        rows = np.arange(problem.node_count)[:, None]
        gpu_cell_id = np.where(problem.gpu_index >= 0, problem.cell_ids[rows, np.maximum(problem.gpu_cell, 0)], -1)
        self._free_by_node: list[list[int]] = problem.free.T.tolist()
        self._devices_by_node: list[list[tuple[int, int, int]]] = [
            [(cell, free, index) for cell, free, index in zip(cells, frees, indices) if index >= 0]
            for cells, frees, indices in zip(
                gpu_cell_id.tolist(), problem.gpu_free_milli.tolist(), problem.gpu_index.tolist()
            )
        ]
        cell_cpu = np.where(problem.cell_cpu_free == UNLIMITED, UNKNOWN, problem.cell_cpu_free)
        self._cells_by_node: list[list[tuple[int, int]]] = [
            [(cell, cpu) for cell, cpu in zip(ids, cpus) if cell >= 0]
            for ids, cpus in zip(problem.cell_ids.tolist(), cell_cpu.tolist())
        ]
        self.hint_nodes: dict[str, set[int]] = {}  # group key → nodes the hint binds it to
        for bind in hint.binds:
            pod = snapshot.pod_by_key.get(bind.pod)
            if pod is not None and pod.pod_group is not None and bind.node in problem.node_index:
                self.hint_nodes.setdefault(pod.pod_group, set()).add(problem.node_index[bind.node])

    # ---- entry ----

    def build(self) -> ModelData:
        units, tasks, shapes, classes = self._units()
        self.pending_by_shape: dict[int, int] = {}
        for task in tasks:
            self.pending_by_shape[task.shape] = self.pending_by_shape.get(task.shape, 0) + len(task.pending)
        kinds, victims_on, victim_groups, victim_minimum, victim_fixed = self._victims(units, classes)
        node_profiles = [self._node_profile(n) for n in range(self.problem.node_count)]
        atom_of, soft_domain, domain_atoms = self._atoms(units)
        self._candidates(units, atom_of, domain_atoms, victims_on, kinds, tasks)
        tracked = sorted({a for u in units for a in u.atoms})
        tracked_set = set(tracked)
        node_groups = self._node_groups(node_profiles, atom_of, tracked_set, victims_on, kinds)
        pattern_sets = self._pattern_sets(node_groups, shapes, self.pending_by_shape)
        topology_sets = self._topology_sets(node_groups, pattern_sets, shapes, tasks, units, self.pending_by_shape)
        return ModelData(
            snapshot=self.snapshot,
            problem=self.problem,
            ctx=self.ctx,
            units=units,
            tasks=tasks,
            shapes=shapes,
            profiles=self.profiles,
            pattern_sets=pattern_sets,
            topology_sets=topology_sets,
            node_groups=node_groups,
            kinds=kinds,
            preemptor_classes=classes,
            atoms=tracked,
            soft_domain={a: soft_domain.get(a) for a in tracked},
            domain_atoms=domain_atoms,
            device_order=self.device_order,
            victim_groups=victim_groups,
            victim_minimum=victim_minimum,
            victim_fixed=victim_fixed,
            restricted=self.restricted,
            fixed=self.fixed,
        )

    # ---- units, tasks, shapes ----

    def _units(self) -> tuple[list[Unit], list[UnitTask], list[Shape], list[tuple[QueueName, int]]]:
        snapshot, problem = self.snapshot, self.problem
        units: list[Unit] = []
        tasks: list[UnitTask] = []
        shape_index: dict[tuple[object, ...], int] = {}
        shapes: list[Shape] = []
        classes: dict[tuple[QueueName, int, bool], int] = {}
        known_cell_cpu = bool((problem.cell_cpu_free[problem.cell_ids >= 0] != UNLIMITED).any())
        for k, group in enumerate(snapshot.pod_groups):
            queue = snapshot.queue_by_name.get(group.queue)
            if queue is None or queue.state != "open" or group.key in self.held:
                continue
            facts = problem.group_facts[k]
            if not facts.can_be_met:
                continue
            requirement, running = facts.requirement, facts.running
            pending = {name: list(pods) for name, pods in facts.pending.items()}
            anchors = [int(problem.pod_node[p]) for p in facts.running_pods]
            active = [t for t in group.tasks if t.name not in requirement.waiting]
            placeable = [t for t in active if pending[t.name]]
            if not placeable:
                continue
            weight = self.ctx.weights[group.key]
            unit_index = len(units)
            hard_limit = hard_tier_limit(group)
            pending_total = sum(len(pending[t.name]) for t in placeable)
            tracked = soft_topology(group) or (hard_limit is not None and pending_total + len(set(anchors)) > 1)
            unit_tasks: list[UnitTask] = []
            for task in placeable:
                row = problem.task_row[(group.key, task.name)]
                requests = problem.task_requests[row]
                gpu = int(requests[self.gpu_column])
                whole = gpu_devices(gpu)
                fraction = gpu if 0 < gpu < GPU_MILLI_PER_DEVICE else 0
                numa = task.numa_policy == "single-numa-node"
                effective_numa = numa and (whole >= 2 or known_cell_cpu)
                key = (tuple(requests.tolist()), int(problem.task_eligibility_class[row]), effective_numa, tracked)
                if key not in shape_index:
                    shape_index[key] = len(shapes)
                    shapes.append(
                        Shape(
                            index=len(shapes),
                            requests=key[0],
                            gpu_milli=gpu,
                            whole=whole,
                            fraction=fraction,
                            single_numa=effective_numa,
                            cpu_milli=int(requests[problem.cpu_column]),
                            topology=tracked,
                        )
                    )
                unit_task = UnitTask(
                    row=row,
                    name=task.name,
                    unit=unit_index,
                    shape=shape_index[key],
                    pending=pending[task.name],
                    running=running[task.name],
                    minimum=requirement.task_minimum(task.name),
                    single_numa=numa,
                    value=weight * pod_value(task.requests),
                )
                unit_tasks.append(unit_task)
                tasks.append(unit_task)
            # Tasks with nothing pending still count toward the per-task minimum through their running pods.
            # Preemptor class: what `victim_refusal` reads of the preemptor besides its own PodGroup.
            pclass = classes.setdefault((group.queue, group.priority, group.may_preempt), len(classes))
            units.append(
                Unit(
                    index=unit_index,
                    group_index=k,
                    group=group,
                    queue=int(problem.group_queue[k]),
                    tasks=unit_tasks,
                    running=sum(running.values()),
                    min_member=requirement.min_member,
                    preemptor_class=pclass,
                    hard_limit=hard_limit,
                    soft=soft_topology(group),
                    anchors=sorted(set(anchors)),
                    tracked=tracked,
                )
            )
        # A shape's eligibility row is needed later: keep it alongside.
        self.shape_rows = {shape_index[key]: key[1] for key in shape_index}
        self.shapes = shapes
        self.eligible_shapes: dict[int, list[Shape]] = {}
        for node_class, node in enumerate(problem.node_class_representative):
            self.eligible_shapes[node_class] = [
                shape for shape in shapes if problem.eligible_by_class[self.shape_rows[shape.index], node]
            ]
        return units, tasks, shapes, sorted(classes, key=classes.__getitem__)

    # ---- profiles ----

    def _profile_of(
        self, free: list[int], device_free: list[tuple[int, int, int]], cell_cpu: list[tuple[int, int]], node: int
    ) -> int:
        """Profile id of a node with `free`, devices (cell, free, index) and cells (id, cpu)."""
        ordered = sorted(d for d in device_free if d[1] > 0)
        devices = tuple((cell, value) for cell, value, _ in ordered)
        # A node already past its allocatable (lowered under running pods) has none left;
        # a negative amount would read as DOMINATED, never binding.
        left = tuple(max(0, amount) for amount in free)
        raw = (left, devices, tuple(sorted(cell_cpu)), self._declared[node], int(self.problem.node_class[node]))
        known = self.raw_profile.get(raw)
        if known is not None:
            return known
        device_total = sum(d[1] for d in ordered)
        profile = Profile(
            free=raw[0],
            devices=devices,
            cells=raw[2],
            declared_cells=self._declared[node],
            eligibility=raw[4],
            unindexed_gpu=free[self.gpu_column] < device_total,
        )
        eligible = self.eligible_shapes[profile.eligibility]
        pending = sum(self.pending_by_shape.get(shape.index, 0) for shape in eligible)
        profile = dominated(profile, eligible, self.gpu_column, pods_column=self.problem.pods_column, pending=pending)
        if profile not in self.profile_id:
            self.profile_id[profile] = len(self.profiles)
            self.profiles.append(profile)
        self.raw_profile[raw] = self.profile_id[profile]
        return self.profile_id[profile]

    def _node_state(self, n: int) -> tuple[list[int], list[tuple[int, int, int]], list[tuple[int, int]]]:
        """Node n's free resources, devices (cell, free milli, index) and cells (id, cpu or UNKNOWN): fresh lists."""
        return list(self._free_by_node[n]), list(self._devices_by_node[n]), list(self._cells_by_node[n])

    def _node_profile(self, n: int) -> int:
        devices = self._devices_by_node[n]
        self.device_order[n] = [index for _, _, index in sorted(d for d in devices if d[1] > 0)]
        return self._profile_of(self._free_by_node[n], devices, self._cells_by_node[n], n)

    def _after_profile(self, n: int, evicted: list[int]) -> int:
        problem = self.problem
        free, devices, cells = self._node_state(n)
        by_index = {index: i for i, (_, _, index) in enumerate(devices)}
        cell_pos = {cell: i for i, (cell, _) in enumerate(cells)}
        gpu_index = problem.gpu_index
        for p in evicted:
            requests = problem.pod_requests[p].tolist()
            free = [have + more for have, more in zip(free, requests)]
            gpu = requests[self.gpu_column]
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
        return self._profile_of(free, devices, cells, n)

    # ---- patterns ----

    def _pattern_sets(
        self, node_groups: list[NodeGroup], shapes: list[Shape], pending_by_shape: dict[int, int]
    ) -> dict[int, PatternSet]:
        used_profiles = sorted({p for g in node_groups for p in g.after})
        sets: dict[int, PatternSet] = {}
        for profile_id in used_profiles:
            profile = self.profiles[profile_id]
            pattern_set = build_pattern_set(
                profile,
                self.eligible_shapes[profile.eligibility],
                rule=self.ctx.fragments,
                gpu_column=self.gpu_column,
                cap=self.limits.max_patterns_per_profile,
                most=pending_by_shape,
            )
            if pattern_set.restricted:
                self.restricted.append(f"profile {profile_id}: more than {self.limits.max_patterns_per_profile} patterns")
            sets[profile_id] = pattern_set
        return sets
