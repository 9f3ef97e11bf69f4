"""Timeline scenario `autoscale`: a cluster that grows and shrinks under an autoscaler, and
what each scheduler's pod conditions make it buy.

Question (issue 32): Cluster Autoscaler and Karpenter buy nodes for a pending pod whose
`PodScheduled` condition reads `Unschedulable`. A Volcano-like scheduler writes that on
every pod it does not place — pods held by their queue's capability included — so the
autoscaler buys nodes the scheduler will not use. batchplace writes `Unschedulable` only
when a node added to the cluster could start the pod's PodGroup
(`solver.reasons.nodes_would_help`, the controller's `controller.status.pod_scheduled`).
How many node-hours does each buy, how many of them for quota-held pods, how many of the
bought GPU-hours idle, and what does it do to the waits?

Cluster: `base_nodes` nodes of 8 GPUs (192 cpu, 2 TiB) that never leave, plus the node
groups of `NODE_GROUPS` (`NodeGroup`: node shape, boot delay, idle time before removal, max
count, price per node-hour), empty at the start. Each group's nodes fill leaf switches of 8
nodes (tier-1 HyperNodes) in slot order after the base leaf, all under one spine: a bought
node takes its group's lowest free slot.

Workload: the `llm` mix (`timeline_llm.llm_workload`, seeded, arrivals sized to
`workload_gpus` at `load`) in two queues — `training` (the gangs) with a GPU capability of
`training_capability_gpus`, often reached, and `finetune` (one-pod jobs) without one. Left
out: the mix's inference pods (a third queue), and training gangs larger than the
capability (no policy could ever start them; kept, they would make the Volcano-like run buy
nodes for jobs nobody runs, which says nothing about day-to-day waste).

The autoscaler (`ClusterAutoscalerModel`) acts as Cluster Autoscaler does, per its FAQ
(kubernetes/autoscaler, cluster-autoscaler/FAQ.md, "How does scale-up work?" and "How does
scale-down work?"): every `scan_s` (its `--scan-interval`, 10 s) it reads the pending pods
whose PodScheduled reason is `Unschedulable` as of the scheduler's last cycle (a pod that
arrived since has no condition yet, and the autoscaler does not see it); a pod that fits a
node present or still booting (as the scheduler's filters would judge it, free resources
only) is left out ("filter out schedulable", upcoming nodes counted); the others are
packed, largest first, onto new nodes (CA's binpacking estimator), each on the first group
whose empty node would hold it and whose max count is not reached (first fit over groups in
their order, CA's `priority` expander with the groups in that order — GPUs are bought
smallest node first); the nodes join after the group's boot delay (the cloud's, not CA's:
5 min for a GPU instance and its drivers). A bought node with no pod for the group's idle
time leaves (`--scale-down-unneeded-time`, 10 min; here "unneeded" is "empty", as GPU nodes
whose pods cannot move). CA knows nothing of gangs or topology: it buys a node per pod that
needs one, wherever the group's next slot is. Karpenter behaves alike for this purpose (it
too provisions for pods the scheduler marked `Unschedulable` and consolidates empty nodes
after `consolidateAfter`); its bin-packing over instance types is not modelled.

Policies (`AUTOSCALE_POLICIES`):
- `batchplace`: the default engine (`auto`) as the other timeline runs use it
  (`timeline_batchplace.BatchplaceCycle`, the controller's sla-waiting-time), the training
  capability in its snapshot; its pods read `Unschedulable` only for the jobs of
  `CycleOutcome.waiting_for_nodes` — `nodes_would_help` of the PodGroup's reasons, the
  function the controller's condition calls;
- `volcano`: the timeline's Volcano-like scheduler (`timeline_llm.VolcanoLikeGangs`) with
  the queue's capability enforced as Volcano's proportion plugin does (`VolcanoWithCapability`);
  every pending pod reads `Unschedulable`, as today's peers write it.
- `batchplace-plan`: batchplace as above, and the autoscaler buys exactly the nodes of
  batchplace's scale-up plan (`solver.scale_up.plan_scale_up`, `PlannedScaleUp`): at a scan
  after a cycle that left a PodGroup a node would help, the plan is asked on the snapshot
  of the cluster with the nodes still booting counted as joined (as CA counts upcoming
  nodes), with one node template per group and leaf — a leaf that has nodes takes the
  group's nodes up to its 8 slots (`hypernodes`), an empty one is a new leaf under the
  spine (`new_hypernode`) — so a hard-topology gang gets its nodes in one leaf.

Clock: the loop steps `scan_s`; at each step, in this order, (1) jobs that end leave,
(2) arrivals join the pending list, (3) bought nodes whose boot is over join, (4) at a
multiple of `cycle_s`, if anything changed, the scheduler decides (the llm loop's step,
`timeline.apply_outcome`), (5) the autoscaler scans (buys) — when a decision or a removal
came since its last scan: with neither, nothing it reads has changed but what it bought,
which now counts as booting, so it would buy nothing — (6) bought nodes empty for their
idle time leave; then the metrics for the step are taken.

Metrics, per run:
- node-hours bought: Σ over bought nodes of (removal, or the horizon) − purchase — billed
  from the purchase, boot included, as the clouds bill;
- of them for quota-held pods: the node-hours of the nodes every one of whose pods (those
  the autoscaler's packing, or the plan's binds, put on it at purchase) belonged to a job its queue's capability
  held at that moment — its queue's running GPUs plus its own above the capability. Such a
  node can start none of them: the quota, not the nodes, holds them;
- GPU-hours idle on bought nodes: over each bought node's billed time, its GPUs no pod
  holds (all of them while it boots);
- jobs started, never started, queueing delay p50/p99 of started jobs (arrival to start),
  and each training job's wait with a never-started one counted to the horizon (p99).
Not modelled: CA's scale-down of under-used (not empty) nodes by moving pods, its
`scale-down-delay-after-add`, node-group minimums other than the base nodes, failed or slow
provisioning, spot capacity, and ProvisioningRequest (gang-aware scale-up, item 2 of the
issue; this run measures the pod-condition signal alone).
"""

