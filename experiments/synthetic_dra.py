"""Seeded synthetic clusters whose GPUs are Dynamic Resource Allocation devices: the data of
`batchplace bench --family dra` and `--family dra-nvlink`.

Question they serve: how fast does each engine place pods that ask GPUs through
ResourceClaims (the solver allocating the devices), and how much whole NVLink domains does
each leave free — the fragmentation an exact solver should beat a per-pod filter on.

`dra_snapshot(nodes=1_000, pending_pods=1_000, preload=0.5, seed=0)` returns a validated
`Snapshot`, the same for the same arguments, built from models directly (no YAML):
  - every node: 192 cores, 2 TiB, no extended GPU resource; its GPUs are the 8 devices of
    one ResourceSlice of driver `gpu.nvidia.com` (pool named after the node), `gpu-0` …
    `gpu-7`, with attributes `index`, `productName`, `nvlinkDomain` (0 for gpu-0–3, 1 for
    gpu-4–7: two domains of 4) and `resource.kubernetes.io/pcieRoot` (one root per pair),
    capacity `memory` 80Gi; one DeviceClass `gpu.nvidia.com` selects the driver;
  - leaves of 16 nodes and spines of 8 leaves, as `experiments.synthetic` racks them;
  - the preload: running pods of 1, 2 or 4 GPUs (weights 2:1:1), each holding an allocated
    ResourceClaim (results, node selector, reservedFor), until `preload` of the devices are
    taken: 4-GPU pods take a whole domain, 2-GPU pods a PCIe pair, 1-GPU pods any free device
    — so free devices end up spread over partly used domains, the fragmentation to avoid;
  - the pending workload: exactly `pending_pods` pods in gangs, each pod naming one
    ResourceClaimTemplate in its namespace (`gpus-1`, `gpus-2`, `gpus-4`, `gpus-8`, and
    `gpus-2-nvlink`, `gpus-4-nvlink` whose request has a `matchAttribute` constraint on
    `gpu.nvidia.com/nvlinkDomain`). Family `dra`: pods of 1, 2, 4 or 8 GPUs (weights
    0.35, 0.25, 0.25, 0.15), half of the 2- and 4-GPU pods on one NVLink domain; gangs of
    1, 2 or 4 pods (8-GPU pods in gangs of up to 8), a fifth of the multi-pod gangs hard
    tier-1 topology. Family `dra-nvlink` (`nvlink_only=True`): every pod asks 1, 2 or 4 GPUs
    on one NVLink domain, singles and gangs of up to 4 — the question there is whole
    domains left free.
  - queues `research`, `inference`, `training`, `production`, weights 1–4, no caps (quota on
    device classes is a separate rule); priorities 0–3.

`whole_domains_free(snapshot, placement)` counts the (node, NVLink domain) pairs whose four
devices are all free after the placement: none held by a running claim, none allocated by
the placement's claims.

Not promised: that the pending work fits, nor the draws' stability across numpy versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.dra import (
    Device,
    DeviceClass,
    DeviceConstraint,
    DevicePool,
    DeviceRequest,
    DeviceResult,
    DraObjects,
    ExactDeviceRequest,
    PodResourceClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from models.node_affinity import NodeFieldRequirement, NodeSelectorTerm
from models.placement import Placement
from models.snapshot import Node, NodeName, Snapshot
from experiments.synthetic import EPOCH, QUEUES, cluster_hypernodes

__all__ = [
    "DRIVER",
    "DEVICE_CLASS",
    "NVLINK_ATTRIBUTE",
    "DOMAIN_DEVICES",
    "dra_snapshot",
    "whole_domains_free",
    "devices_taken_fraction",
]

DRIVER = "gpu.nvidia.com"
DEVICE_CLASS = "gpu.nvidia.com"
NVLINK_ATTRIBUTE = f"{DRIVER}/nvlinkDomain"
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"
DEVICES_PER_NODE = 8
DOMAIN_DEVICES = 4
GIB = 2**30
NODE_CPU_MILLI = 192_000
NODE_MEMORY_BYTES = 2 * 2**40
CPU_MILLI_PER_GPU = 16_000
MEMORY_BYTES_PER_GPU = 160 * GIB
RUNNING_GPU_COUNTS = (1, 2, 4)
RUNNING_GPU_WEIGHTS = (0.5, 0.25, 0.25)
PENDING_GPU_COUNTS = (1, 2, 4, 8)
PENDING_GPU_WEIGHTS = (0.35, 0.25, 0.25, 0.15)
NVLINK_GPU_COUNTS = (1, 2, 4)
NVLINK_SHARE = 0.5
"""`dra`: the share of 2- and 4-GPU pods that ask their devices on one NVLink domain."""
HARD_TOPOLOGY_SHARE = 0.2


def dra_snapshot(*, nodes: int, pending_pods: int, preload: float, seed: int, nvlink_only: bool = False) -> Snapshot:
    """A cluster of `nodes` nodes with 8 DRA GPUs each, `preload` (0–1) of them held by running
    claims, `pending_pods` pending pods asking GPUs through claim templates (module docstring)."""
    if nodes < 1 or pending_pods < 0 or not 0.0 <= preload <= 1.0:
        raise ValueError(f"need nodes ≥ 1, pending_pods ≥ 0, 0 ≤ preload ≤ 1; got {nodes}, {pending_pods}, {preload}")
    rng = np.random.default_rng(seed)
    node_names = [f"dra-{i:05d}" for i in range(nodes)]
    running = _preload(rng, node_names, target=int(preload * nodes * DEVICES_PER_NODE))
    groups, pods = _pending(rng, pending_pods, nvlink_only=nvlink_only)
    template = ResourceSlice(
        name="template", driver=DRIVER, pool=DevicePool(name="template", generation=0, resource_slice_count=1),
        node_name="template", devices=_devices(),
    )
    dra = DraObjects(
        device_classes=(DeviceClass(name=DEVICE_CLASS, selectors=(f"device.driver == '{DRIVER}'",)),),
        resource_slices=tuple(
            template.model_copy(update={"name": f"{name}-{DRIVER}", "pool": DevicePool(name=name, generation=0,
                                resource_slice_count=1), "node_name": name})
            for name in node_names
        ),
        resource_claims=tuple(running.claims),
        resource_claim_templates=tuple(_templates()),
    )
    return Snapshot.model_validate(
        {
            "nodes": _nodes(node_names),
            "hypernodes": cluster_hypernodes(node_names),
            "queues": [{"name": q.name, "weight": q.weight} for q in QUEUES],
            "pod_groups": [*running.groups, *groups],
            "pods": [*running.pods, *pods],
            "dra": dra,
        }
    )


def whole_domains_free(snapshot: Snapshot, placement: Placement | None = None) -> int:
    """(node, NVLink domain) pairs with all their devices free: none held by a running claim,
    none allocated by `placement`."""
    taken = {(result.pool, result.device) for claim in snapshot.dra.resource_claims for result in claim.allocation or ()}
    if placement is not None:
        taken |= {(result.pool, result.device) for claim in placement.claims for result in claim.devices}
    domains_used = {(pool, _domain_of(device)) for pool, device in taken}
    slices = [s for s in snapshot.dra.resource_slices if s.driver == DRIVER and s.node_name is not None]
    return sum(DEVICES_PER_NODE // DOMAIN_DEVICES for _ in slices) - len(domains_used)


def devices_taken_fraction(snapshot: Snapshot) -> float:
    """The share of the slices' devices that running claims hold."""
    total = sum(len(s.devices) for s in snapshot.dra.resource_slices)
    taken = sum(len(claim.allocation or ()) for claim in snapshot.dra.resource_claims)
    return taken / total if total else 0.0


