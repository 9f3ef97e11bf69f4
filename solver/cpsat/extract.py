"""From the CP-SAT solution's counts back to a concrete `Placement`.

Input: `ModelData`, `Variables` and a value function over the solution. Output: binds
(pod, node, GPU indices, NUMA cell) and evictions (pod, node, reason, for whom).

Deterministic, in this order:
  1. node groups: the first `option_nodes[o]` nodes of a group (snapshot order), option by
     option, take option o; their victims of each kind are the first pods of that kind;
  2. profiles: nodes of a profile in tracked atoms take the atom's tracked patterns
     first, then every node left takes the untracked patterns, pattern by pattern; each
     node's pattern becomes device positions by `cpsat.patterns.assign`, and positions
     become the node's own device indices (its devices in the profile's canonical order,
     after its evictions);
  3. pods: tracked tasks fill their shape's slots in their atom, then every other task
     fills its shape's slots, pods in snapshot order;
  4. evictions: per kind, the first `preempted` of its evicted pods are preempts, the rest
     reclaims; each is for the PodGroup that takes the room it leaves: among the admitted
     PodGroups of an allowed preemptor class other than the victim's own, the first (class
     order, then highest priority, then key) bound on the victim's node, as Volcano evicts
     on the node its preemptor is placed on; only when none binds there, the first of them.
     Why not the first admitted PodGroup alone: with `a` (priority 100) placed on a free
     node and `b` (priority 50) on the node a victim leaves, the eviction is for `b`.

The model's constraints make every count fit; the result still goes through the checker.
"""

from __future__ import annotations

from collections.abc import Callable

from ortools.sat.python import cp_model

from models.placement import Bind, Eviction, Placement
from solver.cpsat.data import ModelData, device_order
from solver.cpsat.patterns import Pattern, assign
from solver.cpsat.variables import Variables

__all__ = ["extract_placement"]

ValueOf = Callable[[cp_model.IntVar], int]
SlotRecord = tuple[int, tuple[int, ...], int | None]  # node, device indices, cell id


def extract_placement(data: ModelData, variables: Variables, value: ValueOf) -> Placement:
    nodes_of_profile: dict[int, list[int]] = {}
    evicted_on: dict[int, list[tuple[int, int]]] = {}  # node → (kind, pod)
    for group, group_vars in zip(data.node_groups, variables.node_groups):
        if group_vars.option_nodes[0] is None:
            nodes_of_profile.setdefault(group.after[0], []).extend(group.nodes)
            continue
        remaining = list(group.nodes)
        for option, var in enumerate(group_vars.option_nodes):
            count = value(var)  # type: ignore[arg-type]
            chosen, remaining = remaining[:count], remaining[count:]
            nodes_of_profile.setdefault(group.after[option], []).extend(chosen)
            for n in chosen:
                victims = group.victims_by_node.get(n, {})
                for (kind, _), k in zip(group.kinds, group.options[option]):
                    evicted_on.setdefault(n, []).extend((kind, p) for p in victims.get(kind, [])[:k])
    atom_of = {n: group.atom for group in data.node_groups for n in group.nodes}
    shapes = {s.index: s for s in data.shapes}
    free_slots: dict[int, list[SlotRecord]] = {}  # shape → slots for untracked tasks
    atom_slots: dict[tuple[str, int], list[SlotRecord]] = {}  # (atom, shape) → slots for tracked tasks
    for profile, nodes in sorted(nodes_of_profile.items()):
        if profile not in data.pattern_sets:
            continue
        pattern_set = data.pattern_sets[profile]
        profile_vars = variables.profiles[profile]
        nodes = sorted(nodes)
        taken: set[int] = set()
        assigned: list[tuple[int, Pattern]] = []
        by_atom: dict[str, list[int]] = {}  # the profile's nodes per atom, in order; taken from the front
        if profile_vars.atom_pattern_nodes:
            for n in nodes:
                by_atom.setdefault(atom_of[n], []).append(n)
        next_of_atom: dict[str, int] = {}
        for (atom, i), var in sorted(profile_vars.atom_pattern_nodes.items()):
            count = value(var)
            if not count:
                continue
            pattern = data.topology_sets[(profile, atom)][i]
            start = next_of_atom.get(atom, 0)
            here = by_atom.get(atom, [])[start : start + count]
            next_of_atom[atom] = start + len(here)
            taken.update(here)
            assigned.extend((n, pattern) for n in here)
        rest = [n for n in nodes if n not in taken] if taken else nodes
        for i, var in sorted(profile_vars.pattern_nodes.items()):
            count = value(var)
            if not count:
                continue
            here, rest = rest[:count], rest[count:]
            assigned.extend((n, pattern_set.patterns[i]) for n in here)
        for n, pattern in sorted(assigned, key=lambda item: item[0]):
            order = device_order(data, n, [p for _, p in evicted_on.get(n, [])])
            for slot in assign(pattern, pattern_set.profile, shapes):
                devices = tuple(sorted(order[p] for p in slot.positions))
                record = (n, devices, slot.cell)
                if shapes[slot.shape].topology:
                    atom_slots.setdefault((atom_of[n], slot.shape), []).append(record)
                else:
                    free_slots.setdefault(slot.shape, []).append(record)
    binds = _binds(data, variables, value, free_slots, atom_slots)
    evictions = _evictions(data, variables, value, evicted_on, binds)
    return Placement.model_construct(binds=tuple(binds), evictions=tuple(evictions))


