"""Make the merged placement of the parts valid on the whole snapshot, gang by gang.

Input: the whole snapshot and the merged placement (`solver.partition.merge`). Output: a
`Repaired` placement — the merged one less the gangs it had to drop — and the checker's
violations still left (none when it passes).

Why a repair: each part saw every queue with its whole capability but only its own share
of the queue's pods, so two parts may each stay within a queue's cap and together pass it;
and a rule over pods of several nodes (pod anti-affinity, topology spread, a victim gang's
other pods) may join pods two parts placed apart. Quota and fairness are the cluster's, not
a part's.

Two steps, each dropping whole gangs — a gang's binds and the evictions made for it
(`Eviction.for_`) — so no gang is left half placed:
  1. capability: while a queue (or an ancestor) allocates past its capability in a resource
     the binds add to (rule `quota`'s own test, `over_capability`), drop the gang of its
     subtree that binds that resource and ranks last: lowest priority, then youngest.
     Example: `research` capped at 16 GPUs, part 0 binds an 8-GPU gang and part 1 two of 8
     GPUs, 24 in all → the youngest of the lowest priority goes, 16 remain;
  2. the checker: while `check_placement` rejects it, drop for each violation the gang it
     names (a PodGroup placed; of those evicting a victim PodGroup's pods, a victim pod, or
     with binds or evictions on a node or in a queue's subtree, the one that ranks last; a
     pod's gang), every violation in one round, at most `MAX_CHECK_ROUNDS` rounds. Example:
     part 0 evicts one pod of a 2-pod victim gang whose other pod runs in part 1 → "victim
     pod group cut below its gang" → the gang that evicted it goes, the victim stays whole.
What still breaks a rule after that is returned, and `solver.place` answers with greedy's
placement instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from models.placement import Bind, Eviction, Placement
from models.snapshot import PodGroupKey, QueueName, Snapshot
from solver.checker import Violation, check_placement
from solver.outcome import allocated_after
from solver.rules import counted
from solver.rules.quota import over_capability
from solver.shares import add_resources

__all__ = ["Repaired", "repair", "MAX_CHECK_ROUNDS"]

MAX_CHECK_ROUNDS = 8
"""Checker rounds before the repair gives up: each round runs the whole checker over the
whole snapshot and drops at least one gang per violation it reports."""


@dataclass(frozen=True)
class Repaired:
    placement: Placement
    dropped: tuple[PodGroupKey, ...]
    """The gangs dropped, in the order they went."""
    violations: tuple[Violation, ...]
    """What the checker still rejects; () when the placement is valid."""


def repair(snapshot: Snapshot, placement: Placement) -> Repaired:
    """`placement` made valid on `snapshot` by dropping whole gangs (module docstring)."""
    snapshot = counted(snapshot)  # the requests the checker and the quota rule count
    gangs = _Gangs.of(snapshot, placement)
    dropped = _within_capability(snapshot, gangs)
    for _ in range(MAX_CHECK_ROUNDS):
        violations = check_placement(snapshot, gangs.placement())
        if not violations:
            return Repaired(gangs.placement(), tuple(dropped), ())
        culprits = sorted({culprit for v in violations if (culprit := gangs.culprit(snapshot, v.subject)) is not None})
        if not culprits:
            break
        for key in culprits:
            gangs.drop(key)
        dropped += culprits
    return Repaired(gangs.placement(), tuple(dropped), check_placement(snapshot, gangs.placement()))


@dataclass
class _Gangs:
    """The merged placement by gang: each PodGroup's binds and the evictions made for it."""

    snapshot: Snapshot
    binds: dict[PodGroupKey, list[Bind]]
    evictions: dict[PodGroupKey, list[Eviction]]
    merged: Placement
    """As merged: the repaired placement keeps its order."""

    @staticmethod
    def of(snapshot: Snapshot, placement: Placement) -> _Gangs:
        binds: dict[PodGroupKey, list[Bind]] = {}
        for bind in placement.binds:
            group = snapshot.pod_by_key[bind.pod].pod_group
            assert group is not None  # a pending pod always has its PodGroup
            binds.setdefault(group, []).append(bind)
        evictions: dict[PodGroupKey, list[Eviction]] = {}
        for eviction in placement.evictions:
            evictions.setdefault(eviction.for_, []).append(eviction)
        return _Gangs(snapshot, binds, evictions, placement)

    def placement(self) -> Placement:
        """The merged placement less the dropped gangs (and the DRA claims of their pods)."""
        kept_pods = {b.pod for binds in self.binds.values() for b in binds}
        kept_evictions = {id(e) for evictions in self.evictions.values() for e in evictions}
        return Placement(
            binds=tuple(b for b in self.merged.binds if b.pod in kept_pods),
            evictions=tuple(e for e in self.merged.evictions if id(e) in kept_evictions),
            claims=tuple(c for c in self.merged.claims if c.pod in kept_pods),
        )

    def drop(self, key: PodGroupKey) -> None:
        self.binds.pop(key, None)
        self.evictions.pop(key, None)

    def rank(self, key: PodGroupKey) -> tuple[int, float, str]:
        """Ascending: the first to drop — lowest priority, then youngest, then by name."""
        group = self.snapshot.pod_group_by_key[key]
        return (group.priority, -group.creation_time, key)

    def last(self, keys: Iterable[PodGroupKey]) -> PodGroupKey | None:
        return min(keys, key=self.rank, default=None)

    def culprit(self, snapshot: Snapshot, subject: str) -> PodGroupKey | None:
        """The gang to drop for a violation about `subject` (module docstring, step 2)."""
        if subject in self.binds or subject in self.evictions:
            return subject  # type: ignore[return-value]  # a PodGroup key
        if subject in snapshot.pod_group_by_key:  # a victim gang cut below its minimum: who cut it
            return self.last(
                key
                for key, evictions in self.evictions.items()
                if any(snapshot.pod_by_key[e.pod].pod_group == subject for e in evictions)
            )
        pod = snapshot.pod_by_key.get(subject)  # type: ignore[call-overload]
        if pod is not None:
            if pod.phase == "pending":
                return pod.pod_group if pod.pod_group in self.binds else None
            return self.last(key for key, evictions in self.evictions.items() if any(e.pod == subject for e in evictions))
        if subject in snapshot.node_by_name:
            on_node = [key for key, binds in self.binds.items() if any(b.node == subject for b in binds)]
            on_node += [key for key, evictions in self.evictions.items() if any(e.node == subject for e in evictions)]
            return self.last(on_node)
        if subject in snapshot.queue_by_name:
            return self.last(self._in_subtree(snapshot, subject))  # type: ignore[arg-type]
        return None

    def _in_subtree(self, snapshot: Snapshot, queue: QueueName) -> list[PodGroupKey]:
        """Gangs binding into `queue`'s subtree, or evicting pods of it."""
        found = [key for key in self.binds if queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[key].queue)]
        for key, evictions in self.evictions.items():
            for eviction in evictions:
                victim_group = snapshot.pod_by_key[eviction.pod].pod_group
                if victim_group is not None and queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[victim_group].queue):
                    found.append(key)
                    break
        return found


