"""Where a job's wait goes on the llm timeline: a ledger kept by the event loop.

Question it answers (issue: "win over time"): of a policy's training delay tail and its
never-started jobs, how much is capacity (nothing would have fit), how much is the policy
passing a job over while it would have fit (for fairness, or for other jobs), and how much
is eviction churn (the run lost to an eviction and the wait after it)?

At every decision the ledger classifies each pending job by the cluster as the policy
found it (before its binds and evictions):
- `no_room`: the job would not fit on the free capacity (its gang whole, inside one domain
  of its tier when its topology is hard; `ClusterState.feasible` for one pod,
  `timeline_llm.pods_fitting` per node for a gang);
- `fairness`: it would fit, but its queue holds at least its deserved GPUs (weighted
  water-filling, `timeline_llm.deserved_gpus`), so a proportion scheduler serves others first;
- `passed_over`: it would fit, its queue is below its share, and it did not start — the
  room went to other jobs or was held;
- `requeued`: it waits again after an eviction, whatever the cluster (churn);
and the interval up to the next decision is charged to that class. The time a job ran
before an eviction is `ran_then_evicted` (a job's delay is its last start − its arrival,
so that run is part of it), and `cycle` is the time from arrival to the first decision.
The classes add up to the job's wait: its last start (or the horizon) − its arrival.

Also kept per job: the first decision at which it would have fit (`first_fit_s`), the jobs
that started at a decision where it fit and waited (`overtaken_by`, "what ran instead"), and
each eviction: when, for whom (the preemptor's ident when the policy names it), and the
GPU-seconds it destroyed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from experiments.timeline_llm import CycleOutcome, Job, World, pods_fitting, queue_gpus

__all__ = ["WAIT_CLASSES", "DelayLedger", "JobDelay", "fits_free_capacity"]

WAIT_CLASSES: tuple[str, ...] = ("cycle", "no_room", "fairness", "passed_over", "requeued", "ran_then_evicted")


@dataclass
class JobDelay:
    """One job's wait, by class (seconds), and its eviction record."""

    waits_s: dict[str, float] = field(default_factory=lambda: dict.fromkeys(WAIT_CLASSES, 0.0))
    first_fit_s: float | None = None
    overtaken_by: set[int] = field(default_factory=set)
    evicted_at_s: list[float] = field(default_factory=list)
    evicted_by: list[int | None] = field(default_factory=list)
    lost_gpu_s: float = 0.0
    evicted_others: int = 0


def fits_free_capacity(world: World, job: Job) -> bool:
    """Whether `job`'s pods not yet placed fit on the free capacity now, all of them, inside
    one domain of its tier when its topology is hard."""
    state = world.state
    missing = job.pods - len(job.assignments)
    if missing <= 0:
        return True
    if missing == 1:
        return bool(state.feasible(job.request(0)).any())
    per_node = pods_fitting(state.cpu_free, state.memory_free, state.gpu_left, job)
    if job.topology != "hard":
        return int(per_node.sum()) >= missing
    ids = world.leaf if job.tier <= 1 else world.spine
    return int(np.bincount(ids, weights=per_node).max()) >= missing


class DelayLedger:
    """Kept by `run_llm_timeline`: `decided` before each decision, `evicted` and
    `started` after it, `close` at the horizon. See the module docstring."""

    def __init__(self) -> None:
        self.jobs: dict[int, JobDelay] = {}
        self._class: dict[int, str] = {}
        self._since: dict[int, float] = {}

    def _entry(self, job: Job) -> JobDelay:
        return self.jobs.setdefault(job.ident, JobDelay())

    def _charge(self, job: Job, now_s: float) -> None:
        entry = self._entry(job)
        since = self._since.get(job.ident)
        if since is None:
            entry.waits_s["cycle"] += now_s - job.arrival_s
        else:
            entry.waits_s[self._class[job.ident]] += now_s - since
        self._since[job.ident] = now_s

    def decided(self, world: World) -> None:
        """Classify every pending job by the cluster the policy is about to decide on."""
        used, deserved = queue_gpus(world.running, world.pending, float(world.state.gpu_capacity_milli))
        for job in world.pending:
            self._charge(job, world.now_s)
            entry = self._entry(job)
            fits = fits_free_capacity(world, job)
            if fits and entry.first_fit_s is None:
                entry.first_fit_s = world.now_s
            if job.evictions:
                self._class[job.ident] = "requeued"
            elif not fits:
                self._class[job.ident] = "no_room"
            elif used[job.queue] >= deserved[job.queue] - 1e-9:
                self._class[job.ident] = "fairness"
            else:
                self._class[job.ident] = "passed_over"

    def evicted(self, now_s: float, outcome: CycleOutcome) -> None:
        """Record the decision's evictions, before the loop requeues their jobs: the run each
        one loses, and who it was evicted for."""
        evictor = dict(outcome.evicted_for)
        for job in outcome.evicted:
            entry = self._entry(job)
            start_s = now_s if job.start_s is None else job.start_s
            entry.waits_s["ran_then_evicted"] += now_s - start_s
            entry.lost_gpu_s += (now_s - start_s) * job.gpus_milli / 1000.0
            entry.evicted_at_s.append(now_s)
            by = evictor.get(job.ident)
            entry.evicted_by.append(by)
            if by is not None:
                self.jobs.setdefault(by, JobDelay()).evicted_others += 1
            self._since[job.ident] = now_s
            self._class[job.ident] = "requeued"

    def started(self, started: Sequence[Job], still_pending: Iterable[Job]) -> None:
        """Record the jobs the decision started, and who they overtook: pending jobs that
        would have fit and still wait ("what ran instead")."""
        idents = {job.ident for job in started}
        for job in started:
            self._since.pop(job.ident, None)
            self._class.pop(job.ident, None)
        for job in still_pending:
            if self._class.get(job.ident) in ("fairness", "passed_over"):
                self._entry(job).overtaken_by |= idents

    def close(self, jobs: Iterable[Job], horizon_s: float) -> None:
        """Charge the wait of jobs still pending at the horizon up to it."""
        for job in jobs:
            if job.start_s is None and job.arrival_s <= horizon_s and job.ident in self._since:
                self._charge(job, horizon_s)


