"""What the waiting gangs ask of bought nodes: for each PodGroup the scale-up plan may buy
nodes for, the pods of each task it needs to start, and its hard topology.

Input: the snapshot and the ordinary solve's `Decision` on it. A pending PodGroup is a
candidate when every reason it waits for is one an added node could lift
(`solver.reasons.nodes_would_help`): a queue at its capability, a dependency, gates or a
reservation hold never get nodes. Its pods to place are its gang minimum
(`solver.rules.gang.minimum_pods`) less its running pods, cheapest GPU pods first, as the
engines count it.

Each candidate's weight follows the solver's own order — higher priority, then older, then
by name — and every candidate counts more than any order between them: weight =
n + (n − rank), so starting two gangs always beats starting one, and among equal counts the
earlier ones win.

A candidate that asks more than its queue (or an ancestor) has left under its capability
after the solve is none either (`over_queue_room`): the reasons may name capacity first
when both block, and no node lifts the capability.

Not promised: that the pods fit anywhere (`solver.scale_up.slots` says which templates host
which task).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from models.placement import Decision
from models.snapshot import GPU, NodeName, PodGroup, QueueName, Snapshot, Task
from solver.outcome import allocated_after
from solver.reasons import format_quantity, nodes_would_help
from solver.rules.gang import gang_requirement, minimum_pods
from solver.rules.topology import domains_within, hard_tier_limit

__all__ = ["GangDemand", "candidate_demands", "queue_room", "over_queue_room", "take_room"]


@dataclass(frozen=True)
class GangDemand:
    """One candidate PodGroup: the pods it needs per task, its weight and topology."""

    group: PodGroup
    weight: int
    pods_per_task: tuple[tuple[Task, int], ...]
    tier_limit: int | None
    """Its hard topology's highest tier, None: none."""
    allowed_domains: frozenset[str] | None
    """A hard-topology gang with running pods: the HyperNodes of tier ≤ its limit that hold
    them all, the only ones its bought nodes may lie in; None: any."""
    queues: tuple[QueueName, ...]
    """Its queue and the queue's ancestors: whose capabilities its pods count against."""

    @property
    def pod_count(self) -> int:
        return sum(count for _, count in self.pods_per_task)

    @property
    def requests(self) -> dict[str, int]:
        """What its pods to place ask in all."""
        total: dict[str, int] = {}
        for task, count in self.pods_per_task:
            for name, amount in task.requests.items():
                total[name] = total.get(name, 0) + amount * count
        return total


def queue_room(snapshot: Snapshot, decision: Decision) -> dict[QueueName, dict[str, int]]:
    """What each capped queue may still take after the solve, per resource its capability
    names (its subtree counted, as rule quota counts it): capability − allocation."""
    allocated = allocated_after(snapshot, decision.placement)
    return {
        queue.name: {name: cap - allocated[queue.name].get(name, 0) for name, cap in queue.capability.items()}
        for queue in snapshot.queues
        if queue.capability
    }


def take_room(room: dict[QueueName, dict[str, int]], demand: GangDemand) -> None:
    """`room` (`queue_room`'s, a copy the caller owns) less what `demand` takes of each capped
    queue on its way to the root, in place: the gang starts."""
    for queue in demand.queues:
        for name in room.get(queue, {}):
            room[queue][name] -= demand.requests.get(name, 0)


def over_queue_room(demand: GangDemand, room: Mapping[QueueName, Mapping[str, int]]) -> str | None:
    """Why its queue's capability keeps it waiting whatever the nodes (a gang asking more
    than its queue has left is no candidate), or None. A resource it asks none of holds it
    back from nothing, even in a queue already past that cap (the quota rule: a queue over
    its cap may not grow there, and a gang that asks none does not grow it). Example:
    "queue small capability leaves 8 gpu, the gang needs 16 gpu"."""
    asked = demand.requests
    for queue in demand.queues:
        for name, left in sorted(room.get(queue, {}).items()):
            if asked.get(name, 0) > max(0, left):
                return (
                    f"queue {queue} capability leaves {format_quantity(name, max(0, left))}, "
                    f"the gang needs {format_quantity(name, asked[name])}"
                )
    return None


def candidate_demands(snapshot: Snapshot, decision: Decision) -> tuple[GangDemand, ...]:
    """The candidates of the module docstring, in the solver's order."""
    pending = [o for o in decision.podgroups if o.state == "pending" and nodes_would_help(o.reasons)]
    groups = sorted(
        (snapshot.pod_group_by_key[o.name] for o in pending), key=lambda g: (-g.priority, g.creation_time, g.key)
    )
    demands = []
    for rank, group in enumerate(groups):
        pods = snapshot.pods_by_group.get(group.key, ())
        running = Counter(p.task for p in pods if p.phase == "running" and p.task is not None)
        pending_per_task = Counter(p.task for p in pods if p.phase == "pending" and not p.scheduling_gates)
        order = sorted(
            ((task.name, pending_per_task[task.name]) for task in group.tasks if pending_per_task[task.name]),
            key=lambda item: (group.task_by_name[item[0]].requests.get(GPU, 0), item[0]),
        )
        needed = minimum_pods(gang_requirement(snapshot, group), running, order)
        per_task = tuple(
            (group.task_by_name[name], count)
            for name, count in sorted(needed.items())
            if count > 0 and count <= pending_per_task[name]
        )
        if not per_task or any(count > pending_per_task[name] for name, count in needed.items()):
            continue  # too few pods to meet its minimum: no node helps (the solver says so too)
        demands.append(
            GangDemand(
                group=group,
                weight=2 * len(groups) - rank,
                pods_per_task=per_task,
                tier_limit=hard_tier_limit(group),
                allowed_domains=_domains_holding(snapshot, group, {p.node for p in pods if p.node is not None}),
                queues=snapshot.queue_ancestors(group.queue),
            )
        )
    return tuple(demands)


def _domains_holding(snapshot: Snapshot, group: PodGroup, running: set[NodeName]) -> frozenset[str] | None:
    limit = hard_tier_limit(group)
    if limit is None or not running:
        return None
    common = [set(domains_within(snapshot, node, limit)) for node in sorted(running)]
    return frozenset(set.intersection(*common))
