"""Seeded synthetic GPU clusters and workloads, the data `experiments.bench` solves.

`synthetic_snapshot(nodes=1_000, pending_pods=1_000, preload=0.5, seed=0)` returns a
validated `Snapshot`, the same for the same arguments, built directly from plain dicts
(one `Snapshot.model_validate`, no YAML), so 10,000 nodes and 5,000 pending pods take
about a second. Nothing is read from disk or the network.

The cluster — H100-style nodes as a GPU cloud racks them:
  - every node: 8 GPUs (`H100-80GB`), GPUs 0–3 on NUMA cell 0 and 4–7 on cell 1; 192
    cores and 2 TiB, split evenly over the two `NumaCell`s;
  - leaf switches of 16 nodes (tier-1 HyperNodes), spines of 8 leaves (tier 2), and one
    tier-3 HyperNode over the spines when there is more than one spine. Example: 1,000
    nodes → 63 leaves (the last one of 8 nodes), 8 spines, 1 top.

The preload — what runs already: a `preload` fraction of all GPU milli is held by running
pods of low-priority (0, some 1), preemptable PodGroups in the four queues, each gang
whole: multi-node gangs take whole free nodes next to each other (mostly one leaf, as a
topology-aware scheduler would have put them), small pods (1, 2, 4 GPUs, inside one NUMA
cell when it has room) go mostly onto nodes already in use, some onto empty ones, so
the free GPUs end up partly fragmented; a few inference pods share devices (250 or 500
milli). It stops at the target or the first pod that would pass it, so the realised
fraction is at most `preload` and short of it by less than one small pod.

The pending workload — exactly `pending_pods` pods in gangs (`min_member` = replicas):
  - training gangs of 1, 2, 4, 8, 16, 32 or 64 GPUs; one pod per node's worth (8-GPU
    pods) above 8 GPUs, else one pod of the whole size or (one in five) that many 1-GPU
    pods; one in ten pods of ≤ 4 GPUs asks for `single-numa-node`;
  - a tenth of the gangs are inference deployments of 1, 2 or 4 fractional-GPU pods
    (250 or 500 milli-GPU) in queue `inference`;
  - queues `research`, `inference`, `training`, `production` with weights 1, 2, 3, 4;
    `research` capped at 25 % and `training` at 50 % of the cluster's GPUs;
  - priorities 0–3, so pending gangs may preempt the preload of their own queue;
  - 20 % of gangs (at least one) hard topology: tier 1 when the gang fits one leaf (≤ 16
    nodes' worth of GPUs), else tier 2 — with gangs of ≤ 64 GPUs that is always tier 1;
    pass larger `gang_gpu_sizes` for tier-2 gangs. 10 % of multi-pod gangs soft (tier 1).
  The last gang is cut to the pods still wanted, so the total is exact.

Not promised: that the pending work fits (it usually does not all fit at 75 % preload —
that is the point), nor stability of the exact draws across versions of this file or
of numpy's `Generator`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, Node, NodeName, Snapshot

__all__ = [
    "GPUS_PER_NODE",
    "GPU_NUMA_CELLS",
    "LEAF_NODES",
    "SPINE_LEAVES",
    "GANG_GPU_SIZES",
    "QUEUES",
    "QueueSpec",
    "SnapshotShape",
    "synthetic_snapshot",
    "shape_of",
    "cluster_nodes",
    "cluster_hypernodes",
    "training_requests",
    "inference_requests",
]

GIB = 2**30
TIB = 2**40
GPUS_PER_NODE = 8
GPU_NUMA_CELLS = (0, 0, 0, 0, 1, 1, 1, 1)
NODE_CPU_MILLI = 192_000
NODE_MEMORY_BYTES = 2 * TIB
CPU_MILLI_PER_GPU = 16_000  # an 8-GPU pod asks 128 of the node's 192 cores
MEMORY_BYTES_PER_GPU = 160 * GIB  # …and 1.25 of its 2 TiB
INFERENCE_CPU_MILLI = 4_000
INFERENCE_MEMORY_BYTES = 32 * GIB
GPU_MODEL = "H100-80GB"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
LEAF_NODES = 16
SPINE_LEAVES = 8
GANG_GPU_SIZES = (1, 2, 4, 8, 16, 32, 64)
PENDING_SIZE_WEIGHTS = (0.28, 0.14, 0.14, 0.16, 0.12, 0.09, 0.07)
RUNNING_SIZE_WEIGHTS = (0.22, 0.14, 0.14, 0.20, 0.12, 0.10, 0.08)
FRACTIONAL_MILLI = (250, 500)
EPOCH = 1_700_000_000.0  # creation and start times are seconds before this instant


@dataclass(frozen=True)
class QueueSpec:
    name: str
    weight: int
    gpu_capability_fraction: float | None  # of the cluster's GPUs; None: not capped


QUEUES = (
    QueueSpec("research", 1, 0.25),
    QueueSpec("inference", 2, None),
    QueueSpec("training", 3, 0.50),
    QueueSpec("production", 4, None),
)


@dataclass(frozen=True)
class SnapshotShape:
    """What a snapshot holds, counted from the snapshot itself (for tests and the bench CSV)."""

    nodes: int
    gpus: int
    gpus_used_fraction: float
    leaves: int
    largest_leaf: int
    spines: int
    running_pods: int
    pending_pods: int
    pending_gangs: int
    pending_gpus: float
    hard_topology_gangs: int
    soft_topology_gangs: int
    fractional_pods: int


def synthetic_snapshot(
    *,
    nodes: int,
    pending_pods: int,
    preload: float,
    seed: int,
    gang_gpu_sizes: tuple[int, ...] = GANG_GPU_SIZES,
    hard_topology_fraction: float = 0.2,
    soft_topology_fraction: float = 0.1,
    fractional_fraction: float = 0.1,
    single_numa_fraction: float = 0.1,
) -> Snapshot:
    """A cluster of `nodes` 8-GPU nodes, `preload` (0–1) of its GPU milli running, and
    `pending_pods` pending pods in gangs; see the module docstring. Same arguments, same snapshot."""
    if nodes < 1 or pending_pods < 0 or not 0.0 <= preload <= 1.0:
        raise ValueError(
            f"need nodes ≥ 1, pending_pods ≥ 0, 0 ≤ preload ≤ 1; got {nodes}, {pending_pods}, {preload}"
        )
    rng = np.random.default_rng(seed)
    node_names = [f"h100-{i:05d}" for i in range(nodes)]
    total_gpu_milli = nodes * GPUS_PER_NODE * GPU_MILLI_PER_DEVICE
    queue_caps = {
        q.name: int(q.gpu_capability_fraction * total_gpu_milli) if q.gpu_capability_fraction is not None else None
        for q in QUEUES
    }
    preloaded = _Preload(rng, node_names, queue_caps).run(target_milli=int(preload * total_gpu_milli))
    pending_groups, pending = _pending_workload(
        rng,
        pending_pods=pending_pods,
        gang_gpu_sizes=gang_gpu_sizes,
        hard_topology_fraction=hard_topology_fraction,
        soft_topology_fraction=soft_topology_fraction,
        fractional_fraction=fractional_fraction,
        single_numa_fraction=single_numa_fraction,
    )
    return Snapshot.model_validate(
        {
            "nodes": cluster_nodes(node_names),
            "hypernodes": cluster_hypernodes(node_names),
            "queues": [
                {"name": q.name, "weight": q.weight, "capability": None if cap is None else {GPU: cap}}
                for q, cap in zip(QUEUES, queue_caps.values())
            ],
            "pod_groups": [*preloaded.groups, *pending_groups],
            "pods": [*preloaded.pods, *pending],
        }
    )


# ---- the cluster ----


def cluster_nodes(node_names: list[str]) -> list[Node]:
    """Every node is the same but for its name: validate one, copy it (copies of a frozen,
    validated model are as valid and far cheaper than validations: docs/results.md,
    "Synthetic clusters")."""
    template = Node.model_validate(_node(node_names[0]))
    return [template.model_copy(update={"name": NodeName(name)}) for name in node_names]


def _node(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "allocatable": {"cpu": NODE_CPU_MILLI, "memory": NODE_MEMORY_BYTES, GPU: GPUS_PER_NODE * GPU_MILLI_PER_DEVICE},
        "labels": {GPU_PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3"},
        "gpu_model": GPU_MODEL,
        "gpus": [{"index": i, "numa_cell": cell} for i, cell in enumerate(GPU_NUMA_CELLS)],
        "numa_cells": [
            {"id": cell, "cpu_milli": NODE_CPU_MILLI // 2, "memory_bytes": NODE_MEMORY_BYTES // 2} for cell in (0, 1)
        ],
    }


def cluster_hypernodes(
    node_names: list[str],
    *,
    leaf_nodes: int = LEAF_NODES,
    spine_leaves: int = SPINE_LEAVES,
    tier_names: tuple[str, str] = ("leaf", "spine"),
    top: bool = True,
) -> list[dict[str, Any]]:
    """Leaves of 16 nodes (tier 1), spines of 8 leaves (tier 2), a top (tier 3) over ≥ 2
    spines; other families give their own sizes and names, and may have no top."""
    leaf_name, spine_name = tier_names
    leaves = [
        {"name": f"{leaf_name}-{i // leaf_nodes:04d}", "tier": 1, "node_members": node_names[i : i + leaf_nodes]}
        for i in range(0, len(node_names), leaf_nodes)
    ]
    spines = [
        {
            "name": f"{spine_name}-{i // spine_leaves:03d}",
            "tier": 2,
            "hypernode_members": [leaf["name"] for leaf in leaves[i : i + spine_leaves]],
        }
        for i in range(0, len(leaves), spine_leaves)
    ]
    tops = [{"name": "top", "tier": 3, "hypernode_members": [s["name"] for s in spines]}] if top and len(spines) > 1 else []
    return [*leaves, *spines, *tops]


def training_requests(gpus_per_pod: int) -> dict[str, int]:
    """A training pod's requests: per GPU 16 cores and 160 GiB (an 8-GPU pod: 128 cores, 1.25 TiB)."""
    return {
        "cpu": gpus_per_pod * CPU_MILLI_PER_GPU,
        "memory": gpus_per_pod * MEMORY_BYTES_PER_GPU,
        GPU: gpus_per_pod * GPU_MILLI_PER_DEVICE,
    }