# ---- the cluster ----


def _devices() -> tuple[Device, ...]:
    return tuple(
        Device(
            name=f"gpu-{index}",
            driver=DRIVER,
            attributes={
                f"{DRIVER}/index": index,
                f"{DRIVER}/productName": "NVIDIA H100 80GB HBM3",
                NVLINK_ATTRIBUTE: index // DOMAIN_DEVICES,
                PCIE_ROOT_ATTRIBUTE: f"pci{index // 2:04x}:00",
            },
            capacity={f"{DRIVER}/memory": 80 * GIB},
        )
        for index in range(DEVICES_PER_NODE)
    )


def _domain_of(device: str) -> int:
    return int(device.removeprefix("gpu-")) // DOMAIN_DEVICES


def _nodes(node_names: list[str]) -> list[Node]:
    template = Node.model_validate(
        {"name": node_names[0], "allocatable": {"cpu": NODE_CPU_MILLI, "memory": NODE_MEMORY_BYTES}}
    )
    return [template.model_copy(update={"name": NodeName(name)}) for name in node_names]


def _templates() -> Iterable[ResourceClaimTemplate]:
    for queue in QUEUES:
        for count in PENDING_GPU_COUNTS:
            yield _template(queue.name, count, nvlink=False)
        for count in NVLINK_GPU_COUNTS:
            yield _template(queue.name, count, nvlink=True)


def _template(namespace: str, count: int, *, nvlink: bool) -> ResourceClaimTemplate:
    return ResourceClaimTemplate(
        namespace=namespace,
        name=_template_name(count, nvlink),
        requests=(DeviceRequest(name="gpus", exactly=ExactDeviceRequest(device_class_name=DEVICE_CLASS, count=count)),),
        constraints=(DeviceConstraint(requests=("gpus",), match_attribute=NVLINK_ATTRIBUTE),) if nvlink else (),
    )


def _template_name(count: int, nvlink: bool) -> str:
    return f"gpus-{count}" + ("-nvlink" if nvlink else "")


def _requests(gpus: int) -> dict[str, int]:
    return {"cpu": gpus * CPU_MILLI_PER_GPU, "memory": gpus * MEMORY_BYTES_PER_GPU}


# ---- the preload ----


@dataclass
class _Running:
    groups: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    claims: list[ResourceClaim]


