"""A placement (the greedy engine's) as values of the CP-SAT model: the hint.

Two steps, because the hint must stay representable even when the model's pattern,
option or domain sets were cut (`ModelData.restricted`):
  1. `NodeUse.of(data, placement)` reads, node by node, which eviction option the
     placement takes and which pods of which shapes it binds there, and
     `augment(data, uses)` adds every node pattern the placement uses to the pattern sets
     (checked device by device like any other) — before the variables exist;
  2. `hint_values(data, variables, uses)` gives the decision variables their values:
     admissions, pods per task (per atom for tracked tasks), domains, spans, option and
     pattern counts, device patterns, evictions per kind and reason. Derived variables
     (fairness, reclaim flags) are left to the solver, which completes the hint.

Not promised: that a hint from a placement that breaks a hard rule is feasible (the
solver then simply ignores what does not fit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from models.placement import Placement
from solver.cpsat.data import ModelData, device_order
from solver.cpsat.patterns import WHOLE, assign, device_patterns, evaluate
from solver.cpsat.variables import Variables

__all__ = ["NodeUse", "node_uses", "augment", "hint_values", "representable_hint"]


@dataclass
class NodeUse:
    node: int
    group: int  # node group index
    option: int
    profile: int  # after-option profile
    atom: str
    node_counts: dict[int, int] = field(default_factory=dict)  # shape → pods in the node pattern
    tracked: bool = False  # holds pods of tracked tasks
    devices: dict[int, tuple[int, dict[int, int]]] = field(default_factory=dict)  # device index → (free, pooled shape counts)
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
    binds_on: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    pods_per_task: dict[int, int] = {}
    for bind in placement.binds:
        p = problem.pod_index.get(bind.pod)
        n = problem.node_index.get(bind.node)
        if p is None or n is None or p not in task_of_pod:
            continue
        binds_on.setdefault(n, []).append((task_of_pod[p], tuple(bind.gpus)))
        pods_per_task[task_of_pod[p]] = pods_per_task.get(task_of_pod[p], 0) + 1
    uses: list[NodeUse] = []
    for n in sorted(set(binds_on) | set(evicted_on)):
        g = group_of_node[n]
        group = data.node_groups[g]
        counts = evicted_on.get(n, {})
        vector = tuple(counts.get(kind, 0) for kind, _ in group.kinds)
        option = group.options.index(vector) if vector in group.options else 0
        profile = group.after[option]
        pattern_set = data.pattern_sets[profile]
        pooled = {s.index for s in pattern_set.pooled}
        use = NodeUse(node=n, group=g, option=option, profile=profile, atom=group.atom)
        device_free = _device_free_after(data, n, group, option)
        for position, gpus in binds_on.get(n, ()):
            task = data.tasks[position]
            shape = data.shapes[task.shape]
            if shape.index in pooled and len(gpus) == 1:
                free, shares = use.devices.setdefault(gpus[0], (device_free.get(gpus[0], WHOLE), {}))
                shares[shape.index] = shares.get(shape.index, 0) + 1
            else:
                use.node_counts[shape.index] = use.node_counts.get(shape.index, 0) + 1
                use.tracked = use.tracked or shape.topology
        uses.append(use)
    kinds = {k: (c[0], c[1]) for k, c in per_kind.items()}
    return uses, pods_per_task, kinds


def _device_free_after(data: ModelData, n: int, group, option: int) -> dict[int, int]:  # noqa: ANN001
    """Free milli per device index on node n once the option's victims are gone."""
    problem = data.problem
    free = {int(problem.gpu_index[n, g]): int(problem.gpu_free_milli[n, g]) for g in range(problem.gpu_index.shape[1]) if problem.gpu_index[n, g] >= 0}
    victims = group.victims_by_node.get(n, {})
    for (kind, _), k in zip(group.kinds, group.options[option]):
        for p in victims.get(kind, [])[:k]:
            gpu = int(problem.pod_requests[p, problem.gpu_column])
            per_device = WHOLE if gpu >= WHOLE else gpu
            for g in problem.pod_gpu_slots.get(p, ()):
                free[int(problem.gpu_index[n, g])] += per_device
    return free


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
                pattern = evaluate(pattern_set.profile, shapes, counts, data.ctx.packing)
                if pattern is not None:
                    patterns.append(pattern)
                    found = len(patterns) - 1
            use.pattern = found
        elif not use.tracked:
            pattern = pattern_set.find(counts)
            if pattern is None:
                pattern = evaluate(pattern_set.profile, shapes, counts, data.ctx.packing)
                if pattern is not None:
                    pattern_set.add(pattern)
            if pattern is not None:
                use.pattern = next(i for i, p in enumerate(pattern_set.patterns) if p is pattern)


