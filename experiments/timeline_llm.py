"""The synthetic LLM cluster of the timeline protocol: topology, workload and the
gang-aware policies that schedule it.

Cluster (`llm_cluster`): 128 nodes of 8 GPUs (192 cores, 2 TiB each) under 16 leaf
switches of 8 nodes (tier-1 HyperNodes, 64 GPUs) and 2 spines of 8 leaves (tier 2, 512
GPUs) — 1,024 GPUs.

Workload (`llm_workload`, seeded; Poisson arrivals sized to an offered load of ~1.1 ×
capacity over the horizon):
- training gangs of 8–512 GPUs (pods of 8 GPUs, `min_member` = replicas), queue
  `training` (weight 4); 60 % hard topology (tier 1 when the gang fits a leaf, else
  tier 2), 40 % soft (tier 1); one in five at priority 1; lognormal durations, mean 2 h;
- fine-tuning jobs of 1, 2, 4 or 8 GPUs (one pod), queue `finetune` (weight 2), mean 30 min;
- inference pods of 250 or 500 milli-GPU (one pod each), queue `inference` (weight 2),
  priority 1, mean 4 h.
Every job states a time limit, its pods' `activeDeadlineSeconds` (`Job.active_deadline_s`),
as users pick one from a few standard limits: the smallest of 15 min × 2^k (15, 30 min, 1,
2, 4, 8, 16 h, ...) that covers its duration. Example: a 50-min fine-tuning job asks 1 h, a
2.2-h training job 4 h. Why classes, not the duration itself: users do not know it, and
round up to a limit they will not hit (the kubelet kills a pod at its deadline); the limit
is 1–2 × the run, 1.4 × on average, which leaves batchplace's backfill
(`solver.rules.reservation`) the slack a real cluster's limits leave. No job runs past
its limit, so the simulator never kills one. All policies see the same jobs; batchplace
and Slurm-style EASY backfill (`experiments.timeline_peers`) read the limits (Volcano's `sla`
has no backfill, kube-scheduler and Kueue none either).

Policies (`TimelinePolicy.cycle(world) -> CycleOutcome`):
- `greedy`, `cpsat`: batchplace — the whole cycle as one validated `Snapshot` (nodes,
  HyperNodes, queues, every running and pending pod with its PodGroup) through
  `solver.place`; evictions are honoured (the victim's job restarts from the queue);
- `volcano`: Volcano-like — queues by proportion (lowest GPU share of deserved first),
  jobs by priority then age; with the `sla` plugin (a waiting time set), a job past it goes
  first in its queue and, when it cannot start, holds what it can take for the rest of the
  cycle (Volcano's pipelined allocation) so later jobs cannot take it; each gang one Statement (all pods or none, binpack score,
  hard topology tried leaf by leaf then spine by spine, fullest domain first); no
  preemption, no backtracking across jobs;
- `kube`: kube-scheduler-like — pods first come first served, each on its own,
  LeastAllocated spread, no gang, no topology: a gang's early pods hold GPUs until the
  last one lands.
Not promised: realism of the synthetic mix beyond its stated distributions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from experiments.baselines.kube_like import least_allocated_score
from experiments.baselines.volcano_like import binpack_score
from experiments.cluster_state import WHOLE, Assignment, ClusterState, PodRequest, best_fit_devices
from experiments.trace_openb import OpenbNodes

__all__ = [
    "LEAF_NODES",
    "SPINE_LEAVES",
    "QUEUE_WEIGHTS",
    "Job",
    "World",
    "CycleOutcome",
    "llm_cluster",
    "llm_workload",
    "deserved_gpus",
    "queue_gpus",
    "pods_fitting",
    "limit_class_s",
]

NodeScore = Callable[[ClusterState, PodRequest, np.ndarray], np.ndarray]
"""A node score of the baselines (`binpack_score`, `least_allocated_score`): higher wins."""

LEAF_NODES = 8
SPINE_LEAVES = 8
QUEUE_WEIGHTS = {"training": 4, "finetune": 2, "inference": 2}
NODE_CPU_MILLI = 192_000
NODE_MEMORY_MIB = 2 * 1024 * 1024


@dataclass
class Job:
    """A PodGroup of the timeline: `pods` replicas of one shape, started whole."""

    ident: int
    queue: str
    arrival_s: float
    duration_s: float
    pods: int
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    priority: int = 0
    topology: str = "none"  # none | hard | soft
    tier: int = 0  # hard/soft: the highest tier allowed (1 leaf, 2 spine)
    start_s: float | None = None
    end_s: float | None = None
    assignments: dict[int, Assignment] = field(default_factory=dict)  # replica → where
    evictions: int = 0

    @property
    def active_deadline_s(self) -> float:
        """The time limit its user states (module docstring): 15 min × 2^k ≥ its duration."""
        return limit_class_s(self.duration_s)

    @property
    def gpus_milli(self) -> int:
        return self.pods * self.num_gpu * self.gpu_milli

    def request(self, replica: int) -> PodRequest:
        return PodRequest(
            index=self.ident * 1024 + replica,
            cpu_milli=self.cpu_milli,
            memory_mib=self.memory_mib,
            num_gpu=self.num_gpu,
            gpu_milli=self.gpu_milli,
        )


@dataclass
class World:
    """What a policy sees at a cycle: the cluster, the topology, the clock and the jobs."""

    state: ClusterState
    leaf: np.ndarray  # [N] leaf id
    spine: np.ndarray  # [N] spine id
    now_s: float
    pending: list[Job]  # not started, in arrival order (may hold placed pods under `kube`)
    running: list[Job]


@dataclass(frozen=True)
class CycleOutcome:
    """Pods bound (job, replica, assignment) and jobs evicted this cycle (and for whom)."""

    binds: tuple[tuple[Job, int, Assignment], ...] = ()
    evicted: tuple[Job, ...] = ()
    solve_seconds: float = 0.0
    reserved_gpu_milli: int = 0  # GPUs held this cycle for jobs past their waiting time
    evicted_for: tuple[tuple[int, int], ...] = ()  # (victim, preemptor) idents, when the policy names them
    waiting_for_nodes: frozenset[int] | None = None  # idents of pending jobs a node added to the cluster could
    # start (batchplace: `solver.reasons.nodes_would_help` of the PodGroup's reasons, what its pods' PodScheduled
    # reason `Unschedulable` says); None: the policy does not tell, every pending pod reads Unschedulable


LIMIT_CLASS_S = 900.0


def limit_class_s(duration_s: float) -> float:
    """The smallest 15 min × 2^k at least `duration_s`: 3000 s → 3600 s, 7920 s → 14400 s."""
    limit = LIMIT_CLASS_S
    while limit < duration_s:
        limit *= 2.0
    return limit


def llm_cluster(nodes: int = 128) -> tuple[OpenbNodes, np.ndarray, np.ndarray]:
    """The node list and each node's leaf and spine."""
    index = np.arange(nodes)
    node_list = OpenbNodes(
        names=tuple(f"gpu-{n:04d}" for n in range(nodes)),
        cpu_milli=np.full(nodes, NODE_CPU_MILLI, dtype=np.int64),
        memory_mib=np.full(nodes, NODE_MEMORY_MIB, dtype=np.int64),
        gpus=np.full(nodes, 8, dtype=np.int64),
        model=np.zeros(nodes, dtype=np.int64),
    )
    leaf = index // LEAF_NODES
    return node_list, leaf, leaf // SPINE_LEAVES