from __future__ import annotations

import csv
import dataclasses
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from experiments.cluster_state import WHOLE, Assignment, ClusterState, PodRequest, best_fit_devices
from experiments.timeline import apply_outcome, finish_due
from experiments.timeline_batchplace import BatchplaceCycle
from experiments.timeline_llm import (
    LEAF_NODES,
    NODE_CPU_MILLI,
    NODE_MEMORY_MIB,
    CycleOutcome,
    Job,
    VolcanoLikeGangs,
    World,
    llm_workload,
)
from experiments.trace_openb import OpenbNodes
from models.node_templates import NodeTemplates
from solver.place import SolveConfig
from solver.rules.reservation import DEFAULT_SLA_WAITING_S
from solver.scale_up import plan_scale_up

__all__ = [
    "AUTOSCALE_POLICIES",
    "NODE_GROUPS",
    "AutoscaleConfig",
    "AutoscaleResult",
    "AutoscaledCluster",
    "BoughtNode",
    "Buyer",
    "ClusterAutoscalerModel",
    "NodeGroup",
    "PlannedScaleUp",
    "VolcanoWithCapability",
    "autoscale_jobs",
    "autoscale_markdown",
    "run_autoscale",
    "run_autoscales",
    "write_autoscale_csv",
]

AUTOSCALE_POLICIES: tuple[str, ...] = ("batchplace", "volcano", "batchplace-plan")
TRAINING = "training"
FINETUNE = "finetune"


@dataclass(frozen=True)
class NodeGroup:
    """A group of identical nodes the autoscaler may buy (a Cluster Autoscaler node group, a
    Karpenter NodePool with one instance type): the node's shape, how long a bought node
    takes to join, how long it may stay empty before it is removed, how many may exist, and
    what a node-hour costs (illustrative list prices, for the cost column only)."""

    name: str
    gpus: int
    cpu_milli: int
    memory_mib: int
    max_count: int
    boot_s: float = 300.0
    idle_s: float = 600.0
    price_per_hour: float = 0.0


NODE_GROUPS: tuple[NodeGroup, ...] = (
    NodeGroup("gpu-4x", gpus=4, cpu_milli=NODE_CPU_MILLI // 2, memory_mib=NODE_MEMORY_MIB // 2, max_count=16,
              price_per_hour=16.0),
    NodeGroup("gpu-8x", gpus=8, cpu_milli=NODE_CPU_MILLI, memory_mib=NODE_MEMORY_MIB, max_count=24, price_per_hour=32.0),
)  # fmt: skip
"""Smallest first: the first-fit expander buys a 4-GPU node for a pod of up to 4 GPUs."""