def _within_capability(snapshot: Snapshot, gangs: _Gangs) -> list[PodGroupKey]:
    """Step 1 (module docstring): the gangs dropped until every queue is within its capability
    where binds add to it."""
    allocated = allocated_after(snapshot, gangs.placement())
    added: dict[QueueName, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    for key, binds in gangs.binds.items():
        for queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[key].queue):
            for bind in binds:
                add_resources(added[queue], snapshot.pod_by_key[bind.pod].requests)
    dropped: list[PodGroupKey] = []
    while True:
        over = _over(snapshot, allocated, added)
        candidates = [
            key
            for key, binds in gangs.binds.items()
            if any(
                snapshot.pod_by_key[bind.pod].requests.get(resource, 0) > 0
                for queue, resources in over.items()
                if queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[key].queue)
                for resource in resources
                for bind in binds
            )
        ]
        victim = gangs.last(candidates)
        if victim is None:
            return dropped
        _take_back(snapshot, gangs, victim, allocated, added)
        gangs.drop(victim)
        dropped.append(victim)


def _over(
    snapshot: Snapshot, allocated: Mapping[QueueName, Mapping[str, int]], added: Mapping[QueueName, Mapping[str, int]]
) -> dict[QueueName, list[str]]:
    """Per queue, the resources it allocates past its capability that the binds add to."""
    over: dict[QueueName, list[str]] = {}
    for queue in snapshot.queues:
        resources = [r for r in sorted(over_capability(allocated[queue.name], queue.capability)) if added[queue.name].get(r, 0) > 0]
        if resources:
            over[queue.name] = resources
    return over


def _take_back(
    snapshot: Snapshot,
    gangs: _Gangs,
    key: PodGroupKey,
    allocated: dict[QueueName, dict[str, int]],
    added: dict[QueueName, dict[str, int]],
) -> None:
    """Update the queue sums for dropping gang `key`: its binds no longer add, its victims stay."""
    for bind in gangs.binds.get(key, ()):
        requests = snapshot.pod_by_key[bind.pod].requests
        for queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[key].queue):
            add_resources(allocated[queue], requests, times=-1)
            add_resources(added[queue], requests, times=-1)
    for eviction in gangs.evictions.get(key, ()):
        victim = snapshot.pod_by_key[eviction.pod]
        if victim.pod_group is None:
            continue
        for queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[victim.pod_group].queue):
            add_resources(allocated[queue], victim.requests)
