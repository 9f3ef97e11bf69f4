"""The CP-SAT engine's data step: a snapshot's pending work, nodes and victims, aggregated.

Input: the `Snapshot`, its `Problem`, the `ObjectiveContext` and (optionally) the greedy
placement, whose choices are always kept representable. Output: a `ModelData` the
variable and constraint steps read; nothing here touches OR-Tools.

What is aggregated, and why it stays exact:
  - *units*: the PodGroups that may get binds this cycle (queue exists and is open, enough
    pods for their minimum, tasks not waiting on dependencies); each task's pending pods
    are interchangeable, so a task is one count, never one variable per pod — one count
    per sub-group its pods are in, when the PodGroup has sub-groups (`cpsat.units`);
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

from models.placement import Placement
from models.snapshot import (
    GPU_MILLI_PER_DEVICE,
    PodGroup,
    QueueName,
    Snapshot,
    Task,
    gpu_devices,
)
from solver.after import milli_per_device
from solver.cpsat.build_context import BuildContext, new_build_context, node_profile
from solver.cpsat.devices import DeviceSteps, MultisetFit
from solver.cpsat.dra import multiset_fits
from solver.cpsat.interpod import FixedPart
from solver.cpsat.neighbourhood import left_out_nodes
from solver.cpsat.patterns import (
    Pattern,
    PatternSet,
    Profile,
    Shape,
    add_fill,
    build_pattern_set,
    walk_further,
)
from solver.cpsat.topology import OUTSIDE, atoms, candidates, topology_sets
from solver.cpsat.units import DataLimits, Unit, UnitSubGroup, UnitTask
from solver.cpsat.victims import NO_ATOM, NodeGroup, VictimKind, VictimSubGroup, node_groups, victims
from solver.objective import ObjectiveContext, in_hard_sub_group, pod_value, soft_topology, whole_racks
from solver.problem import UNLIMITED, GroupFacts, Problem
from solver.rules.gang import sub_group_minimum
from solver.rules.preemption import waits_instead
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
    pattern_sets: dict[int, PatternSet]  # profile id → untracked node patterns
    topology_sets: dict[tuple[int, str], list[Pattern]]  # (profile id, atom) → patterns with a tracked pod
    node_groups: list[NodeGroup]
    kinds: list[VictimKind]
    preemptor_classes: list[tuple[QueueName, int, bool, bool]]  # (queue, priority, may preempt, waits instead)
    atoms: list[str]  # tracked atoms
    soft_domain: dict[str, str | None]  # atom → HyperNode where soft spans count
    domain_atoms: dict[str, frozenset[str]]  # hard domain → its atoms
    device_order: dict[int, list[int]]  # node → device indices in profile order
    victim_groups: dict[int, int]  # PodGroup index → its running pods (groups with candidate kinds)
    victim_minimum: dict[int, int]
    victim_fixed: dict[int, int]  # PodGroup index → running pods that are no candidates
    victim_sub_groups: dict[tuple[int, str], VictimSubGroup]  # (PodGroup index, sub-group) with candidate victims
    whole_racks: frozenset[str]  # racks the model may open (`_whole_racks_left`)
    restricted: list[str] = field(default_factory=list)
    fixed: FixedPart | None = None  # inter-pod constraints: the hint's part taken as it is (`cpsat.interpod`)


def device_order(data: ModelData, n: int, evicted: list[int]) -> list[int]:
    """Node n's device indices in its profile's canonical order, after `evicted` leave."""
    if not evicted and n in data.device_order:
        return list(data.device_order[n])  # the data step's, computed the same way
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
    return _build(new_build_context(snapshot, problem, ctx, limits, hint or Placement(), fixed))


def _build(build: BuildContext) -> ModelData:
    """The steps in order: units and shapes, victims, node profiles, atoms and candidate
    domains, node groups, patterns per profile and per (profile, atom)."""
    units, tasks, shapes, classes = _units(build)
    for task in tasks:
        build.pending_by_shape[task.shape] = build.pending_by_shape.get(task.shape, 0) + len(task.pending)
    kinds, victims_on, victim_groups, victim_minimum, victim_fixed, victim_sub_groups = victims(build, units, classes)
    _neighbourhood(build, units, tasks, shapes, victims_on)
    node_profiles = [node_profile(build, n) for n in range(build.problem.node_count)]
    atom_of, soft_domain, domain_atoms = atoms(build, units)
    candidates(build, units, atom_of, domain_atoms, victims_on, kinds, tasks)
    tracked = sorted({a for u in units for a in (*u.atoms, *(a for sub in u.sub_groups for a in sub.atoms))})
    tracked_set = set(tracked)
    groups = node_groups(build, node_profiles, atom_of, tracked_set, victims_on, kinds)
    shape_rows = {task.shape: task.row for task in reversed(tasks)}  # a task row per shape (its first)
    pattern_sets = _pattern_sets(build, groups, shapes, build.pending_by_shape, multiset_fits(build, shape_rows))
    atom_patterns = topology_sets(build, groups, pattern_sets, shapes, tasks, units, build.pending_by_shape)
    return ModelData(
        snapshot=build.snapshot,
        problem=build.problem,
        ctx=build.ctx,
        units=units,
        tasks=tasks,
        shapes=shapes,
        profiles=build.profiles,
        pattern_sets=pattern_sets,
        topology_sets=atom_patterns,
        node_groups=groups,
        kinds=kinds,
        preemptor_classes=classes,
        atoms=tracked,
        soft_domain={a: soft_domain.get(a) for a in tracked},
        domain_atoms=domain_atoms,
        device_order=build.device_order,
        victim_groups=victim_groups,
        victim_minimum=victim_minimum,
        victim_fixed=victim_fixed,
        victim_sub_groups=victim_sub_groups,
        whole_racks=_whole_racks_left(build),
        restricted=build.restricted,
        fixed=build.fixed,
    )


def _units(build: BuildContext) -> tuple[list[Unit], list[UnitTask], list[Shape], list[tuple[QueueName, int]]]:
    snapshot, problem = build.snapshot, build.problem
    units: list[Unit] = []
    tasks: list[UnitTask] = []
    shape_index: dict[tuple[object, ...], int] = {}
    shapes: list[Shape] = []
    classes: dict[tuple[QueueName, int, bool, bool], int] = {}
    known_cell_cpu = bool((problem.cell_cpu_free[problem.cell_ids >= 0] != UNLIMITED).any())
    for k, group in enumerate(snapshot.pod_groups):
        queue = snapshot.queue_by_name.get(group.queue)
        if queue is None or queue.state != "open" or group.key in build.held or not problem.group_has_pending[k]:
            continue  # (nothing to place: every pod of it runs)
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
        weight = build.ctx.weights[group.key]
        unit_index = len(units)
        hard_limit = hard_tier_limit(group)
        pending_total = sum(len(pending[t.name]) for t in placeable)
        tracked = soft_topology(group) or (hard_limit is not None and pending_total + len(set(anchors)) > 1)
        split = _SubGroupSplit(snapshot, problem, group, facts, placeable)
        unit_tasks: list[UnitTask] = []
        for task in placeable:
            row = problem.task_row[(group.key, task.name)]
            requests = problem.task_requests[row]
            gpu = int(requests[build.gpu_column])
            whole = gpu_devices(gpu)
            fraction = gpu if 0 < gpu < GPU_MILLI_PER_DEVICE else 0
            numa = task.numa_policy == "single-numa-node"
            effective_numa = numa and (whole >= 2 or known_cell_cpu)
            for sub_position, pods, sub_running in split.parts(task.name, pending[task.name], running[task.name]):
                task_tracked = tracked or (sub_position is not None and split.subs[sub_position].tracked)
                key = (tuple(requests.tolist()), int(problem.task_eligibility_class[row]), effective_numa, task_tracked)
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
                            topology=task_tracked,
                        )
                    )
                unit_task = UnitTask(
                    row=row,
                    name=task.name,
                    unit=unit_index,
                    shape=shape_index[key],
                    pending=pods,
                    running=sub_running,
                    minimum=requirement.task_minimum(task.name),
                    single_numa=numa,
                    value=weight * pod_value(task.requests, build.ctx.devices),
                    tracked=task_tracked,
                    sub_group=sub_position,
                )
                unit_tasks.append(unit_task)
                tasks.append(unit_task)
                if sub_position is not None:
                    split.subs[sub_position].tasks.append(unit_task)
        # Tasks with nothing pending still count toward the per-task minimum through their running pods.
        # Preemptor class: what `victim_refusal` reads of the preemptor besides its own PodGroup.
        waits = waits_instead(snapshot, group)
        pclass = classes.setdefault((group.queue, group.priority, group.may_preempt, waits), len(classes))
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
                tracked=tracked or any(sub.tracked for sub in split.subs),
                sub_groups=split.subs,
                started_sub_groups=split.started,
            )
        )
    # The shapes eligible per node class, for the profiles and patterns built later.
    shape_rows = {shape_index[key]: key[1] for key in shape_index}
    for node_class, node in enumerate(problem.node_class_representative):
        build.eligible_shapes[node_class] = [
            shape for shape in shapes if problem.eligible_by_class[shape_rows[shape.index], node]
        ]
    return units, tasks, shapes, sorted(classes, key=classes.__getitem__)


def _whole_racks_left(build: BuildContext) -> frozenset[str]:
    """The whole racks (`solver.objective.whole_racks`) the model may open: without those the
    fixed part's binds of hard sub-groups open already — its locality constant counts them,
    and a rack opened twice counts once in `score`."""
    racks = whole_racks(build.snapshot, build.ctx)
    if build.fixed is None:
        return racks
    pods, span = build.snapshot.pod_by_key, build.ctx.span_domain
    opened = set()
    for bind in build.fixed.placement.binds:
        pod = pods[bind.pod]
        group = build.snapshot.pod_group_by_key[pod.pod_group]
        if in_hard_sub_group(group, pod.sub_group):
            opened.add(span.get(bind.node))
    return racks - opened


class _SubGroupSplit:
    """A PodGroup's pending pods cut by sub-group, for `_units` (`cpsat.units` says why a
    task becomes one unit task per sub-group). Without sub-groups: one part per task, as
    before sub-groups existed."""

    def __init__(self, snapshot: Snapshot, problem: Problem, group: PodGroup, facts: GroupFacts, placeable: list[Task]):
        self.snapshot, self.group = snapshot, group
        self.subs: list[UnitSubGroup] = []
        self.started: dict[str, int] = {}
        if not group.sub_groups:
            return
        pods = snapshot.pods
        self.running_of: dict[tuple[str | None, str | None], int] = {}  # (task, sub-group) → running pods
        anchors: dict[str, set[int]] = {}
        for p in facts.running_pods:
            pod = pods[p]
            key = (pod.task, pod.sub_group)
            self.running_of[key] = self.running_of.get(key, 0) + 1
            if pod.sub_group is not None:
                anchors.setdefault(pod.sub_group, set()).add(int(problem.pod_node[p]))
        pending_of: dict[str, int] = {}
        for task in placeable:
            for p in facts.pending[task.name]:
                if pods[p].sub_group is not None:
                    pending_of[pods[p].sub_group] = pending_of.get(pods[p].sub_group, 0) + 1
        self.position: dict[str, int] = {}
        for sub in group.sub_groups:
            running = sum(count for (_, name), count in self.running_of.items() if name == sub.name)
            minimum = sub_group_minimum(sub)
            if not pending_of.get(sub.name):
                if running >= minimum:
                    self.started[sub.policy] = self.started.get(sub.policy, 0) + 1
                continue
            limit = hard_tier_limit(sub)
            nodes = sorted(anchors.get(sub.name, ()))
            self.position[sub.name] = len(self.subs)
            self.subs.append(
                UnitSubGroup(
                    index=len(self.subs),
                    sub=sub,
                    tasks=[],
                    running=running,
                    minimum=minimum,
                    hard_limit=limit,
                    anchors=nodes,
                    tracked=limit is not None,
                )
            )

    def parts(self, task: str, pending: list[int], running: int) -> list[tuple[int | None, list[int], int]]:
        """(sub-group position or None, its pending pods of `task`, its running pods of `task`):
        pods in no sub-group first, then the sub-groups in the PodGroup's order."""
        if not self.group.sub_groups:
            return [(None, pending, running)]
        by_sub: dict[str | None, list[int]] = {}
        for p in pending:
            by_sub.setdefault(self.snapshot.pods[p].sub_group, []).append(p)
        ordered = sorted(by_sub, key=lambda name: -1 if name is None else self.position[name])
        return [
            (None if name is None else self.position[name], by_sub[name], self.running_of.get((task, name), 0))
            for name in ordered
        ]


