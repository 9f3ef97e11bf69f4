"""A placement (the greedy engine's) as values of the CP-SAT model: the hint.

Two steps, because the hint must stay representable even when the model's pattern,
option or domain sets were cut (`ModelData.restricted`):
  1. `node_uses(data, placement)` reads, node by node, which eviction option the
     placement takes and which pods of which shapes it binds there, and
     `augment(data, uses)` adds every node pattern the placement uses to the pattern sets
     (checked device by device like any other) — before the variables exist;
  2. `hint_values(data, variables, uses)` gives the decision variables their values:
     admissions, pods per task (per atom for tracked tasks), domains, spans, option and
     pattern counts, evictions per kind and reason. Derived variables (fairness, reclaim
     flags) are left to the solver, which completes the hint.

Not promised: that a hint from a placement that breaks a hard rule is feasible (the
solver then simply ignores what does not fit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from models.placement import Placement
from solver.cpsat.data import ModelData
from solver.cpsat.patterns import evaluate
from solver.cpsat.units import task_in_hard_sub_group
from solver.cpsat.variables import Variables

__all__ = ["NodeUse", "node_uses", "augment", "hint_values"]


@dataclass
class NodeUse:
    node: int
    group: int  # node group index
    option: int
    profile: int  # after-option profile
    atom: str
    node_counts: dict[int, int] = field(default_factory=dict)  # shape → pods in the node pattern
    tracked: bool = False  # holds pods of tracked tasks
    pattern: int = -1  # position in the pattern list it ends up in


def node_uses(data: ModelData, placement: Placement) -> tuple[list[NodeUse], dict[int, int], dict[int, tuple[int, int]]]:
    """(per node its use, pods per task position, evictions per kind as (preempt, reclaim))."""
    problem = data.problem
    task_of_pod: dict[int, int] = {}
    for position, task in enumerate(data.tasks):
        for p in task.pending:
            task_of_pod[p] = position
    kind_of_pod: dict[int, int] = {}
    group_of_node: dict[int, int] = {}
    for g, group in enumerate(data.node_groups):
        for n in group.nodes:
            group_of_node[n] = g
        for n, per_kind in group.victims_by_node.items():
            for kind, pods in per_kind.items():
                for p in pods:
                    kind_of_pod[p] = kind
    evicted_on: dict[int, dict[int, int]] = {}
    per_kind: dict[int, list[int]] = {}
    for eviction in placement.evictions:
        p = problem.pod_index.get(eviction.pod)
        if p is None or p not in kind_of_pod:
            continue
        node, kind = int(problem.pod_node[p]), kind_of_pod[p]
        evicted_on.setdefault(node, {})[kind] = evicted_on.get(node, {}).get(kind, 0) + 1
        counts = per_kind.setdefault(kind, [0, 0])
        counts[0 if eviction.reason == "preempt" else 1] += 1
    binds_on: dict[int, list[int]] = {}  # node → task position of each pod bound there
    pods_per_task: dict[int, int] = {}
    for bind in placement.binds:
        p = problem.pod_index.get(bind.pod)
        n = problem.node_index.get(bind.node)
        if p is None or n is None or p not in task_of_pod:
            continue
        binds_on.setdefault(n, []).append(task_of_pod[p])
        pods_per_task[task_of_pod[p]] = pods_per_task.get(task_of_pod[p], 0) + 1
    uses: list[NodeUse] = []
    for n in sorted(set(binds_on) | set(evicted_on)):
        g = group_of_node[n]
        group = data.node_groups[g]
        counts = evicted_on.get(n, {})
        vector = tuple(counts.get(kind, 0) for kind, _ in group.kinds)
        option = group.options.index(vector) if vector in group.options else 0
        use = NodeUse(node=n, group=g, option=option, profile=group.after[option], atom=group.atom)
        for position in binds_on.get(n, ()):
            shape = data.shapes[data.tasks[position].shape]
            use.node_counts[shape.index] = use.node_counts.get(shape.index, 0) + 1
            use.tracked = use.tracked or shape.topology
        uses.append(use)
    kinds = {k: (c[0], c[1]) for k, c in per_kind.items()}
    return uses, pods_per_task, kinds


def augment(data: ModelData, uses: list[NodeUse]) -> None:
    """Add the node patterns `uses` need to the pattern sets (a valid pattern only widens
    the model; one that does not check out is left out and that node's hint dropped)."""
    shapes = {s.index: s for s in data.shapes}
    for use in uses:
        counts = tuple(sorted((s, k) for s, k in use.node_counts.items() if k))
        if not counts:
            continue
        pattern_set = data.pattern_sets[use.profile]
        if use.tracked and use.atom:
            patterns = data.topology_sets.setdefault((use.profile, use.atom), [])
            found = next((i for i, p in enumerate(patterns) if p.counts == counts), -1)
            if found < 0:
                pattern = evaluate(pattern_set.profile, shapes, counts, data.ctx.packing, pattern_set.fits)
                if pattern is not None:
                    patterns.append(pattern)
                    found = len(patterns) - 1
            use.pattern = found
        elif not use.tracked:
            pattern = pattern_set.find(counts)
            if pattern is None:
                pattern = evaluate(pattern_set.profile, shapes, counts, data.ctx.packing, pattern_set.fits)
                if pattern is not None:
                    pattern_set.add(pattern)
            if pattern is not None:
                use.pattern = next(i for i, p in enumerate(pattern_set.patterns) if p is pattern)


def hint_values(
    data: ModelData,
    variables: Variables,
    uses: list[NodeUse],
    pods_per_task: dict[int, int],
    evictions: dict[int, tuple[int, int]],
    placement: Placement,
) -> dict[cp_model.IntVar, int]:
    """Values of the decision variables for the placement `uses` describe."""
    problem = data.problem
    values: dict[cp_model.IntVar, int] = {}
    atom_of_node = {n: group.atom for group in data.node_groups for n in group.nodes}
    bound_nodes: dict[int, list[int]] = {}
    for bind in placement.binds:
        p = problem.pod_index.get(bind.pod)
        if p is not None and bind.node in problem.node_index:
            bound_nodes.setdefault(p, []).append(problem.node_index[bind.node])
    admitted_classes: set[int] = set()
    for unit, unit_vars in zip(data.units, variables.units):
        admitted = any(pods_per_task.get(variables.task_index[id(t)], 0) for t in unit.tasks)
        values[unit_vars.admitted] = int(admitted)
        if admitted:
            admitted_classes.add(unit.preemptor_class)
        atoms_used: dict[str, int] = {}
        atoms_of_task: dict[int, set[str]] = {}
        for task in unit.tasks:
            position = variables.task_index[id(task)]
            values[unit_vars.pods[position]] = pods_per_task.get(position, 0)
            if task.tracked:
                per_atom: dict[str, int] = {}
                for p in task.pending:
                    for n in bound_nodes.get(p, ()):
                        per_atom[atom_of_node[n]] = per_atom.get(atom_of_node[n], 0) + 1
                for atom, var in unit_vars.pods_in.get(position, {}).items():
                    values[var] = per_atom.get(atom, 0)
                for atom, k in per_atom.items():
                    atoms_used[atom] = atoms_used.get(atom, 0) + k
                atoms_of_task[position] = set(per_atom)
        if unit.tracked and unit.domains:
            needed = set(atoms_used) | {atom_of_node[n] for n in unit.anchors if atom_of_node.get(n)}
            fitting = [d for d in unit.domains if needed <= data.domain_atoms[d]]
            chosen = min(fitting, key=lambda d: (len(data.domain_atoms[d]), d)) if admitted and fitting else None
            for domain, var in unit_vars.domain.items():
                values[var] = int(domain == chosen)
        if unit.soft:
            spans = {data.soft_domain.get(a) for a in atoms_used}
            if admitted:
                spans |= {data.ctx.span_domain.get(problem.node_names[n]) for n in unit.anchors}
            for span, var in unit_vars.spans.items():
                values[var] = int(admitted and span in spans)
        for sub, sub_vars in zip(unit.sub_groups, unit_vars.sub_groups):
            positions = [variables.task_index[id(task)] for task in sub.tasks]
            bound = sum(pods_per_task.get(position, 0) for position in positions)
            values[sub_vars.binds] = int(bound > 0)
            if sub_vars.started is not None:
                values[sub_vars.started] = int(sub.running + bound >= sub.minimum)
            needed = {a for position in positions for a in atoms_of_task.get(position, ())}
            needed |= {atom_of_node[n] for n in sub.anchors if atom_of_node.get(n)}
            fitting = [d for d in sub.domains if needed <= data.domain_atoms[d]]
            chosen = min(fitting, key=lambda d: (len(data.domain_atoms[d]), d)) if bound and fitting else None
            for domain, var in sub_vars.domain.items():
                values[var] = int(domain == chosen)
    for c, var in enumerate(variables.any_admitted):
        values[var] = int(c in admitted_classes)
    opened = {
        data.soft_domain.get(atom_of_node[n])
        for unit in data.units
        for task in unit.tasks
        if task_in_hard_sub_group(unit, task)
        for p in task.pending
        for n in bound_nodes.get(p, ())
    }
    for rack, var in variables.opened.items():
        values[var] = int(rack in opened)
    # Node groups: option counts.
    option_counts: dict[int, dict[int, int]] = {}
    for use in uses:
        per_option = option_counts.setdefault(use.group, {})
        per_option[use.option] = per_option.get(use.option, 0) + 1
    for g, (group, group_vars) in enumerate(zip(data.node_groups, variables.node_groups)):
        if group_vars.option_nodes[0] is None:
            continue
        per_option = option_counts.get(g, {})
        moved = sum(k for o, k in per_option.items() if o != 0)
        for o, var in enumerate(group_vars.option_nodes):
            values[var] = len(group.nodes) - moved if o == 0 else per_option.get(o, 0)  # type: ignore[index]
    # Patterns.
    for profile_vars in variables.profiles.values():
        for var in profile_vars.pattern_nodes.values():
            values[var] = 0
        for var in profile_vars.atom_pattern_nodes.values():
            values[var] = 0
    for use in uses:
        profile_vars = variables.profiles[use.profile]
        if use.pattern >= 0:
            var = (
                profile_vars.atom_pattern_nodes.get((use.atom, use.pattern))
                if use.tracked
                else profile_vars.pattern_nodes.get(use.pattern)
            )
            if var is not None:
                values[var] += 1
    # Victims.
    for kind, kind_vars in zip(data.kinds, variables.kinds):
        preempted, reclaimed = evictions.get(kind.index, (0, 0))
        if kind_vars.preempted is not None:
            values[kind_vars.preempted] = preempted
        if kind_vars.reclaimed is not None:
            values[kind_vars.reclaimed] = reclaimed
    evicted_of: dict[object, int] = {}
    for kind in data.kinds:
        evicted_of[kind.owner] = evicted_of.get(kind.owner, 0) + sum(evictions.get(kind.index, (0, 0)))
    for h, group_vars in variables.victim_groups.items():
        values[group_vars.keeps] = int(data.victim_groups[h] - evicted_of.get(h, 0) > 0)
    evicted_of_sub: dict[tuple[object, str | None], int] = {}
    for kind in data.kinds:
        key = (kind.owner, kind.sub_group)
        evicted_of_sub[key] = evicted_of_sub.get(key, 0) + sum(evictions.get(kind.index, (0, 0)))
    for (h, name), group_vars in variables.victim_sub_groups.items():
        values[group_vars.keeps] = int(data.victim_sub_groups[(h, name)].running - evicted_of_sub.get((h, name), 0) > 0)
    return values
