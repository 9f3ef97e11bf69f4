"""Victims for the CP-SAT engine's data step: who may be evicted, grouped so it scales.

Input (a `BuildContext`, `cpsat.build_context`, and the data step's results): the units (PodGroups that may bind), the
`Problem` and the greedy hint. Output: `VictimKind`s — interchangeable candidate victims —
and `NodeGroup`s — interchangeable nodes, each with its eviction *options*.

Who may be evicted is `solver.rules.preemption.victim_refusal`, asked once per (victim
queue and priority, preemptor class = queue and priority of units): a running pod of a
preemptable PodGroup, preemptable itself, allowed for some preemptor class.

A *kind* is: the same PodGroup (or, for a one-pod PodGroup that is not itself a unit, the
same queue and priority — gang rules cannot tell them apart), task, sub-group, eviction
cost, and what evicting one *releases* (requests, GPU devices by cell and free milli, NUMA cell).
A *node group* is the nodes with the same profile, topology atom and number of victims of
each kind; an *option* says how many of each kind go. Example: 40 nodes each running one
8-GPU pod of the same 40-pod gang form one group with options "keep" and "evict"; the
gang constraint then keeps 40 or 0. A sub-group of a victim PodGroup with candidate
victims is a `VictimSubGroup`: evicted whole or kept at its minimum (`solver.rules.gang`),
as the PodGroup is at min_member.

Restrictions (sound, reported): a group with more than `max_options_per_node` options
keeps only "the first j victims, cheapest first" (plus the hint's); beyond
`max_victim_options` options in all, only the node groups the hint evicts on and those
freeing the most GPU per unit of disruption keep their victims.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from models.snapshot import GPU_MILLI_PER_DEVICE, QueueName
from solver.cpsat.build_context import BuildContext, after_profile
from solver.cpsat.units import Unit
from solver.objective import pod_value
from solver.rules.gang import sub_group_minimum
from solver.rules.preemption import victim_refusal

__all__ = ["VictimKind", "VictimSubGroup", "NodeGroup", "NO_ATOM", "victims", "node_groups"]

NO_ATOM = ""
"""Atom of a node outside every tracked topology domain."""


@dataclass
class VictimKind:
    """Interchangeable candidate victims (see the module docstring)."""

    index: int
    owner: object  # group index, or ("anon", queue, priority) for one-pod PodGroups
    group_indices: set[int]
    queue: int
    requests: np.ndarray  # [R]
    cost: int
    value: int  # throughput of one (weight included)
    preempt_classes: tuple[int, ...]
    reclaim_classes: tuple[int, ...]
    release: tuple[object, ...] = ()  # what evicting one frees: requests, devices held, cell
    total: int = 0  # candidates of this kind in the cluster
    sub_group: str | None = None  # the sub-group of its PodGroup its pods are in


@dataclass(frozen=True)
class VictimSubGroup:
    """A sub-group of a victim PodGroup that has candidate victims."""

    running: int  # its running pods
    minimum: int  # `gang.sub_group_minimum`
    fixed: int  # running pods that are no candidates: it keeps some whatever is evicted


@dataclass
class NodeGroup:
    nodes: list[int]
    atom: str  # NO_ATOM when untracked
    before: int  # profile id
    kinds: tuple[tuple[int, int], ...]  # (kind, pods of it per node)
    options: list[tuple[int, ...]]  # per option: evicted per kind, aligned with `kinds`
    after: list[int]  # profile id per option
    victims_by_node: dict[int, dict[int, list[int]]]  # node → kind → pods, victim order



def victims(build: BuildContext, units: list[Unit], classes: list[tuple[QueueName, int]]):  # noqa: ANN202
    snapshot, problem, ctx = build.snapshot, build.problem, build.ctx
    kinds: list[VictimKind] = []
    victims_on: dict[int, dict[int, list[int]]] = {}
    victim_groups: dict[int, int] = {}
    victim_minimum: dict[int, int] = {}
    victim_fixed: dict[int, int] = {}
    victim_sub_groups: dict[tuple[int, str], VictimSubGroup] = {}
    if not units:
        return kinds, victims_on, victim_groups, victim_minimum, victim_fixed, victim_sub_groups
    allocated = {q: problem.resources_dict(problem.queue_allocated[i]) for i, q in enumerate(problem.queue_names)}
    deserved = {q: problem.resources_dict(problem.queue_deserved[i]) for i, q in enumerate(problem.queue_names)}
    unit_of_group = {u.group_index: u for u in units}
    reps: dict[int, list[Unit]] = {}
    for unit in units:
        reps.setdefault(unit.preemptor_class, []).append(unit)
    kind_index: dict[tuple[object, ...], int] = {}
    allowed_cache: dict[tuple[object, ...], tuple[tuple[int, ...], tuple[int, ...]]] = {}
    running_by_group: dict[int, list[int]] = {}
    for p in np.flatnonzero(problem.pod_running & (problem.pod_group >= 0)).tolist():
        running_by_group.setdefault(int(problem.pod_group[p]), []).append(p)
    for h, pods in running_by_group.items():
        group = snapshot.pod_groups[h]
        if not group.preemptable or problem.group_queue[h] < 0:
            continue
        candidates = [p for p in pods if snapshot.pods[p].preemptable and p not in build.protected]
        if not candidates:
            continue
        sample = snapshot.pods[candidates[0]]
        cache_key = (group.queue, group.priority, h if h in unit_of_group else -1)
        if cache_key not in allowed_cache:
            allowed_cache[cache_key] = _allowed(build, group, sample, classes, reps, h, allocated, deserved)
        preempt, reclaim = allowed_cache[cache_key]
        if not preempt and not reclaim:
            continue
        anonymous = len(pods) == 1 and h not in unit_of_group
        queue = int(problem.group_queue[h])
        weight = ctx.weights[group.key]
        for p in candidates:
            pod = snapshot.pods[p]
            node = int(problem.pod_node[p])
            owner: object = ("anon", queue, group.priority) if anonymous else h
            release = (tuple(problem.pod_requests[p].tolist()), _device_signature(build, p, node))
            sub_group = None if anonymous else pod.sub_group
            key = (owner, pod.task, sub_group, ctx.eviction_cost(pod), release)
            if key not in kind_index:
                requests = problem.pod_requests[p]
                kind_index[key] = len(kinds)
                kinds.append(
                    VictimKind(
                        index=len(kinds),
                        owner=owner,
                        group_indices=set(),
                        queue=queue,
                        requests=requests,
                        cost=ctx.eviction_cost(pod),
                        value=weight * pod_value(pod.requests, ctx.devices),
                        preempt_classes=preempt,
                        reclaim_classes=reclaim,
                        release=release,
                        sub_group=sub_group,
                    )
                )
            kind = kinds[kind_index[key]]
            kind.group_indices.add(h)
            kind.total += 1
            victims_on.setdefault(node, {}).setdefault(kind.index, []).append(p)
        if not anonymous:
            victim_groups[h] = len(pods)
            victim_minimum[h] = problem.group_facts[h].requirement.min_member
            victim_fixed[h] = len(pods) - len(candidates)
            if group.sub_groups:
                victim_sub_groups.update(_victim_sub_groups(snapshot, group, h, pods, candidates))
    # Victim order on a node: lowest priority first, then youngest, then key (as greedy).
    for per_kind in victims_on.values():
        for kind, pods in per_kind.items():
            pods.sort(key=lambda p: snapshot.pods[p].key)
    return kinds, victims_on, victim_groups, victim_minimum, victim_fixed, victim_sub_groups


def _victim_sub_groups(snapshot, group, h: int, pods: list[int], candidates: list[int]) -> dict[tuple[int, str], VictimSubGroup]:  # noqa: ANN001
    """(PodGroup index, sub-group) → `VictimSubGroup`, for the sub-groups with candidate victims."""
    running: dict[str, int] = {}
    for p in pods:
        name = snapshot.pods[p].sub_group
        if name is not None:
            running[name] = running.get(name, 0) + 1
    candidate: dict[str, int] = {}
    for p in candidates:
        name = snapshot.pods[p].sub_group
        if name is not None:
            candidate[name] = candidate.get(name, 0) + 1
    return {
        (h, name): VictimSubGroup(
            running=running[name],
            minimum=sub_group_minimum(group.sub_group_by_name[name]),
            fixed=running[name] - count,
        )
        for name, count in sorted(candidate.items())
    }

def _allowed(build: BuildContext, group, sample, classes, reps, h, allocated, deserved):  # noqa: ANN001, ANN202
    preempt, reclaim = [], []
    for c, _ in enumerate(classes):
        candidates = [u for u in reps.get(c, []) if u.group_index != h]
        if not candidates:
            continue
        preemptor = candidates[0].group
        for reason, out in (("preempt", preempt), ("reclaim", reclaim)):
            refusal = victim_refusal(
                build.snapshot, preemptor=preemptor, victim=sample, reason=reason, allocated=allocated, deserved=deserved
            )
            if refusal is None:
                out.append(c)
    return tuple(preempt), tuple(reclaim)

def _device_signature(build: BuildContext, pod: int, node: int) -> tuple[object, ...]:
    problem = build.problem
    slots = problem.pod_gpu_slots.get(pod, ())
    gpu = int(problem.pod_requests[pod, build.gpu_column])
    cell = problem.pod_cell_slot.get(pod, -1)
    node_devices = build.devices_by_node[node]  # (cell, free, index) per slot
    devices = tuple(sorted((node_devices[g][0], node_devices[g][1]) for g in slots))
    if 0 < gpu < GPU_MILLI_PER_DEVICE:
        devices = tuple((int(problem.gpu_index[node, g]),) + d for g, d in zip(slots, devices))
    return (devices, cell)

def node_groups(build: BuildContext, node_profiles, atom_of, tracked, victims_on, kinds) -> list[NodeGroup]:  # noqa: ANN001
    groups: dict[tuple[object, ...], NodeGroup] = {}
    for n in range(build.problem.node_count):
        atom = atom_of.get(n, NO_ATOM)
        atom = atom if atom in tracked else NO_ATOM
        per_kind = victims_on.get(n, {})
        signature = tuple(sorted((kind, len(pods)) for kind, pods in per_kind.items()))
        key = (node_profiles[n], atom, signature)
        group = groups.get(key)
        if group is None:
            group = groups[key] = NodeGroup(
                nodes=[], atom=atom, before=node_profiles[n], kinds=signature, options=[], after=[], victims_by_node={}
            )
        group.nodes.append(n)
        if per_kind:
            group.victims_by_node[n] = per_kind
    hint_options = _hint_options(build, victims_on)
    kept = _victim_budget(build, list(groups.values()), kinds, hint_options)
    for group in groups.values():
        if not group.kinds or id(group) not in kept:
            group.options, group.after = [()], [group.before]
            continue
        counts = [count for _, count in group.kinds]
        total = 1
        for count in counts:
            total *= count + 1
        if total <= build.limits.max_options_per_node:
            options = list(itertools.product(*(range(c + 1) for c in counts)))
        else:
            options = _prefix_options(build, group, kinds)
            for n in group.nodes:
                option = hint_options.get(n)
                if option is not None:
                    vector = tuple(option.get(kind, 0) for kind, _ in group.kinds)
                    if vector not in options:
                        options.append(vector)
            if len(options) < total:
                build.restricted.append(f"{len(group.nodes)} node(s) with {total} eviction options, kept {len(options)}")
        group.options = options
        first = group.nodes[0]
        victims = group.victims_by_node[first]
        group.after = []
        for option in options:
            # What an option frees depends only on what each evicted kind releases.
            released = tuple(sorted((kinds[kind].release, k) for (kind, _), k in zip(group.kinds, option) if k))
            key = (group.before, released)
            if key not in build.after_cache:
                evicted = [p for (kind, _), k in zip(group.kinds, option) for p in victims[kind][:k]]
                build.after_cache[key] = after_profile(build, first, evicted)
            group.after.append(build.after_cache[key])
    return list(groups.values())

def _victim_budget(
    build: BuildContext, groups: list[NodeGroup], kinds: list[VictimKind], hint_options: Mapping[int, Mapping[int, int]]
) -> set[int]:
    """Node groups whose victims stay candidates: all of them while their options (up to
    `max_options_per_node` each) add up to at most `max_victim_options`; else those the
    hint evicts on, then the most GPU freed per unit of disruption (a restriction)."""
    with_victims = [g for g in groups if g.kinds]
    sizes = {}
    for group in with_victims:
        total = 1
        for _, count in group.kinds:
            total *= count + 1
        sizes[id(group)] = min(total, build.limits.max_options_per_node, 1 + sum(c for _, c in group.kinds))
    if sum(sizes.values()) <= build.limits.max_victim_options:
        return set(sizes)

    def value(group: NodeGroup) -> tuple[int, float]:
        hinted = any(n in hint_options for n in group.nodes)
        freed = sum(int(kinds[k].requests[build.gpu_column]) * c for k, c in group.kinds)
        cost = sum(kinds[k].cost * c for k, c in group.kinds)
        return (0 if hinted else 1, -freed / max(1, cost))

    kept: set[int] = set()
    used = 0
    for group in sorted(with_victims, key=value):
        if used + sizes[id(group)] > build.limits.max_victim_options and not value(group)[0] == 0:
            continue
        kept.add(id(group))
        used += sizes[id(group)]
    build.restricted.append(f"victims on {len(with_victims) - len(kept)} of {len(with_victims)} node groups left out")
    return kept

def _prefix_options(build: BuildContext, group: NodeGroup, kinds: list[VictimKind]) -> list[tuple[int, ...]]:
    snapshot = build.snapshot
    victims = group.victims_by_node[group.nodes[0]]
    order = sorted(
        ((kind, p) for kind, pods in victims.items() for p in pods),
        key=lambda item: (kinds[item[0]].cost, snapshot.pods[item[1]].key),
    )
    position = {kind: i for i, (kind, _) in enumerate(group.kinds)}
    options = [tuple(0 for _ in group.kinds)]
    current = [0] * len(group.kinds)
    for kind, _ in order:
        current[position[kind]] += 1
        options.append(tuple(current))
    return options

def _hint_options(build: BuildContext, victims_on: Mapping[int, Mapping[int, list[int]]]) -> dict[int, dict[int, int]]:
    problem = build.problem
    per_node: dict[int, dict[int, int]] = {}
    kind_of = {p: kind for node in victims_on.values() for kind, pods in node.items() for p in pods}
    for eviction in build.hint.evictions:
        p = problem.pod_index.get(eviction.pod)
        if p is None or p not in kind_of:
            continue
        node = int(problem.pod_node[p])
        per_node.setdefault(node, {})
        per_node[node][kind_of[p]] = per_node[node].get(kind_of[p], 0) + 1
    return per_node