def inference_requests(gpu_milli: int) -> dict[str, int]:
    """An inference pod's requests: a share of one GPU, 4 cores, 32 GiB."""
    return {"cpu": INFERENCE_CPU_MILLI, "memory": INFERENCE_MEMORY_BYTES, GPU: gpu_milli}


# ---- the preload ----


@dataclass
class _Preloaded:
    groups: list[dict[str, Any]]
    pods: list[dict[str, Any]]


class _Preload:
    """Fills the cluster with running gangs up to a target of GPU milli (see the module docstring)."""

    def __init__(self, rng: np.random.Generator, node_names: list[str], queue_caps: dict[str, int | None]):
        self.rng = rng
        self.node_names = node_names
        self.queue_caps = queue_caps
        self.queue_used = {name: 0 for name in queue_caps}
        self.device_milli = np.zeros((len(node_names), GPUS_PER_NODE), dtype=np.int64)
        self.free_devices = np.full(len(node_names), GPUS_PER_NODE, dtype=np.int64)
        self.shared: list[tuple[int, int]] = []  # (node, device) holding fractional pods
        self.out = _Preloaded(groups=[], pods=[])

    def run(self, *, target_milli: int) -> _Preloaded:
        rng, used = self.rng, 0
        sizes, weights = np.array(GANG_GPU_SIZES), np.array(RUNNING_SIZE_WEIGHTS)
        while target_milli - used >= min(FRACTIONAL_MILLI):
            left = target_milli - used
            if rng.random() < 0.05 or left < GPU_MILLI_PER_DEVICE:
                milli = int(rng.choice([m for m in FRACTIONAL_MILLI if m <= left]))
                got = self._fractional(milli)
            else:
                fits = sizes * GPU_MILLI_PER_DEVICE <= left
                gpus = int(rng.choice(sizes[fits], p=weights[fits] / weights[fits].sum()))
                got = self._gang(gpus)
                while not got and gpus > 1:  # no room for that shape: try half
                    gpus //= 2
                    got = self._gang(gpus)
            if not got:
                break
            used += got
        return self.out

    def _queue(self, milli: int) -> str | None:
        """A queue by weight whose GPU capability still has room for `milli`."""
        open_queues = [q for q in QUEUES if self._has_room(q.name, milli)]
        if not open_queues:
            return None
        weights = np.array([q.weight for q in open_queues], dtype=float)
        chosen = open_queues[int(self.rng.choice(len(open_queues), p=weights / weights.sum()))].name
        self.queue_used[chosen] += milli
        return chosen

    def _has_room(self, queue: str, milli: int) -> bool:
        cap = self.queue_caps[queue]
        return cap is None or self.queue_used[queue] + milli <= cap

    def _gang(self, gpus: int) -> int:
        """Place one running gang of `gpus` whole GPUs; the milli placed, 0 when it found no room."""
        if gpus > GPUS_PER_NODE:
            count = gpus // GPUS_PER_NODE
            empty = np.flatnonzero(self.free_devices == GPUS_PER_NODE)
            if len(empty) < count:
                return 0
            start = int(self.rng.integers(0, len(empty) - count + 1))
            placements = [(int(n), list(range(GPUS_PER_NODE))) for n in empty[start : start + count]]
            per_pod = GPUS_PER_NODE
        else:
            node = self._node_for(gpus)
            if node is None:
                return 0
            placements = [(node, self._devices(node, gpus))]
            per_pod = gpus
        queue = self._queue(gpus * GPU_MILLI_PER_DEVICE)
        if queue is None:
            return 0
        for node, devices in placements:
            self.device_milli[node, devices] = GPU_MILLI_PER_DEVICE
            self.free_devices[node] -= len(devices)
        self._record(queue, training_requests(per_pod), placements)
        return gpus * GPU_MILLI_PER_DEVICE

    def _node_for(self, gpus: int) -> int | None:
        """Mostly a node already in use with room (packing), sometimes an empty one (spread)."""
        free = self.free_devices
        if gpus < GPUS_PER_NODE and self.rng.random() < 0.7:
            partial = np.flatnonzero((free >= gpus) & (free < GPUS_PER_NODE))
            if len(partial):
                return int(partial[self.rng.integers(len(partial))])
        room = np.flatnonzero(free >= gpus) if gpus < GPUS_PER_NODE else np.flatnonzero(free == GPUS_PER_NODE)
        return int(room[self.rng.integers(len(room))]) if len(room) else None

    def _devices(self, node: int, gpus: int) -> list[int]:
        """The lowest wholly free devices, inside one NUMA cell when one has room."""
        free = [i for i in range(GPUS_PER_NODE) if self.device_milli[node, i] == 0]
        for cell in (0, 1):
            in_cell = [i for i in free if GPU_NUMA_CELLS[i] == cell]
            if len(in_cell) >= gpus:
                return in_cell[:gpus]
        return free[:gpus]

    def _fractional(self, milli: int) -> int:
        """One running inference pod (queue `inference`) on a shared device with room, or on a fresh device."""
        if not self._has_room("inference", milli):
            return 0
        for node, device in self.shared:
            if self.device_milli[node, device] + milli <= GPU_MILLI_PER_DEVICE:
                break
        else:
            fresh = self._node_for(1)
            if fresh is None:
                return 0
            node, device = fresh, self._devices(fresh, 1)[0]
            self.free_devices[node] -= 1
            self.shared.append((node, device))
        self.queue_used["inference"] += milli
        self.device_milli[node, device] += milli
        if self.device_milli[node, device] == GPU_MILLI_PER_DEVICE:
            self.shared.remove((node, device))
        self._record("inference", inference_requests(milli), [(node, [device])])
        return milli

    def _record(self, queue: str, requests: dict[str, int], placements: list[tuple[int, list[int]]]) -> None:
        index = len(self.out.groups)
        name = f"run-{index:06d}"
        priority = 0 if self.rng.random() < 0.8 else 1
        started = EPOCH - float(self.rng.uniform(600, 7 * 86_400))
        task = "server" if requests[GPU] < GPU_MILLI_PER_DEVICE else "worker"
        self.out.groups.append(
            {
                "namespace": queue,
                "name": name,
                "queue": queue,
                "priority": priority,
                "min_member": len(placements),
                "creation_time": started,
                "preemptable": True,
                "tasks": [{"name": task, "min_available": len(placements), "requests": requests}],
            }
        )
        for i, (node, devices) in enumerate(placements):
            self.out.pods.append(
                {
                    "namespace": queue,
                    "name": f"{name}-{task}-{i}",
                    "phase": "running",
                    "pod_group": f"{queue}/{name}",
                    "task": task,
                    "requests": requests,
                    "node": self.node_names[node],
                    "gpu_indices": devices,
                    "priority": priority,
                    "preemptable": True,
                    "start_time": started,
                }
            )


