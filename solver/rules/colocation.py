"""Online/offline colocation: offline pods use, on colocation nodes, what online pods
requested but do not use; online pods never see them there.

Names are Volcano's (volcano-sh/volcano, `pkg/agent/apis`): a pod is *offline* when its
annotation `volcano.sh/qos-level` is `BE` (best effort; `LC`, `HLS`, `LS` and no
annotation are online, as in Volcano's `IsPreemptablePod`), or its PriorityClass carries
that annotation (batchplace's addition: one place to mark a whole class of work). A node
is a *colocation node* by the labels `volcano.sh/oversubscription` / `volcano.sh/colocation`
(`models.snapshot.Node.colocation`). Offline capacity is counted as Volcano's agent
publishes it, in the extended resources `kubernetes.io/batch-cpu` (milli-CPU) and
`kubernetes.io/batch-memory` (bytes), which the rule declares as columns standing in for
cpu and memory (`columns`; `solver.columns.Column.moves`). In the snapshot every engine
and the checker see (`solver.rules.counted` applies the columns)

- each offline pod's (and offline task's) `cpu` and `memory` requests are asked as
  `kubernetes.io/batch-cpu` and `kubernetes.io/batch-memory` instead — a running offline
  pod only when it runs on a colocation node (elsewhere it keeps counting as any pod);
- each colocation node offers, per resource r of cpu and memory, `batch-r` allocatable
  `allocatable − online usage − margin` when its usage is fresh (`solver.rules.usage`:
  observed within `max_age_s`), where online usage is `NodeUsage.online_r_percent`, or the
  node's whole usage when no offline pod runs there, and the margin is
  `ColocationPolicy.r_margin_percent` of allocatable. When the usage is stale or missing,
  or offline pods run there and nobody measured them apart, the node offers no
  oversubscribed room (fail safe): `batch-r` is what online pods have not requested,
  `allocatable − online requests`;
- other nodes offer no `batch-*` (unless the node itself lists it), so an offline pod that
  asks for cpu or memory goes to colocation nodes only — as in Volcano, where an offline
  pod asks for `kubernetes.io/batch-cpu`, which only oversubscription nodes offer.

So on a colocation node online pods are admitted against `allocatable − online requests`
(offline pods are not in their columns: they never wait for one) and offline pods against
`allocatable − online usage − margin − other offline requests`, by the ordinary capacity
arithmetic of every engine (`solver.problem`), the LP bound and the checker alike. The
`pods` count and every other resource stay as for any pod.

GPUs are lent per device, where a device's unused part can be known: a colocation node
whose usage is fresh and says each device's online percent (`NodeUsage.
online_gpu_device_percent`, the `online-gpu<i>` annotation parts or the `online-gpu`
Prometheus query) lends each device online pods *share* — held by running online pods with
fractional requests, by no whole-device pod, and measured — to offline pods with
fractional requests: they may hold there `lent_milli = 1000 − online usage − margin −
used_milli` (`ColocationPolicy.gpu_margin_percent` of one device; `Gpu.used_milli`, work no
pod is listed for, is kept back too), less what offline pods hold there already, while
online pods are admitted against `1000 − online requests` as on any device, never counting
the offline pods. The rule's `LENT_GPU` column offers each lent device's room
(`Gpu.lent_milli` in the counted snapshot) and asks a running offline pod's fraction on one
as `LENT_GPU`, so it leaves the device's and the node's `gpu`; a pod bound this cycle counts so too (`solver.after.BoundPod.lent`). The
greedy engine tells the two pod classes apart on a lent device; an engine that does not
(CP-SAT, and everything reading `Problem.gpu_free_milli`) sees the smaller of the online
free milli and the lent room, so whatever it puts there fits both. Whole-device requests,
devices no online pod shares, unmeasured devices and nodes with stale or missing usage (or
none per device: state "unmeasured") lend nothing — offline pods count there as any pod
(fail safe), and a waiting offline PodGroup asking a fraction of a GPU is told how many
colocation nodes lend none, and why (`REASON_NO_GPU_LENDING`).

GPU worked example (margin 10 % = 100m): n7's device 0 holds an online 600m pod using 30 %
(300m) and an offline 200m pod. Lent room 1000 − 300 − 100 = 600m, 400m left: an offline
pod asking 400m fits, one asking 500m does not (without lending only 1000 − 600 − 200 =
200m were free). An online pod asking 400m fits (1000 − 600), whatever the offline pods
hold. With offline pods of 300m and 100m there and online usage risen to 80 %, the room is
100m < 400m: the 300m pod alone is evicted ("gpu 0 of n7: offline 400m > room 100m = 1000
− online usage 800m − margin 100m").

Worked example (margin 10 %): n1, a colocation node, allocatable cpu 16, online pods
requesting 12 cpu and using 25 % (4 cpu), offline pods running there requesting 3 cpu.
`batch-cpu` allocatable = 16 − 4 − 1.6 = 10.4 cpu, 7.4 free: an offline pod asking 6 cpu
fits, one asking 8 does not ("insufficient kubernetes.io/batch-cpu"); an online pod asking
4 cpu fits (16 − 12), whatever the offline pods hold. With usage 5 minutes old the node
offers offline pods 16 − 12 = 4 cpu, 1 free.

Each resource stands alone: a node whose cpu is measured apart and memory not offers
oversubscribed cpu and requests-based memory (its state is then "unmeasured").

Evictions (`solver.offline_evictions`, which the controller calls): when online usage rises on a colocation node with fresh,
measured usage (per resource, and per lent device) so that the offline pods there ask more
than `batch-r` (or the device's lent room) allows, the offline pods to evict are the fewest
whose leaving makes every resource and device fit, then among as few
those of the lowest priority, then the newest (the least work lost). Volcano's agent
evicts offline pods largest request first, one at a time, while usage stays above a
watermark; here the room is computed, so the whole set is known at once. Stale or
unmeasured usage evicts nothing (no reading says the online pods need the room).

`check`: every offline pod bound this cycle to a node whose offline requests then exceed
its `batch-*` allocatable, or to a lent device whose offline milli then exceed its lent
room, with the numbers (the capacity rule leaves those resources to this one). Offline
pods already over it are not the placement's fault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from models.snapshot import (
    CPU,
    GPU,
    GPU_MILLI_PER_DEVICE,
    LENT_GPU,
    MEMORY,
    Node,
    NodeName,
    Pod,
    PodKey,
    Snapshot,
    is_fractional_gpu,
)
from solver.after import After
from solver.columns import Column
from solver.memo import memoized
from solver.rules import usage
from solver.violation import Violation, describe_amount

__all__ = [
    "NAME",
    "BATCH_CPU",
    "BATCH_MEMORY",
    "BATCH_OF",
    "BATCH_RESOURCES",
    "LENT_GPU",
    "REASON_NO_OVERSUBSCRIPTION",
    "REASON_NO_GPU_LENDING",
    "Room",
    "DeviceRoom",
    "NodeRoom",
    "active",
    "rooms",
    "columns",
    "ColocationTotals",
    "totals",
    "offline_amount",
    "fractional_milli",
    "check",
]

NAME = "colocation"

BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
BATCH_OF: Mapping[str, str] = {CPU: BATCH_CPU, MEMORY: BATCH_MEMORY}
"""The resource an offline pod's request is asked as on a colocation node."""
BATCH_RESOURCES = frozenset((*BATCH_OF.values(), LENT_GPU))
"""What offline pods count against on colocation nodes: this rule judges them, not `capacity`."""
REASON_NO_OVERSUBSCRIPTION = "no oversubscribed room: usage stale, missing or not measured apart from offline pods"
REASON_NO_GPU_LENDING = "no GPU lent: per-device online usage stale, missing or not measured"

