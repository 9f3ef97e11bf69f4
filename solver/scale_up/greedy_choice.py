"""The greedy fallback of the scale-up plan: gang by gang in the solver's order (highest
weight first), each pod onto a node already bought for the plan where it fits, else onto a
new node of the cheapest template that holds it — within one HyperNode of the gang's hard
topology, trying each such domain and keeping the cheapest. Each gang is a transaction: it
buys all it needs or nothing (a copy of the state, committed whole).

Used when CP-SAT has no answer in its time or its model would be too large
(`solver.scale_up.cpsat_choice`). Deterministic: no clock, no randomness.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, PODS, POD_SLOT, QueueName, Task, gpu_devices
from solver.rules.capacity import device_fits
from solver.scale_up.cpsat_choice import Choice
from solver.scale_up.demand import GangDemand, over_queue_room, take_room
from solver.scale_up.slots import Slot

__all__ = ["choose_greedily"]


@dataclass
class _Room:
    slot: int
    free: dict[str, int]
    device_free_milli: list[int]

    def take(self, task: Task) -> bool:
        """Place one pod of `task` here if it fits; whether it did."""
        asked = {**task.requests, PODS: POD_SLOT}
        if any(self.free.get(name, 0) < amount for name, amount in asked.items() if name != GPU):
            return False
        gpu_milli = task.requests.get(GPU, 0)
        if gpu_milli >= GPU_MILLI_PER_DEVICE:
            whole = [i for i, free in enumerate(self.device_free_milli) if device_fits(free, gpu_milli)]
            if len(whole) < gpu_devices(gpu_milli):
                return False
            for i in whole[: gpu_devices(gpu_milli)]:
                self.device_free_milli[i] = 0
        elif gpu_milli > 0:
            shared = [i for i, free in enumerate(self.device_free_milli) if device_fits(free, gpu_milli)]
            if not shared:
                return False
            best = min(shared, key=lambda i: (self.device_free_milli[i], i))  # the fullest device that still fits
            self.device_free_milli[best] -= gpu_milli
        for name, amount in asked.items():
            if name != GPU:
                self.free[name] = self.free.get(name, 0) - amount
        return True


@dataclass
class _State:
    rooms: list[_Room] = field(default_factory=list)
    per_slot: dict[int, int] = field(default_factory=dict)
    per_template: dict[str, int] = field(default_factory=dict)
    price_milli: int = 0


def choose_greedily(
    demands: Sequence[GangDemand],
    slots: Sequence[Slot],
    fit: dict[tuple[int, int, int], int],
    queue_room: Mapping[QueueName, Mapping[str, int]],
) -> Choice:
    """The nodes to buy (module docstring); a gang its queues have no room left for is skipped."""
    state = _State()
    room = {queue: dict(left) for queue, left in queue_room.items()}
    for g in sorted(range(len(demands)), key=lambda g: -demands[g].weight):
        if over_queue_room(demands[g], room) is not None:
            continue
        best: _State | None = None
        for allowed, one_node in _options(demands[g], slots):
            trial = _packed(g, demands[g], slots, fit, allowed, one_node=one_node, state=copy.deepcopy(state))
            if trial is not None and (best is None or trial.price_milli < best.price_milli):
                best = trial
        if best is not None:
            state = best
            take_room(room, demands[g])
    return Choice(counts=dict(state.per_slot), status="GREEDY")


def _options(demand: GangDemand, slots: Sequence[Slot]) -> list[tuple[frozenset[int], bool]]:
    """Which slots the gang may use together: all, or those of one domain its hard topology
    allows, or (a slot in no such domain) one node alone."""
    everything = frozenset(range(len(slots)))
    if demand.tier_limit is None:
        return [(everything, False)]
    domains: dict[str, set[int]] = {}
    options: list[tuple[frozenset[int], bool]] = []
    for s, slot in enumerate(slots):
        within = slot.domains_within(demand.tier_limit)
        for name in within:
            if demand.allowed_domains is None or name in demand.allowed_domains:
                domains.setdefault(name, set()).add(s)
        if not within and demand.allowed_domains is None:
            options.append((frozenset({s}), True))
    return [(frozenset(slots_in), False) for slots_in in domains.values()] + options  # in slot order


def _packed(
    g: int,
    demand: GangDemand,
    slots: Sequence[Slot],
    fit: dict[tuple[int, int, int], int],
    allowed: frozenset[int],
    *,
    one_node: bool,
    state: _State,
) -> _State | None:
    """`state` with the gang's pods placed within `allowed`, or None when they do not all fit."""
    first_new = len(state.rooms)
    pods = [(t, task) for t, (task, count) in enumerate(demand.pods_per_task) for _ in range(count)]
    pods.sort(key=lambda item: (-item[1].requests.get(GPU, 0), -sum(item[1].requests.values()), item[0]))
    for t, task in pods:
        usable = state.rooms[first_new:] if one_node else state.rooms
        if any(room.slot in allowed and fit.get((g, t, room.slot), 0) > 0 and room.take(task) for room in usable):
            continue
        if one_node and len(state.rooms) > first_new:
            return None
        room = _bought(g, t, slots, fit, allowed, state)
        if room is None or not room.take(task):
            return None
    return state


def _bought(
    g: int, t: int, slots: Sequence[Slot], fit: dict[tuple[int, int, int], int], allowed: frozenset[int], state: _State
) -> _Room | None:
    """A new node of the cheapest allowed slot that holds a pod of the task and may take one more."""
    open_slots = [
        s
        for s in sorted(allowed)
        if fit.get((g, t, s), 0) > 0
        and state.per_slot.get(s, 0) < slots[s].capacity
        and state.per_template.get(slots[s].template.name, 0) < slots[s].template.max_count
    ]
    if not open_slots:
        return None
    s = min(open_slots, key=lambda s: (slots[s].template.price_milli_per_hour, s))
    node = slots[s].node
    room = _Room(s, {k: v for k, v in node.allocatable.items() if k != GPU}, [GPU_MILLI_PER_DEVICE] * len(node.gpus))
    state.rooms.append(room)
    state.per_slot[s] = state.per_slot.get(s, 0) + 1
    state.per_template[slots[s].template.name] = state.per_template.get(slots[s].template.name, 0) + 1
    state.price_milli += slots[s].template.price_milli_per_hour
    return room