def delay_rows(jobs: Sequence[Job], ledger: DelayLedger, horizon_s: float) -> tuple[dict[str, float | int | str | None], ...]:
    """One row per job that arrived by the horizon: its wait by class (s), when it first
    fit, how many jobs (and GPUs) started over it, and its evictions."""
    gpus = {job.ident: job.gpus_milli / 1000.0 for job in jobs}
    rows = []
    for job in jobs:
        if job.arrival_s > horizon_s:
            continue
        entry = ledger.jobs.get(job.ident, JobDelay())
        end = job.start_s if job.start_s is not None else horizon_s
        rows.append({
            "job": job.ident, "queue": job.queue, "gpus": gpus[job.ident], "priority": job.priority,
            "arrival_s": job.arrival_s, "start_s": job.start_s, "wait_s": max(0.0, end - job.arrival_s),
            **{f"{name}_s": entry.waits_s[name] for name in WAIT_CLASSES},
            "first_fit_s": entry.first_fit_s, "overtaken_by": len(entry.overtaken_by),
            "overtaken_by_gpus": sum(gpus.get(i, 0.0) for i in entry.overtaken_by),
            "evictions": len(entry.evicted_at_s), "evicted_by": ";".join("?" if i is None else str(i) for i in entry.evicted_by),
            "lost_gpu_h": entry.lost_gpu_s / 3600.0, "evicted_others": entry.evicted_others,
        })  # fmt: skip
    return tuple(rows)


def breakdown_markdown(runs: Sequence[tuple[str, int, Sequence[dict]]], *, queue: str = "training") -> str:
    """Per policy (seeds pooled): where `queue`'s waits went, for all its jobs, for the tail
    (each seed's top decile by wait, never-started jobs counted to the horizon) and for the
    jobs never started; then the evictions, by kind. `runs` is (policy label, seed, rows)."""
    lines = [f"| policy | {queue} jobs | group | jobs | mean wait (min) | "
             + " | ".join(name.replace("_", " ") + " %" for name in WAIT_CLASSES)
             + " | fit once, waited on (min) | jobs started over it |", "|" + "---|" * (6 + len(WAIT_CLASSES))]
    evictions = ["| policy | evictions | preempt (same queue) | reclaim (other queue) | by a training job | "
                 "GPU-h lost | victims evicted twice or more |", "|---|---|---|---|---|---|---|"]
    for label in dict.fromkeys(name for name, _, _ in runs):
        groups: dict[str, list[dict]] = {"all": [], "top decile": [], "never started": []}
        kinds = {"preempt": 0, "reclaim": 0, "training": 0, "unknown": 0}
        lost = 0.0
        repeat = 0
        for _, _, rows in (run for run in runs if run[0] == label):
            chosen = [row for row in rows if row["queue"] == queue]
            cut = float(np.percentile([row["wait_s"] for row in chosen], 90)) if chosen else 0.0
            groups["all"] += chosen
            groups["top decile"] += [row for row in chosen if row["wait_s"] >= cut]
            groups["never started"] += [row for row in chosen if row["start_s"] is None]
            queue_of = {row["job"]: row["queue"] for row in rows}
            for row in rows:
                lost += float(row["lost_gpu_h"])
                repeat += int(row["evictions"]) >= 2
                for by in filter(None, str(row["evicted_by"]).split(";")):
                    by_queue = queue_of.get(int(by)) if by != "?" else None
                    if by_queue is None:
                        kinds["unknown"] += 1
                        continue
                    kinds["preempt" if by_queue == row["queue"] else "reclaim"] += 1
                    kinds["training"] += by_queue == "training"
        for group, rows in groups.items():
            if not rows:
                continue
            total = sum(float(row["wait_s"]) for row in rows) or 1.0
            shares = [100.0 * sum(float(row[f"{name}_s"]) for row in rows) / total for name in WAIT_CLASSES]
            waited = [float(row["wait_s"]) - (float(row["first_fit_s"]) - float(row["arrival_s"]))
                      for row in rows if row["first_fit_s"] is not None]  # fmt: skip
            lines.append(f"| {label} | {queue} | {group} | {len(rows)} | {np.mean([r['wait_s'] for r in rows]) / 60:.0f} | "
                         + " | ".join(f"{share:.0f}" for share in shares)
                         + f" | {np.mean(waited) / 60 if waited else 0.0:.0f} | {np.mean([r['overtaken_by'] for r in rows]):.1f} |")  # fmt: skip
        count = kinds["preempt"] + kinds["reclaim"] + kinds["unknown"]
        evictions.append(f"| {label} | {count} | {kinds['preempt']} | {kinds['reclaim']} | {kinds['training']} | "
                         f"{lost:.0f} | {repeat} |")  # fmt: skip
    return "\n".join([*lines, "", *evictions, ""])
