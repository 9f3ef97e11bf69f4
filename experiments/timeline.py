"""The timeline protocol: arrivals with durations, gangs, queues and priorities over time.

Question: beyond one-shot packing, how do batchplace's engines compare with a Volcano-like
and a kube-scheduler-like scheduler when jobs come and go? Two scenarios:
- `llm` (`experiments.timeline_llm`): a synthetic LLM-cluster mix — training gangs of
  8–512 GPUs with hard or soft topology, fine-tuning jobs of 1–8 GPUs, fractional-GPU
  inference pods, three weighted queues — on 128 8-GPU nodes under leaf and spine switches;
- `openb`: the openb pods with their own creation and deletion times on the openb GPU
  nodes (a pod runs `deletion − creation` seconds once placed — its trace lifetime; a pod still
  pending at its deletion time is withdrawn), FIFO with retry, policies of the FGD protocol.
  As recorded, at most ~50 pods (< 1 % of the GPUs) are alive at once, so every policy
  looks the same; `compress` divides arrival times (lifetimes kept) to load the cluster.
- `acme` (the Acme trace's Kalos gangs of 1–1,024 GPUs on a Kalos-like leaf-spine cluster)
  and `openb-jobs` (the openb pods as single-pod jobs on the openb nodes): job streams of
  `experiments.timeline_streams`, run by the llm event loop and its policies unchanged.

The event loop is pure, with its own clock: at each cycle time t, in this order,
(1) jobs whose end ≤ t finish and free their pods, (2) jobs whose arrival ≤ t join the
pending list (and, openb, pending pods past their deletion time leave), (3) the policy
decides once, (4) its evictions and binds are applied (the policy changes the
`ClusterState` only through `bind`/`release`, which refuse an over-commit) and a job
whose pods are all placed starts at t, ending at t + its duration. A cycle with nothing
new (no arrival, no departure since the last decision that left work pending) is skipped.

Metrics: GPU allocated over time (and, for `kube`, how much of it belongs to gangs still
waiting for their last pod), queueing delay p50/p99 per queue (started jobs; jobs never
started are counted separately), job completion time, fairness error (time-mean of
½·Σ_q |allocated_q − deserved_q| / capacity, deserved by weighted water-filling capped by
demand), evictions per admitted GPU, leaves (tier-1 HyperNodes) spanned per multi-pod gang
vs the fewest possible, and solver time per cycle.
"""

from __future__ import annotations

import csv
import heapq
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from experiments.cluster_state import Assignment, ClusterState, PodRequest, requests_of
from experiments.timeline_batchplace import BatchplaceCycle
from experiments.timeline_delay import DelayLedger, delay_rows
from experiments.timeline_llm import (
    QUEUE_WEIGHTS,
    CycleOutcome,
    Job,
    KubeLikePods,
    VolcanoLikeGangs,
    World,
    llm_cluster,
    queue_gpus,
)
from experiments.timeline_peers import PEER_POLICIES, EasyBackfill, KueueLike, VolcanoWithSla, make_peer_policy
from experiments.timeline_streams import LLM_NODES, job_stream, window_load
from experiments.trace_openb import load_nodes, load_pods
from solver.rules.reservation import DEFAULT_SLA_WAITING_S

__all__ = [
    "LLM_POLICIES",
    "OPENB_POLICIES",
    "TimelineConfig",
    "TimelineResult",
    "apply_outcome",
    "finish_due",
    "run_llm_timeline",
    "run_openb_timeline",
    "run_timeline",
    "run_timelines",
    "timeline_markdown",
    "timeline_policy_summary",
    "timeline_delay_breakdown",
    "write_timeline_csv",
]

LLM_POLICIES: tuple[str, ...] = ("greedy", "cpsat", "auto", "volcano", *PEER_POLICIES, "kube")
OPENB_POLICIES: tuple[str, ...] = ("bestfit", "fgd", "kube", "volcano", "greedy", "greedy-frag")