def _binds(data, variables, value, free_slots, atom_slots) -> list[Bind]:  # noqa: ANN001
    snapshot, problem = data.snapshot, data.problem
    binds: list[Bind] = []

    def bind(p: int, slot: SlotRecord, single_numa: bool) -> None:
        n, devices, cell = slot
        node = snapshot.nodes[n]
        numa_cell = None
        if single_numa:
            if devices:
                numa_cell = node.gpu_by_index[devices[0]].numa_cell
            elif cell is not None:
                numa_cell = cell
            elif node.numa_cells:
                numa_cell = min(c.id for c in node.numa_cells)
            elif problem.cell_ids[n, 0] >= 0:
                numa_cell = int(problem.cell_ids[n, 0])
        binds.append(Bind.model_construct(pod=problem.pod_keys[p], node=problem.node_names[n], gpus=devices, numa_cell=numa_cell))

    cursor: dict[int, int] = {}
    slot_cursor: dict[tuple[str, int], int] = {}  # (atom, shape) → slots of atom_slots used so far
    for position, task in enumerate(data.tasks):
        unit_vars = variables.units[task.unit]
        if not task.tracked:
            continue
        for atom, var in sorted(unit_vars.pods_in.get(position, {}).items()):
            count = value(var)
            slots = atom_slots.get((atom, task.shape), [])
            for _ in range(count):
                p = task.pending[cursor.get(position, 0)]
                cursor[position] = cursor.get(position, 0) + 1
                used_slots = slot_cursor.get((atom, task.shape), 0)
                slot_cursor[(atom, task.shape)] = used_slots + 1
                bind(p, slots[used_slots], task.single_numa)
    used: dict[int, int] = {}
    for position, task in enumerate(data.tasks):
        if task.tracked:
            continue
        count = value(variables.units[task.unit].pods[position])
        slots = free_slots.get(task.shape, [])
        start = used.get(task.shape, 0)
        for k in range(count):
            bind(task.pending[k], slots[start + k], task.single_numa)
        used[task.shape] = start + count
    return binds


def _evictions(data, variables, value, evicted_on, binds: list[Bind]) -> list[Eviction]:  # noqa: ANN001
    problem = data.problem
    pod_index = {key: p for p, key in enumerate(problem.pod_keys)}
    bound_on: dict[str, set[int]] = {}  # node name → PodGroup indices bound there
    for bind in binds:
        bound_on.setdefault(bind.node, set()).add(int(problem.pod_group[pod_index[bind.pod]]))
    admitted_by_class: dict[int, list] = {}
    for unit, unit_vars in zip(data.units, variables.units):
        if value(unit_vars.admitted):
            admitted_by_class.setdefault(unit.preemptor_class, []).append(unit)
    for units in admitted_by_class.values():
        units.sort(key=lambda u: (-u.group.priority, u.group.key))
    by_kind: dict[int, list[int]] = {}
    for n in sorted(evicted_on):
        for kind, p in evicted_on[n]:
            by_kind.setdefault(kind, []).append(p)
    evictions: list[Eviction] = []
    for kind_index, pods in sorted(by_kind.items()):
        kind, kind_vars = data.kinds[kind_index], variables.kinds[kind_index]
        preempted = value(kind_vars.preempted) if kind_vars.preempted is not None else 0
        for i, p in enumerate(pods):
            reason = "preempt" if i < preempted else "reclaim"
            classes = kind.preempt_classes if reason == "preempt" else kind.reclaim_classes
            own = int(problem.pod_group[p])
            node = problem.node_names[int(problem.pod_node[p])]
            allowed = [u for c in classes for u in admitted_by_class.get(c, []) if u.group_index != own]
            allowed.sort(key=lambda u: u.group_index not in bound_on.get(node, ()))  # stable: else the order above
            for_group = allowed[0].group.key if allowed else None
            if for_group is None:
                continue  # the model never leaves an eviction without its preemptor; the checker would object
            evictions.append(Eviction.model_construct(pod=problem.pod_keys[p], node=node, reason=reason, for_=for_group))
    return evictions