def _preload(rng: np.random.Generator, node_names: list[str], *, target: int) -> _Running:
    """Running pods with allocated claims until `target` devices are taken (module docstring)."""
    free = np.ones((len(node_names), DEVICES_PER_NODE), dtype=bool)
    out = _Running(groups=[], pods=[], claims=[])
    taken, misses = 0, 0
    weights = np.array(RUNNING_GPU_WEIGHTS)
    while target - taken >= 1 and misses < 50:
        sizes = [size for size in RUNNING_GPU_COUNTS if size <= target - taken]
        size = int(rng.choice(sizes, p=weights[: len(sizes)] / weights[: len(sizes)].sum()))
        node = int(rng.integers(len(node_names)))
        devices = _free_block(rng, free[node], size)
        if devices is None:
            misses += 1
            continue
        misses = 0
        free[node, devices] = False
        taken += size
        _record_running(rng, out, node_names[node], devices)
    return out


def _free_block(rng: np.random.Generator, free: np.ndarray, size: int) -> list[int] | None:
    """Free devices for a running pod of `size`: a whole domain for 4, a free PCIe pair for 2, any for 1."""
    if size == 1:
        choices = np.flatnonzero(free)
        return [int(rng.choice(choices))] if len(choices) else None
    blocks = [list(range(start, start + size)) for start in range(0, DEVICES_PER_NODE, size)]
    open_blocks = [block for block in blocks if free[block].all()]
    return open_blocks[int(rng.integers(len(open_blocks)))] if open_blocks else None


def _record_running(rng: np.random.Generator, out: _Running, node: str, devices: list[int]) -> None:
    index = len(out.groups)
    queue = QUEUES[int(rng.integers(len(QUEUES)))].name
    name = f"run-{index:06d}"
    pod = f"{name}-worker-0"
    started = EPOCH - float(rng.uniform(600, 7 * 86_400))
    out.groups.append(
        {
            "namespace": queue, "name": name, "queue": queue, "priority": 0, "min_member": 1,
            "creation_time": started, "preemptable": True,
            "tasks": [{"name": "worker", "min_available": 1, "requests": _requests(len(devices))}],
        }
    )
    claim = f"{pod}-gpus"
    out.pods.append(
        {
            "namespace": queue, "name": pod, "phase": "running", "pod_group": f"{queue}/{name}", "task": "worker",
            "requests": _requests(len(devices)), "node": node, "priority": 0, "preemptable": True,
            "start_time": started, "resource_claims": [PodResourceClaim(name="gpus", resource_claim_name=claim)],
        }
    )
    out.claims.append(
        ResourceClaim(
            namespace=queue,
            name=claim,
            requests=(DeviceRequest(name="gpus", exactly=ExactDeviceRequest(device_class_name=DEVICE_CLASS, count=len(devices))),),
            allocation=tuple(DeviceResult(request="gpus", driver=DRIVER, pool=node, device=f"gpu-{d}") for d in devices),
            allocation_node_selector=(
                NodeSelectorTerm(match_fields=(NodeFieldRequirement(key="metadata.name", operator="In", values=(node,)),)),
            ),
            reserved_for=(pod,),
            owner_pod=pod,
            pod_claim="gpus",
        )
    )


# ---- the pending workload ----


def _pending(rng: np.random.Generator, pending_pods: int, *, nvlink_only: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    queue_weights = np.array([q.weight for q in QUEUES], dtype=float)
    left, k = pending_pods, 0
    while left > 0:
        if nvlink_only:
            gpus, nvlink = int(rng.choice(NVLINK_GPU_COUNTS)), True
            replicas = int(rng.choice((1, 1, 2, 4)))
        else:
            gpus = int(rng.choice(PENDING_GPU_COUNTS, p=PENDING_GPU_WEIGHTS))
            nvlink = gpus in (2, 4) and rng.random() < NVLINK_SHARE
            replicas = int(rng.choice((1, 2, 4, 8) if gpus == DEVICES_PER_NODE else (1, 1, 2, 4)))
        replicas = min(replicas, left)
        queue = QUEUES[int(rng.choice(len(QUEUES), p=queue_weights / queue_weights.sum()))].name
        name = f"job-{k:06d}"
        priority = int(rng.integers(0, 4))
        group: dict[str, Any] = {
            "namespace": queue, "name": name, "queue": queue, "priority": priority, "min_member": replicas,
            "creation_time": EPOCH - float(rng.uniform(0, 3_600)), "preemptable": True,
            "tasks": [{"name": "worker", "min_available": replicas, "requests": _requests(gpus)}],
        }
        if replicas > 1 and rng.random() < HARD_TOPOLOGY_SHARE:
            group["network_topology"] = {"mode": "hard", "highest_tier_allowed": 1}
        groups.append(group)
        claim = PodResourceClaim(name="gpus", resource_claim_template_name=_template_name(gpus, nvlink))
        pods.extend(
            {
                "namespace": queue, "name": f"{name}-worker-{i}", "phase": "pending", "pod_group": f"{queue}/{name}",
                "task": "worker", "requests": _requests(gpus), "priority": priority, "resource_claims": [claim],
            }
            for i in range(replicas)
        )
        left -= replicas
        k += 1
    return groups, pods