@dataclass(frozen=True)
class TimelineConfig:
    scenario: str  # llm | acme | openb-jobs (the llm event loop, `timeline_streams`) | openb
    policy: str
    seed: int = 42
    hours: float = 12.0  # horizon of llm, acme, openb-jobs
    cycle_s: float = 60.0  # llm cycle; openb uses 300 s
    trace: str = "default"  # openb pod list
    compress: float = 1.0  # openb, openb-jobs, acme: arrivals at the trace's time / compress, durations kept
    nodes: int | None = None  # cluster size; None: the stream's own (`timeline_streams.job_stream`: llm 128)
    time_limit_s: float = 2.0
    sla_waiting_s: float | None = DEFAULT_SLA_WAITING_S  # every job's sla-waiting-time under batchplace (the
    # controller's default unless set); None: none, and batchplace preempts and reclaims
    load: float = 1.1  # llm: offered load, arrival rate × mean GPU-time per job / capacity


@dataclass(frozen=True, eq=False)
class TimelineResult:
    config: TimelineConfig
    times_h: np.ndarray  # [cycles] (openb: days are hours / 24)
    utilization_pct: np.ndarray  # [cycles] GPU allocated / capacity
    idle_held_pct: np.ndarray  # [cycles] allocated to jobs that have not started (kube's partial gangs)
    delays_by_queue: dict[str, np.ndarray]  # queue → queueing delays (s) of started jobs
    never_started: dict[str, int]
    jct_s: np.ndarray  # completed jobs
    fairness_error_pct: float
    evictions_per_admitted_gpu: float
    leaves_spanned: np.ndarray  # per started multi-pod gang
    leaves_excess: np.ndarray  # spanned − fewest possible
    solve_seconds: np.ndarray  # per decision
    wall_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    reserved_pct: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [cycles] GPUs held for overdue jobs
    delays_by_gpus: dict[int, np.ndarray] = field(default_factory=dict)  # training job GPUs → delays (s) of started jobs
    never_by_gpus: dict[int, int] = field(default_factory=dict)  # training job GPUs → jobs never started
    training_waits_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # every training job's wait, a
    # never-started one's counted to the horizon (a lower bound): the tail that started jobs' delays leave out
    delay_rows: tuple[dict[str, float | int | str | None], ...] = ()  # llm: per job, where its wait went (timeline_delay)


# ---- llm ----


def make_llm_policy(
    name: str, *, time_limit_s: float = 2.0, sla_waiting_s: float | None = DEFAULT_SLA_WAITING_S
) -> VolcanoLikeGangs | KubeLikePods | BatchplaceCycle | VolcanoWithSla | KueueLike | EasyBackfill:
    """`greedy`, `cpsat`, `auto` (batchplace), `volcano`, `kube`, and the peers of
    `experiments.timeline_peers`; `sla_waiting_s` is every job's waiting time for batchplace
    only — `volcano` runs with no `sla`, as Volcano ships, `volcano-sla` with its own."""
    if name == "volcano":
        return VolcanoLikeGangs()
    if name == "kube":
        return KubeLikePods()
    if name in PEER_POLICIES:
        return make_peer_policy(name)
    if name in ("greedy", "cpsat", "auto"):
        return BatchplaceCycle(name, time_limit_s=time_limit_s, sla_waiting_s=sla_waiting_s)
    raise ValueError(f"unknown llm timeline policy {name!r}")


