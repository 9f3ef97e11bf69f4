"""The sub-group experiment: a stream of jobs made of gangs inside gangs (training shards,
prefill/decode replica groups) over cycles, on the Lingjun switch tree and an NVL72-style
tree (`experiments.subgroup_workload`), under greedy, `auto` and a Volcano-like baseline.

Question (issue 34, item 5): does choosing every sub-group's domain jointly start as many
jobs as greedy and leave more whole racks free, with no sub-group outside its domain?

The event loop, at each cycle time t (every `cycle_s`): (1) jobs whose end ≤ t finish and
free their pods; (2) jobs whose arrival ≤ t join; (3) when some job has pods to place, the
cycle's `Snapshot` is built (nodes, HyperNodes, every running and pending pod with its
PodGroup and sub-groups) and the policy decides — batchplace's `solver.place` (greedy, or
`auto` with `SolveConfig`'s defaults unless a time limit is given, and the controller's
default `sla-waiting-time`), or the Volcano-like baseline
(`experiments.baselines.volcano_subgroups`) on the simulator's cluster, judged with no
waiting time (Volcano's `sla` plugin is off by default, so it holds no nodes); (4) the checker
(`solver.checker.check_placement`) judges the binds against that snapshot — a placement
with a violation is counted and not applied (the controller binds nothing it rejects;
`solve` raising `PlacementRejected` counts the same way); (5) a job whose started
sub-groups meet its `min_sub_groups` starts at t and ends at t + its duration (it keeps
placing its other sub-groups as they fit); (6) whole racks free (tier-1 HyperNodes with
every GPU idle) are counted.

Per run: jobs arrived and started, mean wait of the started, the longest wait of any job
(one not started waits until the end of the stream: the starvation a hold on nodes guards
against shows there), checker violations (those of a sub-group's hard domain apart), whole
racks free after each cycle (the mean over all cycles, and from the first hour on, past
the start on an empty cluster), each decision's wall time (p50/p99; the snapshot build and
the re-check are not counted) and who answered.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from experiments.baselines.volcano_subgroups import SubGroupBind, VolcanoSubGroups
from experiments.cluster_state import WHOLE, ClusterState
from experiments.subgroup_workload import (
    SubGroupCluster,
    SubGroupJob,
    lingjun_cluster,
    nvl72_cluster,
    subgroup_workload,
)
from models.placement import Bind, Decision, Placement
from models.snapshot import Node, Snapshot
from solver.checker import PlacementRejected, Violation, check_placement
from solver.place import SolveConfig, place
from solver.rules.reservation import DEFAULT_SLA_WAITING_S

__all__ = [
    "SUBGROUP_POLICIES",
    "SUBGROUP_CLUSTERS",
    "SubGroupConfig",
    "SubGroupResult",
    "SubGroupSnapshots",
    "make_cluster",
    "run_subgroup_stream",
    "subgroup_markdown",
    "write_subgroup_csv",
]

SUBGROUP_POLICIES: tuple[str, ...] = ("greedy", "auto", "volcano")
SUBGROUP_CLUSTERS: tuple[str, ...] = ("nvl72", "lingjun")
NAMESPACE = "sg"
MIB = 1024 * 1024


@dataclass(frozen=True)
class SubGroupConfig:
    cluster: str  # nvl72 | lingjun
    policy: str  # greedy | auto | volcano
    seed: int = 42
    hours: float = 3.0
    cycle_s: float = 120.0
    load: float = 1.0
    time_limit_s: float | None = None  # batchplace's budget per cycle; None: `SolveConfig`'s default
    racks: int = 56  # nvl72: racks of 18 nodes (56: 1,008 nodes)


@dataclass(frozen=True, eq=False)
class SubGroupResult:
    config: SubGroupConfig
    jobs_arrived: int
    jobs_started: int
    waits_s: np.ndarray  # started jobs' start − arrival
    longest_wait_s: float  # of every job arrived: start − arrival, or the stream's end − arrival when not started
    sub_groups_started: int
    violations: tuple[Violation, ...]  # every checker violation of every cycle
    times_h: np.ndarray  # [cycles]
    racks_free: np.ndarray  # [cycles] whole tier-1 domains idle after the cycle
    racks: int
    solve_seconds: np.ndarray  # per decision
    evictions: int = 0
    by_kind: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind → (arrived, started)
    answered: dict[str, int] = field(default_factory=dict)  # who answered → decisions (`cpsat OPTIMAL`, …)

    @property
    def sub_group_violations(self) -> int:
        """Violations of a sub-group's hard domain (rule topology, naming a sub-group)."""
        return sum(1 for v in self.violations if v.rule == "topology" and "sub-group" in v.message)

    @property
    def mean_wait_s(self) -> float:
        return float(self.waits_s.mean()) if self.waits_s.size else float("nan")