State = Literal["fresh", "stale", "missing", "unmeasured"]


def columns(snapshot: Snapshot) -> tuple[Column, ...]:
    """What offline pods count against on colocation nodes, as columns (`solver.columns`)
    dealt to queues and packed like the resources they stand for: `batch-cpu` and
    `batch-memory` move the cpu and memory requests of offline tasks and of offline pods
    pending or running on a colocation node, and colocation nodes offer their room
    (`rooms`); `LENT_GPU` moves a running offline pod's fraction on a lent device, and
    lent devices offer their room (declared when a device is lent or the snapshot names
    it). When colocation changes nothing but a node or pod names a `batch-*` resource
    itself, those columns count what is listed. The capacity rule leaves them to this one.
    Computed once per snapshot."""
    return memoized(snapshot, ("colocation_columns",), lambda: _columns(snapshot))


def _concerned(snapshot: Snapshot) -> bool:
    """Whether this rule has anything to say of `snapshot`: colocation changes something
    (`active`), or some node lists a `batch-*` resource itself."""
    return active(snapshot) or not BATCH_RESOURCES.isdisjoint(set().union(*map(attrgetter("allocatable"), snapshot.nodes)))


def _columns(snapshot: Snapshot) -> tuple[Column, ...]:
    if not _concerned(snapshot):
        return ()
    if not active(snapshot):  # nodes or pods name a `batch-*` resource themselves: counted as listed
        asked = (task.requests.keys() for group in snapshot.pod_groups for task in group.tasks)
        named = set().union(*map(attrgetter("allocatable"), snapshot.nodes), *(pod.requests.keys() for pod in snapshot.pods), *asked)
        return tuple(
            Column(name=name, rule=NAME, offer=None, ask=None, task_ask=None, dealt_to_queues=True, packs=True)
            for name in sorted(BATCH_RESOURCES & named)
        )
    room_of = rooms(snapshot)
    moved = [pod for pod in snapshot.pods if pod.offline and (pod.phase == "pending" or pod.node in room_of)]
    tasks = [((group.key, task.name), task) for group in snapshot.pod_groups for task in group.tasks if task.offline]
    columns = [
        Column(
            name=batch,
            rule=NAME,
            offer={name: node_room.room_of(resource) for name, node_room in room_of.items()},
            ask={pod.key: offline_amount(pod, resource) for pod in moved},
            task_ask={key: task.requests.get(resource, 0) + task.requests.get(batch, 0) for key, task in tasks},
            dealt_to_queues=True,
            packs=True,
            moves=resource,
        )
        for resource, batch in BATCH_OF.items()
    ]
    device_room = {(name, device.index): device.room for name, node_room in room_of.items() for device in node_room.devices}
    lent = {(name, index) for name, index in device_room}
    named = (
        any(LENT_GPU in node.allocatable for node in snapshot.nodes)
        or any(LENT_GPU in pod.requests for pod in snapshot.pods)
        or any(LENT_GPU in task.requests for _, task in tasks)
    )
    if device_room or named:
        columns.append(
            Column(
                name=LENT_GPU,
                rule=NAME,
                offer={name: sum(device.room for device in node_room.devices) for name, node_room in room_of.items() if node_room.devices},
                ask={pod.key: pod.requests[GPU] for pod in moved if GPU in pod.requests and _holds_lent(pod, lent)},
                task_ask={},
                dealt_to_queues=True,
                packs=True,
                moves=GPU,
                device_room=device_room,
                device_takers=frozenset(key for key, _ in tasks),
            )
        )
    return tuple(columns)


