"""Offline pods to evict when online usage rises on a colocation node: the choice, in one
place, that the controller calls each cycle (and the colocation timeline replays).

The room is rule `colocation`'s (`solver.rules.colocation.rooms`): when, on a colocation
node with fresh, measured usage, the offline pods there ask more than the room of a
resource or of a lent GPU device, the pods to evict are the fewest whose leaving makes every
resource and device fit, then among as few those of the lowest priority, then the newest
(the least work lost). Volcano's agent evicts offline pods largest request first, one at a
time, while usage stays above a watermark; here the room is computed, so the whole set is
known at once. Stale or unmeasured usage evicts nothing (no reading says the online pods
need the room).

Example (margin 10 %): n1 offers offline pods 16 − 8 (online usage 50 %) − 1.6 = 6.4 cpu;
offline pods of 2, 2 and 4 cpu ask 8 → 1.6 short: the 2-cpu pod of lowest priority, newest
first, is evicted.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.snapshot import GPU, NodeName, Pod, PodKey, Snapshot
from solver.rules.colocation import BATCH_OF, NodeRoom, fractional_milli, offline_amount, rooms
from solver.violation import describe_amount

__all__ = ["OfflineEviction", "offline_evictions"]


@dataclass(frozen=True)
class OfflineEviction:
    """Offline pods to evict from one node, and why (`message`, with the numbers)."""

    node: NodeName
    pods: tuple[PodKey, ...]
    message: str
    short_by: Mapping[str, int]
    """Per resource: how much the offline pods asked over their room (`gpu`: summed over devices)."""


_SUBSETS_TRIED = 20_000
"""Subsets of one node's offline pods tried for the fewest that cover the excess; past it, greedy."""


def offline_evictions(snapshot: Snapshot) -> list[OfflineEviction]:
    """Per colocation node with fresh, measured usage whose offline pods ask more than its
    room (cpu, memory, or a lent GPU device): the fewest offline pods to evict (module
    docstring), in node order."""
    evictions = []
    room_of = rooms(snapshot)
    by_node: dict[NodeName, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.offline and pod.phase == "running" and pod.node in room_of:
            by_node.setdefault(pod.node, []).append(pod)
    for name, node_room in room_of.items():
        short = {room.resource: room.excess for room in node_room.resources if room.usage_based and room.excess > 0}
        short |= {_device_key(device.index): device.excess for device in node_room.devices if device.excess > 0}
        if not short:
            continue
        pods = by_node.get(name, [])
        amounts = {pod.key: _amounts(pod, short) for pod in pods}
        victims = _fewest(pods, short, amounts)
        if not victims:
            continue
        short_by = {key: need for key, need in short.items() if key in BATCH_OF}
        gpu_short = sum(need for key, need in short.items() if key not in BATCH_OF)
        if gpu_short:
            short_by[GPU] = gpu_short
        message = _message(node_room, short, victims, len(pods))
        evictions.append(OfflineEviction(name, tuple(pod.key for pod in victims), message, short_by))
    return evictions


def _device_key(index: int) -> str:
    return f"{GPU} {index}"


def _amounts(pod: Pod, short: Mapping[str, int]) -> dict[str, int]:
    """What evicting `pod` frees of each short resource or lent device (`"gpu 2"`)."""
    milli = fractional_milli(pod)
    return {
        key: offline_amount(pod, key) if key in BATCH_OF else (milli if int(key.split()[1]) in pod.gpu_indices else 0)
        for key in short
    }


def _order(pod: Pod) -> tuple[int, float, str]:
    """Lowest priority first, then newest (latest start) first."""
    return (pod.priority, -(pod.start_time or 0.0), pod.key)


def _fewest(pods: Sequence[Pod], short: Mapping[str, int], amounts: Mapping[PodKey, Mapping[str, int]]) -> list[Pod]:
    candidates = sorted(pods, key=_order)

    def covers(chosen: Sequence[Pod]) -> bool:
        return all(sum(amounts[pod.key][key] for pod in chosen) >= need for key, need in short.items())

    tried = 0
    for size in range(1, len(candidates) + 1):
        for chosen in itertools.combinations(candidates, size):  # in `_order`'s order: the first found is the best
            tried += 1
            if covers(chosen):
                return list(chosen)
            if tried >= _SUBSETS_TRIED:
                return _greedy(candidates, short, amounts)
    return list(candidates)


def _greedy(candidates: Sequence[Pod], short: Mapping[str, int], amounts: Mapping[PodKey, Mapping[str, int]]) -> list[Pod]:
    """Largest share of what is still short first, until it is covered."""
    left, chosen, rest = dict(short), [], list(candidates)
    while any(value > 0 for value in left.values()) and rest:
        best = max(
            rest,
            key=lambda pod: (sum(min(amounts[pod.key][k], v) / max(v, 1) for k, v in left.items() if v > 0), -_order(pod)[0]),
        )
        rest.remove(best)
        chosen.append(best)
        left = {k: v - amounts[best.key][k] for k, v in left.items()}
    return sorted(chosen, key=_order)


def _message(node_room: NodeRoom, short: Mapping[str, int], victims: Sequence[Pod], running: int) -> str:
    parts = [
        f"{room.describe()} < offline requests {describe_amount(room.resource, room.offline)}"
        for room in node_room.resources
        if room.resource in short
    ]
    parts += [device.describe(node_room.node) for device in node_room.devices if _device_key(device.index) in short]
    return (
        f"online usage rose on colocation node {node_room.node}: {'; '.join(parts)}; evicting "
        f"{len(victims)} of {running} offline pod(s) there, the fewest that make room"
    )
