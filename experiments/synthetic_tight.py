"""A seeded synthetic cluster on which greedy's first-come best fit leaves GPUs idle: the
`tight` family of `batchplace bench`.

`tight_snapshot(nodes=1_000, pending_pods=1_000, seed=0)` returns a validated `Snapshot`,
the same for the same arguments, built like the standard family's
(`experiments.synthetic`: same nodes, NUMA cells, leaves and spines; one
`Snapshot.model_validate`). The standard family rarely shows greedy wrong — there it
places what can be placed — so this one is built to: it asks how much of what greedy
leaves idle CP-SAT wins back within its time limit.

A planted packing, cut node by node:
  1. Holes. Nodes are taken in a random order; each gets a layout — the devices its
     running pods hold — and the pending pods that fill the rest exactly:
       empty   nothing held                        → one 8-GPU pod
       half    cell 0 (GPUs 0–3) held              → a 4-GPU pod, 2 + 2, or 2 + 1 + 1
       six     GPUs 0–1 held                       → 4 (cell 1) + 2 (cell 0)
       three   GPUs 0–2 and 4–5 held               → 2 (cell 1) + 1 (cell 0)
       pair    GPUs 0–2 and 4–6 held               → 1 + 1, one per cell
       shared  GPUs 0–5 held, 500 milli of GPU 6   → 1 (GPU 7) + a 500-milli or two 250-milli shares
     until `pending_pods` are planted (the last node may keep room left over); the other
     nodes are full. Then single devices on full nodes are freed until the pending pods
     ask `load` of the free GPUs (95 % by default): the slack is scattered, so it is of
     use to 1-GPU pods and shares only.
  2. Gangs. In each leaf the 8-GPU pods of its empty nodes are grouped at random into
     single pods and gangs of 2–4 pods (16–32 GPUs), each gang with min_member = its
     size and hard topology, tier 1: one leaf.
  3. Rules. Every 2- and 4-GPU pod asks `single-numa-node`; running pods are not
     preemptable; one uncapped queue, `batch`; every pending pod has priority 0 — so
     nothing is evicted, fairness and throughput both grow with the GPUs placed, and
     "GPUs placed" is what the engines compete on.
  4. Arrival. Smallest first — shares, 1-, 2-, 4-GPU pods, the 8-GPU singles, the gangs
     last, random within each step — as a burst of small jobs submitted ahead of the
     big training runs.

Why greedy loses: with one queue and one priority it places PodGroups oldest first,
each pod where its node score is best (fragmentation growth, then best fit, then node
order), and never moves a pod it placed. Every empty node scores the same for an 8-GPU
pod, so the 8-GPU singles, which arrive before the gangs, take empty nodes in node order,
leaf after leaf, blind to the gangs still to come. When the gangs arrive the cluster
still has an empty node for every gang pod, but most leaves have fewer of them than a
gang needs: gangs wait and those nodes stay idle. (Measured at 1,000 nodes: every GPU
greedy leaves is a gang's. The small pods do stray from their planted holes — the score
counts a node's free GPUs, not their NUMA cells, so a single-NUMA 2-GPU pod takes the
cell of a `six` node planted for a 4-GPU pod, which then takes a `half` node — but the
slack absorbs that.) A search over the whole batch moves singles out of the leaves the
gangs need, keeping every cell, share and node rule while it does.

Why the bound is exact here: the planted packing places every pending pod, so the best
placement binds every pending GPU; the LP bound (`solver.bound`, objective "gpus", which
relaxes topology and per-node packing) cannot promise more than every pending GPU, and
promises exactly that since the free capacity holds them. Whatever an engine leaves
between itself and the bound is the engine's, not the bound's looseness.

Not promised: that greedy loses on every seed and size (a cluster of a few leaves has
few gangs to strand), nor stable draws across versions of this file or of numpy. Raises
ValueError when the nodes cannot hold `pending_pods` (about 1.5 pending pods per node at most).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from experiments.synthetic import (
    EPOCH,
    GPUS_PER_NODE,
    LEAF_NODES,
    cluster_hypernodes,
    cluster_nodes,
    inference_requests,
    training_requests,
)
from models.snapshot import GPU_MILLI_PER_DEVICE, Snapshot

__all__ = ["DEFAULT_LOAD", "LAYOUTS", "QUEUE", "Layout", "tight_snapshot"]

QUEUE = "batch"
DEFAULT_LOAD = 0.95
"""Pending GPUs / free GPUs."""
GANG_SIZES = (1, 2, 3, 4)  # 8-GPU pods per group of a leaf's empty nodes; 1: a single pod


@dataclass(frozen=True)
class Layout:
    """What running pods hold on a node, and the pending pods that fill the rest exactly."""

    name: str
    held: tuple[int, ...]  # devices held whole
    shared: tuple[tuple[int, int], ...]  # (device, milli) held by running shares
    fills: tuple[tuple[tuple[int, ...], float], ...]  # (GPU milli of the planted pods, probability)
    weight: float  # share of the nodes with a hole

    def fill(self, rng: np.random.Generator) -> list[int]:
        """One fill drawn by its probability, e.g. `six` → [4000, 2000]."""
        pick = int(rng.choice(len(self.fills), p=[probability for _, probability in self.fills]))
        return list(self.fills[pick][0])


LAYOUTS = (
    Layout("empty", (), (), (((8000,), 1.0),), 0.45),
    Layout("half", (0, 1, 2, 3), (), (((4000,), 0.5), ((2000, 2000), 0.3), ((2000, 1000, 1000), 0.2)), 0.12),
    Layout("six", (0, 1), (), (((4000, 2000), 1.0),), 0.12),
    Layout("three", (0, 1, 2, 4, 5), (), (((2000, 1000), 1.0),), 0.12),
    Layout("pair", (0, 1, 2, 4, 5, 6), (), (((1000, 1000), 1.0),), 0.10),
    Layout("shared", (0, 1, 2, 3, 4, 5), ((6, 500),), (((1000, 500), 0.5), ((1000, 250, 250), 0.5)), 0.09),
)
FULL = Layout("full", tuple(range(GPUS_PER_NODE)), (), (((), 1.0),), 0.0)


@dataclass
class _Node:
    layout: Layout
    held: list[int]  # devices held whole (slack frees some of a full node's)
    planted: list[int] = field(default_factory=list)  # GPU milli of its pending pods
    gang: int = -1  # empty nodes: the gang its 8-GPU pod belongs to, −1 for a single


def tight_snapshot(*, nodes: int, pending_pods: int, seed: int, load: float = DEFAULT_LOAD) -> Snapshot:
    """`nodes` 8-GPU nodes with holes cut for exactly `pending_pods` pending pods, which ask
    `load` (0–1] of the free GPUs; see the module docstring. Same arguments, same snapshot."""
    if nodes < 1 or pending_pods < 0 or not 0.0 < load <= 1.0:
        raise ValueError(f"need nodes ≥ 1, pending_pods ≥ 0, 0 < load ≤ 1; got {nodes}, {pending_pods}, {load}")
    rng = np.random.default_rng(seed)
    cluster = _cut_holes(rng, nodes, pending_pods)
    _free_slack(rng, cluster, load)
    gangs = _form_gangs(rng, cluster)
    node_names = [f"h100-{i:05d}" for i in range(nodes)]
    running_groups, running = _running(rng, cluster, node_names)
    pending_groups, pending = _pending(rng, cluster, gangs)
    return Snapshot.model_validate(
        {
            "nodes": cluster_nodes(node_names),
            "hypernodes": cluster_hypernodes(node_names),
            "queues": [{"name": QUEUE, "weight": 1}],
            "pod_groups": [*running_groups, *pending_groups],
            "pods": [*running, *pending],
        }
    )


def _cut_holes(rng: np.random.Generator, nodes: int, pending_pods: int) -> list[_Node]:
    cluster = [_Node(FULL, list(FULL.held)) for _ in range(nodes)]
    weights = np.array([layout.weight for layout in LAYOUTS])
    planted = 0
    for n in rng.permutation(nodes).tolist():
        if planted == pending_pods:
            break
        layout = LAYOUTS[int(rng.choice(len(LAYOUTS), p=weights / weights.sum()))]
        pods = layout.fill(rng)[: pending_pods - planted]
        cluster[n] = _Node(layout, list(layout.held), pods)
        planted += len(pods)
    if planted < pending_pods:
        raise ValueError(f"{nodes} nodes hold {planted} planted pending pods, fewer than the {pending_pods} asked")
    return cluster


def _free_slack(rng: np.random.Generator, cluster: list[_Node], load: float) -> None:
    """Free single devices of full nodes, one per node, until pending / free ≤ `load`."""
    pending_milli = sum(sum(node.planted) for node in cluster)
    free_milli = sum(_free_milli(node) for node in cluster)
    full = [n for n, node in enumerate(cluster) if node.layout is FULL]
    for n in rng.permutation(full).tolist():
        if pending_milli <= load * free_milli:
            break
        cluster[n].held.pop(int(rng.integers(len(cluster[n].held))))
        free_milli += GPU_MILLI_PER_DEVICE


def _free_milli(node: _Node) -> int:
    shared = sum(milli for _, milli in node.layout.shared)
    return (GPUS_PER_NODE - len(node.held)) * GPU_MILLI_PER_DEVICE - shared


def _form_gangs(rng: np.random.Generator, cluster: list[_Node]) -> int:
    """Group each leaf's planted 8-GPU pods into singles and gangs; the number of gangs."""
    gangs = 0
    whole_node = GPUS_PER_NODE * GPU_MILLI_PER_DEVICE
    for start in range(0, len(cluster), LEAF_NODES):
        members = [n for n in range(start, min(len(cluster), start + LEAF_NODES)) if cluster[n].planted == [whole_node]]
        rng.shuffle(members)
        while members:
            size = min(int(rng.choice(GANG_SIZES)), len(members))
            group, members = members[:size], members[size:]
            if size > 1:
                for n in group:
                    cluster[n].gang = gangs
                gangs += 1
    return gangs


