"""The cluster as it would be after a placement: computed once, read by every rule's check.

Input: a validated `Snapshot` and a `Placement` (from any engine). Output: a frozen
`After` — the running pods that stay, the pods bound this cycle with their node, GPUs and
NUMA cell, and the totals the rules compare with limits (per node, per GPU device, per
queue, per PodGroup and task). `build_after` is pure; `After` is "write once, read many",
like kube-scheduler's `CycleState`, and its mappings must not be mutated by readers.

Only well-formed entries enter the state; the malformed ones are the `binding` rule's to
report and every other rule judges the placement as if they were absent:
  - a bind counts when its pod exists and is pending, its node exists, and it is the
    pod's first bind in the placement;
  - an eviction counts when its pod exists and is running (its first eviction).
This keeps one mistake one violation: a pod bound twice is reported by `binding`, not
also as a capacity overflow by its phantom second copy.

How GPU devices fill (`milli_per_device`): a whole-GPU pod (a multiple of 1000) takes
each device it holds entirely (1000); a fractional pod (1–999) puts its milli on the one
device it holds; `Gpu.used_milli` — work the snapshot lists no pod for — comes on top.
Worked example: device 4 with used_milli 100, a running 300-milli pod and a bound
500-milli pod holds 100 + 300 + 500 = 900 of 1000.

Lent devices (`Gpu.lent_milli`, colocation): an offline pod bound with a fractional request
to a lent device is `BoundPod.lent` — its milli counts as `LENT_GPU` on its node, not as
`gpu`, and not in the device's `gpu_used_milli`, which online pods fill; rule `colocation`
holds the lent pods of a device to its `lent_milli`. Running lent pods
come so already: the counted snapshot (`solver.rules.counted`) asks their request as `LENT_GPU`.

What it does not promise: that the placement is valid. It only adds up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from models.placement import Eviction, Placement
from models.snapshot import (
    GPU,
    GPU_MILLI_PER_DEVICE,
    LENT_GPU,
    POD_SLOT,
    PODS,
    Node,
    NodeName,
    Pod,
    PodGroup,
    PodGroupKey,
    PodKey,
    QueueName,
    Snapshot,
    Task,
    gpu_devices,
    is_fractional_gpu,
    sum_resources,
)
from solver.made_when_read import MadeWhenReadByKey

__all__ = ["BoundPod", "EvictedPod", "After", "build_after", "device_use", "milli_per_device"]


def milli_per_device(gpu_milli: int) -> int:
    """What a pod asking `gpu_milli` takes on each device it holds: 8000 → 1000, 500 → 500, 0 → 0."""
    return GPU_MILLI_PER_DEVICE if gpu_devices(gpu_milli) > 0 else gpu_milli


@dataclass(frozen=True)
class BoundPod:
    """A pending pod bound this cycle, with what its `Bind` says."""

    pod: Pod
    group: PodGroup
    task: Task
    node: Node
    gpus: tuple[int, ...]
    numa_cell: int | None

    @property
    def gpus_well_formed(self) -> bool:
        """Distinct indices the node has; per-device rules judge only such binds."""
        return len(set(self.gpus)) == len(self.gpus) and all(i in self.node.gpu_by_index for i in self.gpus)

    @property
    def lent(self) -> bool:
        """An offline pod with a fractional request on one lent device (module docstring)."""
        return (
            self.pod.offline
            and is_fractional_gpu(self.pod.requests.get(GPU, 0))
            and len(self.gpus) == 1
            and self.gpus_well_formed
            and self.node.gpu_by_index[self.gpus[0]].lent_milli is not None
        )

    @property
    def on_node(self) -> dict[str, int]:
        """What it takes of its node: its requests (a lent pod's gpu as `LENT_GPU`) and one of the node's `pods`."""
        if not self.lent:
            return _on_node(self.pod.requests)
        requests = {name: amount for name, amount in self.pod.requests.items() if name != GPU}
        return _on_node({**requests, LENT_GPU: self.pod.requests[GPU]})


@dataclass(frozen=True)
class EvictedPod:
    """A running pod the placement evicts, with the eviction that says so."""

    pod: Pod
    eviction: Eviction


@dataclass(frozen=True)
class After:
    """The state after `placement` is applied to the snapshot (see the module docstring).

    Resource mappings are `{resource: amount}` in base units; a missing name is zero.
    Queue totals include the queue's whole subtree, as `solver.shares.queue_allocated`.
    """

    placement: Placement
    kept: tuple[Pod, ...]
    """Running pods that stay (not evicted)."""
    evicted: tuple[EvictedPod, ...]
    bound: tuple[BoundPod, ...]
    node_used: Mapping[NodeName, Mapping[str, int]]
    """Requests of kept and bound pods per node, with `pods` their count (every node of the
    snapshot is a key)."""
    node_bound: Mapping[NodeName, Mapping[str, int]]
    """Requests of bound pods only, with `pods` their count, per node they landed on."""
    gpu_used_milli: Mapping[NodeName, Mapping[int, int]]
    """Per device: `used_milli` + kept pods + bound pods (every device is a key; a node's
    devices are added up when first read)."""
    gpu_bound_milli: Mapping[NodeName, Mapping[int, int]]
    """Per device that received a bind: milli added by binds."""
    queue_allocated_before: Mapping[QueueName, Mapping[str, int]]
    """Running pods at the snapshot, per queue with its subtree (every queue is a key)."""
    queue_allocated_after: Mapping[QueueName, Mapping[str, int]]
    """Kept + bound pods, per queue with its subtree (every queue is a key)."""
    queue_bound: Mapping[QueueName, Mapping[str, int]]
    """Bound pods only, per queue with its subtree (every queue is a key)."""
    group_kept: Mapping[PodGroupKey, Mapping[str, int]]
    """Kept running pods per PodGroup, per task name (every PodGroup is a key)."""
    group_bound: Mapping[PodGroupKey, Mapping[str, int]]
    """Bound pods per PodGroup, per task name (every PodGroup is a key)."""
    group_evicted: Mapping[PodGroupKey, int]
    """Evicted pods per PodGroup (every PodGroup is a key)."""
    kept_by_group: Mapping[PodGroupKey, tuple[Pod, ...]]
    """Kept running pods per PodGroup (every PodGroup is a key)."""
    bound_by_group: Mapping[PodGroupKey, tuple[BoundPod, ...]]
    """Bound pods per PodGroup (every PodGroup is a key)."""

    def placed(self, group: PodGroupKey, task: str | None = None) -> int:
        """Kept running + bound pods of `group` (of one `task` when given)."""
        kept, bound = self.group_kept.get(group, {}), self.group_bound.get(group, {})
        if task is not None:
            return kept.get(task, 0) + bound.get(task, 0)
        return sum(kept.values()) + sum(bound.values())

    def placed_per_task(self, group: PodGroupKey) -> dict[str, int]:
        """Kept running + bound pods of `group`, per task that has any."""
        kept, bound = self.group_kept.get(group, {}), self.group_bound.get(group, {})
        return {task: kept.get(task, 0) + bound.get(task, 0) for task in {*kept, *bound}}

    def sub_group_counts(self, group: PodGroupKey) -> tuple[dict[str, int], dict[str, int]]:
        """(kept running, bound) pods of `group` per sub-group that has any; pods in no
        sub-group are not counted."""
        kept: dict[str, int] = {}
        bound: dict[str, int] = {}
        for pod in self.kept_of(group):
            if pod.sub_group is not None:
                kept[pod.sub_group] = kept.get(pod.sub_group, 0) + 1
        for bind in self.bound_of(group):
            if bind.pod.sub_group is not None:
                bound[bind.pod.sub_group] = bound.get(bind.pod.sub_group, 0) + 1
        return kept, bound

    def kept_count(self, group: PodGroupKey) -> int:
        return sum(self.group_kept.get(group, {}).values())

    def bound_count(self, group: PodGroupKey) -> int:
        return sum(self.group_bound.get(group, {}).values())

    def bound_of(self, group: PodGroupKey) -> tuple[BoundPod, ...]:
        return self.bound_by_group.get(group, ())

    def kept_of(self, group: PodGroupKey) -> tuple[Pod, ...]:
        return self.kept_by_group.get(group, ())


def device_use(
    nodes: Iterable[Node], kept: Iterable[Pod], binds: Iterable[tuple[NodeName, tuple[int, ...], int]]
) -> dict[NodeName, dict[int, int]]:
    """Milli in use per device of `nodes` (how GPU devices fill, module docstring): each
    device's `used_milli`, plus the `kept` running pods and the `binds` (node, devices, the
    pod's gpu request) that hold it. Pods and binds on other nodes are skipped, so a caller
    interested in a few nodes pays for those only."""
    used = {node.name: {gpu.index: gpu.used_milli for gpu in node.gpus} for node in nodes}
    for pod in kept:
        devices = used.get(pod.node)  # type: ignore[arg-type]  # running pods have a node
        if devices is not None:
            for index in pod.gpu_indices:
                devices[index] += milli_per_device(pod.requests.get(GPU, 0))
    for node_name, gpus, gpu_milli in binds:
        devices = used.get(node_name)
        if devices is not None:
            for index in gpus:
                devices[index] += milli_per_device(gpu_milli)
    return used


def _per_task(pods: Iterable[Pod]) -> dict[str, int]:
    """Pods per task name (`""` for a pod without one)."""
    counts: dict[str, int] = {}
    for pod in pods:
        task = pod.task or ""
        counts[task] = counts.get(task, 0) + 1
    return counts


def _node_use(kept: Iterable[Pod], bound: Iterable[BoundPod]) -> dict[str, int]:
    """`After.node_used` of one node: its kept pods' requests (`_add_on_node`), then each
    bind's `on_node`."""
    used: dict[str, int] = {}
    for pod in kept:
        _add_on_node(used, pod.requests)
    for b in bound:
        _add(used, b.on_node)
    return used


def _device_binds(bound: Iterable[BoundPod]) -> list[tuple[NodeName, tuple[int, ...], int]]:
    """The binds that count on devices, as (node, devices, gpu request): well-formed device
    lists on devices not lent — `binding` reports the first, `colocation` the lent, and
    unknown devices would invent capacity errors."""
    return [(b.node.name, b.gpus, b.pod.requests.get(GPU, 0)) for b in bound if b.gpus_well_formed and not b.lent]


def _add(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount


def _on_node(requests: Mapping[str, int]) -> dict[str, int]:
    """What a pod takes of its node: its requests and one of the node's `pods`."""
    return {**requests, PODS: POD_SLOT}


def _add_on_node(total: dict[str, int], requests: Mapping[str, int]) -> None:
    """`_add(total, _on_node(requests))` without the dict in between (a pass over every running pod)."""
    for name, amount in requests.items():
        if name != PODS:
            total[name] = total.get(name, 0) + amount
    total[PODS] = total.get(PODS, 0) + POD_SLOT


def _queue_totals(snapshot: Snapshot, pods: Iterable[Pod]) -> dict[QueueName, dict[str, int]]:
    """Requests of `pods` per queue, each pod counted in its queue and every ancestor. Each
    queue's own pods' requests are gathered and summed per resource (`sum_resources`), then
    added to its ancestors: the queue tree is walked once per queue, not per pod."""
    queue_of = {group.key: group.queue for group in snapshot.pod_groups}
    own: dict[QueueName, list[dict[str, int]]] = {}
    for pod in pods:
        if pod.pod_group is not None:
            queue = queue_of[pod.pod_group]
            requests = own.get(queue)
            if requests is None:
                own[queue] = [pod.requests]
            else:
                requests.append(pod.requests)
    totals: dict[QueueName, dict[str, int]] = {q.name: {} for q in snapshot.queues}
    for queue, requests in own.items():
        amount = sum_resources(requests)
        for ancestor in snapshot.queue_ancestors(queue):
            _add(totals[ancestor], amount)
    return totals


def _plus(totals: Mapping[QueueName, Mapping[str, int]], extra: Mapping[QueueName, Mapping[str, int]]) -> dict[QueueName, dict[str, int]]:
    """`totals` with `extra` added, queue by queue (new dicts: `totals` is kept)."""
    out = {queue: dict(amounts) for queue, amounts in totals.items()}
    for queue, amounts in extra.items():
        _add(out[queue], amounts)
    return out


def _valid_evictions(snapshot: Snapshot, placement: Placement) -> tuple[EvictedPod, ...]:
    evicted: dict[PodKey, EvictedPod] = {}
    for eviction in placement.evictions:
        pod = snapshot.pod_by_key.get(eviction.pod)
        if pod is not None and pod.phase == "running" and pod.key not in evicted:
            evicted[pod.key] = EvictedPod(pod=pod, eviction=eviction)
    return tuple(evicted.values())


def _valid_binds(snapshot: Snapshot, placement: Placement) -> tuple[BoundPod, ...]:
    bound: dict[PodKey, BoundPod] = {}
    for bind in placement.binds:
        pod = snapshot.pod_by_key.get(bind.pod)
        node = snapshot.node_by_name.get(bind.node)
        if pod is None or node is None or pod.phase != "pending" or pod.key in bound:
            continue
        group = snapshot.pod_group_by_key[pod.pod_group]  # type: ignore[index]  # pending pods have one
        bound[pod.key] = BoundPod(
            pod=pod,
            group=group,
            task=group.task_by_name[pod.task],  # type: ignore[index]
            node=node,
            gpus=bind.gpus,
            numa_cell=bind.numa_cell,
        )
    return tuple(bound.values())


def build_after(snapshot: Snapshot, placement: Placement) -> After:
    """Apply `placement` to `snapshot` on paper and add everything up."""
    evicted = _valid_evictions(snapshot, placement)
    evicted_keys = {e.pod.key for e in evicted}
    running = tuple(p for p in snapshot.pods if p.phase == "running")
    kept = tuple(p for p in running if p.key not in evicted_keys) if evicted_keys else running
    bound = _valid_binds(snapshot, placement)

    node_bound: dict[NodeName, dict[str, int]] = {}
    gpu_bound: dict[NodeName, dict[int, int]] = {}
    group_keys = [g.key for g in snapshot.pod_groups]
    kept_on_node: dict[NodeName, list[Pod]] = {}
    for pod in kept:  # one pass over every running pod, for its node (added up when read)
        on_node = kept_on_node.get(pod.node)  # type: ignore[arg-type]  # running pods always have one
        if on_node is None:
            kept_on_node[pod.node] = [pod]  # type: ignore[index]
        else:
            on_node.append(pod)
    # A PodGroup's kept pods: its running pods (`Snapshot.pods_by_group`, snapshot order) not evicted.
    kept_by_group = MadeWhenReadByKey(
        snapshot.pod_group_by_key,
        lambda group: tuple(
            pod
            for pod in snapshot.pods_by_group[group.key]
            if pod.phase == "running" and pod.key not in evicted_keys
        ),
    )
    group_kept = MadeWhenReadByKey(snapshot.pod_group_by_key, lambda group: _per_task(kept_by_group[group.key]))
    bound_on_node: dict[NodeName, list[BoundPod]] = {}
    for b in bound:
        bound_on_node.setdefault(b.node.name, []).append(b)
        _add(node_bound.setdefault(b.node.name, {}), b.on_node)
    for node_name, gpus, gpu_milli in _device_binds(bound):
        milli = milli_per_device(gpu_milli)
        for index in gpus:
            devices = gpu_bound.setdefault(node_name, {})
            devices[index] = devices.get(index, 0) + milli
    node_used = MadeWhenReadByKey(
        snapshot.node_by_name, lambda node: _node_use(kept_on_node.get(node.name, ()), bound_on_node.get(node.name, ()))
    )
    gpu_used = MadeWhenReadByKey(
        snapshot.node_by_name,
        lambda node: device_use(
            [node],
            [pod for pod in kept_on_node.get(node.name, ()) if pod.gpu_indices],
            _device_binds(bound_on_node.get(node.name, ())),
        )[node.name],
    )

    group_bound: dict[PodGroupKey, dict[str, int]] = {key: {} for key in group_keys}
    group_evicted: dict[PodGroupKey, int] = dict.fromkeys(group_keys, 0)
    bound_by_group: dict[PodGroupKey, list[BoundPod]] = {key: [] for key in group_keys}
    for b in bound:
        counts = group_bound[b.group.key]
        counts[b.task.name] = counts.get(b.task.name, 0) + 1
        bound_by_group[b.group.key].append(b)
    for e in evicted:
        if e.pod.pod_group is not None:
            group_evicted[e.pod.pod_group] += 1

    queue_before = _queue_totals(snapshot, running)
    queue_bound = _queue_totals(snapshot, (b.pod for b in bound))
    # Without evictions what runs after is what ran before and the binds: added, not summed again.
    queue_after = _plus(queue_before, queue_bound) if not evicted else _queue_totals(snapshot, (*kept, *(b.pod for b in bound)))
    return After(
        placement=placement,
        kept=kept,
        evicted=evicted,
        bound=bound,
        node_used=node_used,
        node_bound=node_bound,
        gpu_used_milli=gpu_used,
        gpu_bound_milli=gpu_bound,
        queue_allocated_before=queue_before,
        queue_allocated_after=queue_after,
        queue_bound=queue_bound,
        group_kept=group_kept,
        group_bound=group_bound,
        group_evicted=group_evicted,
        kept_by_group=kept_by_group,
        bound_by_group={key: tuple(pods) for key, pods in bound_by_group.items()},
    )