def llm_workload(seed: int, *, hours: float, capacity_gpus: int, load: float = 1.1) -> list[Job]:
    """Jobs in arrival order; see the module docstring for the mix."""
    rng = np.random.default_rng(seed)
    horizon = hours * 3600.0
    kinds = ("training", "finetune", "inference")
    share = np.array([0.25, 0.55, 0.20])  # of arrivals
    mean_gpu_seconds = np.array(
        [np.dot([0.3, 0.25, 0.2, 0.12, 0.07, 0.04, 0.02], [8, 16, 32, 64, 128, 256, 512]) * 7200.0,
         np.mean([1, 2, 4, 8]) * 1800.0, 0.375 * 14400.0]
    )  # fmt: skip
    rate = load * capacity_gpus * horizon / float(share @ mean_gpu_seconds) / horizon
    jobs: list[Job] = []
    now = 0.0
    while True:
        now += float(rng.exponential(1.0 / rate))
        if now >= horizon:
            break
        kind = kinds[int(rng.choice(3, p=share))]
        ident = len(jobs)
        if kind == "training":
            gpus = int(rng.choice([8, 16, 32, 64, 128, 256, 512], p=[0.3, 0.25, 0.2, 0.12, 0.07, 0.04, 0.02]))
            hard = rng.random() < 0.6
            jobs.append(Job(ident, "training", now, _duration(rng, 7200.0), gpus // 8, 96_000, 1_000_000, 8, WHOLE,
                            priority=int(rng.random() < 0.2), topology="hard" if hard else "soft",
                            tier=(1 if gpus <= 64 else 2) if hard else 1))  # fmt: skip
        elif kind == "finetune":
            gpus = int(rng.choice([1, 2, 4, 8]))
            jobs.append(Job(ident, "finetune", now, _duration(rng, 1800.0), 1, 12_000 * gpus, 120_000 * gpus, gpus, WHOLE))
        else:
            milli = int(rng.choice([250, 500]))
            jobs.append(Job(ident, "inference", now, _duration(rng, 14400.0), 1, 4_000, 32_000, 1, milli, priority=1))
    return jobs