# ---- the pods ----


def _running(
    rng: np.random.Generator, cluster: list[_Node], node_names: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per node one running training pod holding its held devices, and its running shares."""
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for node, name in zip(cluster, node_names):
        started = EPOCH - float(rng.uniform(600, 7 * 86_400))
        held = [(node.held, training_requests(len(node.held)))] if node.held else []
        held += [([device], inference_requests(milli)) for device, milli in node.layout.shared]
        for devices, requests in held:
            group_name = f"run-{len(groups):06d}"
            groups.append(_group(group_name, requests, replicas=1, created=started, preemptable=False))
            pods.append(
                {
                    **_pod(group_name, 0, requests),
                    "phase": "running",
                    "node": name,
                    "gpu_indices": sorted(devices),
                    "preemptable": False,
                    "start_time": started,
                }
            )
    return groups, pods


def _pending(
    rng: np.random.Generator, cluster: list[_Node], gangs: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One PodGroup per planted single pod and per gang, in arrival order (see the module docstring)."""
    members: list[list[int]] = [[] for _ in range(gangs)]
    jobs: list[tuple[int, float, list[int]]] = []  # (arrival step, tie draw, GPU milli of its pods)
    for node in cluster:
        for milli in node.planted:
            if node.gang >= 0:
                members[node.gang].append(milli)
            else:
                jobs.append((_arrival_step(milli, gang=False), float(rng.random()), [milli]))
    jobs += [(_arrival_step(pods[0], gang=True), float(rng.random()), pods) for pods in members]
    jobs.sort()
    ages = np.sort(rng.uniform(0, 3_600, size=len(jobs)))[::-1]  # seconds before EPOCH, oldest first
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for k, (_, _, gang) in enumerate(jobs):
        milli = gang[0]
        whole = milli >= GPU_MILLI_PER_DEVICE
        requests = training_requests(milli // GPU_MILLI_PER_DEVICE) if whole else inference_requests(milli)
        name = f"job-{k:06d}"
        group = _group(name, requests, replicas=len(gang), created=EPOCH - float(ages[k]), preemptable=True)
        if milli in (2 * GPU_MILLI_PER_DEVICE, 4 * GPU_MILLI_PER_DEVICE):
            group["tasks"][0]["numa_policy"] = "single-numa-node"
        if len(gang) > 1:
            group["network_topology"] = {"mode": "hard", "highest_tier_allowed": 1}
        groups.append(group)
        pods.extend({**_pod(name, i, requests), "phase": "pending"} for i in range(len(gang)))
    return groups, pods


def _arrival_step(milli: int, *, gang: bool) -> int:
    """Smaller arrives first: a share 0, a single pod its GPUs (1, 2, 4, 8), a gang after them all."""
    return GPUS_PER_NODE + 1 if gang else milli // GPU_MILLI_PER_DEVICE


def _group(name: str, requests: dict[str, int], *, replicas: int, created: float, preemptable: bool) -> dict[str, Any]:
    return {
        "namespace": QUEUE,
        "name": name,
        "queue": QUEUE,
        "priority": 0,
        "min_member": replicas,
        "creation_time": created,
        "preemptable": preemptable,
        "tasks": [{"name": "worker", "min_available": replicas, "requests": requests}],
    }


def _pod(group_name: str, index: int, requests: dict[str, int]) -> dict[str, Any]:
    return {
        "namespace": QUEUE,
        "name": f"{group_name}-worker-{index}",
        "pod_group": f"{QUEUE}/{group_name}",
        "task": "worker",
        "requests": requests,
        "priority": 0,
    }
