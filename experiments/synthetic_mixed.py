"""A seeded synthetic cluster whose shapes and topology are not the standard family's: the
`mixed` family of `batchplace bench`.

`mixed_snapshot(nodes=1_000, pending_pods=1_000, seed=0)` returns a validated `Snapshot`,
the same for the same arguments. It exists so that what slows CP-SAT on inputs other than
the standard family (`experiments.synthetic`) shows in the bench: the engine was tuned on
that one family, and on a cluster like this one it gave no answer of its own at 1,000 ×
1,000 within 1 s while the standard family's numbers stayed green (docs/results.md, "A
second bench family").

What differs from the standard family:
  - Nodes: three kinds — 8-GPU H100 nodes (GPUs 0–3 on NUMA cell 0, 4–7 on cell 1), 4-GPU
    A100 nodes (GPUs 0–1 on cell 0, 2–3 on cell 1, 64 cores, 512 GiB) and CPU-only nodes
    (64 cores, 256 GiB), in the proportions of `NODE_KINDS`, shuffled across the racks.
  - Topology: leaves of 12 nodes (tier 1) under spines of 4 leaves (tier 2), nothing above
    the spines — two tiers, smaller domains than the standard 16 × 8 over a top.
  - Running pods: half the GPUs in use, scattered (each pod on a random node with room,
    not packed), of every pending shape below, including CPU-only pods; queue and
    priority (0 or 1) drawn per pod, every running pod preemptable.
  - Pending pods: exactly `pending_pods` in PodGroups whose `min_member` is 1–16, some with
    more replicas than `min_member` (elastic: the extra pods may bind, need not); one
    shape per group — fractional (250/500 milli), 1, 2, 4 or 8 GPUs, or CPU-only (the
    weights in `PENDING_SHAPES`); one in five 2/4-GPU groups asks `single-numa-node`.
    Queues `research`, `inference`, `training`, `production` with weights 1–4,
    `research` capped at 20 % and `training` at 40 % of the GPUs; priorities 0–3.
    Network topology on a share of the multi-pod GPU groups: hard at tier 1 (one leaf)
    or tier 2 (one spine) by the GPUs asked, and soft at tier 1.

Not promised: that every pending pod fits, nor stable draws across versions of this file
or of numpy's `Generator`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments.synthetic import EPOCH, cluster_hypernodes, inference_requests, training_requests
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, Snapshot

__all__ = [
    "LEAF_NODES",
    "SPINE_LEAVES",
    "NODE_KINDS",
    "PENDING_SHAPES",
    "QUEUES",
    "GPU_USED_FRACTION",
    "MAX_MIN_MEMBER",
    "NodeKind",
    "mixed_snapshot",
]

GIB = 2**30
LEAF_NODES = 12
SPINE_LEAVES = 4
GPU_USED_FRACTION = 0.5
MAX_MIN_MEMBER = 16
HARD_TOPOLOGY_FRACTION = 0.25  # of the multi-pod GPU groups
SOFT_TOPOLOGY_FRACTION = 0.15
ELASTIC_FRACTION = 0.2  # of the multi-pod groups: replicas above min_member
SINGLE_NUMA_FRACTION = 0.2  # of the 2- and 4-GPU groups
CPU_POD_REQUESTS = {"cpu": 8_000, "memory": 32 * GIB}


@dataclass(frozen=True)
class NodeKind:
    name: str
    gpu_model: str | None
    gpu_numa_cells: tuple[int, ...]  # per GPU index its NUMA cell; () for a CPU-only node
    cpu_milli: int
    memory_bytes: int
    share: float  # of the nodes


NODE_KINDS = (
    NodeKind("h100", "H100-80GB", (0, 0, 0, 0, 1, 1, 1, 1), 192_000, 2 * 1024 * GIB, 0.7),
    NodeKind("a100", "A100-40GB", (0, 0, 1, 1), 64_000, 512 * GIB, 0.2),
    NodeKind("cpu", None, (), 64_000, 256 * GIB, 0.1),
)
PENDING_SHAPES: tuple[tuple[str, float], ...] = (
    # (shape, weight): a GPU count, "share" (250/500 milli) or "cpu" (no GPU)
    ("share", 0.12),
    ("1", 0.22),
    ("2", 0.16),
    ("4", 0.14),
    ("8", 0.14),
    ("cpu", 0.22),
)
RUNNING_SHAPES = PENDING_SHAPES
QUEUES = (("research", 1, 0.20), ("inference", 2, None), ("training", 3, 0.40), ("production", 4, None))


def mixed_snapshot(*, nodes: int, pending_pods: int, seed: int) -> Snapshot:
    """`nodes` nodes of three kinds with half their GPUs running, and `pending_pods` pending
    pods in groups of 1–16 min members; see the module docstring. Same arguments, same snapshot."""
    if nodes < 1 or pending_pods < 0:
        raise ValueError(f"need nodes ≥ 1 and pending_pods ≥ 0; got {nodes}, {pending_pods}")
    rng = np.random.default_rng(seed)
    kinds = _node_kinds(rng, nodes)
    names = [f"{kind.name}-{i:05d}" for i, kind in enumerate(kinds)]
    total_gpu_milli = sum(len(kind.gpu_numa_cells) for kind in kinds) * GPU_MILLI_PER_DEVICE
    running_groups, running = _Running(rng, kinds, names).fill(int(GPU_USED_FRACTION * total_gpu_milli))
    pending_groups, pending = _pending(rng, pending_pods)
    return Snapshot.model_validate(
        {
            "nodes": [_node(name, kind) for name, kind in zip(names, kinds)],
            # Racks of 12 nodes (tier 1) and rows of 4 racks (tier 2); no tier above.
            "hypernodes": cluster_hypernodes(
                names, leaf_nodes=LEAF_NODES, spine_leaves=SPINE_LEAVES, tier_names=("rack", "row"), top=False
            ),
            "queues": [
                {"name": name, "weight": weight, "capability": _capability(cap, total_gpu_milli)}
                for name, weight, cap in QUEUES
            ],
            "pod_groups": [*running_groups, *pending_groups],
            "pods": [*running, *pending],
        }
    )


def _capability(fraction: float | None, total_gpu_milli: int) -> dict[str, int] | None:
    """A queue's GPU cap: `fraction` of the cluster's GPU milli; None: not capped."""
    return None if fraction is None else {GPU: int(fraction * total_gpu_milli)}


# ---- the cluster ----


def _node_kinds(rng: np.random.Generator, nodes: int) -> list[NodeKind]:
    """Exactly round(share × nodes) of each kind but the first (it takes the rest), shuffled."""
    counts = [round(kind.share * nodes) for kind in NODE_KINDS[1:]]
    counts = [nodes - sum(counts), *counts]
    kinds = [kind for kind, count in zip(NODE_KINDS, counts) for _ in range(count)]
    return [kinds[i] for i in rng.permutation(nodes).tolist()]


def _node(name: str, kind: NodeKind) -> dict[str, Any]:
    cells = sorted(set(kind.gpu_numa_cells)) or [0]
    node: dict[str, Any] = {
        "name": name,
        "allocatable": {"cpu": kind.cpu_milli, "memory": kind.memory_bytes},
        "numa_cells": [
            {"id": cell, "cpu_milli": kind.cpu_milli // len(cells), "memory_bytes": kind.memory_bytes // len(cells)}
            for cell in cells
        ],
    }
    if kind.gpu_numa_cells:
        node["allocatable"][GPU] = len(kind.gpu_numa_cells) * GPU_MILLI_PER_DEVICE
        node["gpu_model"] = kind.gpu_model
        node["gpus"] = [{"index": i, "numa_cell": cell} for i, cell in enumerate(kind.gpu_numa_cells)]
    return node


def _requests(shape: str, rng: np.random.Generator) -> dict[str, int]:
    if shape == "cpu":
        return dict(CPU_POD_REQUESTS)
    if shape == "share":
        return inference_requests(int(rng.choice((250, 500))))
    return training_requests(int(shape))


def _draw_shape(rng: np.random.Generator, shapes: tuple[tuple[str, float], ...]) -> str:
    weights = np.array([w for _, w in shapes])
    return shapes[int(rng.choice(len(shapes), p=weights / weights.sum()))][0]


def _draw_queue(rng: np.random.Generator) -> str:
    weights = np.array([weight for _, weight, _ in QUEUES], dtype=float)
    return QUEUES[int(rng.choice(len(QUEUES), p=weights / weights.sum()))][0]


# ---- the running pods ----


class _Running:
    """Single running pods, each on a random node with room, until the GPU target is reached."""

    def __init__(self, rng: np.random.Generator, kinds: list[NodeKind], names: list[str]):
        self.rng, self.kinds, self.names = rng, kinds, names
        self.device_milli = [[0] * len(kind.gpu_numa_cells) for kind in kinds]
        self.cpu_free = [kind.cpu_milli for kind in kinds]
        self.memory_free = [kind.memory_bytes for kind in kinds]
        self.groups: list[dict[str, Any]] = []
        self.pods: list[dict[str, Any]] = []

    def fill(self, target_milli: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        used, misses = 0, 0
        while used < target_milli and misses < 50:
            shape = _draw_shape(self.rng, RUNNING_SHAPES)
            requests = _requests(shape, self.rng)
            milli = requests.get(GPU, 0)
            if used + milli > target_milli:
                misses += 1
                continue
            placed = self._place(requests)
            misses = 0 if placed else misses + 1
            used += milli if placed else 0
        return self.groups, self.pods

    def _place(self, requests: dict[str, int]) -> bool:
        for node in self.rng.permutation(len(self.kinds))[:20].tolist():
            devices = self._devices(node, requests.get(GPU, 0))
            if devices is None or self.cpu_free[node] < requests["cpu"] or self.memory_free[node] < requests["memory"]:
                continue
            milli = requests.get(GPU, 0)
            for d in devices:
                self.device_milli[node][d] += min(milli, GPU_MILLI_PER_DEVICE)
            self.cpu_free[node] -= requests["cpu"]
            self.memory_free[node] -= requests["memory"]
            self._record(node, devices, requests)
            return True
        return False

    def _devices(self, node: int, milli: int) -> list[int] | None:
        """The devices a pod of `milli` GPU takes on `node`: [] for none, None when it has no room."""
        held = self.device_milli[node]
        if milli == 0:
            return []
        if milli < GPU_MILLI_PER_DEVICE:  # a share: a device already shared with room, else a free one
            shared = [d for d, m in enumerate(held) if 0 < m and m + milli <= GPU_MILLI_PER_DEVICE]
            free = [d for d, m in enumerate(held) if m == 0]
            return (shared or free)[:1] or None
        free = [d for d, m in enumerate(held) if m == 0]
        count = milli // GPU_MILLI_PER_DEVICE
        return free[:count] if len(free) >= count else None

    def _record(self, node: int, devices: list[int], requests: dict[str, int]) -> None:
        name = f"run-{len(self.groups):06d}"
        queue = _draw_queue(self.rng)
        priority = 0 if self.rng.random() < 0.8 else 1
        started = EPOCH - float(self.rng.uniform(600, 7 * 86_400))
        self.groups.append(
            {
                "namespace": queue,
                "name": name,
                "queue": queue,
                "priority": priority,
                "min_member": 1,
                "creation_time": started,
                "tasks": [{"name": "main", "min_available": 1, "requests": requests}],
            }
        )
        pod: dict[str, Any] = {
            "namespace": queue,
            "name": f"{name}-main-0",
            "phase": "running",
            "pod_group": f"{queue}/{name}",
            "task": "main",
            "requests": requests,
            "node": self.names[node],
            "priority": priority,
            "start_time": started,
        }
        if devices:
            pod["gpu_indices"] = devices
        self.pods.append(pod)


# ---- the pending pods ----


def _pending(rng: np.random.Generator, pending_pods: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    left = pending_pods
    while left > 0:
        k = len(groups)
        shape = _draw_shape(rng, PENDING_SHAPES)
        min_member = min(left, _draw_min_member(rng, shape))
        extra = int(rng.integers(1, 4)) if min_member > 1 and rng.random() < ELASTIC_FRACTION else 0
        replicas = min(left, min_member + extra)
        requests = _requests(shape, rng)
        queue = "inference" if shape == "share" else _draw_queue(rng)
        priority = int(rng.integers(0, 4))
        name = f"job-{k:06d}"
        task: dict[str, Any] = {"name": "main", "min_available": min_member, "requests": requests}
        if shape in ("2", "4") and rng.random() < SINGLE_NUMA_FRACTION:
            task["numa_policy"] = "single-numa-node"
        group: dict[str, Any] = {
            "namespace": queue,
            "name": name,
            "queue": queue,
            "priority": priority,
            "min_member": min_member,
            "creation_time": EPOCH - float(rng.uniform(0, 3_600)),
            "tasks": [task],
        }
        topology = rng.random()
        if replicas > 1 and GPU in requests:
            gpus = replicas * requests[GPU] / GPU_MILLI_PER_DEVICE
            if topology < HARD_TOPOLOGY_FRACTION:
                group["network_topology"] = {"mode": "hard", "highest_tier_allowed": 1 if gpus <= 32 else 2}
            elif topology < HARD_TOPOLOGY_FRACTION + SOFT_TOPOLOGY_FRACTION:
                group["network_topology"] = {"mode": "soft", "highest_tier_allowed": 1}
        groups.append(group)
        pods.extend(
            {
                "namespace": queue,
                "name": f"{name}-main-{i}",
                "phase": "pending",
                "pod_group": f"{queue}/{name}",
                "task": "main",
                "requests": requests,
                "priority": priority,
            }
            for i in range(replicas)
        )
        left -= replicas
    return groups, pods


def _draw_min_member(rng: np.random.Generator, shape: str) -> int:
    """1 for half the groups, else 2–16 (8-GPU groups up to 8: a rack's worth)."""
    if rng.random() < 0.5:
        return 1
    return int(rng.integers(2, (8 if shape == "8" else MAX_MIN_MEMBER) + 1))
