"""Where bought nodes can go, what one of them holds, and the snapshot with them added.

A *slot* is one template in one place: an existing HyperNode it may join, one new
HyperNode it may fill (`NewHyperNode`: the k-th new domain of that template, at most `size`
nodes), or no HyperNode at all. Each slot knows its chain of HyperNodes from the closest
upward with their tiers, which is what hard topology reads: a gang limited to tier 1 may use
the bought nodes of slots whose chain shares one HyperNode of tier ≤ 1.

`pods_per_node(template node, task)`: how many of the task's pods one empty node of the
template holds (0 when it admits none: `solver.rules.eligibility.eligible`, requests past
allocatable, GPU devices), the bound both choosers use.

`extended(snapshot, slots, counts)` is the snapshot with `counts[i]` nodes of slot i added,
named `<template>-<n>` (numbers the snapshot does not use), joined to their HyperNodes; new
domains are named `<template>-domain-<k>`. It is a new, validated Snapshot.

Not modelled here: NUMA cells, pod (anti-)affinity, spread and host ports of the waiting
pods; the ordinary solve on the extended snapshot judges them (`solver.scale_up`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import ceil

from models.node_templates import NodeTemplate, NodeTemplates
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, PODS, HyperNode, Node, NodeName, Snapshot, Task, gpu_devices
from solver.rules.eligibility import eligible

__all__ = ["Slot", "slots_of", "pods_per_node", "extended", "BoughtNode"]


@dataclass(frozen=True)
class Slot:
    template: NodeTemplate
    node: Node
    """A node of the template, for eligibility and capacity (its name is not the bought one's)."""
    domain: str | None
    """The HyperNode its nodes join (an existing one, or the new one it is), None: none."""
    new_tier: int | None
    """The tier of its new HyperNode, None when it joins an existing one or none."""
    new_parent: str | None
    capacity: int
    """Nodes it may take at most (before the template's `max_count`)."""
    chain: tuple[tuple[str, int], ...]
    """(HyperNode, tier) its nodes are inside, closest first."""

    def domains_within(self, tier_limit: int) -> tuple[str, ...]:
        return tuple(name for name, tier in self.chain if tier <= tier_limit)


@dataclass(frozen=True)
class BoughtNode:
    slot: int
    name: NodeName


def _chain(snapshot: Snapshot, parent_of: Mapping[str, str], name: str) -> tuple[tuple[str, int], ...]:
    """HyperNode `name` and those above it, with their tiers; `parent_of` maps a HyperNode to its parent."""
    chain: list[tuple[str, int]] = []
    current: str | None = name
    while current is not None:
        chain.append((current, snapshot.hypernode_by_name[current].tier))
        current = parent_of.get(current)
    return tuple(chain)


def slots_of(snapshot: Snapshot, templates: NodeTemplates, *, node_bound: int) -> tuple[Slot, ...]:
    """Every slot of every template, each holding at most `node_bound` nodes (the most the
    waiting gangs could fill: no slot needs more nodes than there are pods)."""
    slots: list[Slot] = []
    taken = set(snapshot.hypernode_by_name)
    parent_of = {member: h.name for h in snapshot.hypernodes for member in h.hypernode_members}
    for template in templates.templates:
        if template.max_count == 0:
            continue
        node = template.node(NodeName(template.name))
        bound = min(template.max_count, node_bound)
        for name in template.hypernodes:
            slots.append(Slot(template, node, name, None, None, bound, _chain(snapshot, parent_of, name)))
        domain = template.new_hypernode
        if domain is not None:
            above = _chain(snapshot, parent_of, domain.parent) if domain.parent is not None else ()
            names = (f"{template.name}-domain-{k}" for k in range(1, 10**9))
            for _ in range(min(ceil(template.max_count / domain.size), node_bound)):
                name = next(n for n in names if n not in taken)
                taken.add(name)
                size = min(domain.size, bound)
                slots.append(Slot(template, node, name, domain.tier, domain.parent, size, ((name, domain.tier), *above)))
        if not template.hypernodes and domain is None:
            slots.append(Slot(template, node, None, None, None, bound, ()))
    return tuple(slots)


def pods_per_node(node: Node, task: Task) -> int:
    """How many pods of `task` one empty `node` holds (module docstring)."""
    if not eligible(node, task):
        return 0
    count = node.allocatable.get(PODS, 0)
    for resource, amount in task.requests.items():
        if amount > 0:
            count = min(count, node.allocatable.get(resource, 0) // amount)
    gpu_milli = task.requests.get(GPU, 0)
    if gpu_milli >= GPU_MILLI_PER_DEVICE:
        count = min(count, len(node.gpus) // gpu_devices(gpu_milli))
    elif gpu_milli > 0:
        count = min(count, len(node.gpus) * (GPU_MILLI_PER_DEVICE // gpu_milli))
    return max(0, count)


def extended(snapshot: Snapshot, slots: Sequence[Slot], counts: Mapping[int, int]) -> tuple[Snapshot, tuple[BoughtNode, ...]]:
    """The snapshot with the bought nodes (module docstring), and which they are."""
    used = {node.name for node in snapshot.nodes}
    next_number: dict[str, int] = {}
    bought: list[BoughtNode] = []
    for index in sorted(counts):
        template = slots[index].template.name
        for _ in range(counts[index]):
            number = next_number.get(template, 1)
            while f"{template}-{number}" in used:
                number += 1
            name = NodeName(f"{template}-{number}")
            used.add(name)
            next_number[template] = number + 1
            bought.append(BoughtNode(index, name))
    joined: dict[str, list[NodeName]] = {}
    for node in bought:
        domain = slots[node.slot].domain
        if domain is not None:
            joined.setdefault(domain, []).append(node.name)
    new_domains = {slots[n.slot].domain: slots[n.slot] for n in bought if slots[n.slot].new_tier is not None}
    children: dict[str, list[str]] = {}
    for name, slot in new_domains.items():
        if slot.new_parent is not None and name is not None:
            children.setdefault(slot.new_parent, []).append(name)
    hypernodes = [
        h.model_copy(
            update={
                "node_members": (*h.node_members, *joined.get(h.name, ())),
                "hypernode_members": (*h.hypernode_members, *children.get(h.name, ())),
            }
        )
        if h.name in joined or h.name in children
        else h
        for h in snapshot.hypernodes
    ]
    hypernodes += [
        HyperNode(name=name, tier=slot.new_tier or 1, node_members=tuple(joined[name]))
        for name, slot in new_domains.items()
        if name is not None
    ]
    nodes = [*snapshot.nodes, *(slots[n.slot].node.model_copy(update={"name": n.name}) for n in bought)]
    return snapshot.replaced(nodes=nodes, hypernodes=hypernodes), tuple(bought)