def _holds_lent(pod: Pod, lent: set[tuple[NodeName, int]]) -> bool:
    """A running offline pod with a fractional request on a lent device."""
    return (
        pod.phase == "running"
        and bool(fractional_milli(pod))
        and any((pod.node, index) in lent for index in pod.gpu_indices)
    )


@dataclass(frozen=True)
class Room:
    """One resource of one colocation node: `room` is its `batch-*` allocatable. `online` is
    the online usage (fresh) or the online requests (otherwise), `margin` 0 unless fresh;
    `offline` what the offline pods running there request."""

    resource: str
    allocatable: int
    online: int
    margin: int
    room: int
    offline: int
    usage_based: bool = True
    online_requested: int = 0

    @property
    def excess(self) -> int:
        return max(0, self.offline - self.room)

    def describe(self) -> str:
        """`"cpu room 10400m = allocatable 16 − online usage 4 − margin 1600m"`."""
        amount = lambda value: describe_amount(self.resource, value)  # noqa: E731
        if self.usage_based:
            return (
                f"{self.resource} room {amount(self.room)} = allocatable {amount(self.allocatable)} − online usage "
                f"{amount(self.online)} − margin {amount(self.margin)}"
            )
        return f"{self.resource} room {amount(self.room)} = allocatable {amount(self.allocatable)} − online requests {amount(self.online)}"


