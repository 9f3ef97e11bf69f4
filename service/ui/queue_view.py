"""The Queues page: per queue (as a tree when queues have parents), per resource, one bar.

Input: an `Analysis`. Output: `QueueRow`s in tree order (a parent, then its children by
name, `depth` for the indent), each with a `ResourceBar` per resource the cluster has
(GPU, CPU, memory). A bar is drawn on one scale per resource — the cluster's allocatable,
or more when a number passes it — so bars of different queues compare by eye:

    [■■■■■■■■ allocated ■■■■|░░ pending ░░|      ]   with marks at guarantee ▏ deserved ▏ capability ▏

  - allocated: what the queue's running pods hold now, its subtree included
    (`solver.shares.queue_allocated`, the number quota and fairness compare);
  - after: allocated after this cycle's binds and evictions;
  - pending: what its pending pods ask for (`queue_requests` − allocated);
  - deserved: the water-filled share (`solver.shares.deserved_shares`);
  - guarantee and capability: the Queue's own fields (None: no capability, not drawn).
Worked example: GPU scale 64; allocated 16, pending 8, deserved 32 → the filled part
spans 0–25 %, the pending part 25–37.5 %, the deserved mark sits at 50 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models.snapshot import CPU, GPU, MEMORY, ROOT_QUEUE, Queue, QueueName
from service.ui.analysis import Analysis
from service.ui.units import amount_text, queue_slots, unit_of

__all__ = ["ResourceBar", "QueueRow", "build_queue_rows", "BAR_RESOURCES"]

BAR_RESOURCES = (GPU, CPU, MEMORY)


@dataclass(frozen=True)
class ResourceBar:
    resource: str
    unit: str
    allocated: int
    after: int
    pending: int
    deserved: int
    guarantee: int
    capability: int | None
    scale: int

    def percent(self, amount: int) -> float:
        return round(100 * min(amount, self.scale) / self.scale, 2) if self.scale else 0.0

    def text(self, amount: int | None) -> str:
        return "—" if amount is None else amount_text(self.resource, amount)


@dataclass(frozen=True)
class QueueRow:
    name: QueueName
    parent: QueueName | None
    depth: int
    slot: int
    weight: int
    priority: int
    state: str
    reclaimable: bool
    pod_groups: int
    pending_groups: int
    bars: tuple[ResourceBar, ...]


def build_queue_rows(analysis: Analysis) -> tuple[QueueRow, ...]:
    snapshot = analysis.snapshot
    slots = queue_slots(snapshot)
    children: dict[QueueName | None, list[Queue]] = {}
    for queue in snapshot.queues:
        parent = None if queue.parent in (None, ROOT_QUEUE) else queue.parent
        children.setdefault(parent, []).append(queue)
    pending_groups = {
        outcome.name for outcome in analysis.decision.podgroups if outcome.state == "pending"
    }
    groups_of: dict[QueueName, list[str]] = {}
    for group in snapshot.pod_groups:
        for ancestor in snapshot.queue_ancestors(group.queue):
            groups_of.setdefault(ancestor, []).append(group.key)
    resources = [name for name in BAR_RESOURCES if analysis.cluster_allocatable.get(name, 0) > 0]
    rows: list[QueueRow] = []

    def walk(parent: QueueName | None, depth: int) -> None:
        for queue in sorted(children.get(parent, []), key=lambda q: q.name):
            groups = groups_of.get(queue.name, [])
            rows.append(
                QueueRow(
                    name=queue.name,
                    parent=queue.parent,
                    depth=depth,
                    slot=slots[queue.name],
                    weight=queue.weight,
                    priority=queue.priority,
                    state=queue.state,
                    reclaimable=queue.reclaimable,
                    pod_groups=len(groups),
                    pending_groups=sum(1 for key in groups if key in pending_groups),
                    bars=tuple(_bar(analysis, queue, name) for name in resources),
                )
            )
            walk(queue.name, depth + 1)

    walk(None, 0)
    return tuple(rows)


def _bar(analysis: Analysis, queue: Queue, resource: str) -> ResourceBar:
    def of(table: Mapping[QueueName, Mapping[str, int]]) -> int:
        return table.get(queue.name, {}).get(resource, 0)

    allocated = of(analysis.queue_allocated)
    pending = max(0, of(analysis.queue_requests) - allocated)
    deserved = of(analysis.queue_deserved)
    after = of(analysis.after.queue_allocated_after)
    guarantee = queue.guarantee.get(resource, 0)
    capability = queue.capability.get(resource) if queue.capability is not None else None
    scale = max(analysis.cluster_allocatable.get(resource, 0), allocated + pending, deserved, after, guarantee, capability or 0)
    return ResourceBar(
        resource=resource,
        unit=unit_of(resource),
        allocated=allocated,
        after=after,
        pending=pending,
        deserved=deserved,
        guarantee=guarantee,
        capability=capability,
        scale=scale,
    )