# ---- the pending workload ----


@dataclass
class _GangShape:
    replicas: int
    requests: dict[str, int]
    fractional: bool
    gpus_per_pod: int  # 0 for fractional pods
    task: str

    @property
    def nodes_worth(self) -> int:
        """Nodes the gang fills at least: 64 GPUs → 8; a 4-GPU pod → 1."""
        return max(1, -(-self.replicas * self.gpus_per_pod // GPUS_PER_NODE))


def _pending_workload(
    rng: np.random.Generator,
    *,
    pending_pods: int,
    gang_gpu_sizes: tuple[int, ...],
    hard_topology_fraction: float,
    soft_topology_fraction: float,
    fractional_fraction: float,
    single_numa_fraction: float,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shapes = _gang_shapes(rng, pending_pods, gang_gpu_sizes, fractional_fraction)
    count = len(shapes)
    # Exactly round(fraction × gangs) hard gangs (at least one when asked for), then soft
    # ones among the multi-pod gangs left: a fixed share, not a coin per gang, so small
    # snapshots keep the mix too.
    hard_count = min(count, max(1, round(hard_topology_fraction * count))) if hard_topology_fraction > 0 else 0
    hard = set(rng.choice(count, size=hard_count, replace=False).tolist()) if hard_count else set()
    multi = [k for k, shape in enumerate(shapes) if shape.replicas > 1 and k not in hard]
    soft_count = min(len(multi), round(soft_topology_fraction * len(multi)))
    soft = set(rng.choice(multi, size=soft_count, replace=False).tolist()) if soft_count else set()
    queue_names, queue_weights = [q.name for q in QUEUES], np.array([q.weight for q in QUEUES], dtype=float)
    priorities = rng.integers(0, 4, size=count)
    queues = rng.choice(len(QUEUES), size=count, p=queue_weights / queue_weights.sum())
    ages = np.sort(rng.uniform(0, 3_600, size=count))[::-1]  # older gangs first in snapshot order
    numa_draws = rng.random(size=count)
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for k, shape in enumerate(shapes):
        queue = "inference" if shape.fractional else queue_names[int(queues[k])]
        name = f"job-{k:06d}"
        task: dict[str, Any] = {"name": shape.task, "min_available": shape.replicas, "requests": shape.requests}
        if not shape.fractional and shape.gpus_per_pod <= 4 and numa_draws[k] < single_numa_fraction:
            task["numa_policy"] = "single-numa-node"
        group: dict[str, Any] = {
            "namespace": queue,
            "name": name,
            "queue": queue,
            "priority": int(priorities[k]),
            "min_member": shape.replicas,
            "creation_time": EPOCH - float(ages[k]),
            "preemptable": True,
            "tasks": [task],
        }
        if k in hard:
            tier = 1 if shape.nodes_worth <= LEAF_NODES else 2
            group["network_topology"] = {"mode": "hard", "highest_tier_allowed": tier}
        elif k in soft:
            group["network_topology"] = {"mode": "soft", "highest_tier_allowed": 1}
        groups.append(group)
        pods.extend(
            {
                "namespace": queue,
                "name": f"{name}-{shape.task}-{i}",
                "phase": "pending",
                "pod_group": f"{queue}/{name}",
                "task": shape.task,
                "requests": shape.requests,
                "priority": int(priorities[k]),
            }
            for i in range(shape.replicas)
        )
    return groups, pods


def _gang_shapes(
    rng: np.random.Generator, pending_pods: int, gang_gpu_sizes: tuple[int, ...], fractional_fraction: float
) -> list[_GangShape]:
    sizes = np.array(gang_gpu_sizes)
    # The default sizes take the default weights; other size lists are drawn evenly.
    default = tuple(gang_gpu_sizes) == GANG_GPU_SIZES
    weights = np.array(PENDING_SIZE_WEIGHTS if default else [1.0] * len(sizes))
    weights = weights / weights.sum()
    shapes: list[_GangShape] = []
    left = pending_pods
    while left > 0:
        if rng.random() < fractional_fraction:
            milli = int(rng.choice(FRACTIONAL_MILLI))
            shape = _GangShape(int(rng.choice((1, 2, 4))), inference_requests(milli), True, 0, "server")
        else:
            gpus = int(rng.choice(sizes, p=weights))
            if gpus > GPUS_PER_NODE:
                replicas, per_pod = gpus // GPUS_PER_NODE, GPUS_PER_NODE
            elif gpus > 1 and rng.random() < 0.2:
                replicas, per_pod = gpus, 1
            else:
                replicas, per_pod = 1, gpus
            shape = _GangShape(replicas, training_requests(per_pod), False, per_pod, "worker")
        shape.replicas = min(shape.replicas, left)
        shapes.append(shape)
        left -= shape.replicas
    return shapes


# ---- describing a snapshot ----


def shape_of(snapshot: Snapshot) -> SnapshotShape:
    """Count what `snapshot` holds: nodes, GPUs in use, leaves, pending pods and gangs."""
    gpus = sum(len(node.gpus) for node in snapshot.nodes)
    running_milli = sum(p.requests.get(GPU, 0) for p in snapshot.pods if p.phase == "running")
    pending = [p for p in snapshot.pods if p.phase == "pending"]
    pending_groups = {p.pod_group for p in pending}
    groups = [g for g in snapshot.pod_groups if g.key in pending_groups]
    leaves = [h for h in snapshot.hypernodes if h.tier == 1]
    return SnapshotShape(
        nodes=len(snapshot.nodes),
        gpus=gpus,
        gpus_used_fraction=running_milli / (gpus * GPU_MILLI_PER_DEVICE) if gpus else 0.0,
        leaves=len(leaves),
        largest_leaf=max((len(h.node_members) for h in leaves), default=0),
        spines=sum(h.tier == 2 for h in snapshot.hypernodes),
        running_pods=len(snapshot.pods) - len(pending),
        pending_pods=len(pending),
        pending_gangs=len(groups),
        pending_gpus=sum(p.requests.get(GPU, 0) for p in pending) / GPU_MILLI_PER_DEVICE,
        hard_topology_gangs=sum(g.network_topology is not None and g.network_topology.mode == "hard" for g in groups),
        soft_topology_gangs=sum(g.network_topology is not None and g.network_topology.mode == "soft" for g in groups),
        fractional_pods=sum(0 < p.requests.get(GPU, 0) < GPU_MILLI_PER_DEVICE for p in pending),
    )