def make_cluster(name: str, *, racks: int = 56, lingjun_file: Path | None = None) -> SubGroupCluster:
    if name == "nvl72":
        return nvl72_cluster(racks)
    if name == "lingjun":
        if lingjun_file is None:
            raise ValueError("the lingjun cluster needs its topo.csv")
        return lingjun_cluster(lingjun_file)
    raise ValueError(f"unknown cluster {name!r}; choose one of {', '.join(SUBGROUP_CLUSTERS)}")


def _pod_name(job: SubGroupJob, sub: int, replica: int) -> str:
    return f"{job.name}-{sub}-{replica}"


class SubGroupSnapshots:
    """The cycle's `Snapshot` of a `SubGroupCluster` and its jobs; nodes and HyperNodes built once.
    `sla_waiting_s`: every PodGroup's waiting time before nodes are held for it (None: never)."""

    def __init__(self, cluster: SubGroupCluster, *, sla_waiting_s: float | None = DEFAULT_SLA_WAITING_S):
        self.cluster = cluster
        self.sla_waiting_s = sla_waiting_s
        nodes = cluster.nodes
        self._nodes = [
            Node.model_validate({"name": nodes.names[n], "allocatable": {
                "cpu": int(nodes.cpu_milli[n]), "memory": int(nodes.memory_mib[n]) * MIB, "gpu": int(nodes.gpus[n]) * WHOLE}})
            for n in range(nodes.count)
        ]  # fmt: skip
        self._hypernodes = cluster.hypernodes()

    def snapshot(self, jobs: Sequence[SubGroupJob], now_s: float) -> Snapshot:
        groups, pods = [], []
        for job in jobs:
            groups.append(_pod_group(job))
            for sub, spec in enumerate(job.sub_groups):
                for replica in range(spec.pods):
                    pods.append(self._pod(job, sub, replica, now_s))
        return Snapshot.model_validate({
            "nodes": self._nodes, "hypernodes": self._hypernodes, "pod_groups": groups, "pods": pods,
            "reservation_policy": {"sla_waiting_s": self.sla_waiting_s, "judged_at_s": now_s},
        })  # fmt: skip

    def _pod(self, job: SubGroupJob, sub: int, replica: int, now_s: float) -> dict[str, Any]:
        pod: dict[str, Any] = {
            "namespace": NAMESPACE, "name": _pod_name(job, sub, replica), "pod_group": f"{NAMESPACE}/{job.name}",
            "task": "main", "sub_group": job.sub_groups[sub].name, "requests": _requests(job),
        }  # fmt: skip
        assignment = job.assignments.get((sub, replica))
        if assignment is None:
            pod["phase"] = "pending"
        else:
            pod.update(phase="running", node=self.cluster.nodes.names[assignment.node], gpu_indices=list(assignment.devices),
                       start_time=job.start_s if job.start_s is not None else now_s)  # fmt: skip
        return pod


def _requests(job: SubGroupJob) -> dict[str, int]:
    pod = job.request(0, 0)
    return {"cpu": pod.cpu_milli, "memory": pod.memory_mib * MIB, "gpu": pod.total_gpu_milli}


def _pod_group(job: SubGroupJob) -> dict[str, Any]:
    group: dict[str, Any] = {
        "namespace": NAMESPACE,
        "name": job.name,
        "min_member": job.min_member,
        "creation_time": job.arrival_s,
        "tasks": [{"name": "main", "requests": _requests(job)}],
        "sub_groups": [
            {"name": sub.name, "policy": sub.policy, "min_member": sub.pods,
             "network_topology": {"mode": "hard", "highest_tier_allowed": sub.tier}}
            for sub in job.sub_groups
        ],  # fmt: skip
        "min_sub_groups": dict(job.min_sub_groups),
    }
    if job.tier is not None:
        group["network_topology"] = {"mode": "hard", "highest_tier_allowed": job.tier}
    return group


def _placement(binds: Sequence[SubGroupBind], names: Sequence[str]) -> Placement:
    return Placement(binds=tuple(
        Bind(pod=f"{NAMESPACE}/{_pod_name(job, sub, replica)}", node=names[a.node], gpus=a.devices)
        for job, sub, replica, a in binds
    ))  # fmt: skip