@dataclass(frozen=True)
class AutoscaleConfig:
    policy: str  # one of AUTOSCALE_POLICIES
    seed: int = 42
    hours: float = 24.0
    cycle_s: float = 60.0  # the scheduler's period (the llm timeline's)
    scan_s: float = 10.0  # the autoscaler's --scan-interval
    base_nodes: int = 4
    groups: tuple[NodeGroup, ...] = NODE_GROUPS
    training_capability_gpus: int = 64
    workload_gpus: int = 160  # the llm mix's arrival rate is sized to this many GPUs at `load`
    load: float = 1.1  # as `batchplace experiment timeline --load` defaults
    time_limit_s: float = 2.0
    sla_waiting_s: float | None = DEFAULT_SLA_WAITING_S


@dataclass
class BoughtNode:
    """One node the autoscaler bought: its slot in the cluster's node list, its group, when
    it was bought, joins and left (None: still there), and whether only quota-held pods asked
    for it (module docstring)."""

    slot: int
    group: NodeGroup
    bought_s: float
    for_quota_held: bool
    removed_s: float | None = None
    empty_since_s: float | None = None

    @property
    def ready_s(self) -> float:
        return self.bought_s + self.group.boot_s

    def billed_s(self, horizon_s: float) -> float:
        return (self.removed_s if self.removed_s is not None else horizon_s) - self.bought_s


@dataclass(frozen=True, eq=False)
class AutoscaleResult:
    config: AutoscaleConfig
    bought: tuple[BoughtNode, ...]
    node_hours: float
    node_hours_quota_held: float
    idle_bought_gpu_hours: float
    cost: float
    started: int
    never_started: int
    delays_s: np.ndarray  # started jobs: start − arrival
    training_waits_s: np.ndarray  # every training job's wait, a never-started one's to the horizon
    times_h: np.ndarray  # [steps]
    bought_gpus: np.ndarray  # [steps] GPUs of bought nodes billed (booting or joined)
    idle_bought_gpus: np.ndarray  # [steps] of them, held by no pod
    solve_seconds: np.ndarray  # per decision
    wall_seconds: float = 0.0


def autoscale_jobs(config: AutoscaleConfig) -> list[Job]:
    """The day's jobs (module docstring): the llm mix without its inference pods and without
    training gangs above the capability, renumbered in arrival order."""
    jobs = llm_workload(config.seed, hours=config.hours, capacity_gpus=config.workload_gpus, load=config.load)
    kept = [job for job in jobs if job.queue == FINETUNE
            or (job.queue == TRAINING and job.gpus_milli <= config.training_capability_gpus * WHOLE)]  # fmt: skip
    return [dataclasses.replace(job, ident=n) for n, job in enumerate(kept)]


# ---- the cluster that grows ----