def run_llm_timeline(
    config: TimelineConfig, *, jobs: list[Job] | None = None, trace_dir: Path | None = None, acme_dir: Path | None = None
) -> TimelineResult:
    """The `llm` scenario and the other job streams (`experiments.timeline_streams`: `acme`
    reads `acme_dir`, `openb-jobs` reads `trace_dir`); see the module docstring. `jobs`
    replaces the stream on the llm cluster of `config.nodes` (tests hand-make one)."""
    started = time.perf_counter()
    if jobs is None:
        stream = job_stream(config, trace_dir=trace_dir, acme_dir=acme_dir)
        nodes, leaf, spine, jobs = stream.nodes, stream.leaf, stream.spine, stream.jobs
    else:
        nodes, leaf, spine = llm_cluster(config.nodes or LLM_NODES)
    state = ClusterState(nodes)
    capacity = float(state.gpu_capacity_milli)
    policy = make_llm_policy(config.policy, time_limit_s=config.time_limit_s, sla_waiting_s=config.sla_waiting_s)
    arrivals = list(jobs)  # arrival order
    pending: list[Job] = []
    running: list[Job] = []
    ends: list[tuple[float, int, Job]] = []  # heap of (end, ident, job)
    next_arrival = 0
    horizon = config.hours * 3600.0
    times, util, held, fairness, solve, reserved = [], [], [], [], [], []
    reserved_now = 0.0
    evicted_gpu_milli = admitted_gpu_milli = 0.0
    dirty = True
    now = 0.0
    ledger = DelayLedger()
    while now <= horizon:
        # (1) departures
        dirty = finish_due(state, ends, running, now) or dirty
        # (2) arrivals
        while next_arrival < len(arrivals) and arrivals[next_arrival].arrival_s <= now:
            pending.append(arrivals[next_arrival])
            next_arrival += 1
            dirty = True
        # (3)+(4) decide and apply
        if dirty and pending:
            world = World(state, leaf, spine, now, pending, running)
            ledger.decided(world)
            outcome = policy.cycle(world)  # type: ignore[attr-defined]
            ledger.evicted(now, outcome)
            solve.append(outcome.solve_seconds)
            reserved_now = 100.0 * outcome.reserved_gpu_milli / capacity
            evicted_gpu_milli += sum(job.gpus_milli for job in outcome.evicted)
            started_now = apply_outcome(outcome, pending, running, ends, now)
            admitted_gpu_milli += sum(job.gpus_milli for job in started_now)
            ledger.started(started_now, pending)
            dirty = False
        # metrics for this cycle
        times.append(now / 3600.0)
        util.append(100.0 * state.allocated_gpu_milli / capacity)
        held.append(100.0 * sum(j.num_gpu * j.gpu_milli * len(j.assignments) for j in pending) / capacity)
        fairness.append(_fairness_error(running, pending, capacity))
        reserved.append(reserved_now)
        now += config.cycle_s
    ledger.close(pending, horizon)
    result = _llm_result(config, jobs, times, util, held, fairness, solve, evicted_gpu_milli, admitted_gpu_milli,
                         leaf, time.perf_counter() - started)  # fmt: skip
    return replace(result, reserved_pct=np.array(reserved), training_waits_s=_training_waits(jobs, horizon), **_by_size(jobs),
                   delay_rows=delay_rows(jobs, ledger, horizon),
                   extra={"window_load": window_load(jobs, capacity_gpu_milli=capacity, hours=config.hours)})  # fmt: skip


def finish_due(state: ClusterState, ends: list[tuple[float, int, Job]], running: list[Job], now: float) -> bool:
    """Step (1): the running jobs whose end ≤ `now` leave and free their pods (`ends`: a heap
    of (end, ident, job); an entry whose job was evicted since is skipped). Whether one left."""
    left = False
    while ends and ends[0][0] <= now:
        _, _, job = heapq.heappop(ends)
        if job.end_s is None or job not in running or job.end_s > now:
            continue
        for replica, assignment in job.assignments.items():
            state.release(job.request(replica), assignment)
        running.remove(job)
        left = True
    return left


def apply_outcome(
    outcome: CycleOutcome, pending: list[Job], running: list[Job], ends: list[tuple[float, int, Job]], now: float
) -> list[Job]:
    """Step (4): the policy's evictions (the victim waits again, from the queue) and binds
    (already taken on the `ClusterState` by the policy); a job whose pods are all placed
    starts at `now` and ends at `now` + its duration. The jobs started, in arrival order."""
    for job in outcome.evicted:
        job.evictions += 1
        job.assignments.clear()
        job.start_s = job.end_s = None
        running.remove(job)
        pending.append(job)
    for job, replica, assignment in outcome.binds:
        job.assignments[replica] = assignment
    started_now = [j for j in pending if len(j.assignments) == j.pods]
    for job in started_now:
        job.start_s, job.end_s = now, now + job.duration_s
        pending.remove(job)
        running.append(job)
        heapq.heappush(ends, (job.end_s, job.ident, job))
    pending.sort(key=lambda j: (j.arrival_s, j.ident))
    return started_now


