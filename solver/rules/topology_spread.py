"""Topology spread constraints with `whenUnsatisfiable: DoNotSchedule`: a pod goes only to a
domain whose count of matching pods stays within `maxSkew` of the emptiest eligible
domain — kube-scheduler's PodTopologySpread filter, judged on the cycle's end state.

The meaning, as Kubernetes has it (`TopologySpreadConstraint` in the core API), for one
constraint of a task:
  - *eligible nodes*: nodes with the `topologyKey` label — and those of every other
    constraint of the task with the same `whenUnsatisfiable`, as kube-scheduler counts a
    node only when it has all their keys — that, under
    `nodeAffinityPolicy: Honor` (the default), the task's node selector and required node
    affinity admit, and under `nodeTaintsPolicy: Honor` (default Ignore) whose taints the
    task tolerates; their values of the key are the *domains*
    (`solver.rules.pod_affinity.domain`);
  - *count* of a domain: pods in the task's namespace that the constraint's label selector
    selects, on its eligible nodes, after the placement (running pods that stay, pods bound
    this cycle with their task's labels);
  - *minimum*: the smallest count over the domains — 0 when there are fewer domains than
    `minDomains`;
  - a pod bound this cycle must sit on a node with the key, in a domain whose count is at
    most `maxSkew` above the minimum.
Why the end state is the right reading for a batch: if every domain that receives pods
ends within `maxSkew` of the final minimum, binding the pods one at a time, always into
the domain that is emptiest among those still to receive some, passes kube-scheduler's
per-pod filter at every step. Running pods are not judged.

Worked example: task `web` (app=web), `maxSkew: 1` over `zone`, zones a (2 web pods
running) and b (none): a pod bound into a ends with a=3, b=0 → skew 3, a violation; into b
→ a=2, b=1, skew 1 for b, allowed.

`ScheduleAnyway` constraints are a preference: `skew_excess` is, per bound pod, how far its
domain ends above minimum + maxSkew (0 when within), summed into the objective's locality
tier as kube-scheduler's PodTopologySpread score prefers the emptier domains.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from models.pod_affinity import TopologySpreadConstraint
from models.snapshot import Node, Snapshot, Task
from solver.after import After, BoundPod
from solver.rules import node_affinity
from solver.rules.eligibility import matches_selector, tolerates
from solver.rules.pod_affinity import (
    Member,
    describe_selector,
    domain,
    members_after,
    selects,
)
from solver.violation import Violation

__all__ = ["NAME", "counts_nodes", "spread_selects", "Spread", "spread_of", "check", "skew_excess", "describe_constraint"]

NAME = "topology_spread"


def counts_nodes(node: Node, task: Task, constraint: TopologySpreadConstraint) -> bool:
    """Is `node` one of the constraint's eligible nodes for `task` (see the module docstring)?"""
    same_kind = (c for c in task.inter_pod.topology_spread if c.when_unsatisfiable == constraint.when_unsatisfiable)
    if any(domain(node, c.topology_key) is None for c in (constraint, *same_kind)):
        return False
    if constraint.node_affinity_policy == "Honor" and not (
        matches_selector(node.labels, task.node_selector) and node_affinity.matches(node, task.required_node_affinity)
    ):
        return False
    return constraint.node_taints_policy == "Ignore" or tolerates(node.taints, task.tolerations)


def spread_selects(constraint: TopologySpreadConstraint, owner_namespace: str, namespace: str, labels: Mapping[str, str]) -> bool:
    """Does the constraint, stated by a pod in `owner_namespace`, count a pod in `namespace`
    with `labels`? Only pods of the stating pod's own namespace count (kube-scheduler)."""
    return namespace == owner_namespace and selects(constraint.label_selector, labels)


@dataclass(frozen=True)
class Spread:
    """One constraint's domains after the placement: count per domain and the minimum."""

    counts: dict[str, int]
    minimum: int

    def skew(self, value: str) -> int:
        return self.counts.get(value, 0) - self.minimum


def spread_of(
    nodes: Iterable[Node], members: Iterable[Member], namespace: str, task: Task, constraint: TopologySpreadConstraint
) -> Spread:
    """Counts per domain over the eligible nodes of `nodes`, of `members` the constraint selects."""
    eligible: dict[str, str] = {}
    for node in nodes:
        if counts_nodes(node, task, constraint):
            eligible[node.name] = domain(node, constraint.topology_key)  # type: ignore[assignment]  # has the key
    counts = dict.fromkeys(eligible.values(), 0)
    for m in members:
        value = eligible.get(m.node.name)
        if value is not None and spread_selects(constraint, namespace, m.namespace, m.labels):
            counts[value] += 1
    few = constraint.min_domains is not None and len(counts) < constraint.min_domains
    return Spread(counts=counts, minimum=0 if few or not counts else min(counts.values()))


def describe_constraint(constraint: TopologySpreadConstraint) -> str:
    return f"spread {describe_selector(constraint.label_selector)} over {constraint.topology_key} (maxSkew {constraint.max_skew})"


def _bound_under(snapshot: Snapshot, after: After, when: str) -> Iterator[tuple[BoundPod, TopologySpreadConstraint, Spread]]:
    """(bound pod, its task's constraint of kind `when`, that constraint's end state), the
    end state counted once per task and constraint."""
    by_task: dict[tuple[str, str], list[BoundPod]] = {}
    for b in after.bound:
        if any(c.when_unsatisfiable == when for c in b.task.inter_pod.topology_spread):
            by_task.setdefault((b.group.key, b.task.name), []).append(b)
    if not by_task:
        return
    members = members_after(snapshot, after)
    for bound in by_task.values():
        task, namespace = bound[0].task, bound[0].pod.namespace
        for constraint in task.inter_pod.topology_spread:
            if constraint.when_unsatisfiable == when:
                spread = spread_of(snapshot.nodes, members, namespace, task, constraint)
                yield from ((b, constraint, spread) for b in bound)


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Each pod bound this cycle keeps its task's DoNotSchedule constraints in the end state."""
    violations = []
    for b, constraint, spread in _bound_under(snapshot, after, "DoNotSchedule"):
        value = domain(b.node, constraint.topology_key)
        if value is None:
            problem = f"node {b.node.name} has no {constraint.topology_key} label"
        elif value not in spread.counts:
            problem = f"node {b.node.name} is not an eligible node of the constraint"
        elif spread.skew(value) > constraint.max_skew:
            problem = (
                f"{constraint.topology_key}={value} ends with {spread.counts[value]} matching pods, "
                f"{spread.skew(value)} above the emptiest domain's {spread.minimum}"
            )
        else:
            continue
        message = f"pod {b.pod.key}: {describe_constraint(constraint)}: {problem}"
        violations.append(Violation(rule=NAME, subject=b.pod.key, message=message))
    return violations


def skew_excess(snapshot: Snapshot, after: After) -> int:
    """Σ over pods bound this cycle under ScheduleAnyway constraints of how far their domain
    ends above minimum + maxSkew (a node without the key counts maxSkew + 1)."""
    total = 0
    for b, constraint, spread in _bound_under(snapshot, after, "ScheduleAnyway"):
        value = domain(b.node, constraint.topology_key)
        if value is None or value not in spread.counts:
            total += constraint.max_skew + 1
        else:
            total += max(0, spread.skew(value) - constraint.max_skew)
    return total