class AutoscaledCluster:
    """Every node the cluster may ever have (base nodes, then each group's `max_count`
    slots), which of them are present, and a `ClusterState` of the present ones (rows in
    slot order), rebuilt when a node joins or leaves with the running pods re-bound where
    they are. Policies see only the present nodes."""

    def __init__(self, base_nodes: int, groups: Sequence[NodeGroup]):
        names = [f"base-{n:02d}" for n in range(base_nodes)]
        cpu, memory, gpus, leaf, group_of = [NODE_CPU_MILLI] * base_nodes, [NODE_MEMORY_MIB] * base_nodes, [8] * base_nodes, [0] * base_nodes, [-1] * base_nodes  # fmt: skip
        next_leaf = 1 if base_nodes else 0
        for g, group in enumerate(groups):
            for k in range(group.max_count):
                names.append(f"{group.name}-{k:02d}")
                cpu.append(group.cpu_milli)
                memory.append(group.memory_mib)
                gpus.append(group.gpus)
                leaf.append(next_leaf + k // LEAF_NODES)
                group_of.append(g)
            next_leaf += -(-group.max_count // LEAF_NODES)
        self.groups = tuple(groups)
        self.slots = OpenbNodes(names=tuple(names), cpu_milli=np.array(cpu, dtype=np.int64),
                                memory_mib=np.array(memory, dtype=np.int64), gpus=np.array(gpus, dtype=np.int64),
                                model=np.zeros(len(names), dtype=np.int64))  # fmt: skip
        self.slot_leaf = np.array(leaf, dtype=np.int64)
        self.slot_group = np.array(group_of, dtype=np.int64)
        self.present = np.zeros(len(names), dtype=bool)
        self.present[:base_nodes] = True
        self.slot_of_row = np.flatnonzero(self.present)
        self.state = ClusterState(self._nodes(self.slot_of_row))
        self.leaf, self.spine = self._topology(self.slot_of_row)

    def _nodes(self, slots: np.ndarray) -> OpenbNodes:
        return OpenbNodes(names=tuple(self.slots.names[s] for s in slots.tolist()), cpu_milli=self.slots.cpu_milli[slots],
                          memory_mib=self.slots.memory_mib[slots], gpus=self.slots.gpus[slots],
                          model=self.slots.model[slots])  # fmt: skip

    def _topology(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each present node's leaf, numbered 0… over the leaves that have one, and its spine (one)."""
        _, leaf = np.unique(self.slot_leaf[slots], return_inverse=True)
        return leaf.astype(np.int64), np.zeros(len(slots), dtype=np.int64)

    def row_of_slot(self, slot: int) -> int | None:
        rows = np.flatnonzero(self.slot_of_row == slot)
        return int(rows[0]) if rows.size else None

    def set_present(self, slot: int, present: bool, jobs: Sequence[Job]) -> None:
        """A node joins or leaves (it must hold no pod); the state is rebuilt and `jobs`'
        pods re-bound on the same nodes and devices."""
        old = self.slot_of_row
        self.present[slot] = present
        self.slot_of_row = np.flatnonzero(self.present)
        self.state = ClusterState(self._nodes(self.slot_of_row))
        self.leaf, self.spine = self._topology(self.slot_of_row)
        row_of = {int(s): r for r, s in enumerate(self.slot_of_row.tolist())}
        for job in jobs:
            for replica, assignment in list(job.assignments.items()):
                row = row_of[int(old[assignment.node])]  # KeyError: a node left with a pod on it
                job.assignments[replica] = self.state.bind(job.request(replica), row, assignment.devices)

    def scratch(self, jobs: Sequence[Job]) -> ClusterState:
        """A state over every slot, `jobs`' pods bound where they are, for the autoscaler's
        what-if (absent slots empty)."""
        state = ClusterState(self.slots)
        for job in jobs:
            for replica, assignment in job.assignments.items():
                state.bind(job.request(replica), int(self.slot_of_row[assignment.node]), assignment.devices)
        return state

    def with_slots(self, slots: np.ndarray, jobs: Sequence[Job]) -> tuple[World, np.ndarray]:
        """A world of the nodes of `slots` (the present ones and more), `jobs` copied with
        their pods re-bound there, and the slot-leaf id of each of its leaves (for the plan)."""
        state = ClusterState(self._nodes(slots))
        row_of = {int(s): r for r, s in enumerate(slots.tolist())}
        copies = []
        for job in jobs:
            moved = {replica: state.bind(job.request(replica), row_of[int(self.slot_of_row[a.node])], a.devices)
                     for replica, a in job.assignments.items()}  # fmt: skip
            copies.append(dataclasses.replace(job, assignments=moved))
        leaf, spine = self._topology(slots)
        return World(state, leaf, spine, 0.0, [], copies), np.unique(self.slot_leaf[slots])


def _fits_empty(group: NodeGroup, pod: PodRequest) -> bool:
    """Whether an empty node of `group` holds `pod` (a template node, as CA simulates one)."""
    gpus_ok = pod.num_gpu == 0 or (group.gpus >= pod.num_gpu if not pod.fractional else group.gpus >= 1)
    return group.cpu_milli >= pod.cpu_milli and group.memory_mib >= pod.memory_mib and gpus_ok


# ---- the autoscaler ----


@dataclass(frozen=True)
class ScanView:
    """What an autoscaler reads at a scan: the clock, the cluster, the running jobs, the
    pending jobs whose pods read `Unschedulable`, and which pending jobs their queue's
    capability holds (ground truth, for the metrics only). `pending`: every pending job."""

    now_s: float
    cluster: AutoscaledCluster
    running: Sequence[Job]
    pending: Sequence[Job]
    unschedulable: Sequence[Job]
    quota_held: frozenset[int]
    booting: frozenset[int]  # slots bought, not yet joined


class Buyer(Protocol):
    """Which nodes to buy at a scan: (slot, idents of the jobs it is bought for) each."""

    def buy(self, view: ScanView) -> list[tuple[int, frozenset[int]]]: ...


class ClusterAutoscalerModel:
    """Cluster Autoscaler's scale-up for pods marked `Unschedulable` (module docstring)."""

    def buy(self, view: ScanView) -> list[tuple[int, frozenset[int]]]:
        cluster = view.cluster
        if not view.unschedulable:
            return []
        scratch = cluster.scratch(view.running)
        usable = cluster.present.copy()
        usable[list(view.booting)] = True
        taken = usable.copy()  # slots present, booting or bought this scan
        pods = [(job, replica) for job in view.unschedulable for replica in range(job.pods) if replica not in job.assignments]
        pods.sort(key=lambda p: (-p[0].request(0).total_gpu_milli, p[0].arrival_s, p[0].ident, p[1]))
        bought: dict[int, set[int]] = {}
        for job, replica in pods:
            pod = job.request(replica)
            fits = np.flatnonzero(scratch.feasible(pod) & usable)
            if fits.size:
                slot = int(fits[0])
            else:
                slot = self._new_slot(cluster, taken, pod)
                if slot is None:
                    continue  # no group can hold it, or every group is at its max
                taken[slot] = usable[slot] = True
                bought[slot] = set()
            scratch.bind(pod, slot, best_fit_devices(scratch.gpu_left[slot].tolist(), pod))
            if slot in bought:
                bought[slot].add(job.ident)
        return [(slot, frozenset(idents)) for slot, idents in bought.items()]

    @staticmethod
    def _new_slot(cluster: AutoscaledCluster, taken: np.ndarray, pod: PodRequest) -> int | None:
        """The first group (in order) whose empty node holds `pod` and that has a free slot: its lowest one."""
        for g, group in enumerate(cluster.groups):
            if not _fits_empty(group, pod):
                continue
            free = np.flatnonzero((cluster.slot_group == g) & ~taken)
            if free.size:
                return int(free[0])
        return None


class PlannedScaleUp:
    """The autoscaler buys exactly the nodes batchplace's scale-up plan names (module
    docstring, policy `batchplace-plan`)."""

    def __init__(self, config: AutoscaleConfig, capabilities: dict[str, int]) -> None:
        self.snapshots = BatchplaceCycle("auto", sla_waiting_s=config.sla_waiting_s, capabilities=capabilities)
        self.config = SolveConfig(engine="auto", time_limit_s=config.time_limit_s, workers=1)

    def buy(self, view: ScanView) -> list[tuple[int, frozenset[int]]]:
        if not view.unschedulable:
            return []
        cluster = view.cluster
        taken = cluster.present.copy()
        taken[list(view.booting)] = True
        world, leaves = cluster.with_slots(np.flatnonzero(taken), view.running)
        world.now_s, world.pending = view.now_s, list(view.pending)
        names = {int(leaf): f"leaf-{k}" for k, leaf in enumerate(leaves.tolist())}
        templates, where = _templates(cluster, taken, names)
        if not templates.templates:
            return []
        plan = plan_scale_up(self.snapshots.snapshot(world), templates, config=self.config)
        job_of_pod = {f"llm/j{job.ident}-{r}": job.ident for job in view.pending for r in range(job.pods)}
        bought: list[tuple[int, frozenset[int]]] = []
        fresh_leaves: dict[tuple[int, str], int] = {}  # (group, the plan's new domain) → slot-leaf id
        for row in plan.bought:
            kind, key = where[row.template]
            if kind == "new":
                leaf = fresh_leaves.setdefault((key, str(row.domain)), _empty_leaf(cluster, taken, key, fresh_leaves.values()))
                free = np.flatnonzero((cluster.slot_group == key) & (cluster.slot_leaf == leaf) & ~taken)
            else:
                free = np.flatnonzero((cluster.slot_leaf == key) & ~taken)
            for name, slot in zip(row.nodes, free.tolist()):
                taken[slot] = True
                bought.append((slot, frozenset(job_of_pod[b.pod] for b in plan.binds if b.node == name and b.pod in job_of_pod)))
        return bought


def _templates(cluster: AutoscaledCluster, taken: np.ndarray, names: dict[int, str]
               ) -> tuple[NodeTemplates, dict[str, tuple[str, int]]]:  # fmt: skip
    """One node template per group and leaf with nodes and free slots (its nodes join that
    leaf, up to its free slots), and one per group for its empty leaves (new leaves of 8
    under the spine); and what each template name stands for: ("leaf", slot-leaf id) or
    ("new", group)."""
    templates: list[dict] = []
    where: dict[str, tuple[str, int]] = {}
    for g, group in enumerate(cluster.groups):
        shape = {"allocatable": {"cpu": group.cpu_milli, "memory": group.memory_mib * 2**20, "gpu": group.gpus * WHOLE},
                 "price_per_hour": group.price_per_hour}  # fmt: skip
        mine = cluster.slot_group == g
        empty = 0
        for leaf in np.unique(cluster.slot_leaf[mine]).tolist():
            slots = mine & (cluster.slot_leaf == leaf)
            free = int((slots & ~taken).sum())
            if free and (slots & taken).any():
                name = f"{group.name}-leaf-{leaf}"
                templates.append({"name": name, **shape, "max_count": free, "hypernodes": [names[leaf]]})
                where[name] = ("leaf", leaf)
            elif free:
                empty += free
        if empty:
            templates.append({"name": group.name, **shape, "max_count": empty,
                              "new_hypernode": {"tier": 1, "size": LEAF_NODES, "parent": "spine-0"}})  # fmt: skip
            where[group.name] = ("new", g)
    return NodeTemplates.model_validate({"templates": templates}), where


def _empty_leaf(cluster: AutoscaledCluster, taken: np.ndarray, group: int, used: Iterable[int]) -> int:
    """The group's first leaf with no node present, booting or bought, not yet given to another new domain."""
    skip = set(used)
    for leaf in np.unique(cluster.slot_leaf[cluster.slot_group == group]).tolist():
        if leaf not in skip and not (taken & (cluster.slot_leaf == leaf)).any():
            return leaf
    raise ValueError(f"the plan bought more new leaves of group {cluster.groups[group].name} than it has")


# ---- policies ----


class VolcanoWithCapability(VolcanoLikeGangs):
    """`VolcanoLikeGangs` with queue capabilities, as Volcano's proportion plugin enforces
    them (its allocatable check: a task is not allocated when its queue's allocated plus
    its request exceed the capability, so a gang whose pods would cross it does not reach
    its minimum and is not bound). `capabilities`: queue → milli-GPU."""

    def __init__(self, capabilities: dict[str, int]) -> None:
        super().__init__()
        self.capabilities = capabilities
        self._allocated: dict[str, int] = {}

    def cycle(self, world: World) -> CycleOutcome:
        self._allocated = {}
        for job in world.running:
            self._allocated[job.queue] = self._allocated.get(job.queue, 0) + job.gpus_milli
        return super().cycle(world)

    def _gang(self, world: World, job: Job) -> list[tuple[int, Assignment]] | None:
        cap = self.capabilities.get(job.queue)
        if cap is not None and self._allocated.get(job.queue, 0) + job.gpus_milli > cap:
            return None
        placed = super()._gang(world, job)
        if placed is not None:
            self._allocated[job.queue] = self._allocated.get(job.queue, 0) + job.gpus_milli
        return placed


def _policy(config: AutoscaleConfig) -> BatchplaceCycle | VolcanoWithCapability:
    capabilities = {TRAINING: config.training_capability_gpus * WHOLE}
    if config.policy in ("batchplace", "batchplace-plan"):
        return BatchplaceCycle("auto", time_limit_s=config.time_limit_s, sla_waiting_s=config.sla_waiting_s,
                               capabilities=capabilities)  # fmt: skip
    if config.policy == "volcano":
        return VolcanoWithCapability(capabilities)
    raise ValueError(f"unknown autoscale policy {config.policy!r}; choose one of {', '.join(AUTOSCALE_POLICIES)}")


def _quota_held(pending: Sequence[Job], running: Sequence[Job], capabilities: dict[str, int]) -> frozenset[int]:
    """Pending jobs whose queue's running GPUs plus their own exceed its capability."""
    used: dict[str, int] = {}
    for job in running:
        used[job.queue] = used.get(job.queue, 0) + job.gpus_milli
    return frozenset(job.ident for job in pending
                     if job.queue in capabilities and used.get(job.queue, 0) + job.gpus_milli > capabilities[job.queue])  # fmt: skip


# ---- the run ----


def run_autoscale(config: AutoscaleConfig, *, jobs: list[Job] | None = None, buyer: Buyer | None = None) -> AutoscaleResult:
    """One day (module docstring); `jobs` replaces the stream (tests hand-make one)."""
    started = time.perf_counter()
    jobs = autoscale_jobs(config) if jobs is None else jobs
    cluster = AutoscaledCluster(config.base_nodes, config.groups)
    policy = _policy(config)
    capabilities = {TRAINING: config.training_capability_gpus * WHOLE}
    if buyer is None:
        buyer = PlannedScaleUp(config, capabilities) if config.policy == "batchplace-plan" else ClusterAutoscalerModel()
    pending: list[Job] = []
    running: list[Job] = []
    ends: list[tuple[float, int, Job]] = []
    bought: list[BoughtNode] = []
    unschedulable: frozenset[int] = frozenset()
    horizon = config.hours * 3600.0
    every = max(1, round(config.cycle_s / config.scan_s))
    times, bought_gpus, idle_gpus, solve = [], [], [], []
    next_arrival, step, dirty, scan_due = 0, 0, True, False
    while (now := step * config.scan_s) < horizon:  # each step stands for [now, now + scan_s)
        dirty = finish_due(cluster.state, ends, running, now) or dirty  # (1)
        while next_arrival < len(jobs) and jobs[next_arrival].arrival_s <= now:  # (2)
            pending.append(jobs[next_arrival])
            next_arrival += 1
            dirty = True
        for node in bought:  # (3)
            if node.removed_s is None and not cluster.present[node.slot] and node.ready_s <= now:
                cluster.set_present(node.slot, True, running)
                node.empty_since_s = now
                dirty = True
        if step % every == 0 and dirty and pending:  # (4)
            outcome = policy.cycle(World(cluster.state, cluster.leaf, cluster.spine, now, pending, running))
            solve.append(outcome.solve_seconds)
            apply_outcome(outcome, pending, running, ends, now)
            said = outcome.waiting_for_nodes
            unschedulable = frozenset(j.ident for j in pending) if said is None else said
            dirty, scan_due = False, True
        if scan_due:  # (5) a scan with no decision or removal since the last finds what that one did
            view = ScanView(now, cluster, running, pending, [j for j in pending if j.ident in unschedulable],
                            _quota_held(pending, running, capabilities),
                            frozenset(n.slot for n in bought if n.removed_s is None and not cluster.present[n.slot]))  # fmt: skip
            for slot, idents in buyer.buy(view):
                group = cluster.groups[int(cluster.slot_group[slot])]
                bought.append(BoughtNode(slot, group, now, for_quota_held=bool(idents) and idents <= view.quota_held))
            scan_due = False
        for node in bought:  # (6)
            if node.removed_s is not None or not cluster.present[node.slot]:
                continue
            row = cluster.row_of_slot(node.slot)
            if cluster.state.pod_count[row] > 0:
                node.empty_since_s = None
            elif node.empty_since_s is None:
                node.empty_since_s = now
            elif now - node.empty_since_s >= node.group.idle_s:
                cluster.set_present(node.slot, False, running)
                node.removed_s = now
                dirty = scan_due = True
        gpus, idle = _bought_gpus(cluster, bought)
        times.append(now / 3600.0)
        bought_gpus.append(gpus)
        idle_gpus.append(idle)
        step += 1
    return _result(config, jobs, bought, horizon, times, bought_gpus, idle_gpus, solve, time.perf_counter() - started)


def run_autoscales(configs: Sequence[AutoscaleConfig], *, jobs: int = 1) -> Iterator[AutoscaleResult]:
    """Every configuration, in `jobs` worker processes, yielded as each finishes."""
    if jobs <= 1:
        yield from map(run_autoscale, configs)
        return
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(min(jobs, len(configs))) as pool:
        yield from pool.imap_unordered(run_autoscale, configs)


def _bought_gpus(cluster: AutoscaledCluster, bought: Sequence[BoughtNode]) -> tuple[float, float]:
    """GPUs of the bought nodes billed now, and of them held by no pod (a booting node's all)."""
    gpus = idle = 0.0
    for node in bought:
        if node.removed_s is not None:
            continue
        gpus += node.group.gpus
        row = cluster.row_of_slot(node.slot)
        idle += node.group.gpus if row is None else cluster.state.left_total[row] / WHOLE
    return gpus, idle


def _result(config: AutoscaleConfig, jobs: list[Job], bought: list[BoughtNode], horizon: float, times: list[float],
            bought_gpus: list[float], idle_gpus: list[float], solve: list[float], wall: float) -> AutoscaleResult:  # fmt: skip
    node_s = [node.billed_s(horizon) for node in bought]
    arrived = [job for job in jobs if job.arrival_s <= horizon]
    started = [job for job in arrived if job.start_s is not None]
    waits = [(job.start_s if job.start_s is not None else horizon) - job.arrival_s for job in arrived if job.queue == TRAINING]
    return AutoscaleResult(
        config=config,
        bought=tuple(bought),
        node_hours=sum(node_s) / 3600.0,
        node_hours_quota_held=sum(s for s, node in zip(node_s, bought) if node.for_quota_held) / 3600.0,
        idle_bought_gpu_hours=float(np.sum(idle_gpus)) * config.scan_s / 3600.0,
        cost=sum(s / 3600.0 * node.group.price_per_hour for s, node in zip(node_s, bought)),
        started=len(started),
        never_started=len(arrived) - len(started),
        delays_s=np.array([job.start_s - job.arrival_s for job in started]),  # type: ignore[operator]
        training_waits_s=np.array(waits),
        times_h=np.array(times),
        bought_gpus=np.array(bought_gpus),
        idle_bought_gpus=np.array(idle_gpus),
        solve_seconds=np.array(solve),
        wall_seconds=wall,
    )


# ---- report ----


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else float("nan")


AUTOSCALE_LABELS = {"batchplace": "batchplace auto (conditions by rule)", "volcano": "Volcano-like (every pending pod Unschedulable)",
                    "batchplace-plan": "batchplace auto + its scale-up plan"}


def autoscale_markdown(results: Sequence[AutoscaleResult]) -> str:
    """One row per run, then the mean over seeds per policy."""
    head = ["policy", "seed", "node-hours bought", "of them for quota-held pods", "idle GPU-hours on bought nodes",
            "cost", "jobs started", "never started", "delay p50 / p99 (min)", "training wait p99, never started counted (min)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        lines.append(_row(AUTOSCALE_LABELS.get(r.config.policy, r.config.policy), str(r.config.seed), [r]))
    policies = list(dict.fromkeys(r.config.policy for r in results))
    seeds = sorted({r.config.seed for r in results})
    if len(seeds) > 1:
        lines += ["", f"Mean of seeds {', '.join(map(str, seeds))}:", "", lines[0], lines[1]]
        for policy in policies:
            lines.append(_row(AUTOSCALE_LABELS.get(policy, policy), "mean", [r for r in results if r.config.policy == policy]))
    return "\n".join(lines) + "\n"


def _row(label: str, seed: str, runs: Sequence[AutoscaleResult]) -> str:
    def mean(values: Sequence[float]) -> float:
        return float(np.mean(values))

    cells = [label, seed, f"{mean([r.node_hours for r in runs]):.1f}", f"{mean([r.node_hours_quota_held for r in runs]):.1f}",
             f"{mean([r.idle_bought_gpu_hours for r in runs]):.1f}", f"{mean([r.cost for r in runs]):.0f}",
             f"{mean([r.started for r in runs]):.1f}", f"{mean([r.never_started for r in runs]):.1f}",
             f"{mean([_pct(r.delays_s, 50) for r in runs]) / 60:.1f} / {mean([_pct(r.delays_s, 99) for r in runs]) / 60:.1f}",
             f"{mean([_pct(r.training_waits_s, 99) for r in runs]) / 60:.0f}"]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def write_autoscale_csv(results: Sequence[AutoscaleResult], out: Path) -> None:
    """`timeline_autoscale.csv` (one row per run) and `timeline_autoscale_series.csv` (bought
    and idle bought GPUs per step)."""
    with open(out / "timeline_autoscale.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", "seed", "hours", "nodes_bought", "node_hours", "node_hours_quota_held",
                         "idle_bought_gpu_hours", "cost", "jobs_started", "never_started", "delay_p50_s", "delay_p99_s",
                         "training_wait_p99_s", "solve_ms_mean", "wall_s"])  # fmt: skip
        for r in results:
            writer.writerow([r.config.policy, r.config.seed, r.config.hours, len(r.bought), f"{r.node_hours:.3f}",
                             f"{r.node_hours_quota_held:.3f}", f"{r.idle_bought_gpu_hours:.3f}", f"{r.cost:.2f}", r.started,
                             r.never_started, _pct(r.delays_s, 50), _pct(r.delays_s, 99), _pct(r.training_waits_s, 99),
                             1000 * r.solve_seconds.mean() if r.solve_seconds.size else "", f"{r.wall_seconds:.1f}"])  # fmt: skip
    with open(out / "timeline_autoscale_series.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", "seed", "time_h", "bought_gpus", "idle_bought_gpus"])
        for r in results:
            for t, gpus, idle in zip(r.times_h, r.bought_gpus, r.idle_bought_gpus):
                writer.writerow([r.config.policy, r.config.seed, f"{t:.4f}", f"{gpus:g}", f"{idle:g}"])