def _duration(rng: np.random.Generator, mean_s: float) -> float:
    sigma = 0.8
    return float(rng.lognormal(np.log(mean_s) - sigma**2 / 2, sigma))


def queue_gpus(running: Iterable[Job], pending: Iterable[Job], capacity: float) -> tuple[dict[str, float], dict[str, float]]:
    """(GPUs each queue holds, GPUs it deserves) in milli-GPU: `deserved_gpus` of what each
    queue holds plus what it waits for."""
    used = dict.fromkeys(QUEUE_WEIGHTS, 0.0)
    for job in running:
        used[job.queue] += job.gpus_milli
    demand = dict(used)
    for job in pending:
        demand[job.queue] += job.gpus_milli
    return used, deserved_gpus(demand, capacity)


def pods_fitting(cpu_free: np.ndarray, memory_free: np.ndarray, gpu_left: np.ndarray, job: Job) -> np.ndarray:
    """`[N]` how many of the job's pods fit each node given these free amounts."""
    pod = job.request(0)
    fit = np.minimum(cpu_free // max(pod.cpu_milli, 1), memory_free // max(pod.memory_mib, 1))
    if pod.num_gpu:
        devices = (gpu_left // pod.gpu_milli).sum(axis=1) if pod.fractional else (gpu_left == WHOLE).sum(axis=1) // pod.num_gpu
        fit = np.minimum(fit, devices)
    return fit.astype(np.int64)


def deserved_gpus(demand: dict[str, float], capacity: float) -> dict[str, float]:
    """Water-filling of `capacity` over queues by `QUEUE_WEIGHTS`, capped by demand
    (Volcano's proportion). Example: capacity 100, demand training 10, finetune 80,
    inference 80 → training 10, finetune 45, inference 45."""
    deserved = {queue: 0.0 for queue in demand}
    active = {queue for queue, amount in demand.items() if amount > 0}
    left = capacity
    while active and left > 1e-9:
        weight = sum(QUEUE_WEIGHTS[q] for q in active)
        step = {q: left * QUEUE_WEIGHTS[q] / weight for q in active}
        left = 0.0
        for q in list(active):
            room = demand[q] - deserved[q]
            if step[q] >= room:
                deserved[q] = demand[q]
                left += step[q] - room
                active.discard(q)
            else:
                deserved[q] += step[q]
    return deserved


# ---- baselines ----


class VolcanoLikeGangs:
    """Gang + proportion + binpack (+ `sla`), job by job; see the module docstring."""

    name = "volcano"

    def __init__(self, *, sla_waiting_s: float | None = None) -> None:
        self.sla_waiting_s = sla_waiting_s

    def _overdue(self, world: World, job: Job) -> bool:
        return self.sla_waiting_s is not None and world.now_s - job.arrival_s > self.sla_waiting_s

    def cycle(self, world: World) -> CycleOutcome:
        started = time.perf_counter()
        state = world.state
        binds: list[tuple[Job, int, Assignment]] = []
        held: list[tuple[Job, int, Assignment]] = []
        used, deserved = queue_gpus(world.running, world.pending, float(state.gpu_capacity_milli))

        def order(job: Job) -> tuple[int, int, float, float]:  # priority, then sla's deadline order, then age
            late = self._overdue(world, job)
            return (-job.priority, 0 if late else 1, job.arrival_s + (self.sla_waiting_s or 0.0) if late else 0.0, job.arrival_s)

        waiting = {q: sorted((j for j in world.pending if j.queue == q), key=order) for q in QUEUE_WEIGHTS}
        while any(waiting.values()):
            queue = min((q for q in waiting if waiting[q]), key=lambda q: (used[q] / max(deserved[q], 1.0), q))
            job = waiting[queue].pop(0)
            placed = self._gang(world, job)
            if placed is not None:
                binds.extend((job, replica, a) for replica, a in placed)
                used[queue] += job.gpus_milli
            elif self._overdue(world, job):
                held.extend((job, replica, a) for replica, a in self._pipeline(world, job))
        for job, replica, assignment in held:  # the session ends: what an unready job held is let go
            state.release(job.request(replica), assignment)
        reserved = sum(job.num_gpu * job.gpu_milli for job, _, _ in held)
        return CycleOutcome(binds=tuple(binds), solve_seconds=time.perf_counter() - started, reserved_gpu_milli=reserved)

    def _pipeline(self, world: World, job: Job) -> list[tuple[int, Assignment]]:
        """Volcano's `sla` permit: an overdue job that cannot start keeps what it can take
        this session (in its fullest allowed domain), so later jobs cannot take it."""
        state = world.state
        domain: np.ndarray | None = None
        if job.topology == "hard" and job.pods > 1:
            ids = world.leaf if job.tier <= 1 else world.spine
            free = np.bincount(ids, weights=state.left_total, minlength=int(ids.max()) + 1)
            domain = ids == int(np.argmax(free))
        return _bind_in_order(state, job, domain)

    def _gang(self, world: World, job: Job) -> list[tuple[int, Assignment]] | None:
        state = world.state
        domains: list[np.ndarray | None] = []
        if job.topology != "none" and job.pods > 1:
            for level, ids in ((1, world.leaf), (2, world.spine)):
                if level > job.tier and job.topology == "hard":
                    break
                free = np.bincount(ids, weights=state.left_total, minlength=int(ids.max()) + 1)
                order = [d for d in np.argsort(free, kind="stable") if free[d] >= job.gpus_milli]
                domains.extend(ids == d for d in order)
        if job.topology != "hard" or job.pods == 1:
            domains.append(None)
        for domain in domains:
            placed = _bind_in_order(state, job, domain)
            if len(placed) == job.pods:
                return placed
            for replica, assignment in placed:  # roll the Statement back
                state.release(job.request(replica), assignment)
        return None


def _bind_in_order(
    state: ClusterState, job: Job, domain: np.ndarray | None, score: NodeScore = binpack_score
) -> list[tuple[int, Assignment]]:
    """Bind the job's replicas in order, each on the best node by `score` (binpack unless
    told; inside `domain` when given), until one finds none; what was bound, the caller
    keeps or releases."""
    placed: list[tuple[int, Assignment]] = []
    for replica in range(job.pods):
        pod = job.request(replica)
        mask = state.feasible(pod) if domain is None else state.feasible(pod) & domain
        nodes = np.flatnonzero(mask)
        if not nodes.size:
            break
        node = int(nodes[int(np.argmax(score(state, pod, nodes)))])
        placed.append((replica, state.bind(pod, node, best_fit_devices(state.gpu_left[node].tolist(), pod))))
    return placed


class KubeLikePods:
    """Pods first come first served, each alone (no gang): see the module docstring."""

    name = "kube"

    def cycle(self, world: World) -> CycleOutcome:
        started = time.perf_counter()
        state = world.state
        binds: list[tuple[Job, int, Assignment]] = []
        for job in world.pending:
            for replica in range(job.pods):
                if replica in job.assignments:
                    continue
                pod = job.request(replica)
                nodes = np.flatnonzero(state.feasible(pod))
                if not nodes.size:
                    break  # FIFO within a job; later jobs may still fit
                scores = least_allocated_score(state, pod, nodes)
                node = int(nodes[int(np.argmax(scores))])
                binds.append((job, replica, state.bind(pod, node, best_fit_devices(state.gpu_left[node].tolist(), pod))))
        return CycleOutcome(binds=tuple(binds), solve_seconds=time.perf_counter() - started)