def _pool_devices(data: ModelData, use: NodeUse) -> dict[int, tuple[int, dict[int, int]]]:
    """The placement's pooled pods on `use`'s node, moved onto the devices the model's own
    node pattern leaves (first fit decreasing, the placement's device first): device index
    → (free milli before the pool, pods per shape). Empty when they do not fit."""
    if not use.devices:
        return {}
    group = data.node_groups[use.group]
    victims = group.victims_by_node.get(use.node, {})
    evicted = [p for (kind, _), k in zip(group.kinds, group.options[use.option]) for p in victims.get(kind, [])[:k]]
    order = device_order(data, use.node, evicted)
    pattern_set = data.pattern_sets[use.profile]
    left = {index: free for index, (_, free) in zip(order, pattern_set.profile.devices)}
    if use.pattern >= 0:
        pattern = (
            data.topology_sets[(use.profile, use.atom)][use.pattern] if use.tracked else pattern_set.patterns[use.pattern]
        )
        shapes = {s.index: s for s in data.shapes}
        for slot in assign(pattern, pattern_set.profile, shapes):
            for position in slot.positions:
                shape = shapes[slot.shape]
                left[order[position]] -= shape.fraction or WHOLE
    pods = sorted(
        ((data.shapes[shape].fraction, shape, device) for device, (_, shares) in use.devices.items() for shape, k in shares.items() for _ in range(k)),
        reverse=True,
    )
    before = dict(left)
    result: dict[int, tuple[int, dict[int, int]]] = {}
    for milli, shape, device in pods:
        choice = device if left.get(device, 0) >= milli else next((i for i in order if left[i] >= milli), None)
        if choice is None:
            return {}
        left[choice] -= milli
        counts = result.setdefault(choice, (before[choice], {}))[1]
        counts[shape] = counts.get(shape, 0) + 1
    return result


def representable_hint(
    data: ModelData, placement: Placement
) -> tuple[Placement, bool, list[NodeUse], dict[int, int], dict[int, tuple[int, int]]]:
    """(hint, trimmed, uses, …): the placement's uses, patterns added to the sets — minus, if some node's pooled pods
    do not fit the devices the model's pattern leaves there, the PodGroups with pods on
    such nodes (and the evictions made for them), so that the rest stays a valid hint."""
    uses, pods_per_task, evictions = node_uses(data, placement)
    augment(data, uses)
    stuck = [use for use in uses if use.devices and not _pool_devices(data, use)]
    if not stuck:
        return placement, False, uses, pods_per_task, evictions
    problem = data.problem
    nodes = {problem.node_names[use.node] for use in stuck}
    dropped = {
        data.snapshot.pod_by_key[bind.pod].pod_group for bind in placement.binds if bind.node in nodes
    }
    trimmed = Placement.model_construct(
        binds=tuple(b for b in placement.binds if data.snapshot.pod_by_key[b.pod].pod_group not in dropped),
        evictions=tuple(e for e in placement.evictions if e.for_ not in dropped),
    )
    uses, pods_per_task, evictions = node_uses(data, trimmed)
    augment(data, uses)
    return trimmed, True, uses, pods_per_task, evictions


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
        for task in unit.tasks:
            position = variables.task_index[id(task)]
            values[unit_vars.pods[position]] = pods_per_task.get(position, 0)
            if unit.tracked:
                per_atom: dict[str, int] = {}
                for p in task.pending:
                    for n in bound_nodes.get(p, ()):
                        per_atom[atom_of_node[n]] = per_atom.get(atom_of_node[n], 0) + 1
                for (t, atom), var in unit_vars.pods_in.items():
                    if t == position:
                        values[var] = per_atom.get(atom, 0)
                for atom, k in per_atom.items():
                    atoms_used[atom] = atoms_used.get(atom, 0) + k
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
    for c, var in enumerate(variables.any_admitted):
        values[var] = int(c in admitted_classes)
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
    # Patterns and device patterns.
    for profile_vars in variables.profiles.values():
        for var in profile_vars.pattern_nodes.values():
            values[var] = 0
        for var in profile_vars.atom_pattern_nodes.values():
            values[var] = 0
        for var in profile_vars.device_pattern_devices.values():
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
        pattern_set = data.pattern_sets[use.profile]
        for free, shares in _pool_devices(data, use).values():
            counts = tuple(sorted(shares.items()))
            patterns = device_patterns(pattern_set, free, cap=10_000)
            index = next((i for i, dp in enumerate(patterns) if dp.counts == counts), -1)
            var = profile_vars.device_pattern_devices.get((free, index))
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
    return values