def _by_size(jobs: list[Job]) -> dict[str, dict]:
    """Training jobs' queueing delays and never-started counts by their GPUs."""
    delays: dict[int, list[float]] = {}
    never: dict[int, int] = {}
    for job in jobs:
        if job.queue != "training":
            continue
        gpus = job.gpus_milli // 1000
        delays.setdefault(gpus, [])
        never.setdefault(gpus, 0)
        if job.start_s is None:
            never[gpus] += 1
        else:
            delays[gpus].append(job.start_s - job.arrival_s)
    return {"delays_by_gpus": {g: np.array(v) for g, v in sorted(delays.items())}, "never_by_gpus": dict(sorted(never.items()))}


def _training_waits(jobs: list[Job], horizon_s: float) -> np.ndarray:
    return np.array([max(0.0, (job.start_s if job.start_s is not None else horizon_s) - job.arrival_s)
                     for job in jobs if job.queue == "training" and job.arrival_s <= horizon_s])  # fmt: skip


def _fairness_error(running: list[Job], pending: list[Job], capacity: float) -> float:
    allocated, deserved = queue_gpus(running, pending, capacity)
    return 50.0 * sum(abs(allocated[q] - deserved[q]) for q in QUEUE_WEIGHTS) / capacity


def _llm_result(config, jobs, times, util, held, fairness, solve, evicted, admitted, leaf, wall) -> TimelineResult:  # noqa: ANN001
    delays: dict[str, list[float]] = {q: [] for q in QUEUE_WEIGHTS}
    never = {q: 0 for q in QUEUE_WEIGHTS}
    jct, spanned, excess = [], [], []
    for job in jobs:
        if job.start_s is None:
            never[job.queue] += 1
            continue
        delays[job.queue].append(job.start_s - job.arrival_s)
        if job.end_s is not None and job.end_s <= config.hours * 3600.0:
            jct.append(job.end_s - job.arrival_s)
        if job.pods > 1:
            leaves = {int(leaf[a.node]) for a in job.assignments.values()}
            spanned.append(len(leaves))
            excess.append(len(leaves) - int(np.ceil(job.pods / 8)))
    return TimelineResult(
        config=config,
        times_h=np.array(times),
        utilization_pct=np.array(util),
        idle_held_pct=np.array(held),
        delays_by_queue={q: np.array(v) for q, v in delays.items()},
        never_started=never,
        jct_s=np.array(jct),
        fairness_error_pct=float(np.mean(fairness)) if fairness else 0.0,
        evictions_per_admitted_gpu=float(evicted / admitted) if admitted else 0.0,
        leaves_spanned=np.array(spanned),
        leaves_excess=np.array(excess),
        solve_seconds=np.array(solve),
        wall_seconds=wall,
    )


# ---- openb ----


