"""The llm timeline's peers as people run them: Volcano-like with its `sla` plugin on, a
Kueue-like quota admitter with fair-sharing preemption (BestEffortFIFO and StrictFIFO
queues), and Slurm-style EASY backfill. Each is one `cycle(world) -> CycleOutcome`, as the
policies of `experiments.timeline_llm`, and changes the `ClusterState` only through
`bind`/`release` (an over-commit raises). Every class docstring names the source it follows
and what it leaves out. `volcano` itself (`timeline_llm.VolcanoLikeGangs`) runs with no
`sla`, as Volcano ships; `volcano-sla` is the same scheduler with the plugin configured.

Policies by name (`PEER_POLICIES`, built by `make_peer_policy`):
- `volcano-sla`: `VolcanoWithSla` — `VolcanoLikeGangs` with a fixed 2-h waiting time;
- `kueue`, `kueue-strict`: `KueueLike` — one ClusterQueue per timeline queue, quota-only
  admission, BestEffortFIFO or StrictFIFO, fair-sharing preemption;
- `easy`: `EasyBackfill` — one priority order, one reservation for the first job that does
  not fit, backfill that does not delay it, no preemption.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from experiments.baselines.kube_like import least_allocated_score
from experiments.baselines.volcano_like import binpack_score
from experiments.cluster_state import WHOLE, Assignment, ClusterState
from experiments.timeline_llm import (
    QUEUE_WEIGHTS,
    CycleOutcome,
    Job,
    NodeScore,
    VolcanoLikeGangs,
    World,
    _bind_in_order,
    pods_fitting,
)

__all__ = ["PEER_POLICIES", "VOLCANO_SLA_WAITING_S", "VolcanoWithSla", "KueueLike", "EasyBackfill", "make_peer_policy"]

PEER_POLICIES: tuple[str, ...] = ("volcano-sla", "kueue", "kueue-strict", "kueue-binpack", "easy")
VOLCANO_SLA_WAITING_S = 7200.0


def make_peer_policy(name: str) -> VolcanoWithSla | KueueLike | EasyBackfill:
    """The peer `name` (one of `PEER_POLICIES`), ready for one run."""
    if name == "volcano-sla":
        return VolcanoWithSla()
    if name in ("kueue", "kueue-strict"):
        return KueueLike(strict_fifo=name == "kueue-strict")
    if name == "kueue-binpack":
        return KueueLike(strict_fifo=False, score=binpack_score)
    if name == "easy":
        return EasyBackfill()
    raise ValueError(f"unknown peer policy {name!r}; choose one of {', '.join(PEER_POLICIES)}")


def _place_gang(
    state: ClusterState, job: Job, allowed: np.ndarray | None, score: NodeScore
) -> list[tuple[int, Assignment]] | None:
    """All of the job's pods, each on the best node by `score` inside `allowed`, or none
    (what was bound is released again)."""
    placed = _bind_in_order(state, job, allowed, score)
    if len(placed) == job.pods:
        return placed
    for replica, assignment in placed:
        state.release(job.request(replica), assignment)
    return None


# ---- Volcano with sla ----


class VolcanoWithSla(VolcanoLikeGangs):
    """Volcano-like (gang, proportion, binpack) with the `sla` plugin configured.

    Source: Volcano's sla plugin design (`docs/design/sla-plugin.md` in volcano-sh/volcano)
    and `pkg/scheduler/plugins/sla`: a job waiting longer than `sla-waiting-time` goes first
    in its queue and, when it cannot start, keeps what it can take (pipelined) so later jobs
    cannot take it; the waiting time is the plugin's argument or a job annotation and has no
    default — the plugin acts only where it is configured, and Volcano's default scheduler
    configuration does not list it. The behaviour is `VolcanoLikeGangs`'s; this class fixes
    the waiting time.

    Why 2 h: it is the setting docs/results.md judged the guard at ("Starvation guard and
    preemption on the llm timeline": Volcano-like with sla at 2 h), it equals the mix's mean training run
    (2 h), so a big gang waits about one training job's length before it is guarded, and it
    stays fixed whatever `--sla-waiting-time` gives batchplace, so this peer's row does not
    move with the option the rows of batchplace are swept over.
    """

    name = "volcano-sla"

    def __init__(self) -> None:
        super().__init__(sla_waiting_s=VOLCANO_SLA_WAITING_S)


# ---- Kueue ----


@dataclass
class _Cohort:
    """The GPU quota of one cohort of ClusterQueues at one moment: nominal quota and usage
    (milli-GPU) per ClusterQueue, and each one's admitted workloads, newest last."""

    capacity: float
    nominal: dict[str, float]
    usage: dict[str, float]
    admitted: dict[str, list[Job]] = field(default_factory=dict)

    def fits(self, gpus_milli: float, usage: dict[str, float] | None = None) -> bool:
        """Whether `gpus_milli` more fit the cohort's quota at `usage` (now unless given):
        with no borrowingLimit a ClusterQueue may borrow all its cohort leaves unused, so
        the bound is the cohort's nominal total (the cluster's GPUs)."""
        return sum((self.usage if usage is None else usage).values()) + gpus_milli <= self.capacity + 1e-6

    def share(self, queue: str, usage: float) -> float:
        """Kueue's fair-sharing share value of `queue` at `usage`: what it borrows above its
        nominal quota, per mille of the cohort's lendable quota, divided by its weight
        (one resource here, the GPU, so the dominant one)."""
        return max(0.0, usage - self.nominal[queue]) * 1000.0 / self.capacity / QUEUE_WEIGHTS[queue]


class KueueLike:
    """Kueue-like: quota admission per ClusterQueue, fair sharing in one cohort.

    Source: Kueue's documentation (kueue.sigs.k8s.io, "Cluster Queue", "Preemption", "Fair
    Sharing") and KEP-1714 (fair sharing) in kubernetes-sigs/kueue. Modelled:
    - one ClusterQueue per timeline queue (training, finetune, inference) in one cohort, one
      resource flavour covering the GPU; nominal quota = the queue's `QUEUE_WEIGHTS` share of
      the cluster's GPUs, no borrowingLimit (a queue borrows what the cohort leaves unused);
    - queueing strategy: within a ClusterQueue, workloads by priority then creation time;
      BestEffortFIFO (`kueue`, Kueue's default) tries the next workload when the head does
      not fit, StrictFIFO (`kueue-strict`) stops the queue at its head for the cycle;
    - fair sharing on (`fairSharing.enable: true`), each ClusterQueue's `fairSharing.weight`
      its queue weight, so the fair state is the timeline's weighted deserved share: heads of
      the ClusterQueues are admitted lowest share value (with the head admitted) first;
    - preemption `withinClusterQueue: LowerPriority`, `reclaimWithinCohort: Any`, and the
      fair-sharing targets algorithm with the default strategies
      `[LessThanOrEqualToFinalShare, LessThanInitialShare]`: candidates are the preemptor's
      ClusterQueue's lower-priority workloads and every workload of a ClusterQueue that
      borrows; repeatedly the ClusterQueue with the highest share gives its first candidate
      (lowest priority, most recently admitted) that the strategy allows — its own always,
      another's if the preemptor's share with the workload is ≤ the target's share without
      the candidate (then, second strategy: < the target's share now) — until the workload
      fits; the targets are then minimised in reverse order. With one resource the
      strategies already spare a queue that does not borrow (its share is 0, and a
      preemptor of share 0 fits without preempting), so no separate check is made. A
      ClusterQueue within nominal after admitting has share 0, so it reclaims from any
      borrower; evicted workloads go back to pending with their creation time;
    - placement: Kueue does not place pods; kube-scheduler does once a workload is admitted.
      Admitted workloads' pods are placed all or none (waitForPodsReady, all-or-nothing) by
      kube-scheduler's default LeastAllocated score (`least_allocated_score`, CPU and memory,
      it spreads), inside the domain the job's topology asks, as Kueue's Topology Aware
      Scheduling does for a PodSet annotated `kueue.x-k8s.io/podset-required-topology`
      (hard: one leaf, or one spine past tier 1) or `podset-preferred-topology` (soft: the
      lowest level that holds it, else higher), choosing the fullest domain that holds the
      gang (TAS's default BestFit). Without TAS, Kueue spreads a hard-topology gang over
      more leaves than it needs — placements these jobs refuse. `kueue-binpack` is the same
      Kueue with kube-scheduler's NodeResourcesFit set to MostAllocated (`binpack_score`), as
      GPU clusters commonly configure it (e.g. GKE's optimize-utilization profile): the
      default spreads small pods over the nodes an 8-GPU pod needs whole, which costs Kueue
      much of its GPU allocation on the llm timeline, so the stronger of the two is the
      opponent the tables judge against (measured: docs/results.md, "Over time, by default",
      the streams' table; the spread without TAS in the same section).
    Not modelled: the time between admission and the pods running — a workload whose quota
    fits but whose pods do not fit the nodes now (fragmentation) is not admitted this cycle
    (as if waitForPodsReady timed it out and requeued it at once; StrictFIFO's head then
    blocks its queue), and preemption happens only when the freed nodes then take the
    preemptor's pods (real Kueue would evict first and let the pods wait, which costs it
    more evictions than here); preemption and admission take effect in the same cycle;
    CPU and memory quotas; admission fair sharing (usage history); Kueue's own requeue
    backoff.
    """

    def __init__(self, *, strict_fifo: bool, score: NodeScore = least_allocated_score) -> None:
        self.strict_fifo = strict_fifo
        self.score = score
        self.name = "kueue-strict" if strict_fifo else "kueue" if score is least_allocated_score else "kueue-binpack"
        self._levels: list[np.ndarray] | None = None

    def cycle(self, world: World) -> CycleOutcome:
        started = time.perf_counter()
        state = world.state
        if self._levels is None:
            self._levels = _levels_of(world)
        capacity = float(state.gpu_capacity_milli)
        weights = sum(QUEUE_WEIGHTS.values())
        cohort = _Cohort(capacity, {q: capacity * w / weights for q, w in QUEUE_WEIGHTS.items()},
                         {q: 0.0 for q in QUEUE_WEIGHTS}, {q: [] for q in QUEUE_WEIGHTS})  # fmt: skip
        for job in sorted(world.running, key=lambda j: (j.start_s or 0.0, j.ident)):
            cohort.usage[job.queue] += job.gpus_milli
            cohort.admitted[job.queue].append(job)
        preemptible = set(map(id, world.running))  # what this cycle admits is not preempted by it
        queues = {q: sorted((j for j in world.pending if j.queue == q), key=lambda j: (-j.priority, j.arrival_s, j.ident))
                  for q in QUEUE_WEIGHTS}  # fmt: skip
        binds: list[tuple[Job, int, Assignment]] = []
        evicted: list[Job] = []
        evicted_for: list[tuple[int, int]] = []
        while any(queues.values()):
            heads = {q: waiting[0] for q, waiting in queues.items() if waiting}
            queue = min(heads, key=lambda q: (cohort.share(q, cohort.usage[q] + heads[q].gpus_milli),
                                              -heads[q].priority, heads[q].arrival_s, q))  # fmt: skip
            job = queues[queue].pop(0)
            placed, victims = self._admit(state, cohort, job, preemptible)
            if placed is None:
                if self.strict_fifo:
                    queues[queue] = []  # the head blocks its ClusterQueue
                continue
            for victim in victims:
                cohort.usage[victim.queue] -= victim.gpus_milli
                cohort.admitted[victim.queue].remove(victim)
                preemptible.discard(id(victim))
            evicted.extend(victims)
            evicted_for.extend((victim.ident, job.ident) for victim in victims)
            binds.extend((job, replica, assignment) for replica, assignment in placed)
            cohort.usage[queue] += job.gpus_milli
            cohort.admitted[queue].append(job)
        return CycleOutcome(binds=tuple(binds), evicted=tuple(evicted), solve_seconds=time.perf_counter() - started,
                            evicted_for=tuple(evicted_for))

    def _admit(self, state: ClusterState, cohort: _Cohort, job: Job, preemptible: set[int]
               ) -> tuple[list[tuple[int, Assignment]] | None, list[Job]]:  # fmt: skip
        """The job's pods placed and the workloads preempted for it, or (None, [])."""
        if cohort.fits(job.gpus_milli):
            return self._place(state, job), []
        victims = self._fair_targets(cohort, job, preemptible)
        if not victims:
            return None, []
        for victim in victims:
            for replica, assignment in victim.assignments.items():
                state.release(victim.request(replica), assignment)
        placed = self._place(state, job)
        if placed is None:  # the quota would admit it, the nodes would not: nobody is evicted
            for victim in victims:
                for replica, assignment in victim.assignments.items():
                    state.bind(victim.request(replica), assignment.node, assignment.devices)
            return None, []
        return placed, victims

    def _place(self, state: ClusterState, job: Job) -> list[tuple[int, Assignment]] | None:
        """Topology Aware Scheduling: the gang whole inside the domain its topology asks."""
        assert self._levels is not None
        return _place_in_domains(state, job, self._levels, self.score)

    def _fair_targets(self, cohort: _Cohort, job: Job, preemptible: set[int]) -> list[Job]:
        """Kueue's fair-sharing preemption targets for `job` (class docstring), or [] if
        they cannot make it fit the quota."""
        own = job.queue
        usage = dict(cohort.usage)
        candidates = {
            q: [j for j in sorted(cohort.admitted[q], key=lambda j: (j.priority, -(j.start_s or 0.0), -j.ident))
                if id(j) in preemptible and (q != own or j.priority < job.priority)]
            for q in QUEUE_WEIGHTS
        }  # fmt: skip
        targets: list[Job] = []

        def take(victim: Job) -> None:
            targets.append(victim)
            usage[victim.queue] -= victim.gpus_milli

        for strict in (False, True):  # LessThanOrEqualToFinalShare, then LessThanInitialShare
            live = {q: [j for j in c if j not in targets] for q, c in candidates.items()}
            live = {q: c for q, c in live.items() if c}
            while not cohort.fits(job.gpus_milli, usage) and live:
                target = max(live, key=lambda q: (cohort.share(q, usage[q]), q))
                pool = live.pop(target)
                if target == own:
                    take(pool.pop(0))
                else:
                    mine = cohort.share(own, usage[own] + job.gpus_milli)  # the preemptor's queue with it
                    initial = cohort.share(target, usage[target])
                    victim = next((v for v in pool if (mine < initial if strict else  # LessThanInitialShare
                                                       mine <= cohort.share(target, usage[target] - v.gpus_milli))),
                                  None)  # fmt: skip
                    if victim is None:
                        continue  # no workload of this queue may go under this strategy
                    take(victim)
                    pool.remove(victim)
                if pool:
                    live[target] = pool
        if not cohort.fits(job.gpus_milli, usage):
            return []
        for victim in reversed(list(targets)):  # keep only what is needed
            if cohort.fits(victim.gpus_milli + job.gpus_milli, usage):
                targets.remove(victim)
                usage[victim.queue] += victim.gpus_milli
        return targets


# ---- Slurm EASY backfill ----


@dataclass(frozen=True)
class _Reservation:
    """Where and when the first job that does not fit will start."""

    start_s: float
    nodes: np.ndarray  # [N] bool


class EasyBackfill:
    """Slurm-style EASY backfill over one priority order, gangs all or nothing.

    Source: Slurm's documentation — `sched_config` / `slurm.conf` (SchedulerType
    `sched/backfill`: lower-priority jobs start if they do not delay the expected start of
    higher-priority ones, the expected start computed from running jobs' time limits, not
    their true run times), "Multifactor Priority Plugin" and "Topology Guide" (the
    `topology/tree` plugin: a job goes under the lowest switch that can hold it, best fit
    among switches; `--switches=1` keeps it inside one). Modelled:
    - one order for all queues: priority (the QOS factor, dominating), then arrival — the
      multifactor order when the age factor is the only other weight, since age grows with
      the same clock for every job;
    - jobs start in that order while they fit; the first that does not fit gets the one
      reservation (EASY: Slurm's backfill reserves for up to `bf_max_job_test` jobs, EASY
      for one): its earliest start, from running jobs' ends at `start + time limit`
      (`Job.active_deadline_s`), and the nodes it would take then, in its topology domain
      (hard: one leaf, or one spine for a gang past a leaf; soft and none: lowest level
      that fits, best fit);
    - every later job starts now if it fits and does not delay the reservation: it ends by
      its time limit before the reservation starts, or it avoids the reserved nodes (the
      backfill's node-level view, as Slurm's per-node availability map);
    - pods of a job go to the fullest nodes that fit (binpack score, Slurm's cons_tres packs
      a job on as few nodes as it can), fractional inference pods as GPU shards;
    - no preemption, no time limit enforcement needed (no job runs past its limit).
    A job that could not fit even on an empty cluster gets no reservation. Not modelled:
    fair-share factor, job size factor, partitions, `bf_window`, `bf_interval` (backfill
    runs every cycle here).
    """

    name = "easy"

    def __init__(self) -> None:
        self._levels: list[np.ndarray] | None = None  # [domains, N] masks: leaves, spines, the cluster

    def cycle(self, world: World) -> CycleOutcome:
        started = time.perf_counter()
        state = world.state
        if self._levels is None:
            self._levels = _levels_of(world)
        holders = [(job.start_s + job.active_deadline_s, job, list(job.assignments.items()))
                   for job in world.running if job.start_s is not None]  # fmt: skip
        binds: list[tuple[Job, int, Assignment]] = []
        reservation: _Reservation | None = None
        for job in sorted(world.pending, key=lambda j: (-j.priority, j.arrival_s, j.ident)):
            allowed = None
            if reservation is not None and world.now_s + job.active_deadline_s > reservation.start_s:
                allowed = ~reservation.nodes
            placed = self._place(state, job, allowed)
            if placed is not None:
                binds.extend((job, replica, assignment) for replica, assignment in placed)
                holders.append((world.now_s + job.active_deadline_s, job, placed))
            elif reservation is None:
                reservation = self._reserve(state, job, holders)
        reserved = int(state.left_total[reservation.nodes].sum()) if reservation is not None else 0
        return CycleOutcome(binds=tuple(binds), solve_seconds=time.perf_counter() - started, reserved_gpu_milli=reserved)

    def _levels_for(self, job: Job) -> list[np.ndarray]:
        assert self._levels is not None
        return _levels_for(self._levels, job)

    def _place(self, state: ClusterState, job: Job, allowed: np.ndarray | None) -> list[tuple[int, Assignment]] | None:
        """The job whole in its best-fit domain now (inside `allowed`), or None."""
        assert self._levels is not None
        return _place_in_domains(state, job, self._levels, binpack_score, allowed)

    def _reserve(self, state: ClusterState, job: Job, holders: list[tuple[float, Job, list[tuple[int, Assignment]]]]
                 ) -> _Reservation | None:  # fmt: skip
        """The earliest time the job fits as running jobs end by their time limits, and the
        nodes it would take then (best-fit domain at the lowest level, fullest nodes first)."""
        cpu, memory, gpu = state.cpu_free.copy(), state.memory_free.copy(), state.gpu_left.copy()
        ending = sorted(holders, key=lambda h: (h[0], h[1].ident))
        for k, (end_s, holder, pods) in enumerate(ending):
            for replica, assignment in pods:
                pod = holder.request(replica)
                cpu[assignment.node] += pod.cpu_milli
                memory[assignment.node] += pod.memory_mib
                for device in assignment.devices:
                    gpu[assignment.node, device] += WHOLE if pod.whole_devices else pod.gpu_milli
            if k + 1 < len(ending) and ending[k + 1][0] == end_s:
                continue  # all that end at the same time first
            fit = pods_fitting(cpu, memory, gpu, job)
            for masks in self._levels_for(job):
                room = masks @ fit
                if room.max(initial=0) < job.pods:
                    continue
                domain = masks[int(np.argmin(np.where(room >= job.pods, room, np.iinfo(np.int64).max)))]
                nodes = np.flatnonzero(domain & (fit > 0))
                nodes = nodes[np.argsort(-fit[nodes], kind="stable")]
                chosen = nodes[: int(np.searchsorted(np.cumsum(fit[nodes]), job.pods)) + 1]
                mask = np.zeros(state.node_count, dtype=bool)
                mask[chosen] = True
                return _Reservation(start_s=end_s, nodes=mask)
        return None


def _levels_of(world: World) -> list[np.ndarray]:
    """`[domains, N]` masks of the leaves, the spines and the whole cluster."""
    return [_domain_masks(world.leaf), _domain_masks(world.spine), np.ones((1, world.state.node_count), dtype=bool)]


def _levels_for(levels: list[np.ndarray], job: Job) -> list[np.ndarray]:
    """The job's allowed domains, lowest level first: hard topology one leaf (or one spine
    past its tier 1), soft the lowest level that holds it, none the cluster."""
    leaves, spines, cluster = levels
    if job.pods == 1 or job.topology == "none":
        return [cluster]
    if job.topology == "hard":
        return [leaves] if job.tier <= 1 else [leaves, spines]
    return [leaves, spines, cluster]


def _place_in_domains(state: ClusterState, job: Job, levels: list[np.ndarray], score: NodeScore,
                      allowed: np.ndarray | None = None) -> list[tuple[int, Assignment]] | None:  # fmt: skip
    """The job whole in the best-fit domain (the fullest that holds it) of the lowest level
    it may use, pods on nodes by `score`, inside `allowed`; or None."""
    fit = pods_fitting(state.cpu_free, state.memory_free, state.gpu_left, job)
    if allowed is not None:
        fit = np.where(allowed, fit, 0)
    for masks in _levels_for(levels, job):
        room = masks @ fit
        for d in np.argsort(room, kind="stable"):
            if room[d] < job.pods:
                continue
            domain = masks[d] if allowed is None else masks[d] & allowed
            placed = _place_gang(state, job, domain, score)
            if placed is not None:
                return placed
    return None


def _domain_masks(ids: np.ndarray) -> np.ndarray:
    """`[domains, N]` bool: row d marks the nodes whose id is d."""
    return np.arange(int(ids.max()) + 1)[:, None] == ids[None, :]