def _neighbourhood(
    build: BuildContext, units: list[Unit], tasks: list[UnitTask], shapes: list[Shape], victims_on: dict[int, object]
) -> None:
    left_out = left_out_nodes(
        build.problem,
        units,
        tasks,
        shapes,
        per_pod=build.limits.candidate_nodes_per_pod,
        hint_nodes=build.hint_nodes,
        victim_nodes=sorted(victims_on),
    )
    if left_out:
        build.left_out.update(left_out)
        kept = build.problem.node_count - len(left_out)
        build.restricted.append(
            f"candidate nodes: {kept} of {build.problem.node_count} (the hint's, those with victims, and "
            f"the {build.limits.candidate_nodes_per_pod} best fitting per pending pod of each shape)"
        )


def _pattern_sets(
    build: BuildContext,
    node_groups: list[NodeGroup],
    shapes: list[Shape],
    pending_by_shape: dict[int, int],
    fits: dict[int, MultisetFit] | None,
) -> dict[int, PatternSet]:
    """Per profile used, its node patterns; `fits` per eligibility class: what the devices
    the profile does not describe allow (DRA claims, `cpsat.dra`).

    The profiles share `DataLimits.max_patterns` by water-filling: every walk first gets an
    even share; the walks cut at their share are walked again with an even share of what
    the others left, until none is cut or the share stops growing. So a cluster whose walks
    fit the budget gets the same patterns as without it, even with hundreds of profiles
    that each have few (an openb batch: ~900 profiles, ~4,500 patterns in all); only one
    whose walks together outgrow it is cut, and then with sparse fill patterns."""
    limits = build.limits
    used_profiles = sorted({p for g in node_groups for p in g.after})
    sets: dict[int, PatternSet] = {}
    caps: dict[int, int] = {}
    steps: DeviceSteps = {}  # the device steps every profile's walks share (`devices.DeviceSteps`)
    cut = used_profiles
    share = limits.patterns_per_profile(len(used_profiles))
    while cut:
        for profile_id in cut:
            profile = build.profiles[profile_id]
            caps[profile_id] = share
            if profile_id in sets:  # cut at a smaller share: its walk goes on from there
                walk_further(sets[profile_id], share, sparse_fill=share < limits.max_patterns_per_profile)
                continue
            sets[profile_id] = build_pattern_set(
                profile,
                build.eligible_shapes[profile.eligibility] if profile.considered else [],
                measure=build.ctx.packing,
                cap=share,
                most=pending_by_shape,
                fits=None if fits is None else fits[profile.eligibility],
                sparse_fill=share < limits.max_patterns_per_profile,
                fill=False,  # added once the set is final: a walk cut here may be walked further
                memo=steps,
            )
        cut = [p for p in cut if sets[p].walk_cut and share < limits.max_patterns_per_profile]
        left = limits.max_patterns - sum(len(s.patterns) for p, s in sets.items() if p not in cut)
        grown = min(limits.max_patterns_per_profile, left // max(1, len(cut)))
        if grown <= share:
            break
        share = grown
    for profile_id, pattern_set in sets.items():
        add_fill(pattern_set, most=pending_by_shape)
        if pattern_set.restricted:
            build.restricted.append(f"profile {profile_id}: more than {caps[profile_id]} patterns")
    return sets