def run_openb_timeline(config: TimelineConfig, trace_dir: Path | None = None) -> TimelineResult:
    """The `openb` scenario: the trace's own times, FIFO with retry after each release; the
    trace from `trace_dir`, else where `experiments.trace_openb.trace_dir` finds it."""
    from experiments.fragmentation import FragTracker, typical_pods
    from experiments.policies import make_policy

    started = time.perf_counter()
    nodes = load_nodes(trace_dir)
    pods = load_pods(config.trace, trace_dir)
    if np.isnan(pods.creation_time).all():
        raise ValueError(f"pod list {config.trace!r} has no times (the multigpu variants have none)")
    order = np.argsort(pods.creation_time, kind="stable")
    arrivals = requests_of(pods.take(order))
    created = pods.creation_time[order] / config.compress
    deleted = created + (pods.deletion_time[order] - pods.creation_time[order])
    run_for = np.where(np.isnan(deleted), np.inf, deleted) - created
    state = ClusterState(nodes)
    tracker = FragTracker(typical_pods(pods), state)
    policy = make_policy(config, np.random.default_rng(config.seed), tracker, state)
    cycle = 300.0
    pending: list[PodRequest] = []
    placed: dict[int, Assignment] = {}
    start_at: dict[int, float] = {}
    ends: list[tuple[float, int]] = []
    times, util, solve = [], [], []
    delays: list[float] = []
    next_arrival, capacity = 0, float(state.gpu_capacity_milli)
    released_since = True
    now = float(np.floor(created[0] / cycle) * cycle)
    last = float(np.nanmax(deleted))
    while now <= last and (next_arrival < len(arrivals) or pending or ends):
        while ends and ends[0][0] <= now:  # (1)
            _, p = heapq.heappop(ends)
            state.release(arrivals[p], placed.pop(p))
            released_since = True
        fresh = False
        while next_arrival < len(arrivals) and created[next_arrival] <= now:  # (2)
            pending.append(arrivals[next_arrival])
            next_arrival += 1
            fresh = True
        pending = [pod for pod in pending if deleted[pod.index] > now]
        if pending and (fresh or released_since):  # (3)+(4)
            tick = time.perf_counter()
            result = policy.schedule(state, pending)
            solve.append(time.perf_counter() - tick)
            still = []
            for pod, assignment in zip(pending, result):
                if assignment is None:
                    still.append(pod)
                    continue
                placed[pod.index] = assignment
                start_at[pod.index] = now
                delays.append(now - created[pod.index])
                heapq.heappush(ends, (now + max(float(run_for[pod.index]), cycle), pod.index))
            pending = still
            released_since = False
        times.append(now / 3600.0)
        util.append(100.0 * state.allocated_gpu_milli / capacity)
        upcoming = [created[next_arrival] if next_arrival < len(arrivals) else np.inf, ends[0][0] if ends else np.inf]
        if pending:
            upcoming.append(min(deleted[p.index] for p in pending))
        now = max(now + cycle, float(np.ceil(min(upcoming) / cycle) * cycle))
    never = len(arrivals) - len(start_at)
    return TimelineResult(
        config=config,
        times_h=np.array(times),
        utilization_pct=np.array(util),
        idle_held_pct=np.zeros(len(times)),
        delays_by_queue={"openb": np.array(delays)},
        never_started={"openb": never},
        jct_s=np.array([]),
        fairness_error_pct=float("nan"),
        evictions_per_admitted_gpu=0.0,
        leaves_spanned=np.array([]),
        leaves_excess=np.array([]),
        solve_seconds=np.array(solve),
        wall_seconds=time.perf_counter() - started,
    )


def run_timeline(config: TimelineConfig, trace_dir: Path | None = None, acme_dir: Path | None = None) -> TimelineResult:
    if config.scenario == "openb":
        return run_openb_timeline(config, trace_dir)
    return run_llm_timeline(config, trace_dir=trace_dir, acme_dir=acme_dir)


def run_timelines(
    configs: Sequence[TimelineConfig], *, trace_dir: Path | None = None, acme_dir: Path | None = None, jobs: int = 1
) -> Iterator[TimelineResult]:
    """Every configuration, in `jobs` processes, yielded as they finish (`trace_dir`: see
    `run_openb_timeline`; `acme_dir`: `timeline_streams.acme_trace_file`)."""
    if jobs <= 1:
        for config in configs:
            yield run_timeline(config, trace_dir, acme_dir)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in as_completed([pool.submit(run_timeline, config, trace_dir, acme_dir) for config in configs]):
            yield future.result()


# ---- report ----


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else float("nan")


def _stream_key(config: TimelineConfig) -> tuple[str, float, int]:
    """What tells two runs' streams apart: the scenario, llm's load or a trace's compression,
    the cluster's nodes (0: the stream's own)."""
    return config.scenario, config.load if config.scenario == "llm" else config.compress, config.nodes or 0


def _streams(results: Sequence[TimelineResult]) -> list[tuple[str, list[TimelineResult]]]:
    """The runs grouped by stream, each with its name: "llm, load 1.3", "acme, compress 15,
    window load 1.09", "openb-jobs, compress 300, 200 nodes, window load 1.4" (a trace
    stream's load is the GPU-time its window asks, measured: `timeline_streams.window_load`)."""
    groups: dict[tuple[str, float, int], list[TimelineResult]] = {}
    for r in results:
        groups.setdefault(_stream_key(r.config), []).append(r)
    named = []
    for (scenario, amount, nodes), runs in sorted(groups.items()):
        name = f"llm, load {amount:g}" if scenario == "llm" else f"{scenario}, compress {amount:g}"
        name += f", {nodes} nodes" if nodes else ""
        asked = [r.extra["window_load"] for r in runs if "window_load" in r.extra]
        if scenario != "llm" and asked:
            name += f", window load {np.mean(asked):.2f}"
        named.append((name, runs))
    return named