@dataclass(frozen=True)
class DeviceRoom:
    """One lent GPU device of a colocation node (online pods share it with fractional
    requests): offline pods with fractional requests may hold `room` milli there
    (its `Gpu.lent_milli`) = 1000 − online usage − margin − `outside` (`Gpu.used_milli`,
    work no pod is listed for, kept back too); `offline` is what they hold now."""

    index: int
    online: int
    margin: int
    outside: int
    room: int
    offline: int
    online_requested: int

    @property
    def excess(self) -> int:
        return max(0, self.offline - self.room)

    def room_text(self) -> str:
        """`"room 400m = 1000 − online usage 500m − margin 100m"`."""
        outside = f" − outside use {self.outside}m" if self.outside else ""
        return f"room {self.room}m = {GPU_MILLI_PER_DEVICE} − online usage {self.online}m − margin {self.margin}m{outside}"

    def describe(self, node: NodeName) -> str:
        """`"gpu 2 of n7: offline 600m > room 400m = 1000 − online usage 500m − margin 100m"`."""
        relation = ">" if self.offline > self.room else "≤"
        return f"gpu {self.index} of {node}: offline {self.offline}m {relation} {self.room_text()}"


@dataclass(frozen=True)
class NodeRoom:
    """What offline pods may use on one colocation node, per resource (cpu, memory), and
    per lent GPU device. `gpu_state`: whether the per-device online usage is fresh (then
    `devices` lists the lent ones) or stale, missing or unmeasured (nothing is lent)."""

    node: NodeName
    state: State
    resources: tuple[Room, ...]
    gpu_state: State = "missing"
    devices: tuple[DeviceRoom, ...] = ()

    @property
    def oversubscribed(self) -> bool:
        return self.state == "fresh"

    def room_of(self, resource: str) -> int:
        """The `batch-*` allocatable of `resource` (cpu or memory) here."""
        return next(room.room for room in self.resources if room.resource == resource)


def active(snapshot: Snapshot) -> bool:
    """Whether colocation changes anything: enabled, some colocation node, some offline pod or task."""
    return memoized(snapshot, ("colocation_active",), lambda: _active(snapshot))


def _active(snapshot: Snapshot) -> bool:
    """Offline work first: a cycle has far fewer pods and tasks than nodes, and most have none."""
    if not snapshot.colocation_policy.enabled:
        return False
    offline = any(pod.offline for pod in snapshot.pods) or any(
        task.offline for group in snapshot.pod_groups for task in group.tasks
    )
    return offline and any(node.colocation for node in snapshot.nodes)


def _percent_of(percent: float, allocatable: int) -> int:
    return math.ceil(percent * allocatable / 100)


def offline_amount(pod: Pod, resource: str) -> int:
    """What an offline pod asks of `resource`, before or after `counted` moved it."""
    return pod.requests.get(resource, 0) + pod.requests.get(BATCH_OF[resource], 0)


def fractional_milli(pod: Pod) -> int:
    """A pod's fractional GPU request (before or after `counted` moved it), else 0."""
    milli = pod.requests.get(GPU, 0) + pod.requests.get(LENT_GPU, 0)
    return milli if is_fractional_gpu(milli) else 0


def _online_percent(node: Node, resource: str, offline_here: bool) -> float | None:
    reading = node.usage
    if reading is None:
        return None
    online = reading.online_cpu_percent if resource == CPU else reading.online_memory_percent
    if online is not None:
        return online
    if offline_here:
        return None  # offline pods' use is in the node's total and nobody took it out
    return reading.cpu_percent if resource == CPU else reading.memory_percent


def rooms(snapshot: Snapshot) -> Mapping[NodeName, NodeRoom]:
    """Every colocation node's `NodeRoom` (computed once per snapshot; do not mutate)."""
    return memoized(snapshot, ("colocation_rooms",), lambda: _rooms(snapshot))