@dataclass(frozen=True)
class _Outcome:
    """One decision: its binds (already in the cluster), its wall time, the violations when
    `solver.place` refused its own engine's placement, the jobs it evicted, and who answered."""

    binds: list[SubGroupBind]
    seconds: float
    rejected: tuple[Violation, ...] = ()
    evicted: tuple[SubGroupJob, ...] = ()
    answered_by: str = "volcano"


def _answered_by(decision: Decision) -> str:
    """`cpsat OPTIMAL`, `greedy GREEDY`, `greedy FALLBACK (no_time)`, …"""
    cause = f" ({decision.fallback.cause})" if decision.fallback is not None else ""
    return f"{decision.engine} {decision.status}{cause}"


class _Batchplace:
    """`solver.place` on the cycle's snapshot; its binds applied to the simulator's cluster."""

    def __init__(self, engine: str, time_limit_s: float | None):
        self.config = SolveConfig(engine=engine) if time_limit_s is None else SolveConfig(engine=engine, time_limit_s=time_limit_s)  # type: ignore[arg-type]

    def cycle(self, state: ClusterState, jobs: Sequence[SubGroupJob], snapshot: Snapshot) -> _Outcome:
        started = time.perf_counter()
        try:
            decision = place(snapshot, self.config)
        except PlacementRejected as rejected:
            return _Outcome([], time.perf_counter() - started, rejected.violations, answered_by="rejected")
        seconds = time.perf_counter() - started
        pods = {f"{NAMESPACE}/{_pod_name(job, s, r)}": (job, s, r)
                for job in jobs for s, spec in enumerate(job.sub_groups) for r in range(spec.pods)}  # fmt: skip
        row_of = {name: n for n, name in enumerate(state.nodes.names)}
        evicted = tuple({id(pods[e.pod][0]): pods[e.pod][0] for e in decision.placement.evictions}.values())
        for job in evicted:  # a sub-grouped job restarts whole
            for (sub, replica), assignment in job.assignments.items():
                state.release(job.request(sub, replica), assignment)
            job.assignments.clear()
            job.start_s = job.end_s = None
        binds = []
        for bind in decision.placement.binds:
            job, sub, replica = pods[bind.pod]
            binds.append((job, sub, replica, state.bind(job.request(sub, replica), row_of[bind.node], bind.gpus)))
        return _Outcome(binds, seconds, evicted=evicted, answered_by=_answered_by(decision))


def _whole_racks_free(cluster: SubGroupCluster, state: ClusterState) -> int:
    idle = state.left_total == state.gpu_count * WHOLE
    racks = cluster.domains[0]
    busy = np.bincount(racks[~idle], minlength=len(cluster.domain_names[0]))
    return int((busy == 0).sum())