def timeline_markdown(results: Sequence[TimelineResult]) -> str:
    """One table per stream (scenario and load)."""
    from experiments.policies import policy_label

    lines = []
    for stream, chosen in _streams(results):
        queues = sorted({q for r in chosen for q in r.delays_by_queue})
        lines += [f"### timeline: {stream}", ""]
        head = ["policy", "seed", "GPU alloc mean %", "held by unstarted gangs %"]
        head += [f"delay p50/p99 {q} (min)" for q in queues]
        head += ["never started", "JCT mean (h)", "fairness error %", "evictions / admitted GPU",
                 "leaves per gang (excess)", "solve ms mean/p99"]  # fmt: skip
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in chosen:
            cells = [policy_label(r.config.policy), str(r.config.seed), f"{r.utilization_pct.mean():.1f}",
                     f"{r.idle_held_pct.mean():.1f}"]  # fmt: skip
            cells += [f"{_pct(r.delays_by_queue.get(q, np.array([])), 50) / 60:.1f} / "
                      f"{_pct(r.delays_by_queue.get(q, np.array([])), 99) / 60:.1f}" for q in queues]  # fmt: skip
            cells += [
                str(sum(r.never_started.values())),
                f"{r.jct_s.mean() / 3600:.2f}" if r.jct_s.size else "–",
                f"{r.fairness_error_pct:.1f}" if r.fairness_error_pct == r.fairness_error_pct else "–",
                f"{r.evictions_per_admitted_gpu:.3f}",
                f"{r.leaves_spanned.mean():.2f} ({r.leaves_excess.mean():.2f})" if r.leaves_spanned.size else "–",
                f"{1000 * r.solve_seconds.mean():.1f} / {1000 * _pct(r.solve_seconds, 99):.1f}" if r.solve_seconds.size else "–",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def timeline_policy_summary(results: Sequence[TimelineResult]) -> str:
    """The columns the starvation guard is judged on, per stream of the llm event loop and
    policy, mean over seeds (the training p99 is each seed's, averaged; never started is a
    mean count)."""
    return "\n".join(_stream_summary(stream, runs) for stream, runs in _streams(results) if runs[0].config.scenario != "openb")


def _stream_summary(stream: str, chosen: list[TimelineResult]) -> str:
    from experiments.policies import policy_label

    seeds = sorted({r.config.seed for r in chosen})
    sla = chosen[0].config.sla_waiting_s
    lines = [f"### {stream}, mean of seeds {', '.join(map(str, seeds))}; sla-waiting-time "
             f"{'none' if sla is None else f'{sla / 60:.0f} min'}", "",
             "| policy | GPU alloc % | training delay p99 (min) | never started | evictions / admitted GPU "
             "| fairness error % | GPUs reserved % | training wait p99, never started counted (min) |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for policy in dict.fromkeys(r.config.policy for r in chosen):
        runs = [r for r in chosen if r.config.policy == policy]
        cells = [
            np.mean([r.utilization_pct.mean() for r in runs]),
            np.mean([_pct(r.delays_by_queue.get("training", np.array([])), 99) / 60 for r in runs]),
            np.mean([sum(r.never_started.values()) for r in runs]),
            np.mean([r.evictions_per_admitted_gpu for r in runs]),
            np.mean([r.fairness_error_pct for r in runs]),
            np.mean([r.reserved_pct.mean() if r.reserved_pct.size else 0.0 for r in runs]),
            np.mean([_pct(r.training_waits_s, 99) / 60 for r in runs]),
        ]
        lines.append(f"| {policy_label(policy)} | {cells[0]:.1f} | {cells[1]:.0f} | {cells[2]:.1f} | {cells[3]:.3f} "
                     f"| {cells[4]:.2f} | {cells[5]:.1f} | {cells[6]:.0f} |")  # fmt: skip
    return "\n".join([*lines, ""])


def timeline_delay_breakdown(results: Sequence[TimelineResult]) -> str:
    """Where the training waits went, per job stream and policy, seeds pooled
    (`experiments.timeline_delay.breakdown_markdown`)."""
    from experiments.policies import policy_label
    from experiments.timeline_delay import breakdown_markdown

    parts = []
    for stream, runs in _streams(results):
        chosen = [(policy_label(r.config.policy), r.config.seed, r.delay_rows) for r in runs if r.delay_rows]
        if chosen:
            parts += [f"### where the training waits went: {stream}", "", breakdown_markdown(chosen)]
    return "\n".join(parts)


def write_timeline_csv(results: Sequence[TimelineResult], out: Path) -> None:
    """`timeline_summary.csv` (one row per run), `timeline_series.csv` (utilization per cycle)
    and `timeline_delays.csv` (one row per job of the job streams: where its wait went)."""
    with open(out / "timeline_summary.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["scenario", "policy", "seed", "queue", "started", "never_started", "delay_p50_s", "delay_p99_s",
                         "util_mean_pct", "jct_mean_s", "fairness_error_pct", "evictions_per_admitted_gpu",
                         "leaves_spanned_mean", "leaves_excess_mean", "solve_ms_mean", "solve_ms_p99", "wall_s",
                         "load", "compress", "window_load", "time_limit_s"])  # fmt: skip
        for r in results:
            for queue, delays in r.delays_by_queue.items():
                writer.writerow([r.config.scenario, r.config.policy, r.config.seed, queue, delays.size,
                                 r.never_started.get(queue, 0), _pct(delays, 50), _pct(delays, 99),
                                 r.utilization_pct.mean(), r.jct_s.mean() if r.jct_s.size else "",
                                 r.fairness_error_pct, r.evictions_per_admitted_gpu,
                                 r.leaves_spanned.mean() if r.leaves_spanned.size else "",
                                 r.leaves_excess.mean() if r.leaves_excess.size else "",
                                 1000 * r.solve_seconds.mean() if r.solve_seconds.size else "",
                                 1000 * _pct(r.solve_seconds, 99), f"{r.wall_seconds:.1f}", *_load_cells(r),
                                 _budget_cell(r)])  # fmt: skip
    rows = [(r, row) for r in results for row in r.delay_rows]
    if rows:
        with open(out / "timeline_delays.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            names = list(rows[0][1])
            writer.writerow(["scenario", "policy", "seed", *names, "load", "compress"])
            for r, row in rows:
                writer.writerow([r.config.scenario, r.config.policy, r.config.seed, *(("" if row[n] is None else row[n]) for n in names),
                                 *_load_cells(r)[:2]])  # fmt: skip
    with open(out / "timeline_series.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["scenario", "policy", "seed", "time_h", "gpu_alloc_pct", "held_by_unstarted_pct", "load", "compress"])
        for r in results:
            cells = _load_cells(r)[:2]
            for t, u, h in zip(r.times_h, r.utilization_pct, r.idle_held_pct):
                writer.writerow([r.config.scenario, r.config.policy, r.config.seed, f"{t:.4f}", f"{u:.3f}", f"{h:.3f}", *cells])


def _budget_cell(r: TimelineResult) -> str:
    """`time_limit_s`: batchplace's budget per cycle (`TimelineConfig.time_limit_s`), blank
    for the peers, which have none."""
    from experiments.policies import BATCHPLACE_POLICIES

    return f"{r.config.time_limit_s:g}" if r.config.policy in BATCHPLACE_POLICIES else ""


def _load_cells(r: TimelineResult) -> list[str]:
    """`load` (llm's, as configured), `compress` (the trace scenarios'), `window_load` (measured
    over the horizon; empty for `openb`): blank where the scenario has none."""
    asked = r.extra.get("window_load")
    return [f"{r.config.load:g}" if r.config.scenario == "llm" else "",
            f"{r.config.compress:g}" if r.config.scenario != "llm" else "",
            f"{asked:.4f}" if asked is not None else ""]  # fmt: skip