def _rooms(snapshot: Snapshot) -> dict[NodeName, NodeRoom]:
    policy = snapshot.colocation_policy
    if not policy.enabled:
        return {}
    online_requested: dict[NodeName, dict[str, int]] = {}
    offline_requested: dict[NodeName, dict[str, int]] = {}
    running: dict[NodeName, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.phase != "running" or pod.node is None:
            continue
        running.setdefault(pod.node, []).append(pod)
        into = offline_requested if pod.offline else online_requested
        totals = into.setdefault(pod.node, {})
        for resource in BATCH_OF:
            totals[resource] = totals.get(resource, 0) + (offline_amount(pod, resource) if pod.offline else pod.requests.get(resource, 0))
    judged = usage.judgements(snapshot)
    margins = {CPU: policy.cpu_margin_percent, MEMORY: policy.memory_margin_percent}
    result: dict[NodeName, NodeRoom] = {}
    for node in snapshot.nodes:
        if not node.colocation:
            continue
        offline_here = node.name in offline_requested
        fresh = judged[node.name].state in ("hot", "cool")
        percents = {r: _online_percent(node, r, offline_here) for r in BATCH_OF}
        state: State
        if not fresh:
            state = "stale" if judged[node.name].state == "stale" else "missing"
        elif any(percent is None for percent in percents.values()):
            state = "unmeasured"  # some resource's online usage is not known: that one is requests-based
        else:
            state = "fresh"
        resources = []
        for resource in BATCH_OF:
            allocatable = node.allocatable.get(resource, 0)
            offline = offline_requested.get(node.name, {}).get(resource, 0)
            percent = percents[resource]
            usage_based = fresh and percent is not None
            if usage_based and percent is not None:
                online = _percent_of(percent, allocatable)
                margin = _percent_of(margins[resource], allocatable)
            else:
                online = online_requested.get(node.name, {}).get(resource, 0)
                margin = 0
            room = min(max(0, allocatable - online - margin), allocatable)
            requested = online_requested.get(node.name, {}).get(resource, 0)
            resources.append(
                Room(resource, allocatable, online, margin, room, offline, usage_based=usage_based, online_requested=requested)
            )
        gpu_state: State = state if not fresh else ("fresh" if node.usage and node.usage.online_gpu_device_percent else "unmeasured")
        devices = _device_rooms(node, running.get(node.name, ()), policy.gpu_margin_percent) if gpu_state == "fresh" else ()
        result[node.name] = NodeRoom(node.name, state, tuple(resources), gpu_state, devices)
    return result


def _device_rooms(node: Node, running: Sequence[Pod], margin_percent: float) -> tuple[DeviceRoom, ...]:
    """The lent devices of `node` (fresh per-device usage): those online pods share with
    fractional requests, no whole-device pod holds, and the usage measures."""
    measured = (node.usage.online_gpu_device_percent or {}) if node.usage is not None else {}
    online_requested: dict[int, int] = {}
    offline: dict[int, int] = {}
    whole: set[int] = set()
    for pod in running:
        milli = fractional_milli(pod)
        if not milli:
            whole.update(pod.gpu_indices)
            continue
        into = offline if pod.offline else online_requested
        for index in pod.gpu_indices:
            into[index] = into.get(index, 0) + milli
    margin = _percent_of(margin_percent, GPU_MILLI_PER_DEVICE)
    rooms = []
    for gpu in sorted(node.gpus, key=lambda gpu: gpu.index):
        if gpu.index not in online_requested or gpu.index in whole or gpu.index not in measured:
            continue
        online = _percent_of(measured[gpu.index], GPU_MILLI_PER_DEVICE)
        room = min(max(0, GPU_MILLI_PER_DEVICE - online - margin - gpu.used_milli), GPU_MILLI_PER_DEVICE)
        rooms.append(
            DeviceRoom(gpu.index, online, margin, gpu.used_milli, room, offline.get(gpu.index, 0), online_requested[gpu.index])
        )
    return tuple(rooms)


# ---- what the controller's metrics report ----


@dataclass(frozen=True)
class ColocationTotals:
    """The cluster's colocation numbers, per resource (cpu, memory, and `gpu` in milli over
    lent devices): `room` offline pods may use, `offline` they request, `oversubscribed`
    the part of the room online pods requested but do not use (room past what online
    requests leave). `nodes` counts colocation nodes per state of their usage."""

    nodes: Mapping[State, int]
    room: Mapping[str, int]
    offline: Mapping[str, int]
    oversubscribed: Mapping[str, int]


def totals(snapshot: Snapshot) -> ColocationTotals:
    """`ColocationTotals` of `snapshot`, from the rooms this rule computes (`rooms`). Example:
    one fresh node, cpu room 10.4 cores of which online requests leave 4, offline pods
    asking 3 → room 10400, offline 3000, oversubscribed 6400 milli-CPU."""
    node_rooms = rooms(snapshot).values()
    states: dict[State, int] = {state: 0 for state in ("fresh", "stale", "missing", "unmeasured")}
    for node_room in node_rooms:
        states[node_room.state] += 1
    room: dict[str, int] = {}
    offline: dict[str, int] = {}
    over: dict[str, int] = {}
    for resource in BATCH_OF:
        of = [r for node_room in node_rooms for r in node_room.resources if r.resource == resource]
        over[resource] = sum(max(0, r.room - max(0, r.allocatable - r.online_requested)) for r in of if r.usage_based)
        room[resource] = sum(r.room for r in of)
        offline[resource] = sum(r.offline for r in of)
    devices = [d for node_room in node_rooms for d in node_room.devices]
    over[GPU] = sum(max(0, d.room - max(0, GPU_MILLI_PER_DEVICE - d.online_requested - d.outside)) for d in devices)
    room[GPU] = sum(d.room for d in devices)
    offline[GPU] = sum(d.offline for d in devices)
    return ColocationTotals(nodes=states, room=room, offline=offline, oversubscribed=over)


# ---- the checker ----


def check(snapshot: Snapshot, after: After) -> list[Violation]:
    """Offline binds that take a node's offline requests past its `batch-*` allocatable, or
    a lent device's offline milli past its `lent_milli` (`snapshot` is as `solver.rules.counted`
    made it: the checker's)."""
    violations: list[Violation] = _lent_devices_overfull(snapshot, after)
    if not _concerned(snapshot):
        return violations
    room_of = rooms(snapshot)
    for node_name, added in sorted(after.node_bound.items()):
        node = snapshot.node_by_name[node_name]
        used = after.node_used[node_name]
        for resource, batch in BATCH_OF.items():
            if added.get(batch, 0) <= 0 or used.get(batch, 0) <= node.allocatable.get(batch, 0):
                continue
            bound = sorted(b.pod.key for b in after.bound if b.node.name == node_name and b.pod.requests.get(batch, 0))
            node_room = room_of.get(node_name)
            if node_room is None:
                why = "not a colocation node: offline pods asking cpu or memory go to colocation nodes only"
            else:
                room = next(r for r in node_room.resources if r.resource == resource)
                why = room.describe() + ("" if room.usage_based else f" ({REASON_NO_OVERSUBSCRIPTION})")
            violations.append(
                Violation(
                    rule=NAME,
                    subject=node_name,
                    message=(
                        f"node {node_name}: offline pods ask {describe_amount(resource, used[batch])} {resource} > "
                        f"{describe_amount(resource, node.allocatable.get(batch, 0))} they may use after placement "
                        f"({why}; bound {', '.join(bound)})"
                    ),
                )
            )
    return violations


def _lent_devices_overfull(snapshot: Snapshot, after: After) -> list[Violation]:
    """Lent devices that binds took past their room: running lent pods (their request is
    `LENT_GPU` in the counted snapshot) plus lent binds, against `Gpu.lent_milli`."""
    bound: dict[tuple[NodeName, int], list[PodKey]] = {}
    added: dict[tuple[NodeName, int], int] = {}
    for b in after.bound:
        if b.lent:
            place = (b.node.name, b.gpus[0])
            bound.setdefault(place, []).append(b.pod.key)
            added[place] = added.get(place, 0) + b.pod.requests[GPU]
    if not bound:
        return []
    running: dict[tuple[NodeName, int], int] = {}
    for pod in after.kept:
        milli = pod.requests.get(LENT_GPU, 0)
        if milli and pod.node is not None:
            for index in pod.gpu_indices:
                running[(pod.node, index)] = running.get((pod.node, index), 0) + milli
    violations = []
    room_of = rooms(snapshot)
    for (node_name, index), keys in sorted(bound.items()):
        node = snapshot.node_by_name[node_name]
        lent_milli = node.gpu_by_index[index].lent_milli or 0
        total = running.get((node_name, index), 0) + added[(node_name, index)]
        if total <= lent_milli:
            continue
        node_room = room_of.get(node_name)
        device = next((d for d in node_room.devices if d.index == index), None) if node_room is not None else None
        why = f"room {lent_milli}m" if device is None else device.room_text()
        violations.append(
            Violation(
                rule=NAME,
                subject=node_name,
                message=(
                    f"gpu {index} of {node_name}: offline pods hold {total}m > {why} after placement "
                    f"(lent to offline pods; bound {', '.join(sorted(keys))})"
                ),
            )
        )
    return violations