def run_subgroup_stream(
    config: SubGroupConfig,
    cluster: SubGroupCluster,
    *,
    jobs: list[SubGroupJob] | None = None,
    on_cycle: Callable[[int, int], None] | None = None,
) -> SubGroupResult:
    """One policy on one cluster (module docstring). `jobs`: the stream (default: the seeded
    `subgroup_workload`); `on_cycle(done, total)` after every cycle (a progress bar)."""
    stream = jobs if jobs is not None else subgroup_workload(cluster, config.seed, hours=config.hours, load=config.load)
    state = ClusterState(cluster.nodes)
    volcano = VolcanoSubGroups(cluster) if config.policy == "volcano" else None
    # Volcano's `sla` plugin is off by default: its binds are judged without held nodes.
    snapshots = SubGroupSnapshots(cluster, sla_waiting_s=None if volcano is not None else DEFAULT_SLA_WAITING_S)
    batchplace = None if volcano is not None else _Batchplace(config.policy, config.time_limit_s)
    arrivals = sorted(stream, key=lambda j: (j.arrival_s, j.ident))
    horizon = config.hours * 3600.0
    cycles = int(horizon // config.cycle_s) + 1
    active: list[SubGroupJob] = []  # arrived, not finished: pending and running
    next_arrival = 0
    violations: list[Violation] = []
    times, racks_free, solve_seconds = [], [], []
    evictions = 0
    answered: dict[str, int] = {}
    for cycle in range(cycles):
        now = cycle * config.cycle_s
        for job in [j for j in active if j.end_s is not None and j.end_s <= now]:
            for (sub, replica), assignment in job.assignments.items():
                state.release(job.request(sub, replica), assignment)
            active.remove(job)
        while next_arrival < len(arrivals) and arrivals[next_arrival].arrival_s <= now:
            active.append(arrivals[next_arrival])
            next_arrival += 1
        waiting = [j for j in active if len(j.assignments) < sum(s.pods for s in j.sub_groups)]
        if waiting:
            snapshot = snapshots.snapshot(active, now)
            if volcano is not None:
                outcome = _Outcome(*volcano.cycle(state, waiting))
            else:
                assert batchplace is not None
                outcome = batchplace.cycle(state, active, snapshot)
            binds = outcome.binds
            evictions += len(outcome.evicted)
            answered[outcome.answered_by] = answered.get(outcome.answered_by, 0) + 1
            found = outcome.rejected or check_placement(snapshot, _placement(binds, cluster.nodes.names))
            solve_seconds.append(outcome.seconds)
            if found:
                violations.extend(found)
                for job, sub, replica, assignment in reversed(binds):
                    state.release(job.request(sub, replica), assignment)
            else:
                for job, sub, replica, assignment in binds:
                    job.assignments[sub, replica] = assignment
            for job in waiting:
                if job.start_s is None and job.ready():
                    job.start_s, job.end_s = now, now + job.duration_s
        times.append(now / 3600.0)
        racks_free.append(_whole_racks_free(cluster, state))
        if on_cycle is not None:
            on_cycle(cycle + 1, cycles)
    started = [j for j in arrivals if j.start_s is not None]
    kinds = sorted({j.kind for j in arrivals})
    return SubGroupResult(
        config=config,
        jobs_arrived=len(arrivals),
        jobs_started=len(started),
        waits_s=np.array([j.start_s - j.arrival_s for j in started if j.start_s is not None]),
        longest_wait_s=max(((j.start_s if j.start_s is not None else horizon) - j.arrival_s for j in arrivals), default=0.0),
        sub_groups_started=sum(len(j.started_sub_groups()) for j in arrivals),
        violations=tuple(violations),
        times_h=np.array(times),
        racks_free=np.array(racks_free),
        racks=len(cluster.domain_names[0]),
        solve_seconds=np.array(solve_seconds),
        evictions=evictions,
        answered=answered,
        by_kind={k: (sum(1 for j in arrivals if j.kind == k), sum(1 for j in started if j.kind == k)) for k in kinds},
    )


def _mean(values: np.ndarray) -> str:
    return f"{values.mean():.1f}" if values.size else "nan"


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else float("nan")


_HEADER = ("cluster", "policy", "seed", "sub-group domain violations", "all violations", "jobs started",
           "training started", "serving started", "mean wait (min)", "longest wait (min)", "whole racks free (mean)", "after 1 h", "racks",
           "solve p50 (s)", "solve p99 (s)", "decisions", "evictions", "answered by")  # fmt: skip


def _row(result: SubGroupResult) -> tuple[str, ...]:
    c = result.config
    kinds = result.by_kind
    return (
        c.cluster, c.policy, str(c.seed), str(result.sub_group_violations), str(len(result.violations)),
        f"{result.jobs_started} / {result.jobs_arrived}",
        "{1} / {0}".format(*kinds.get("training", (0, 0))), "{1} / {0}".format(*kinds.get("serving", (0, 0))),
        f"{result.mean_wait_s / 60:.1f}", f"{result.longest_wait_s / 60:.1f}", _mean(result.racks_free), _mean(result.racks_free[result.times_h >= 1.0]), str(result.racks), f"{_percentile(result.solve_seconds, 50):.3f}", f"{_percentile(result.solve_seconds, 99):.3f}",
        str(result.solve_seconds.size), str(result.evictions),
        ", ".join(f"{who} ×{count}" for who, count in sorted(result.answered.items(), key=lambda item: -item[1])),
    )  # fmt: skip


def subgroup_markdown(results: Sequence[SubGroupResult]) -> str:
    """One row per run: the table of docs/results.md."""
    lines = ["| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    lines += ["| " + " | ".join(_row(r)) + " |" for r in results]
    return "\n".join(lines) + "\n"


def write_subgroup_csv(results: Sequence[SubGroupResult], out: Path) -> list[Path]:
    """`subgroups.csv` (one row per run) and `subgroups_cycles.csv` (racks free per cycle)."""
    out.mkdir(parents=True, exist_ok=True)
    runs, cycles = out / "subgroups.csv", out / "subgroups_cycles.csv"
    with runs.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([h.replace(" ", "_") for h in _HEADER])
        writer.writerows(_row(r) for r in results)
    with cycles.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["cluster", "policy", "seed", "time_h", "whole_racks_free"])
        for r in results:
            c = r.config
            writer.writerows((c.cluster, c.policy, c.seed, f"{t:.4f}", int(f)) for t, f in zip(r.times_h, r.racks_free))
    return [runs, cycles]
